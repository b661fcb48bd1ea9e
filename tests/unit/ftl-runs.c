/* SPDX-License-Identifier: MIT */
/*
 * Host writes of whole pages go to the medium as program runs
 * (ftl_prog_run, nand_program_run).  A program that fails in the middle
 * of a run keeps the pages before it (on the medium, mapped), retires the
 * block and programs the rest elsewhere: nothing lost, also after a kill
 * (roll-forward) and a clean reopen.  A power cut that tears an unsynced
 * run leaves every page of it old or new (never garbage), and flushed
 * data before it intact; so does a power cut inside GC's copy runs (a
 * victim's valid pages go to the GC stream as runs too).  Randomised (data, cut seeds): prints its seed,
 * replays with OCTANT_SEED.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): program faults keyed
 * on GC's victim (f->gc) and the GC stream's block (f->log).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE (8u << 20)
#define MIB  (1u << 20)

static uint8_t model[SIZE], rd[SIZE];
static uint64_t rs;
static uint64_t fail_ppn = UINT64_MAX;

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = t_xorshift(&rs);
		memcpy(p + i, &v, 8);
	}
}

/* The fault seam: status FAIL for one page's program. */
static int fail_one(void *ctx, enum nand_op op, uint64_t page, void *buf,
		    size_t len)
{
	(void)ctx; (void)buf; (void)len;
	return op == NAND_OP_PROGRAM && page == fail_ppn ? -NAND_EFAIL : 0;
}

static struct ftl *open_mem(struct nand_backing *b)
{
	struct ftl *f = NULL;
	int r;

	nand_mem_hold(b);
	r = ftl_open_backing(b, NULL, &f);
	T_CHECK(r == 0, "open: %d", r);
	return f;
}

static void check_all(struct ftl *f, const char *what)
{
	T_CHECK(ftl_read(f, rd, 0, SIZE) == 0, "%s: read", what);
	for (uint32_t p = 0; p < SIZE / 4096; p++)
		if (memcmp(rd + (size_t)p * 4096, model + (size_t)p * 4096, 4096)) {
			T_CHECK(0, "%s: page %u differs", what, p);
			return;
		}
}

/* Flush @f, kill it (roll-forward on the next open) and check every page,
 * close cleanly and check again after a clean reopen; destroys @b.
 * @rolled, @clean: the labels of the two checks. */
static void flush_kill_reopen(struct ftl *f, struct nand_backing *b,
			      const char *rolled, const char *clean)
{
	T_CHECK(ftl_flush(f) == 0, "flush");
	ftl_abandon(f);                 /* kill: roll-forward */
	f = open_mem(b);
	if (f) {
		check_all(f, rolled);
		T_CHECK(ftl_close(f) == 0, "close");
		f = open_mem(b);
	}
	if (f) {
		check_all(f, clean);
		T_CHECK(ftl_close(f) == 0, "close");
	}
	b->ops->destroy(b);
}

/* A program failure in the middle of a run. */
static void failed_run(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 64, .op_permille = 250, .force = true };
	struct nand_backing *b;
	struct ftl *f;
	uint32_t blk, wp, inblk = 0;
	uint64_t isz = ftl_test_image_size(&c);

	T_CHECK(nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	f = open_mem(b);
	if (!f)
		return;
	fill(model, SIZE);
	T_CHECK(ftl_write(f, model, 0, SIZE, 0) == 0, "fill");
	/* two pages open the host stream's block; the run after them fails
	 * at its 6th page */
	fill(model + 2 * MIB, 2 * 4096);
	T_CHECK(ftl_write(f, model + 2 * MIB, 2 * MIB, 2 * 4096, 0) == 0,
		"two pages");
	blk = f->log.st[STREAM_HOST].blk;
	wp = f->log.st[STREAM_HOST].wp;
	T_CHECK(blk != FTL_NONE && wp + 8 < f->g.ppb, "open block, room left");
	fail_ppn = (uint64_t)blk * f->g.ppb + wp + 5;
	nand_set_fault(ftl_test_nand(f), fail_one, NULL);
	fill(model + 4 * MIB, MIB);
	T_CHECK(ftl_write(f, model + 4 * MIB, 4 * MIB, MIB, 0) == 0,
		"the run survives a failed program");
	nand_set_fault(ftl_test_nand(f), NULL, NULL);
	T_EQ_U64(f->idx.state[blk], FTL_BLK_BAD, "the failed block is retired");
	for (uint32_t p = 0; p < MIB / 4096; p++) {
		uint32_t ppn = ftl_map_get(f, 4 * MIB / 4096 + p);
		inblk += ppn / f->g.ppb == blk;
		T_CHECK(ppn != fail_ppn, "nothing mapped to the failed page");
	}
	/* the 5 pages before the failure were programmed and mapped
	 * (GC may have moved them off the retired block already) */
	T_CHECK(inblk <= 5, "%u pages of the run in the retired block", inblk);
	check_all(f, "after a failed program");
	flush_kill_reopen(f, b, "roll-forward after a failed program",
			  "clean reopen");
}

/* The fault seam: status FAIL for the 5th program inside an evacuation. */
static struct ftl *gc_fail_f;
static int gc_fail_n;
static uint64_t gc_failed = UINT64_MAX;

static int fail_gc(void *ctx, enum nand_op op, uint64_t page, void *buf,
		   size_t len)
{
	(void)ctx; (void)buf; (void)len;
	if (op != NAND_OP_PROGRAM || gc_fail_f->gc.ev[0].v == FTL_NONE ||
	    gc_failed != UINT64_MAX || ++gc_fail_n < 5)
		return 0;
	gc_failed = page;
	return -NAND_EFAIL;
}

/* A program failing inside a GC copy run: the block is retired, the
 * copies before it stay, the rest go to another block; nothing lost,
 * also after a kill (roll-forward) and a clean reopen. */
static void failed_gc_run(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 64, .op_permille = 250, .force = true };
	struct nand_backing *b;
	struct ftl *f;
	uint8_t w[4096];
	uint64_t isz = ftl_test_image_size(&c);

	T_CHECK(nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	f = open_mem(b);
	if (!f)
		return;
	fill(model, SIZE);
	T_CHECK(ftl_write(f, model, 0, SIZE, 0) == 0, "fill");
	gc_fail_f = f;
	nand_set_fault(ftl_test_nand(f), fail_gc, NULL);
	for (uint32_t i = 0; i < 20000 && gc_failed == UINT64_MAX; i++) {
		uint32_t p = (uint32_t)(t_xorshift(&rs) % (SIZE / 4096));

		fill(w, sizeof(w));
		T_CHECK(ftl_write(f, w, (uint64_t)p * 4096, sizeof(w), 0) == 0,
			"write %u", i);
		memcpy(model + (size_t)p * 4096, w, sizeof(w));
	}
	nand_set_fault(ftl_test_nand(f), NULL, NULL);
	T_CHECK(gc_failed != UINT64_MAX, "a GC copy program failed");
	if (gc_failed != UINT64_MAX)
		T_EQ_U64(f->idx.state[gc_failed / f->g.ppb], FTL_BLK_BAD,
			 "the block of the failed copy is retired");
	check_all(f, "after a failed GC copy");
	flush_kill_reopen(f, b, "roll-forward after a failed GC copy",
			  "clean reopen");
}

/* Open @img, check the run's pages: flushed pages intact, each page of
 * the run old or new; with @prefix, the new ones a prefix of the run.
 * Returns the number of new pages (-1 on a failure). */
static int check_cut(const uint8_t *img, uint64_t isz, const uint8_t *old,
		     const uint8_t *neu, bool prefix, uint64_t cut)
{
	struct nand_backing *m;
	struct ftl *g;
	int nnew = 0, nold = 0;

	if (nand_backing_mem(isz, false, &m))
		return -1;
	nand_mem_load(m, img);
	if (ftl_open_backing(m, NULL, &g)) {
		T_CHECK(0, "cut %llu: open after the cut", (unsigned long long)cut);
		return -1;
	}
	T_CHECK(ftl_read(g, rd, 0, SIZE) == 0, "read after the cut");
	for (uint32_t p = 0; p < SIZE / 4096; p++) {
		const uint8_t *x = rd + (size_t)p * 4096;
		size_t o = (size_t)p * 4096 - 3 * MIB;

		if (p < 3 * MIB / 4096 || p >= 4 * MIB / 4096) {
			if (memcmp(x, model + (size_t)p * 4096, 4096)) {
				T_CHECK(0, "cut %llu: flushed page %u lost",
					(unsigned long long)cut, p);
				nnew = -1;
				break;
			}
		} else if (!memcmp(x, neu + o, 4096) && !(prefix && nold)) {
			nnew++;
		} else if (!memcmp(x, old + o, 4096)) {
			nold++;
		} else {
			T_CHECK(0, "cut %llu: page %u neither old nor new%s",
				(unsigned long long)cut, p,
				prefix ? " (or new after old: not a prefix)" : "");
			nnew = -1;
			break;
		}
	}
	ftl_abandon(g);
	return nnew;
}

/* A power cut during an unsynced 1 MiB run: torn at 512-byte sectors
 * anywhere (the crash model), or cut after a prefix of its bytes (a
 * medium that writes in order) - then the run recovers as a prefix. */
static void torn_run(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 256, .force = true };
	static uint8_t old[MIB], neu[MIB];
	struct nand_backing *b;
	struct nand_counters n0, n1;
	struct ftl *f;
	uint64_t isz = ftl_test_image_size(&c), lo, hi, cuts = 100;
	uint8_t *img = malloc(isz), *base = malloc(isz), *cur;
	unsigned partial = 0;

	T_CHECK(img && base && nand_backing_mem(isz, true, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	f = open_mem(b);
	if (!f || !img || !base)
		return;
	fill(model, SIZE);
	T_CHECK(ftl_write(f, model, 0, SIZE, 0) == 0 && ftl_flush(f) == 0,
		"fill, flush");
	cur = nand_mem_bytes(b, NULL);
	memcpy(base, cur, isz);
	memcpy(old, model + 3 * MIB, MIB);
	fill(neu, MIB);
	nand_counters_get(ftl_test_nand(f), &n0);
	T_CHECK(ftl_write(f, neu, 3 * MIB, MIB, 0) == 0, "unsynced 1 MiB");
	nand_counters_get(ftl_test_nand(f), &n1);
	T_EQ_U64(n1.backing_writes - n0.backing_writes, 1,
		 "a 1 MiB write into a fresh 1 MiB block is one backing write");
	for (lo = 0; lo < isz && base[lo] == cur[lo]; lo++)
		;
	for (hi = isz; hi > lo && base[hi - 1] == cur[hi - 1]; hi--)
		;
	T_CHECK(hi > lo, "the run changed the image");
	for (uint64_t s = 0; s < cuts && !t_failures; s++) {
		uint64_t seed = t_xorshift(&rs), k;
		int nn;

		/* the crash model: a torn write keeps random sectors */
		nand_mem_crash_image(b, seed, true, img);
		if (check_cut(img, isz, old, neu, false, seed) < 0)
			break;
		/* a prefix of the run's bytes (any byte, not only a page
		 * boundary): the first pages new, the rest old */
		k = s == 0 ? 0 : s == 1 ? hi - lo : seed % (hi - lo);
		memcpy(img, base, isz);
		memcpy(img + lo, cur + lo, k);
		nn = check_cut(img, isz, old, neu, true, k);
		if (nn < 0)
			break;
		partial += nn > 0 && nn < (int)(MIB / 4096);
		if (s == 1)
			T_EQ_U64((uint64_t)nn, MIB / 4096, "the whole run written");
	}
	fprintf(stderr, "%llu prefix cuts, %u left part of the run\n",
		(unsigned long long)cuts, partial);
	T_CHECK(partial > 0, "some prefix cuts kept part of the run");
	ftl_abandon(f);
	b->ops->destroy(b);
	free(img);
	free(base);
}

/* ---- a power cut inside GC's copy runs ---------------------------------- */

struct gcut {
	struct nand_backing *b;
	struct ftl *f;
	uint8_t *img;
	uint64_t seed, programs, gpos;
	uint32_t k, n;          /* cut at GC's k-th write */
	uint32_t run_pages;     /* pages of the write the cut came after */
	bool cut;
};

/* Is the page just below GC write position @gpos a flush summary (a
 * flush's proof, revision 3: it goes into the GC stream too)? */
static bool gc_wrote_summary(const struct gcut *c, uint64_t gpos)
{
	const uint8_t *img = nand_mem_bytes(c->b, NULL);
	const struct ftl_oob *o;

	if (!gpos || gpos % c->f->g.ppb == 0)
		return false;
	o = (const struct ftl_oob *)(img + ftl_oob_off(&c->f->g, gpos - 1));
	return ftl_oob_ok(o) && o->kind == FTL_OOB_FSUM;
}

/* After each medium write (f->lock held, by this thread): a write that
 * moved the GC stream's write pointer programmed copies (or, by one page,
 * a flush summary: not a copy, not counted); at the k-th, take the image
 * a power cut leaves. */
static void gc_fire(void *ctx)
{
	struct gcut *c = ctx;
	const struct ftl_stream *st = &c->f->log.st[STREAM_GC];
	uint64_t gpos = (uint64_t)st->blk * c->f->g.ppb + st->wp;
	struct nand_counters nc;

	nand_counters_get(ftl_test_nand(c->f), &nc);
	if (gpos != c->gpos && !c->cut &&
	    !(gpos == c->gpos + 1 && gc_wrote_summary(c, gpos)) &&
	    ++c->n == c->k) {
		nand_mem_crash_image(c->b, c->seed, true, c->img);
		c->run_pages = (uint32_t)(nc.programs - c->programs);
		c->cut = true;
	}
	c->gpos = gpos;
	c->programs = nc.programs;
	nand_mem_set_trigger(c->b, 1, gc_fire, c);
}

/*
 * Flushed 4 KiB overwrites on a full device (every write but GC's is
 * synced), power cut right after a seeded one of GC's copy programs (the
 * copies of a victim go as runs: one torn, or a subset of them kept):
 * the image opens and every page reads as flushed.  At least one cut
 * comes right after a run of several pages.
 */
static void gc_cut(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 64, .op_permille = 125, .force = true };
	uint64_t isz = ftl_test_image_size(&c);
	struct gcut g = { .img = malloc(isz) };
	uint32_t cuts = 0, multi = 0, maxrun = 0;
	struct nand_backing *b;
	uint8_t w[4096];

	T_CHECK(g.img && nand_backing_mem(isz, true, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	g.b = b;
	g.f = open_mem(b);
	if (!g.f || !g.img)
		return;
	fill(model, SIZE);
	T_CHECK(ftl_write(g.f, model, 0, SIZE, 0) == 0 && ftl_flush(g.f) == 0,
		"fill, flush");
	g.k = 1 + (uint32_t)(t_xorshift(&rs) % 8);
	{
		struct nand_counters nc;

		nand_counters_get(ftl_test_nand(g.f), &nc);
		g.programs = nc.programs;
		g.gpos = (uint64_t)g.f->log.st[STREAM_GC].blk * g.f->g.ppb +
			 g.f->log.st[STREAM_GC].wp;
	}
	nand_mem_set_trigger(b, 1, gc_fire, &g);
	for (uint32_t i = 0; i < 40000 && cuts < 24 && !t_failures; i++) {
		uint32_t p = (uint32_t)(t_xorshift(&rs) % (SIZE / 4096));

		g.seed = t_xorshift(&rs);
		fill(w, sizeof(w));
		T_CHECK(ftl_write(g.f, w, (uint64_t)p * 4096, sizeof(w), 0) == 0,
			"write %u", i);
		if (g.cut) {
			struct nand_backing *m;
			struct ftl *h = NULL;

			/* the cut came before this write's own program */
			cuts++;
			multi += g.run_pages > 1;
			if (g.run_pages > maxrun)
				maxrun = g.run_pages;
			T_CHECK(nand_backing_mem(isz, false, &m) == 0, "mem");
			nand_mem_load(m, g.img);
			T_CHECK(ftl_open_backing(m, NULL, &h) == 0,
				"open after a cut inside GC (seed %llu)",
				(unsigned long long)g.seed);
			if (h) {
				check_all(h, "a power cut inside GC");
				ftl_abandon(h);
			}
			g.cut = false;
			g.k = g.n + 1 + (uint32_t)(t_xorshift(&rs) % 8);
		}
		memcpy(model + (size_t)p * 4096, w, sizeof(w));
		T_CHECK(ftl_flush(g.f) == 0, "flush");
	}
	nand_mem_set_trigger(b, 0, NULL, NULL);
	fprintf(stderr, "%u power cuts inside GC, %u right after a run of "
		"several pages (longest %u)\n", cuts, multi, maxrun);
	T_CHECK(cuts >= 24, "%u cuts inside GC", cuts);
	T_CHECK(multi > 0, "a cut right after a GC run of several pages");
	check_all(g.f, "the engine that went on");
	ftl_abandon(g.f);
	b->ops->destroy(b);
	free(g.img);
}

int main(void)
{
	rs = t_seed() | 1;
	failed_run();
	torn_run();
	failed_gc_run();
	gc_cut();
	return t_result();
}
