/* SPDX-License-Identifier: MIT */
/*
 * Old page data merged into a new program is checked first, never
 * laundered (repro/rmw-launders-crc): one bit of a flushed page's data
 * flipped on the medium (no ECC model to see it; its OOB data CRC tells).
 *
 * - A write covering that page in part (the head of a longer write, the
 *   tail, a sub-page write) and a discard / write-zeroes covering it in
 *   part fail with EIO and change nothing: the page still reads EIO (the
 *   flipped byte is never served), the whole pages of the same request
 *   keep their data, fsck still reports it (exit 4); media_errors and
 *   read_crc_errors count it.  A write (or a discard) covering the whole
 *   page replaces it: it reads the new data (zeroes), fsck is clean.
 * - The same over a page recovery found damaged (FTL_DAMAGED: flushed data
 *   lost, after a crash): EIO, no zeroes merged; a whole-page write fixes it.
 * - Copies carry the source's data CRC, whichever path reads the page:
 *   a scrub rewrite (ECC model, corrected bits queue it) and the move off a
 *   retired block (with an ECC model every page goes the page-by-page path;
 *   without one, the block-run path) leave the damage detectable: the copy
 *   reads EIO and fsck reports it.
 * Both alignment modes.  Deterministic (no seed): the damage is one chosen bit.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): retires a block
 * (ftl_retire_block) to take the move path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE (4u << 20)
#define PS   4096u

struct env {
	struct ftl_create_opts c;
	struct nand_fault_spec spec;
	struct ftl_open_opts o;
	struct nand_backing *b;
	struct ftl *f;
	uint64_t isz;
};

static char img[256];
static FILE *null;

static void fill(uint8_t *p, uint32_t lpn, uint8_t id)
{
	for (uint32_t i = 0; i < PS; i++)
		p[i] = (uint8_t)(lpn * 31 + id * 7 + i % 251 + 1);
}

/* Logical byte of byte @off of logical page @lpn (lpn >= 1 in odd mode). */
static uint64_t lb(const struct env *e, uint32_t lpn, uint32_t off)
{
	return (uint64_t)lpn * PS + off - e->f->g.shift;
}

static int rd(struct env *e, uint32_t lpn, uint8_t *buf)
{
	return ftl_read(e->f, buf, lb(e, lpn, 0), PS);
}

static bool holds(struct env *e, uint32_t lpn, uint8_t id)
{
	uint8_t w[PS], r[PS];

	fill(w, lpn, id);
	return rd(e, lpn, r) == 0 && !memcmp(r, w, PS);
}

static bool wr(struct env *e, uint32_t lpn, uint8_t id)
{
	uint8_t w[PS];

	fill(w, lpn, id);
	return ftl_write(e->f, w, lb(e, lpn, 0), PS, 0) == 0;
}

/* A fresh engine (@faults: an ECC model, no errors of its own) with
 * logical pages [l0, l1] written (id 1) and flushed. */
static bool setup(struct env *e, enum ftl_align_mode mode, bool faults,
		  uint32_t l0, uint32_t l1)
{
	char err[200];

	memset(e, 0, sizeof(*e));
	e->c = (struct ftl_create_opts){ .size = SIZE, .align = mode,
		.pages_per_block = 16, .op_permille = 250 };
	if (faults) {
		T_CHECK(nand_fault_parse("bitflip=0,ecc=8,seed=1", &e->spec,
					 err, sizeof(err)) == 0, "%s", err);
		e->o.faults = &e->spec;
	}
	e->isz = ftl_test_image_size(&e->c);
	if (nand_backing_mem(e->isz, false, &e->b) ||
	    ftl_create_backing(e->b, &e->c)) {
		T_CHECK(0, "create");
		return false;
	}
	nand_mem_hold(e->b);            /* kept across closes */
	if (ftl_open_backing(e->b, &e->o, &e->f)) {
		T_CHECK(0, "open");
		return false;
	}
	for (uint32_t l = l0; l <= l1; l++)
		T_CHECK(wr(e, l, 1), "write %u", l);
	T_CHECK(ftl_flush(e->f) == 0, "flush");
	return true;
}

/* Close (a clean checkpoint), fsck the image it left, open it again. */
static int close_fsck(struct env *e)
{
	uint64_t sz;
	int fd, rc;

	nand_mem_hold(e->b);
	T_CHECK(ftl_close(e->f) == 0, "close");
	e->f = NULL;
	fd = open(img, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	T_CHECK(fd >= 0 && write(fd, nand_mem_bytes(e->b, &sz), e->isz) ==
		(ssize_t)e->isz, "store");
	if (fd >= 0)
		close(fd);
	rc = ftl_fsck(img, false, null, false);
	T_CHECK(ftl_open_backing(e->b, &e->o, &e->f) == 0, "reopen");
	return rc;
}

static void teardown(struct env *e)
{
	if (e->f)
		T_CHECK(ftl_close(e->f) == 0, "close");
	e->b->ops->destroy(e->b);
}

/* Flip one bit of logical page @lpn's data on the medium. */
static void damage(struct env *e, uint32_t lpn, uint32_t at)
{
	uint32_t ppn = ftl_map_get(e->f, lpn);
	uint64_t sz;

	T_CHECK(ppn < FTL_DAMAGED, "lpn %u mapped", lpn);
	nand_mem_bytes(e->b, &sz)[ftl_page_off(&e->f->g, ppn) + at] ^= 0x10;
}

enum op { W_HEAD, W_TAIL, W_INSIDE, D_HEAD, D_TAIL, Z_INSIDE, NOPS };
static const char *const op_name[NOPS] = { "write head", "write tail",
	"sub-page write", "discard head", "discard tail", "write-zeroes" };

/*
 * Op @op covering logical page 10 in part (and page 11 or 9 whole, for
 * the head / tail cases): its result.
 */
static int partial(struct env *e, enum op op)
{
	static uint8_t w[2 * PS];

	memset(w, 0xa5, sizeof(w));
	switch (op) {
	case W_HEAD:            /* page 10 from byte 1024 on, page 11 */
		return ftl_write(e->f, w, lb(e, 10, 1024), 2 * PS - 1024, 0);
	case W_TAIL:            /* page 9, page 10 up to byte 512 */
		return ftl_write(e->f, w, lb(e, 9, 0), PS + 512, 0);
	case W_INSIDE:
		return ftl_write(e->f, w, lb(e, 10, 1024), 512, 0);
	case D_HEAD:
		return ftl_discard(e->f, lb(e, 10, 512), 2 * PS - 512);
	case D_TAIL:
		return ftl_discard(e->f, lb(e, 9, 0), PS + 1024);
	case Z_INSIDE:
		return ftl_write_zeroes(e->f, lb(e, 10, 512), 1024);
	default:
		return -EINVAL;
	}
}

/* A page whose data fails its CRC, covered in part by @op, then whole. */
static void rmw_damaged(enum ftl_align_mode mode, enum op op)
{
	const char *m = mode == FTL_ALIGN_ODD ? "odd" : "1m", *n = op_name[op];
	struct ftl_stats s0, s1;
	uint8_t r[PS], z[PS];
	struct env e;
	int rc;

	if (!setup(&e, mode, false, 9, 11))
		return;
	damage(&e, 10, 100);
	T_CHECK(rd(&e, 10, r) == -EIO, "%s: the damaged page reads EIO", m);
	ftl_stats_get(e.f, &s0);
	rc = partial(&e, op);
	ftl_stats_get(e.f, &s1);
	T_CHECK(rc == -EIO, "%s %s over the damaged page: %d, want EIO", m, n,
		rc);
	T_EQ_U64(s1.media_errors - s0.media_errors, 1, "%s %s: a media error",
		 m, n);
	T_CHECK(s1.read_crc_errors > s0.read_crc_errors,
		"%s %s: read_crc_errors", m, n);
	rc = rd(&e, 10, r);
	T_CHECK(rc == -EIO, "%s %s: the page reads %d after it%s", m, n, rc,
		rc ? "" : " (the damage laundered into good data)");
	T_CHECK(holds(&e, 9, 1) && holds(&e, 11, 1),
		"%s %s: the whole pages of the failed request unchanged", m, n);
	rc = close_fsck(&e);
	T_CHECK(rc == 4, "%s %s: fsck after the failed request %d, want 4", m,
		n, rc);
	/* a request covering the whole page replaces it */
	if (op >= D_HEAD) {
		T_CHECK(ftl_discard(e.f, lb(&e, 10, 0), PS) == 0,
			"%s %s: whole-page discard", m, n);
		memset(z, 0, sizeof(z));
		T_CHECK(rd(&e, 10, r) == 0 && !memcmp(r, z, PS),
			"%s %s: reads zeroes after the whole-page discard", m, n);
	} else {
		T_CHECK(wr(&e, 10, 2), "%s %s: whole-page write", m, n);
		T_CHECK(holds(&e, 10, 2), "%s %s: reads the rewrite", m, n);
	}
	rc = close_fsck(&e);
	T_CHECK(rc == 0, "%s %s: fsck after the whole-page rewrite %d, want 0",
		m, n, rc);
	T_CHECK(holds(&e, 9, 1) && holds(&e, 11, 1), "%s %s: neighbours", m, n);
	teardown(&e);
}

/*
 * A logical page recovery found damaged (FTL_DAMAGED): flushed, newer
 * than the checkpoint, its data bit-flipped before the next open.
 */
static void rmw_lost(enum ftl_align_mode mode)
{
	const char *m = mode == FTL_ALIGN_ODD ? "odd" : "1m";
	uint8_t r[PS], *copy;
	uint64_t sz, off;
	struct env e;
	int rc;

	if (!setup(&e, mode, false, 3, 5))
		return;
	/* the next program records the flush: one more write */
	T_CHECK(wr(&e, 20, 1) && ftl_flush(e.f) == 0, "flush");
	off = ftl_page_off(&e.f->g, ftl_map_get(e.f, 4)) + 100;
	copy = malloc(e.isz);
	if (!copy) {
		T_CHECK(0, "malloc");
		return;
	}
	memcpy(copy, nand_mem_bytes(e.b, &sz), e.isz);
	nand_mem_hold(e.b);
	ftl_abandon(e.f);               /* the crash */
	copy[off] ^= 0x10;
	nand_mem_load(e.b, copy);
	free(copy);
	T_CHECK(ftl_open_backing(e.b, &e.o, &e.f) == 0, "%s: reopen", m);
	if (!e.f)
		return;
	T_CHECK(ftl_map_get(e.f, 4) == FTL_DAMAGED,
		"%s: recovery marks lpn 4 damaged (map %#x)", m,
		ftl_map_get(e.f, 4));
	T_CHECK(rd(&e, 4, r) == -EIO, "%s: the lost page reads EIO", m);
	memset(r, 0xa5, sizeof(r));
	rc = ftl_write(e.f, r, lb(&e, 4, 1024), 512, 0);
	T_CHECK(rc == -EIO, "%s: sub-page write over a lost page: %d", m, rc);
	rc = ftl_write(e.f, r, lb(&e, 3, 0), PS + 512, 0);
	T_CHECK(rc == -EIO, "%s: write ending in a lost page: %d", m, rc);
	rc = ftl_discard(e.f, lb(&e, 4, 512), PS);
	T_CHECK(rc == -EIO, "%s: discard starting in a lost page: %d", m, rc);
	T_CHECK(ftl_map_get(e.f, 4) == FTL_DAMAGED && rd(&e, 4, r) == -EIO,
		"%s: still lost, no zeroes merged", m);
	T_CHECK(holds(&e, 3, 1) && holds(&e, 5, 1), "%s: neighbours", m);
	rc = close_fsck(&e);
	T_CHECK(rc == 4, "%s: fsck of the lost page %d, want 4", m, rc);
	T_CHECK(wr(&e, 4, 2) && holds(&e, 4, 2), "%s: a whole-page write", m);
	rc = close_fsck(&e);
	T_CHECK(rc == 0, "%s: fsck after the rewrite %d, want 0", m, rc);
	teardown(&e);
}

/* After a copy moved damaged logical page 10 (from @ppn): the copy still
 * fails its CRC, every other page reads its data, fsck reports it. */
static void copy_checked(struct env *e, uint32_t ppn, const char *what)
{
	uint8_t r[PS];
	int rc, bad = 0;

	T_CHECK(ftl_map_get(e->f, 10) != ppn &&
		ftl_map_get(e->f, 10) < FTL_DAMAGED,
		"%s: the page was moved", what);
	rc = rd(e, 10, r);
	T_CHECK(rc == -EIO, "%s: the moved copy reads %d%s", what, rc,
		rc ? "" : " (the damage laundered into good data)");
	for (uint32_t l = 1; l <= 48; l++)
		bad += l != 10 && !holds(e, l, 1);
	T_CHECK(bad == 0, "%s: %d other pages read wrong", what, bad);
	rc = close_fsck(e);
	T_CHECK(rc == 4, "%s: fsck after the move %d, want 4", what, rc);
}

/* A scrub rewrite (an ECC model: 7 corrected bits of 8 queue the page)
 * of a page whose data also holds a bit the ECC missed. */
static void scrub_damaged(enum ftl_align_mode mode)
{
	const char *m = mode == FTL_ALIGN_ODD ? "odd scrub" : "1m scrub";
	struct ftl_stats st;
	uint8_t r[PS];
	struct env e;
	uint32_t ppn;

	if (!setup(&e, mode, true, 1, 48))
		return;
	ppn = ftl_map_get(e.f, 10);
	T_CHECK(nand_fault_inject_bits(e.f->nand, ppn, 0, 7) == 0, "inject");
	damage(&e, 10, 1500);
	T_CHECK(rd(&e, 10, r) == -EIO, "%s: the damaged page reads EIO", m);
	T_CHECK(wr(&e, 1, 1), "%s: a write runs the scrub", m);
	ftl_stats_get(e.f, &st);
	T_EQ_U64(st.scrubbed_pages, 1, "%s: scrubbed", m);
	copy_checked(&e, ppn, m);
	teardown(&e);
}

/* The move off a retired block (ftl_retire_move -> ftl_gc_evacuate, as GC
 * and static WL): with an ECC model page by page, else one block run. */
static void retire_damaged(enum ftl_align_mode mode, bool faults)
{
	char m[64];
	struct ftl_stats st;
	struct env e;
	uint32_t ppn;
	int rc;

	snprintf(m, sizeof(m), "%s retire%s", mode == FTL_ALIGN_ODD ? "odd" :
		 "1m", faults ? " (ECC model)" : "");
	if (!setup(&e, mode, faults, 1, 48))
		return;
	ppn = ftl_map_get(e.f, 10);
	damage(&e, 10, 3000);
	ftl_lock(&e.f->lock);
	rc = ftl_retire_block(e.f, ppn / e.f->g.ppb, "test");
	ftl_unlock(&e.f->lock);
	T_CHECK(rc == 0, "%s: retire the block: %d", m, rc);
	T_CHECK(wr(&e, 1, 1), "%s: a write moves its pages", m);
	ftl_stats_get(e.f, &st);
	T_CHECK(st.bad_relocations > 0, "%s: pages moved", m);
	copy_checked(&e, ppn, m);
	teardown(&e);
}

int main(void)
{
	static const enum ftl_align_mode modes[2] = { FTL_ALIGN_1M,
						       FTL_ALIGN_ODD };

	null = fopen("/dev/null", "w");
	snprintf(img, sizeof(img), "%s/octant-rmw-crc-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	for (int i = 0; i < 2; i++) {
		for (int op = 0; op < NOPS; op++)
			rmw_damaged(modes[i], (enum op)op);
		rmw_lost(modes[i]);
		scrub_damaged(modes[i]);
		retire_damaged(modes[i], false);
		retire_damaged(modes[i], true);
	}
	unlink(img);
	if (null)
		fclose(null);
	return t_result();
}
