/* SPDX-License-Identifier: MIT */
/*
 * The block indexes (ftl_blkidx.c: free blocks by erase count, full blocks
 * bucketed by valid count) under random operations: page writes, multi-page
 * writes, trims, flushes, clean closes and crashes (each reopen rebuilds
 * the indexes), greedy and cost-benefit victims, on a perfect medium and on
 * one whose programs and erases fail (blocks retired while free, open or
 * full), with static wear levelling active.  After every operation:
 *  - every index invariant holds (ftl_idx_check: the free set is exactly
 *    the FREE data blocks keyed by erase count, every FULL data block is in
 *    the bucket of its valid count and nothing else is, heaps are heaps);
 *  - the GC victim is the block the scan of every block picks
 *    (ftl_victim_scan, the choice before the indexes), in both policies,
 *    and with placement streams (both pass over blocks being emptied
 *    now, ftl_dying.c: on 16-page blocks, often);
 *  - the free block a host / GC stream takes is the free block with the
 *    fewest / most erases (lower block number on ties);
 *  - no operation fails but with EROFS once the faults used the spares up
 *    (cost-benefit once picked a victim GC had no room to empty: ENOSPC
 *    on a device not full; fixed regression seed below).
 * Random: a new seed per run, printed; OCTANT_SEED replays.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): the block indexes
 * against a scan of every block (ftl_idx_check, ftl_victim,
 * ftl_victim_scan, f->idx).
 */
#include <errno.h>
#include <string.h>

#include "ftl-int.h"
#include "nand-fault.h"
#include "test.h"

static uint64_t rs;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static bool streams;             /* ftl_open_opts.streams for open_mem */

static struct ftl *open_mem(struct nand_backing *b, enum ftl_gc_policy gc,
			    bool faulty)
{
	static struct nand_fault_spec s;
	struct ftl_open_opts o = { .gc = gc, .wl_threshold = 8,
		.streams = streams };
	struct ftl *f = NULL;
	char err[200];
	int r;

	if (faulty) {
		r = nand_fault_parse("program=3e-4,erase=3e-3", &s, err,
				     sizeof(err));
		T_CHECK(r == 0, "%s", err);
		s.seed = rnd();
		o.faults = &s;
	}
	nand_mem_hold(b);
	r = ftl_open_backing(b, &o, &f);
	T_CHECK(r == 0, "open: %d", r);
	return r ? NULL : f;
}

/* The free block with the fewest (most) erases, lower number on ties. */
static uint32_t free_ref(struct ftl *f, bool most)
{
	uint32_t best = FTL_NONE, bec = 0;

	for (uint32_t b = f->g.ckpt_blocks; b < f->g.nblocks; b++) {
		uint32_t ec = nand_block_ec(f->nand, b);

		if (f->idx.state[b] != FTL_BLK_FREE)
			continue;
		if (best == FTL_NONE || (most ? ec > bec : ec < bec)) {
			best = b;
			bec = ec;
		}
	}
	return best;
}

/* Returns false after the first failure (the rest would repeat it). */
static bool check(struct ftl *f, const char *what, uint64_t op)
{
	uint32_t lim = (uint32_t)(op % (f->g.ppb + 1));  /* draws no number */
	uint32_t v, vs, vl, vsl, h, g;
	int before = t_failures;
	long c;

	ftl_lock(&f->lock);             /* the index's lock (LOCKING) */
	c = ftl_idx_check(f);
	v = ftl_victim(f, f->g.ppb);
	vs = ftl_victim_scan(f, f->g.ppb);
	vl = ftl_victim(f, lim);
	vsl = ftl_victim_scan(f, lim);
	h = f->idx.nfree ? f->idx.fh[0].a[0] : FTL_NONE;
	g = f->idx.nfree ? f->idx.fh[1].a[0] : FTL_NONE;
	ftl_unlock(&f->lock);
	T_CHECK(c == 0, "%s, op %llu: index check %ld", what,
		(unsigned long long)op, c);
	T_CHECK(v == vs, "%s, op %llu: victim %u, the scan picks %u", what,
		(unsigned long long)op, v, vs);
	T_CHECK(vl == vsl, "%s, op %llu: victim with at most %u valid %u, the "
		"scan picks %u", what, (unsigned long long)op, lim, vl, vsl);
	T_CHECK(h == free_ref(f, false), "%s, op %llu: host free block %u, "
		"fewest erases %u", what, (unsigned long long)op, h,
		free_ref(f, false));
	T_CHECK(g == free_ref(f, true), "%s, op %llu: gc free block %u, "
		"most erases %u", what, (unsigned long long)op, g,
		free_ref(f, true));
	return t_failures == before;
}

/* The long mode's budget (test.h), shared out evenly between the runs:
 * the next run has the @slot-th of @NSLOTS parts; every run does at least
 * the short mode's @FLOOR operations.  @ops_done/@ops_want sum them up. */
#define NSLOTS  8
#define FLOOR   30000
static int slot;
static uint64_t ops_done, ops_want;

static void run(enum ftl_gc_policy gc, bool faulty, uint64_t nops)
{
	struct ftl_create_opts c = { .size = 8u << 20, .align = FTL_ALIGN_1M,
		.pages_per_block = 16, .op_permille = 125 };
	const char *what = streams ? (gc == FTL_GC_COST_BENEFIT ?
		"cost-benefit, streams" : "greedy, streams") :
		gc == FTL_GC_COST_BENEFIT ?
		(faulty ? "cost-benefit, faults" : "cost-benefit") :
		(faulty ? "greedy, faults" : "greedy");
	static uint8_t buf[64 << 10];
	struct nand_backing *b;
	struct ftl *f;
	uint64_t pages = c.size / 4096, victims = 0, op;

	if (nand_backing_mem(ftl_test_image_size(&c), false, &b) ||
	    ftl_create_backing(b, &c)) {
		T_CHECK(0, "%s: create", what);
		return;
	}
	f = open_mem(b, gc, faulty);
	slot++;
	for (op = 0; f && op < nops && t_long_upto((long)op, FLOOR, slot,
						   NSLOTS); op++) {
		uint64_t k = rnd() % 1000, p = rnd() % pages;
		int r = 0;

		memcpy(buf, &op, sizeof(op));
		if (k < 800) {          /* mostly 4K writes, most to a hot
		                           tenth (cold data: static WL) */
			if (k < 700)
				p %= pages / 10;
			r = ftl_write(f, buf, p * 4096, 4096, 0);
		} else if (k < 900) {
			uint64_t n = 1 + rnd() % 16;
			if (p + n > pages)
				p = pages - n;
			r = ftl_write(f, buf, p * 4096, n * 4096, 0);
		} else if (k < 950) {
			uint64_t n = 1 + rnd() % 32;
			if (p + n > pages)
				p = pages - n;
			r = ftl_discard(f, p * 4096, n * 4096);
		} else if (k < 980) {
			r = ftl_flush(f);
		} else if (k < 990) {
			r = ftl_close(f);
			f = open_mem(b, gc, faulty);
		} else {
			ftl_abandon(f);
			f = open_mem(b, gc, faulty);
		}
		if (r == -EROFS)
			break;          /* the faults used the spares up */
		T_CHECK(r == 0, "%s, op %llu: %d", what, (unsigned long long)op, r);
		if (r || !f || !check(f, what, op))
			break;
		ftl_lock(&f->lock);
		victims += ftl_victim(f, f->g.ppb) != FTL_NONE;
		ftl_unlock(&f->lock);
	}
	if (f) {
		struct ftl_stats st;

		ftl_stats_get(f, &st);
		fprintf(stderr, "%s: %llu gc relocations, %llu wl relocations, "
			"%llu bad blocks, %llu checks with a victim\n", what,
			(unsigned long long)st.gc_relocations,
			(unsigned long long)st.wl_relocations,
			(unsigned long long)(st.bad_blocks_grown +
					     st.bad_blocks_factory),
			(unsigned long long)victims);
		T_CHECK(st.gc_relocations > 0, "%s: GC never ran", what);
		ftl_close(f);
	}
	b->ops->destroy(b);
	ops_done += op;
	ops_want += nops;
}

static void all(uint64_t nops)
{
	run(FTL_GC_GREEDY, false, nops);
	run(FTL_GC_COST_BENEFIT, false, nops);
	run(FTL_GC_GREEDY, true, nops);
	run(FTL_GC_COST_BENEFIT, true, nops);
	streams = true;
	run(FTL_GC_GREEDY, false, nops);
	run(FTL_GC_COST_BENEFIT, false, nops);
	streams = false;
}

int main(void)
{
	/* long: up to 400,000 operations a run, within the budget */
	uint64_t nops = t_long() ? 400000 : FLOOR;
	unsigned seed = t_seed();

	/* regression: seed 1742242998 made cost-benefit pick a victim with
	 * more valid pages than GC had room for, and a host write on a
	 * device not full failed with ENOSPC (op 9626) */
	if (seed != 1742242998u) {
		rs = 1742242998u | 1;
		run(FTL_GC_GREEDY, false, nops);
		run(FTL_GC_COST_BENEFIT, false, nops);
	}
	rs = seed | 1;
	all(nops);
	t_long_covered("operations", (long)ops_done, (long)ops_want);
	return t_result();
}
