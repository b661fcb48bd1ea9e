/* SPDX-License-Identifier: MIT */
/*
 * Maintenance above garbage collection: moving the valid pages off retired
 * blocks, rewriting pages read with many corrected bits (scrub), and
 * static wear levelling.  Each moves data through GC's copy path
 * (ftl_gc.c); ftl_balance() runs the first two before a host page, and
 * the static-WL check follows an erase round of inline GC (ftl_balance)
 * or of the GC thread (ftl_bggc.c).  f->lock held throughout.
 */
#include <errno.h>

#include "ftl-int.h"

#define WL_EVERY   4u    /* erases between static-WL checks (rate limit) */
#define WL_SCAN    256u  /* at most this many blocks scanned per erase */

/* Move the valid pages off one retired block (from ftl_balance: one per
 * host page, so the work is spread).  Pages that cannot be read stay
 * (the block is then done: bb_done).  The scan resumes at retire_next
 * (a BAD block's valid count only falls, and a block retired below it
 * moves it back), so all calls together look at each block about once
 * per retirement, and a call with nothing to retire looks at none. */
int ftl_retire_move(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	if (!f->maint.retire_scan)
		return 0;
	for (uint32_t b = f->maint.retire_next; b < f->g.nblocks; b++) {
		int r;

		f->maint.retire_visits++;
		if (f->idx.state[b] != FTL_BLK_BAD || !f->idx.valid[b] || f->maint.bb_done[b])
			continue;
		f->maint.retire_next = b;
		r = ftl_gc_evacuate(f, b, &f->ctr.m.bad_relocations);
		if (!r)
			f->maint.bb_done[b] = 1;
		/* retire_scan stays: the next block (or the rest, after a
		 * checkpoint: -EAGAIN) later */
		return r == -EAGAIN ? 0 : r;
	}
	f->maint.retire_next = f->g.nblocks;
	f->maint.retire_scan = false;
	return 0;
}

/* Rewrite the queued pages (ftl_readpage.c) still mapped where they were
 * read, each with its data CRC carried from its OOB record, as GC copies
 * are (ftl_gc.c, evac_run): data that fails it stays detectable. */
int ftl_scrub_run(struct ftl *f)
{
	uint32_t lpn[FTL_SCRUB_Q], ppn[FTL_SCRUB_Q], n;
	uint8_t oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;
	int r = 0;

	FTL_ASSERT_HELD(&f->lock);
	/* before every host page; at most one block's worth per call
	 * (ftl_balance's budget) */
	n = ftl_scrub_take(f, lpn, ppn, f->g.ppb);
	for (uint32_t i = 0; i < n && !r; i++) {
		if (ftl_map_get(f, lpn[i]) != ppn[i])
			continue;       /* rewritten or moved meanwhile */
		if (!ftl_seq_room(f, FTL_PROG_RETRIES + 1))
			break;          /* the next read queues it again */
		r = nand_read_oob(f->nand, ppn[i], oob);
		if (r)
			break;
		if (!ftl_oob_ok(o) || o->kind != FTL_OOB_DATA ||
		    o->lpn != lpn[i])
			continue;       /* reads of it fail (EIO) */
		r = ftl_read_page(f, FTL_UNMAPPED, ppn[i], 0, f->buf.page, f->g.ps);
		if (r == -EBADMSG) {
			r = 0;          /* too late: reads of it fail */
			continue;
		}
		if (!r)
			r = ftl_gc_prog(f, lpn[i], f->buf.page, o->data_crc);
		if (!r)
			CADD(f, m.scrubbed_pages, 1);
	}
	return r;
}

/* One static-WL check: when max - min erase count nears the threshold,
 * move the data of the least-erased full block (cold data) to a worn
 * block.  1 when one was moved, 0 when none needs to be (or there is no
 * room now), else a negative errno. */
static int static_wl_one(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;
	uint32_t mn = UINT32_MAX, mx = 0, cold = FTL_NONE, cec = UINT32_MAX;
	int r;

	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		uint32_t ec = nand_block_ec(f->nand, b);
		if (ec < mn)
			mn = ec;
		if (ec > mx)
			mx = ec;
		if (f->idx.state[b] == FTL_BLK_FULL && b != f->gc.cur &&
		    !f->idx.run_pages[b] && ec < cec) {
			cec = ec;
			cold = b;
		}
	}
	f->maint.wl_spread = mx - mn;
	/* start at 3/4 of the threshold so the spread stays below it */
	if (mx - mn <= f->o.wl_threshold - f->o.wl_threshold / 4 ||
	    cold == FTL_NONE || cec > mn)
		return 0;
	r = ftl_gc_relocate(f, cold, &f->ctr.m.wl_relocations);
	return r == -EAGAIN ? 0 : r ? r : 1;
}

/* Static wear levelling after an erase round (FTL_GC_WL_DUE), rate-
 * limited: one check per WL_EVERY blocks GC erased, or per data_blocks /
 * WL_SCAN on large devices, so the scan of every block costs at most
 * WL_SCAN blocks per erase.  0 or -errno. */
int ftl_wl_static(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;
	uint32_t every = g->data_blocks / WL_SCAN > WL_EVERY ?
			 g->data_blocks / WL_SCAN : WL_EVERY;

	/* within an eighth of the threshold: a check (and a move) per erase,
	 * or a large cold set at the minimum outruns one move per @every
	 * erases (spread 17 over 16, 1 seed in 15, tests/unit/ftl-gc) */
	if (f->maint.wl_spread >= f->o.wl_threshold - f->o.wl_threshold / 8)
		every = 1;

	FTL_ASSERT_HELD(&f->lock);
	/* one check per @every erases, however many an erase round did (a
	 * batch of victims per sync, gc.batch): one check per round let the
	 * spread run to twice the threshold with batches of 4 */
	while (f->gc.erased - f->maint.wl_mark >= every) {
		int r;

		f->maint.wl_mark += every;
		r = static_wl_one(f);
		if (r <= 0) {
			if (r == 0)
				f->maint.wl_mark = f->gc.erased; /* nothing to move */
			return r < 0 ? r : 0;
		}
	}
	return 0;
}
