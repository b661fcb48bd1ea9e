/* SPDX-License-Identifier: MIT */
/*
 * Garbage collection and wear levelling.
 * 1. Uniform random 4K page writes at 12.5 % over-provisioning, 64-page
 *    blocks, greedy victims, after steady state: write amplification
 *    within +-10 % of Desnoyers' greedy model, 4.38 (reference.md).
 * 2. Cost-benefit victims beat greedy on a 90/10 hot/cold workload.
 * 3. Static wear levelling: with cold data pinned and a threshold of 16,
 *    max - min erase count stays under the threshold once the first
 *    moves happened with 1 GC victim per sync, under 1.25 x the
 *    threshold with 4 (batched erase rounds); without static WL it
 *    grows far past it.  The victims per sync are pinned
 *    (ftl_open_opts.gc_batch): deterministic for a seed, whatever a sync
 *    costs on the machine.
 */
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

static uint64_t rs;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static struct ftl *mk(uint64_t size, uint32_t op, uint32_t ppb,
		      enum ftl_gc_policy gc, uint32_t wl, uint32_t batch)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
		.pages_per_block = ppb, .op_permille = op };
	struct ftl_open_opts o = { .gc = gc, .wl_threshold = wl,
		.gc_batch = batch };
	struct nand_backing *b;
	struct ftl *f = NULL;

	if (nand_backing_mem(ftl_test_image_size(&c), false, &b) ||
	    ftl_create_backing(&*b, &c) || ftl_open_backing(b, &o, &f)) {
		T_CHECK(0, "setup");
		exit(t_result());
	}
	return f;
}

/* @n page writes; hot: 90 % go to the first 10 % of pages. */
static void writes(struct ftl *f, uint64_t n, bool hot)
{
	static uint8_t page[4096];
	uint64_t pages = ftl_size(f) / 4096;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t p = rnd();
		if (hot)
			p = (p % 10 < 9) ? (p >> 8) % (pages / 10) :
			    pages / 10 + (p >> 8) % (pages - pages / 10);
		else
			p %= pages;
		memcpy(page, &i, sizeof(i));
		if (ftl_write(f, page, p * 4096, 4096, 0)) {
			T_CHECK(0, "write");
			exit(t_result());
		}
	}
}

static void fill(struct ftl *f)
{
	static uint8_t buf[1 << 20];

	for (uint64_t o = 0; o < ftl_size(f); o += sizeof(buf))
		ftl_write(f, buf, o, sizeof(buf), 0);
}

/* WA over @n writes after @warm writes: (host + gc) / host pages. */
static double wa(struct ftl *f, uint64_t warm, uint64_t n, bool hot,
		 double *total)
{
	struct ftl_stats a, b;

	fill(f);
	writes(f, warm, hot);
	ftl_stats_get(f, &a);
	writes(f, n, hot);
	ftl_stats_get(f, &b);
	*total = (double)(b.page_programs - a.page_programs) / (double)n;
	return (double)(n + b.gc_relocations - a.gc_relocations) / (double)n;
}

/*
 * Tiny devices whose spare blocks (4) cannot hold GC's reserve of 3 and
 * two open blocks: a 64 KiB 1m image with 4 pages per block failed random
 * writes with ENOSPC on a fresh image (oracle seeds 790, 893, 1130, ...).
 * GC's reserve shrinks there; every geometry below must take a long run
 * of overwrites of a full device, with flushes and trims.
 */
static void tiny(void)
{
	static const struct { uint64_t size; uint32_t ppb, op; } c[] = {
		{ 64 << 10, 4, 70 }, { 64 << 10, 8, 250 }, { 128 << 10, 4, 70 },
		{ 192 << 10, 8, 70 }, { 256 << 10, 4, 250 },
	};
	static uint8_t buf[8192];
	uint64_t saved = rs;    /* the other tests' stream stays as it was */

	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct ftl *f = mk(c[k].size, c[k].op, c[k].ppb, FTL_GC_GREEDY,
				   100000, 0);
		int r = 0, i;

		for (i = 0; i < 3000 && !r; i++) {
			uint64_t x = rnd(), len = 512 * (1 + x % 16);
			uint64_t off = ((x >> 8) % (c[k].size - len + 512)) & ~511ull;

			memset(buf, i, len);
			if (x % 17 == 0)
				r = ftl_discard(f, off, len);
			else
				r = ftl_write(f, buf, off, len, 0);
			if (!r && x % 23 == 0)
				r = ftl_flush(f);
		}
		T_CHECK(r == 0, "%llu KiB 1m, %u pages per block, op %u: op %d "
			"fails: %d", (unsigned long long)(c[k].size >> 10),
			c[k].ppb, c[k].op, i - 1, r);
		T_CHECK(ftl_close(f) == 0, "close");
	}
	rs = saved;
}

int main(void)
{
	uint64_t size = t_long() ? (512ull << 20) : (128ull << 20);
	uint64_t pages = size / 4096;
	struct ftl_stats st;
	double w, tot, wg, wcb;
	struct ftl *f;

	rs = t_seed() | 1;
	tiny();

	/* 1. greedy, uniform, 12.5 % OP, Np = 64 */
	f = mk(size, 125, 64, FTL_GC_GREEDY, 100000, 0);
	w = wa(f, 4 * pages, 3 * pages, false, &tot);
	fprintf(stderr, "greedy uniform 12.5%% OP: WA %.3f (with checkpoints %.3f), "
		"model 4.38\n", w, tot);
	T_CHECK(w > 4.38 * 0.9 && w < 4.38 * 1.1, "WA %.3f not within 10 %% of "
		"4.38", w);
	ftl_stats_get(f, &st);
	T_EQ_U64(st.nand_violations, 0, "violations");
	ftl_close(f);

	/* 2. hot/cold: cost-benefit vs greedy */
	f = mk(size / 2, 125, 64, FTL_GC_GREEDY, 100000, 0);
	wg = wa(f, 4 * pages / 2, 2 * pages / 2, true, &tot);
	ftl_close(f);
	f = mk(size / 2, 125, 64, FTL_GC_COST_BENEFIT, 100000, 0);
	wcb = wa(f, 4 * pages / 2, 2 * pages / 2, true, &tot);
	ftl_close(f);
	fprintf(stderr, "hot/cold 90/10 12.5%% OP: greedy WA %.3f, cost-benefit "
		"WA %.3f\n", wg, wcb);
	T_CHECK(wcb < wg, "cost-benefit (%.3f) should beat greedy (%.3f) on "
		"hot/cold", wcb, wg);

	/* 3. static wear levelling: 80 % of the disk cold, writes to the rest */
	/* GC's victims per sync pinned: the engine adapts them to the
	 * measured sync time, which made the spread depend on the machine
	 * (17 against 16 once under ASan, seed 3086387616).  WL on with 1
	 * (a fast backing): under the threshold.  With 4 (a disk file) an
	 * erase round erases up to 5 blocks between two checks and the
	 * spread overshoots a little (15 seeds: 14..17, seed 1848788558:
	 * 17): within threshold + a quarter; before static WL caught up
	 * with the erases of a round, 28 with seed 3086387616.  With 1 too
	 * a large cold set at the minimum outran one move per 4 erases
	 * (17, seeds 1931193929 and 46191610: 1 run in 15); since the
	 * checks run at every erase within an eighth of the threshold, 13-14
	 * with either batch (18 seeds): both under the threshold. */
	for (int wl = 0; wl < 3; wl++) {
		uint32_t thr = wl ? 16 : 1000000, worst = 0;
		uint32_t batch = wl == 2 ? 4 : 1;
		uint64_t sz = 16 << 20, pg = sz / 4096;

		f = mk(sz, 125, 16, FTL_GC_GREEDY, thr, batch);
		fill(f);
		for (int round = 0; round < 60; round++) {
			static uint8_t page[4096];
			for (uint64_t i = 0; i < pg; i++) {
				uint64_t p = pg * 8 / 10 + rnd() % (pg / 5);
				ftl_write(f, page, p * 4096, 4096, 0);
			}
			ftl_stats_get(f, &st);
			if (round >= 10 && st.erase_max - st.erase_min > worst)
				worst = st.erase_max - st.erase_min;
		}
		fprintf(stderr, "static WL %s, %u victims per sync: erase min "
			"%u max %u, worst spread %u, wl_relocations %llu\n",
			wl ? "on (threshold 16)" : "off", batch, st.erase_min,
			st.erase_max, worst,
			(unsigned long long)st.wl_relocations);
		if (wl)
			T_CHECK(worst <= thr &&
				st.wl_relocations > 0,
				"spread %u over threshold %u (%u victims per "
				"sync)", worst, thr, batch);
		else
			T_CHECK(worst > 40, "without WL the spread should grow (%u)",
				worst);
		ftl_close(f);
	}
	return t_result();
}
