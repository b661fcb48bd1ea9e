/* SPDX-License-Identifier: MIT */
/*
 * A full backing is not a worn-out medium (issue 28, item 2).  An image
 * with factory bad blocks (well within what the spares absorb) sits on a
 * backing that runs out of space: writes into bytes it never held fail
 * with ENOSPC, as on a full filesystem under a sparse image file, while
 * overwrites succeed.  Host writes then fail with ENOSPC while garbage
 * collection finds no room, but the engine must not turn read-only (3c48226
 * took GC's ENOSPC for "bad blocks used up the spares", returned EROFS and
 * wrote the read-only flag into the bad-block table for good): once space
 * comes back, writes succeed, and after a close and reopen the device is
 * writable, with every page reading what was last written to it (a write
 * that failed may have left either version).  Seeded: OCTANT_SEED.
 *
 * The same kind: a backing error whose code the NAND layer uses for a
 * medium fault (EREMOTEIO = NAND_EFAIL, a program status FAIL; an NFS
 * backing can return it) must fail the write with EIO, not retire a good
 * block (3c48226 retired one per such error, and enough of them turned the
 * device read-only).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE  (16u << 20)
#define PS    4096u
#define NPG   (SIZE / PS)

/* ---- a backing that can be full: ENOSPC for bytes it never held ---- */
struct fullb {
	struct nand_backing b;
	struct nand_backing *in;     /* memory backing underneath */
	uint8_t *held;               /* per 4 KiB of the backing: written */
	uint64_t size;
	bool full;
	uint64_t refused;            /* writes failed with ENOSPC */
	int fail_once;               /* the next write fails with this */
};

static struct fullb fb;

/* May [off, off + len) be written now?  Marks it held if so. */
static bool room(uint64_t off, size_t len)
{
	uint64_t a = off / 4096, z = (off + len + 4095) / 4096;

	if (fb.fail_once)
		return false;
	for (uint64_t i = a; fb.full && i < z; i++)
		if (!fb.held[i]) {
			fb.refused++;
			return false;
		}
	memset(fb.held + a, 1, z - a);
	return true;
}

/* The error of a write room() refused. */
static int refuse(void)
{
	int r = fb.fail_once ? fb.fail_once : -ENOSPC;

	fb.fail_once = 0;
	return r;
}

static int fb_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	(void)b;
	return fb.in->ops->pread(fb.in, buf, len, off);
}

static int fb_pwrite(struct nand_backing *b, const void *buf, size_t len,
		     uint64_t off)
{
	(void)b;
	if (!room(off, len))
		return refuse();
	return fb.in->ops->pwrite(fb.in, buf, len, off);
}

/* All or nothing (short vectored writes are another story). */
static int fb_pwritev(struct nand_backing *b, const struct iovec *iov, int cnt,
		      uint64_t off)
{
	size_t len = 0;

	(void)b;
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	if (!room(off, len))
		return refuse();
	for (int i = 0; i < cnt; i++) {
		int r = fb.in->ops->pwrite(fb.in, iov[i].iov_base,
					   iov[i].iov_len, off);
		if (r)
			return r;
		off += iov[i].iov_len;
	}
	return 0;
}

static int fb_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	(void)b;
	return fb.in->ops->punch(fb.in, off, len);
}

static int fb_sync(struct nand_backing *b)
{
	(void)b;
	return fb.in->ops->sync(fb.in);
}

static void fb_destroy(struct nand_backing *b)
{
	(void)b;
	fb.in->ops->destroy(fb.in);     /* drops one hold */
}

static const struct nand_backing_ops fb_ops = {
	.pread = fb_pread, .pwrite = fb_pwrite, .punch = fb_punch,
	.sync = fb_sync, .destroy = fb_destroy, .pwritev = fb_pwritev,
};

/* ---- the model: what each page may read ---- */
static uint32_t ver[NPG], alt[NPG];   /* last written, and a failed one */
static uint8_t buf[PS], rd[PS], zero[PS];

static void pattern(uint8_t *p, uint32_t pg, uint32_t v)
{
	for (uint32_t i = 0; i < PS; i += 8) {
		uint64_t x = ((uint64_t)pg << 32 | v) * 0x9e3779b97f4a7c15ull + i;
		memcpy(p + i, &x, 8);
	}
}

/* Write page @pg's next version; the result. */
static int write_pg(struct ftl *f, uint32_t pg)
{
	uint32_t v = ver[pg] + 1;
	int r;

	pattern(buf, pg, v);
	r = ftl_write(f, buf, (uint64_t)pg * PS, PS, 0);
	if (r)
		alt[pg] = v;            /* may have reached the medium */
	else
		ver[pg] = v, alt[pg] = 0;
	return r;
}

/* @n writes of random pages, each must succeed (@what names them). */
static void writes_ok(struct ftl *f, int n, uint64_t *rs, const char *what)
{
	for (int i = 0; i < n; i++) {
		int r = write_pg(f, (uint32_t)(t_xorshift(rs) % NPG));

		T_CHECK(r == 0, "write %d %s: %d", i, what, r);
		if (r)
			break;
	}
}

static void verify(struct ftl *f, const char *when)
{
	uint32_t bad = 0;

	for (uint32_t pg = 0; pg < NPG; pg++) {
		int r = ftl_read(f, rd, (uint64_t)pg * PS, PS);
		bool ok = false;

		if (!r) {
			pattern(buf, pg, ver[pg]);
			ok = !memcmp(rd, buf, PS) || (!ver[pg] &&
			     !memcmp(rd, zero, PS));
			if (!ok && alt[pg]) {
				pattern(buf, pg, alt[pg]);
				ok = !memcmp(rd, buf, PS);
			}
		}
		if (!ok && bad++ < 5)
			T_CHECK(ok, "%s: page %u (version %u) reads wrong: %d",
				when, pg, ver[pg], r);
	}
	T_EQ_U64(bad, 0, "%s: pages reading wrong", when);
}

static struct ftl *open_img(void)
{
	struct ftl_open_opts o = { 0 };
	struct ftl *f = NULL;
	int r;

	nand_mem_hold(fb.in);
	fb.b.ops = &fb_ops;
	r = ftl_open_backing_sized(&fb.b, fb.size, &o, &f);
	T_CHECK(r == 0, "open: %d", r);
	if (r)
		exit(t_result());
	return f;
}

int main(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.op_permille = 250, .bad_block_rate = 0.03 };
	uint64_t rs = t_seed() | 1;
	struct ftl_stats st;
	struct ftl *f;
	uint32_t enospc = 0, erofs = 0, other = 0, ok_full = 0;
	uint64_t grown;
	int r;

	fb.size = ftl_test_image_size(&c);
	fb.held = calloc(fb.size / 4096 + 1, 1);
	T_CHECK(fb.held && nand_backing_mem(fb.size, false, &fb.in) == 0, "mem");
	fb.b.ops = &fb_ops;
	/* a seed drawing factory bad blocks, fewer than the spares absorb */
	for (c.bad_block_seed = rs % 1000 + 1;; c.bad_block_seed++) {
		if (ftl_create_backing(&fb.b, &c))
			continue;
		f = open_img();
		ftl_stats_get(f, &st);
		if (st.bad_blocks_factory)
			break;
		ftl_close(f);
	}
	fprintf(stderr, "factory bad blocks %llu (the spares absorb %llu)\n",
		(unsigned long long)st.bad_blocks_factory,
		(unsigned long long)st.bad_block_limit);
	T_CHECK(st.bad_blocks_factory > 0 && !st.read_only, "bad blocks");

	/* the whole device once, then overwrites: GC frees written blocks
	 * while blocks the backing never held are still free */
	for (uint32_t pg = 0; pg < NPG; pg++)
		T_CHECK(write_pg(f, pg) == 0, "fill %u", pg);
	for (int i = 0; i < 600; i++)
		T_CHECK(write_pg(f, (uint32_t)(t_xorshift(&rs) % NPG)) == 0,
			"warm %d", i);
	T_CHECK(ftl_flush(f) == 0, "flush");
	if (t_failures)
		return t_result();

	/* the backing fills up */
	fb.full = true;
	for (int i = 0; i < 1500; i++) {
		r = write_pg(f, (uint32_t)(t_xorshift(&rs) % NPG));
		enospc += r == -ENOSPC;
		erofs += r == -EROFS;
		other += r && r != -ENOSPC && r != -EROFS;
		ok_full += !r;
	}
	ftl_stats_get(f, &st);
	fprintf(stderr, "backing full: %u writes ok, %u ENOSPC, %u EROFS, %u "
		"other; %llu backing writes refused\n", ok_full, enospc, erofs,
		other, (unsigned long long)fb.refused);
	T_CHECK(enospc > 0 && fb.refused > 0, "the full backing was hit");
	/* every write that failed with ENOSPC met at least one refusal, each
	 * counted but those of prog_undo's restore writes (not counted) */
	T_CHECK(st.store_full >= enospc && st.store_full <= fb.refused,
		"store_full %llu: between %u ENOSPC writes and %llu refusals",
		(unsigned long long)st.store_full, enospc,
		(unsigned long long)fb.refused);
	T_EQ_U64(erofs, 0, "writes failing EROFS on a full backing");
	T_EQ_U64(other, 0, "writes failing otherwise");
	T_CHECK(!st.read_only, "engine read-only after a full backing");
	T_EQ_U64(st.bad_blocks_grown, 0, "blocks retired for a full backing");

	/* space comes back: the same engine takes writes */
	fb.full = false;
	writes_ok(f, 300, &rs, "with space back");
	T_CHECK(ftl_flush(f) == 0, "flush with space back");
	verify(f, "live");
	T_CHECK(ftl_close(f) == 0, "close");

	/* and so does the image, reopened: no read-only flag persisted */
	f = open_img();
	ftl_stats_get(f, &st);
	T_CHECK(!st.read_only, "reopened read-only");
	verify(f, "reopened");
	writes_ok(f, 100, &rs, "after reopen");
	/* a program the backing fails with EREMOTEIO: EIO, nothing retired */
	ftl_stats_get(f, &st);
	grown = st.bad_blocks_grown;
	fb.fail_once = -EREMOTEIO;
	for (int i = 0; i < 200 && fb.fail_once; i++) {
		r = write_pg(f, (uint32_t)(t_xorshift(&rs) % NPG));
		T_CHECK(r == 0 || r == -EIO, "write into a failing backing: %d", r);
	}
	T_CHECK(!fb.fail_once, "the backing error was hit");
	T_CHECK(r == -EIO, "the write the backing failed: %d (EIO)", r);
	ftl_stats_get(f, &st);
	T_EQ_U64(st.bad_blocks_grown, grown, "blocks retired for a backing error");
	writes_ok(f, 100, &rs, "after the backing error");
	T_CHECK(ftl_flush(f) == 0, "flush after the backing error");
	verify(f, "after a backing error");
	T_CHECK(ftl_close(f) == 0, "close");
	fb.in->ops->destroy(fb.in);
	free(fb.held);
	return t_result();
}
