/* SPDX-License-Identifier: MIT */
/*
 * The bad-block table on the medium (docs/image-format.md): every header
 * field and entry is checked (a damaged copy is ignored, the other one is
 * used; both damaged: open refuses with EBADMSG, fsck says so and
 * --repair rebuilds it from the checkpoint); the newest generation wins,
 * a torn update falls back to the older copy; without a table (all zero)
 * the checkpoint's bad blocks are taken over; a read-only flag the
 * table's count does not justify is a problem fsck --repair clears.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): retires blocks in use
 * (ftl_retire_block) to use the spares up, reads the table (f->bb).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"
#include "test.h"

static struct ftl_create_opts c = { .size = 4u << 20, .align = FTL_ALIGN_ODD,
	.pages_per_block = 16, .op_permille = 300, .bad_block_rate = 0.1,
	.bad_block_seed = 3 };
static uint64_t isz;
static uint8_t *base;

/* Open a copy of @img; the factory bad-block count or -errno. */
static int open_count(const uint8_t *img, struct ftl_stats *st)
{
	struct nand_backing *b;
	struct ftl_open_opts o = { .readonly = true };
	struct ftl *f = NULL;
	int r;

	if (nand_backing_mem(isz, false, &b))
		return -ENOMEM;
	nand_mem_load(b, img);
	r = ftl_open_backing(b, &o, &f);
	if (r) {
		b->ops->destroy(b);
		return r;
	}
	ftl_stats_get(f, st);
	ftl_close(f);
	return (int)st->bad_blocks_factory;
}

static void recrc(uint8_t *p)
{
	struct ftl_bbt_hdr *h = (struct ftl_bbt_hdr *)p;

	h->crc = 0;
	h->crc = oct_crc32c(oct_crc32c(0, h, sizeof(*h)), p + sizeof(*h),
			    (size_t)(h->count < FTL_BBT_MAX ? h->count :
				     FTL_BBT_MAX) * 4);
}

static int fsck_img(const uint8_t *img, char *out, size_t len)
{
	char path[] = "/tmp/octant-ftl-bbt-XXXXXX";
	FILE *o = fmemopen(out, len, "w");
	int fd = mkstemp(path), r;

	if (fd < 0 || !o || write(fd, img, isz) != (ssize_t)isz)
		return -EIO;
	close(fd);
	r = ftl_fsck(path, false, o, false);
	fclose(o);
	unlink(path);
	return r;
}

/* A copy of @img at a temporary path (written to @path). */
static void img_file(const uint8_t *img, char *path)
{
	int fd = mkstemp(path);

	T_CHECK(fd >= 0 && write(fd, img, isz) == (ssize_t)isz, "temp image");
	close(fd);
}

/* fsck (--repair) of @path, its report in @out (@len bytes). */
static int fsck_out(const char *path, bool repair, char *out, size_t len)
{
	FILE *o;
	int r;

	memset(out, 0, len);
	o = fmemopen(out, len, "w");
	r = ftl_fsck(path, repair, o, false);
	fclose(o);
	return r;
}

/* One 4 KiB write to the image at @path (read-write open): its result. */
static int write_one(const char *path)
{
	struct ftl_open_opts o = { 0 };
	static uint8_t buf[4096];
	struct ftl *f = NULL;
	int r = ftl_open(path, &o, &f), c;

	if (r)
		return r;
	r = ftl_write(f, buf, 0, sizeof(buf), 0);
	c = ftl_close(f);
	return r ? r : c;
}

/*
 * The read-only flag is justified only by more bad blocks than the spares
 * absorb (the table's own count and limit).  Set with fewer (what 3c48226
 * wrote when a full backing failed GC): the engine keeps it (EROFS), fsck
 * reports it as a problem (exit 4) and --repair clears it (exit 1, said
 * in one line), then the image takes writes.  Set with more: a note, and
 * --repair leaves it.
 */
static void ro_flag(uint8_t *img)
{
	char path[] = "/tmp/octant-ftl-bbt-XXXXXX", out[8192];
	int r;

	memcpy(img, base, isz);
	for (int cp = 0; cp < 2; cp++) {
		uint8_t *p = img + (cp ? FTL_BBT_OFF1 : FTL_BBT_OFF0);

		((struct ftl_bbt_hdr *)p)->flags = FTL_BBT_RDONLY;
		recrc(p);
	}
	img_file(img, path);
	T_CHECK(write_one(path) == -EROFS, "flag honoured: writes EROFS");
	r = fsck_out(path, false, out, sizeof(out));
	T_CHECK(r == 4 && strstr(out, "read-only flag set with") &&
		strstr(out, "not justified"), "fsck, unjustified flag: %d: %s",
		r, out);
	r = fsck_out(path, true, out, sizeof(out));
	T_CHECK(r == 1 && strstr(out, "read-only flag of the bad-block table "
		"cleared"), "fsck --repair: %d: %s", r, out);
	r = fsck_out(path, false, out, sizeof(out));
	T_CHECK(r == 0, "fsck after repair: %d: %s", r, out);
	r = write_one(path);
	T_CHECK(r == 0, "repaired image takes writes: %d", r);
	unlink(path);

	/* justified: as many grown entries as it takes past the limit */
	memcpy(img, base, isz);
	for (int cp = 0; cp < 2; cp++) {
		uint8_t *p = img + (cp ? FTL_BBT_OFF1 : FTL_BBT_OFF0);
		struct ftl_bbt_hdr *h = (struct ftl_bbt_hdr *)p;
		uint32_t *e = (uint32_t *)(p + sizeof(*h));

		for (uint32_t b = h->nblocks - 1; h->count <= h->limit; b--) {
			bool have = false;

			for (uint32_t i = 0; i < h->count; i++)
				have |= (e[i] & ~FTL_BBT_GROWN) == b;
			if (!have)
				e[h->count++] = b | FTL_BBT_GROWN;
		}
		h->flags = FTL_BBT_RDONLY;
		recrc(p);
	}
	strcpy(path, "/tmp/octant-ftl-bbt-XXXXXX");
	img_file(img, path);
	T_CHECK(write_one(path) == -EROFS, "justified flag: writes EROFS");
	r = fsck_out(path, true, out, sizeof(out));
	T_CHECK(r == 0 && strstr(out, "spare blocks used up") &&
		!strstr(out, "not justified"), "fsck, justified flag: %d: %s",
		r, out);
	T_CHECK(write_one(path) == -EROFS, "justified flag kept");
	unlink(path);
}

/*
 * Random fields of the table, crc recomputed (one copy or both; 150
 * rounds, long: up to 3000 while the budget lasts, test.h): the open
 * refuses (EBADMSG) or takes it, a
 * read-write open then writes and closes, fsck answers 0 or 4 and a
 * repair ends clean; nothing crashes (the sanitizer build checks memory).
 * Seeded: OCTANT_SEED.
 */
static void random_fields(uint8_t *img)
{
	char path[] = "/tmp/octant-ftl-bbt-XXXXXX", out[8192];
	uint64_t rs = t_seed() | 1;
	int rounds = t_long() ? 3000 : 150, took = 0, k;

	img_file(base, path);
	for (k = 0; k < rounds && t_long_more(k, 150); k++) {
		uint64_t x = t_xorshift(&rs);
		int both = x & 1, r, w;
		uint32_t at = (uint32_t)(x >> 8) % (sizeof(struct ftl_bbt_hdr) + 64);
		uint32_t v = (uint32_t)t_xorshift(&rs);
		int fd;

		memcpy(img, base, isz);
		for (int cp = 0; cp < 1 + both; cp++) {
			uint8_t *p = img + (cp ? FTL_BBT_OFF1 : FTL_BBT_OFF0);

			/* a small value, a block number, or any 32 bits */
			v = x >> 60 < 6 ? v % 4 : x >> 60 < 11 ? v % 96 : v;
			memcpy(p + at - at % 4, &v, 4);
			if ((x >> 40) % 8)      /* mostly: crc fixed */
				recrc(p);
		}
		fd = open(path, O_WRONLY);
		T_CHECK(fd >= 0 && pwrite(fd, img, isz, 0) == (ssize_t)isz, "image");
		close(fd);
		w = write_one(path);
		took += !w;
		T_CHECK(w == 0 || w == -EBADMSG || w == -EROFS,
			"round %d (byte %u = %u, %s): open + write %d", k, at, v,
			both ? "both" : "one copy", w);
		r = fsck_out(path, false, out, sizeof(out));
		T_CHECK(r == 0 || r == 4, "round %d: fsck %d", k, r);
		if (r == 0) {   /* clean: read-only only with the spares gone */
			struct ftl_stats st = { 0 };

			if (open_count(img, &st) >= 0 && st.read_only)
				T_CHECK(st.bad_blocks_factory + st.bad_blocks_grown >
					st.bad_block_limit, "round %d (byte %u = "
					"%u): fsck clean, read-only with %llu bad "
					"blocks of %llu", k, at, v,
					(unsigned long long)(st.bad_blocks_factory +
							     st.bad_blocks_grown),
					(unsigned long long)st.bad_block_limit);
		}
		if (r == 4) {
			r = fsck_out(path, true, out, sizeof(out));
			T_CHECK(r == 1, "round %d: repair %d: %s", k, r, out);
			r = fsck_out(path, false, out, sizeof(out));
			T_CHECK(r == 0, "round %d: fsck after repair %d: %s", k,
				r, out);
		}
		if (t_failures)
			break;
	}
	t_long_covered("rounds of random table fields", k, rounds);
	fprintf(stderr, "random table fields: %d rounds, %d took a write\n",
		k, took);
	unlink(path);
}

static void hook(void *ctx)
{
	(*(int *)ctx)++;
}

/* ftl_on_read_only: called once, when retiring blocks uses up the spares
 * (not before); on an engine worn out already it says so and keeps
 * nothing. */
static void ro_hook(uint8_t *img)
{
	char path[] = "/tmp/octant-ftl-bbt-XXXXXX";
	struct ftl_open_opts o = { 0 };
	struct ftl *f = NULL;
	int calls = 0, r;
	uint32_t lim = 0, b;

	memcpy(img, base, isz);
	img_file(img, path);
	r = ftl_open(path, &o, &f);
	T_CHECK(r == 0, "hook: open %d", r);
	if (r)
		return;
	T_CHECK(!ftl_on_read_only(f, hook, &calls), "hook: not worn out yet");
	ftl_lock(&f->lock);
	lim = f->bb.limit;
	for (b = f->g.nblocks - 1; f->bb.n <= lim && b >= f->g.ckpt_blocks; b--) {
		if (ftl_bb_is(f, b, NULL))
			continue;
		T_EQ_U64(calls, 0, "hook: called at %u of %u bad blocks", f->bb.n, lim);
		ftl_retire_block(f, b, "test");
	}
	ftl_unlock(&f->lock);
	T_EQ_U64(calls, 1, "hook: calls once the spares are used up");
	T_CHECK(ftl_read_only(f), "hook: ftl_read_only");
	T_CHECK(ftl_close(f) == 0, "hook: close");
	r = ftl_open(path, &o, &f);
	T_CHECK(r == 0, "hook: reopen %d", r);
	if (!r) {
		T_CHECK(ftl_on_read_only(f, hook, &calls), "hook: worn out at open");
		ftl_close(f);
	}
	T_EQ_U64(calls, 1, "hook: no more calls");
	unlink(path);
}

int main(void)
{
	struct nand_backing *b;
	struct ftl_stats st;
	const struct ftl_bbt_hdr *h;
	uint8_t *img;
	char out[4096];
	int n, r;

	isz = ftl_test_image_size(&c);
	img = malloc(isz);
	T_CHECK(nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	base = malloc(isz);
	memcpy(base, nand_mem_bytes(b, &isz), isz);
	b->ops->destroy(b);
	h = (const struct ftl_bbt_hdr *)(base + FTL_BBT_OFF0);
	n = open_count(base, &st);
	T_CHECK(n > 0 && (uint32_t)n == h->count, "factory bad blocks: %d", n);
	T_CHECK(!memcmp(base + FTL_BBT_OFF0, base + FTL_BBT_OFF1, FTL_BBT_BYTES),
		"create writes two equal copies");

	/* every byte of header and entries, in one copy, then in both */
	for (uint32_t i = 0; i < sizeof(*h) + h->count * 4; i++) {
		memcpy(img, base, isz);
		img[FTL_BBT_OFF0 + i] ^= 0x41;
		r = open_count(img, &st);
		T_CHECK(r == n, "byte %u of copy 0 damaged: %d", i, r);
		img[FTL_BBT_OFF1 + i] ^= 0x41;
		r = open_count(img, &st);
		T_CHECK(r == -EBADMSG, "byte %u of both copies damaged: %d", i, r);
	}
	/* fields against each other, crc recomputed: still refused */
	{
		static const struct { const char *what; size_t off; uint32_t v; } m[] = {
			{ "version", 8, 2 }, { "hdr_size", 12, 60 },
			{ "gen 0", 16, 0 }, { "gen 2^32", 20, 1 },
			{ "nblocks", 24, 7 },
			{ "count too big", 28, 10000 }, { "limit", 32, 1 },
			{ "flags", 36, 2 }, { "pad", 56, 1 },
		};
		for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
			memcpy(img, base, isz);
			for (int cp = 0; cp < 2; cp++) {
				uint8_t *p = img + (cp ? FTL_BBT_OFF1 : FTL_BBT_OFF0);
				memcpy(p + m[k].off, &m[k].v, 4);
				if (!strcmp(m[k].what, "gen 0"))
					memset(p + 20, 0, 4);
				if (strcmp(m[k].what, "count too big"))
					recrc(p);
			}
			r = open_count(img, &st);
			T_CHECK(r == -EBADMSG, "%s (crc ok): %d", m[k].what, r);
		}
		/* an entry in the checkpoint area, out of range, twice */
		for (int k = 0; k < 3; k++) {
			memcpy(img, base, isz);
			for (int cp = 0; cp < 2; cp++) {
				uint8_t *p = img + (cp ? FTL_BBT_OFF1 : FTL_BBT_OFF0);
				uint32_t *e = (uint32_t *)(p + sizeof(*h));
				e[0] = k == 0 ? 1 : k == 1 ? 1u << 30 : e[1];
				recrc(p);
			}
			T_CHECK(h->count >= 2 || k < 2, "two entries");
			r = open_count(img, &st);
			T_CHECK(r == -EBADMSG, "bad entry %d (crc ok): %d", k, r);
		}
	}
	/* both damaged: fsck says so, exit 4 */
	memcpy(img, base, isz);
	img[FTL_BBT_OFF0 + 40] ^= 1;
	img[FTL_BBT_OFF1 + 40] ^= 1;
	memset(out, 0, sizeof(out));
	r = fsck_img(img, out, sizeof(out));
	T_CHECK(r == 4 && strstr(out, "bad-block table: no valid copy"),
		"fsck: %d %s", r, out);

	/* the newest generation wins; a torn newest falls back to the older */
	memcpy(img, base, isz);
	{
		struct ftl_bbt_hdr *h1 = (struct ftl_bbt_hdr *)(img + FTL_BBT_OFF1);
		uint32_t *e = (uint32_t *)(img + FTL_BBT_OFF1 + sizeof(*h1));

		h1->gen = 2;
		uint32_t nb = h1->nblocks - 1;          /* a data block ... */

		for (uint32_t i = 0; i < h1->count; i++)
			if (e[i] == nb) {               /* ... not yet listed */
				nb--;
				i = (uint32_t)-1;
			}
		e[h1->count++] = FTL_BBT_GROWN | nb;
		recrc(img + FTL_BBT_OFF1);
		r = open_count(img, &st);
		T_CHECK(r == n && st.bad_blocks_grown == 1, "gen 2 used: %d %llu",
			r, (unsigned long long)st.bad_blocks_grown);
		img[FTL_BBT_OFF1 + sizeof(*h1) + 2] ^= 0x10;   /* torn */
		r = open_count(img, &st);
		T_CHECK(r == n && st.bad_blocks_grown == 0, "gen 1 after a torn "
			"update: %d", r);
	}
	/* no table at all (an image from before it existed, or reset by
	 * fsck --repair): the checkpoint's bad blocks are taken over */
	memcpy(img, base, isz);
	memset(img + FTL_BBT_OFF0, 0, FTL_BBT_BYTES);
	memset(img + FTL_BBT_OFF1, 0, FTL_BBT_BYTES);
	r = open_count(img, &st);
	T_CHECK(r == 0 && st.bad_blocks_grown == (uint64_t)n,
		"no table: %d factory, %llu from the checkpoint", r,
		(unsigned long long)st.bad_blocks_grown);

	/* both copies damaged: fsck --repair rebuilds it, then clean */
	memcpy(img, base, isz);
	img[FTL_BBT_OFF0 + 40] ^= 1;
	img[FTL_BBT_OFF1 + 40] ^= 1;
	{
		char path[] = "/tmp/octant-ftl-bbt-XXXXXX";
		int fd = mkstemp(path);
		FILE *o = fmemopen(out, sizeof(out), "w");

		T_CHECK(fd >= 0 && o && write(fd, img, isz) == (ssize_t)isz,
			"temp image");
		close(fd);
		r = ftl_fsck(path, true, o, false);
		T_CHECK(r == 1, "fsck --repair: %d", r);
		rewind(o);
		r = ftl_fsck(path, false, o, false);
		fclose(o);
		T_CHECK(r == 0, "fsck after repair: %d: %s", r, out);
		fd = open(path, O_RDONLY);
		T_CHECK(fd >= 0 && read(fd, img, isz) == (ssize_t)isz, "read");
		close(fd);
		unlink(path);
		r = open_count(img, &st);
		T_CHECK(r == 0 && st.bad_blocks_grown == (uint64_t)n,
			"repaired: %d, %llu", r,
			(unsigned long long)st.bad_blocks_grown);
	}
	ro_flag(img);
	ro_hook(img);
	random_fields(img);
	free(img);
	free(base);
	return t_result();
}
