/* SPDX-License-Identifier: MIT */
/*
 * Delta checkpoints (OCT_SB_F_CKPT_DELTA, ftl_ckpt_write.c): after a base, a
 * checkpoint writes only the map and block-table entries that changed.
 * 1. Scale: the same 256 MiB written sequentially (1 MiB writes) to a
 *    32 MiB and a 1 GiB image, each written full first: checkpoint bytes
 *    per host GiB (ckpt_bytes counter) on the big one at most 1.2x the
 *    small one's, and roll-forward bounded (seq - ckpt_seq never past
 *    2 x FTL_CKPT_DELTA_PAGES) on both.  Before: every checkpoint wrote
 *    the whole map, 2x the bytes per host GiB on the big image.
 * 2. Power cut after each backing write of a delta record (the slot holds
 *    a base and a delta before it), unsynced writes kept as a prefix or a
 *    subset with one torn (seeded): every flushed sector reads back.
 * 3. A damaged data page of a delta record followed by another record:
 *    fsck reports a damaged checkpoint (exit 4), the open falls back to
 *    the record before and rolls forward: every flushed sector reads back.
 *    The same for a record's header (then a clean close), and for the
 *    newest slot's base header with records after it.
 * 4. A slot whose delta room is used up: the next checkpoint is a base in
 *    the next slot; a clean reopen reads everything.
 * Ranges and scattered pages (single map entries: pairs) are written.
 * Random: a new seed per run (crash images), printed; OCTANT_SEED replays.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): checkpoint records
 * written on demand and their generation, delta index and marker (f->ck).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"
#include "ftl-tagged.h"

static uint64_t seed0;

/* Every @stride-th page from @lo (single map entries in a delta: pairs). */
static void write_scattered(struct ftl *f, uint64_t lo, uint64_t n,
			    uint64_t stride, uint64_t tag)
{
	static uint8_t buf[4096];

	for (uint64_t l = lo; l < lo + n * stride && l < TT_SPAN; l += stride) {
		tt_stamp(buf, l, tag);
		T_CHECK(ftl_write(f, buf, l * 4096, 4096, 0) == 0, "write %llu",
			(unsigned long long)l);
		tt_tags[l] = tag;
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
}

static int ckpt(struct ftl *f)
{
	int r;

	ftl_lock(&f->lock);
	r = ftl_ckpt_write(f, false);
	ftl_unlock(&f->lock);
	T_CHECK(r == 0, "checkpoint: %d", r);
	return r;
}

/* ---- 1. scale ---------------------------------------------------------- */

struct scale {
	double mib_per_gib;
	uint64_t max_rf;
};

static void scale_run(const char *img, uint64_t size, uint64_t host,
		      struct scale *res)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
		.force = true };
	static uint8_t mb[1 << 20];
	struct ftl_stats a, b;
	struct ftl *f = NULL;
	int r;

	unlink(img);
	r = ftl_create(img, &c);
	if (!r)
		r = ftl_open(img, NULL, &f);
	T_CHECK(r == 0, "create/open %s: %d", img, r);
	if (r)
		return;
	for (uint64_t o = 0; o < size && !r; o += sizeof(mb))
		r = ftl_write(f, mb, o, sizeof(mb), 0);
	T_CHECK(r == 0 && ftl_flush(f) == 0, "fill: %d", r);
	ftl_stats_get(f, &a);
	res->max_rf = 0;
	for (uint64_t o = 0; o < host && !r; o += sizeof(mb)) {
		mb[0] = (uint8_t)(o >> 20);
		r = ftl_write(f, mb, o % size, sizeof(mb), 0);
		if (f->log.seq - f->ck.seq > res->max_rf)
			res->max_rf = f->log.seq - f->ck.seq;
	}
	T_CHECK(r == 0 && ftl_flush(f) == 0, "write: %d", r);
	ftl_stats_get(f, &b);
	res->mib_per_gib = (double)(b.ckpt_bytes - a.ckpt_bytes) /
			   ((double)host / (1u << 30)) / 1048576.0;
	ftl_abandon(f);
	unlink(img);
}

static void scale(void)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	uint64_t host = 256ull << 20, bound = 2ull * FTL_CKPT_DELTA_PAGES;
	struct scale s = { 0 }, l = { 0 };
	char img[512];

	snprintf(img, sizeof(img), "%s/ftl-ckpt-delta-%d.img", dir, (int)getpid());
	scale_run(img, 32ull << 20, host, &s);
	scale_run(img, 1ull << 30, host, &l);
	fprintf(stderr, "checkpoint MiB per host GiB (256 MiB sequential on a "
		"full image): 32 MiB %.2f, 1 GiB %.2f; roll-forward at most "
		"%llu / %llu pages\n", s.mib_per_gib, l.mib_per_gib,
		(unsigned long long)s.max_rf, (unsigned long long)l.max_rf);
	T_CHECK(s.mib_per_gib > 0, "no checkpoint written on 32 MiB");
	T_CHECK(l.mib_per_gib <= 1.2 * s.mib_per_gib,
		"checkpoint bytes grow with the device: %.2f vs %.2f MiB/GiB",
		l.mib_per_gib, s.mib_per_gib);
	T_CHECK(s.max_rf <= bound && l.max_rf <= bound,
		"roll-forward not bounded: %llu / %llu pages (bound %llu)",
		(unsigned long long)s.max_rf, (unsigned long long)l.max_rf,
		(unsigned long long)bound);
}

/* ---- 2. power cuts inside a delta record ------------------------------- */

static struct nand_backing *pb;
static uint8_t *crash_img;
static uint64_t isz;
static int cuts, cut_fail;
static unsigned cut_at;

static void at_cut(void *ctx)
{
	(void)ctx;
	for (uint64_t k = 0; k < 6 && !cut_fail; k++) {
		uint64_t seed = seed0 + cut_at * 16 + k;
		struct nand_backing *m;
		struct ftl *g = NULL;
		char what[96];
		int r;

		nand_mem_crash_image(pb, seed, k != 0, crash_img);
		if (nand_backing_mem(isz, false, &m))
			return;
		nand_mem_load(m, crash_img);
		r = ftl_open_backing(m, NULL, &g);
		snprintf(what, sizeof(what), "cut after write %u of the delta, "
			 "crash seed %llu", cut_at, (unsigned long long)seed);
		T_CHECK(r == 0, "%s: open: %d", what, r);
		if (!r && tt_verify(g, what))
			cut_fail = 1;
		if (!r)
			ftl_abandon(g);
		else
			m->ops->destroy(m);
		cuts++;
	}
}

static void power_cuts(void)
{
	struct ftl_create_opts c = { .size = 32u << 20, .align = FTL_ALIGN_1M,
		.pages_per_block = 4 };
	unsigned last = 0;

	isz = ftl_test_image_size(&c);
	crash_img = malloc(isz);
	for (cut_at = 1; cut_at < 200 && !cut_fail; cut_at++) {
		struct nand_backing *b;
		struct ftl *f = tt_create(&b, c.size, 4, true);
		uint32_t didx;
		int before = cuts;

		memset(tt_tags, 0, sizeof(tt_tags));
		pb = b;
		tt_write_range(f, 0, 300, 1);
		write_scattered(f, 1500, 40, 3, 1);
		(void)ckpt(f);
		tt_write_range(f, 100, 1200, 2);  /* 2 map pages, many blocks */
		tt_write_range(f, 3000, 50, 2);
		write_scattered(f, 1501, 40, 3, 2);
		didx = f->ck.didx;
		nand_mem_set_trigger(b, cut_at, at_cut, NULL);
		(void)ckpt(f);
		nand_mem_set_trigger(b, 0, NULL, NULL);
		T_CHECK(f->ck.didx == didx + 1 && didx >= 1,
			"not a delta after a delta: %u, %u", didx, f->ck.didx);
		ftl_abandon(f);
		b->ops->destroy(b);
		if (cuts == before)
			break;          /* the record had fewer writes */
		last = cut_at;
	}
	fprintf(stderr, "%d crash images, cuts after each of the delta "
		"record's %u backing writes\n", cuts, last);
	T_CHECK(last >= 3, "too few writes inside the delta record: %u", last);
	free(crash_img);
}

/* ---- 3. damaged records ------------------------------------------------ */

static int fsck_img(struct nand_backing *b, const char *what)
{
	char path[512];
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	uint64_t n;
	uint8_t *img = nand_mem_bytes(b, &n);
	FILE *fp, *null = fopen("/dev/null", "w");
	int r;

	snprintf(path, sizeof(path), "%s/ftl-ckpt-delta-fsck-%d.img", dir,
		 (int)getpid());
	fp = fopen(path, "w");
	T_CHECK(fp && fwrite(img, 1, n, fp) == n, "%s: save image", what);
	if (fp)
		fclose(fp);
	r = ftl_fsck(path, false, null, false);
	unlink(path);
	fclose(null);
	return r;
}

/* Slot page @idx of the checkpoint chain of @gen: flip a data byte. */
static void flip(struct nand_backing *b, const struct ftl_geom *geo,
		 uint64_t gen, uint32_t idx)
{
	uint64_t n, ppn = (gen % FTL_CKPT_SLOTS) * geo->slot_blocks * geo->ppb +
			  idx;
	uint8_t *img = nand_mem_bytes(b, &n);

	img[ftl_page_off(geo, ppn) + 100] ^= 0x5a;
}

static void damaged(bool clean)
{
	struct nand_backing *b;
	struct ftl *f = tt_create(&b, 32u << 20, 4, false), *g = NULL;
	struct ftl_geom geo = f->g;
	uint32_t first, hdr;
	uint64_t gen;
	const char *what = clean ? "a delta's header damaged, clean close" :
				   "a delta's data page damaged";
	int r;

	memset(tt_tags, 0, sizeof(tt_tags));
	tt_write_range(f, 0, 500, 1);
	(void)ckpt(f);
	first = f->ck.mark - 1;         /* header of this record */
	tt_write_range(f, 200, 600, 2);
	(void)ckpt(f);
	hdr = f->ck.mark - 1;
	tt_write_range(f, 1000, 300, 3);
	gen = f->ck.gen;
	T_CHECK(f->ck.didx >= 2, "%s: deltas %u", what, f->ck.didx);
	if (clean)
		T_CHECK(ftl_close(f) == 0, "close");   /* a third, clean */
	else
		ftl_abandon(f);
	/* a data page of the second record (right after the first one's
	 * marker page), or the second record's header: a record follows */
	flip(b, &geo, gen, clean ? hdr : first + 2);
	r = fsck_img(b, what);
	T_CHECK(r == 4, "%s: fsck %d (want 4: a damaged checkpoint)", what, r);
	g = tt_reopen_rolled(b, what);
	if (g) {
		ftl_close(g);
	}
	b->ops->destroy(b);
}

/*
 * The newest slot's base header damaged while delta records follow it
 * (so the base was whole, not cut by a crash), the data written since its
 * base reaching past the previous slot's seq + seq_gap: fsck reports a
 * damaged checkpoint, the open rolls forward from the previous slot with
 * no sequence limit and reads every flushed sector.  Before, the slot was
 * taken for one a crash had cut, and the newest versions were ignored.
 */
static void damaged_base(void)
{
	struct nand_backing *b;
	struct ftl *f = tt_create(&b, 32u << 20, 4, false), *g = NULL;
	struct ftl_geom geo = f->g;
	uint64_t gen, limit;
	const char *what = "newest base damaged, deltas after it";
	int r, round = 0;

	memset(tt_tags, 0, sizeof(tt_tags));
	tt_write_range(f, 0, 64, 1);
	ftl_lock(&f->lock);
	ftl_ckpt_force_base(f);
	r = ftl_ckpt_write(f, false);
	ftl_unlock(&f->lock);
	T_CHECK(r == 0, "%s: base: %d", what, r);
	limit = f->ck.seq + f->ck.seq_gap;       /* of the slot before */
	ftl_lock(&f->lock);
	ftl_ckpt_force_base(f);
	r = ftl_ckpt_write(f, false);
	ftl_unlock(&f->lock);
	T_CHECK(r == 0, "%s: base: %d", what, r);
	gen = f->ck.gen;
	while (f->log.seq < limit + 256 && round < 2000 && !t_failures) {
		tt_write_range(f, 64, 64, (uint64_t)++round + 1);
		if (round % 8 == 0)
			(void)ckpt(f);
	}
	T_CHECK(f->ck.gen == gen && f->ck.didx >= 2,
		"%s: chain gen %llu -> %llu, %u deltas", what,
		(unsigned long long)gen, (unsigned long long)f->ck.gen,
		f->ck.didx);
	ftl_abandon(f);
	flip(b, &geo, gen, 0);
	r = fsck_img(b, what);
	T_CHECK(r == 4, "%s: fsck %d (want 4: a damaged checkpoint)", what, r);
	nand_mem_hold(b);
	r = ftl_open_backing(b, NULL, &g);
	T_CHECK(r == 0, "%s: open %d", what, r);
	if (!r) {
		(void)tt_verify(g, what);
		ftl_close(g);
	}
	b->ops->destroy(b);
}

/* ---- 4. a full slot rotates to a new base ------------------------------ */

static void rotate(void)
{
	struct nand_backing *b;
	struct ftl *f = tt_create(&b, 32u << 20, 4, false), *g = NULL;
	uint64_t gen0 = f->ck.gen;
	uint32_t maxd = 0;

	memset(tt_tags, 0, sizeof(tt_tags));
	for (int i = 0; i < 400 && f->ck.gen == gen0; i++) {
		tt_write_range(f, (uint64_t)(i * 37) % (TT_SPAN - 64), 64,
			    (uint64_t)i + 1);
		write_scattered(f, (uint64_t)(i * 53) % (TT_SPAN / 2), 16, 7,
				(uint64_t)i + 1);
		(void)ckpt(f);
		if (f->ck.didx > maxd)
			maxd = f->ck.didx;
	}
	T_CHECK(f->ck.gen == gen0 + 1 && f->ck.didx == 0,
		"no new base: gen %llu -> %llu, delta %u",
		(unsigned long long)gen0, (unsigned long long)f->ck.gen,
		f->ck.didx);
	T_CHECK(maxd >= 3, "only %u deltas fit in the slot", maxd);
	tt_write_range(f, 10, 20, 999);
	write_scattered(f, 100, 30, 5, 999);
	(void)ckpt(f);
	T_CHECK(f->ck.didx == 1, "a delta after the new base: %u", f->ck.didx);
	T_CHECK(ftl_close(f) == 0, "close");
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &g) == 0, "reopen");
	if (g) {
		/* the whole chain loaded: both records (runs and pairs) */
		T_CHECK(g->mnt.kind == FTL_MOUNT_CLEAN && g->ck.didx == 2 &&
			!g->mnt.ckpt_fallback, "clean reopen: kind %d, %u records",
			g->mnt.kind, g->ck.didx);
		(void)tt_verify(g, "after rotation");
		ftl_close(g);
	}
	b->ops->destroy(b);
}

int main(void)
{
	seed0 = t_seed();
	rotate();
	damaged(false);
	damaged(true);
	damaged_base();
	power_cuts();
	scale();
	return t_result();
}
