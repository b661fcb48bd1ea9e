/* SPDX-License-Identifier: MIT */
/*
 * The one place that decides, before a host write or trim, whether to
 * write a checkpoint or collect garbage first (like f2fs's
 * f2fs_balance_fs): the append layer below then always has a block and
 * sequence numbers to give out, and never calls back up.
 */
#include <errno.h>

#include "ftl-int.h"

/* Checkpoint when the host page (and the blocks a failed program may
 * retry in) could run past ck.seq + ck.seq_gap.  Longer runs of copies (GC,
 * static WL, retiring, scrub) check ftl_seq_room() per page and stop with
 * -EAGAIN; the next turn of the loop below then checkpoints. */
static bool seq_room_low(const struct ftl *f)
{
	return !ftl_seq_room(f, FTL_PROG_RETRIES + 2);
}

/*
 * Make room for one host page (f->lock held): a checkpoint when one is
 * due, moving valid pages off retired blocks, scrub rewrites (ftl_maint.c),
 * garbage collection (and the static-WL check after its erase round)
 * while the host stream would have to open a block from GC's
 * reserve (the low watermark: with a background GC thread, ftl_bggc.c,
 * only when it cannot help; above it the thread is woken instead, a
 * writer of @pages host pages below its high watermark is paced, once per
 * call, in proportion to how far the thread is behind: ftl_bggc_pace,
 * and one at the reserve waits for it: ftl_bggc_throttle).  A due
 * checkpoint is the thread's, when there is one.
 * -EROFS once the spares are used up (ftl_bb_grown); -ENOSPC when GC
 * found no room (a backing that is full: the device stays writable); an
 * error the GC thread hit since the last host write is returned once.
 */
int ftl_balance(struct ftl *f, uint32_t pages)
{
	unsigned waits = 0;
	bool paced = false;
	int r, t;

	FTL_ASSERT_HELD(&f->lock);
	r = ftl_bggc_poke(f);
	if (r)
		return r;
	for (;;) {
		/* a checkpoint that came due is the GC thread's, unless
		 * the writer cannot wait: sequence room, or no thread that
		 * writes it (one two intervals behind is waited for:
		 * ftl_bggc_ckpt_wait) */
		bool ck = seq_room_low(f);

		if (!ck && f->ck.due && f->bggc.running && !f->bggc.err &&
		    f->ck.allocs >= 2 * f->ck.interval) {
			if (!ftl_bggc_ckpt_wait(f))
				continue;       /* the lock was let go: again */
			ck = true;
		}
		if (ck || (f->ck.due && (!f->bggc.running || f->bggc.err))) {
			r = ftl_ckpt_write(f, false);
			if (r)
				return r;
		}
		/* move data off retired blocks, rewrite pages near the ECC
		 * limit (at most a block each): with the host's share of
		 * free blocks only, as they free nothing; else later */
		r = 0;
		if (f->idx.nfree > f->gc.reserve)
			r = ftl_retire_move(f);
		if (!r && f->idx.nfree > f->gc.reserve)
			r = ftl_scrub_run(f);
		if (r && r != -ENOSPC)
			return r;
		if (f->bb.worn_out)
			return -EROFS;
		/* a short delay in proportion to the GC debt, not one
		 * writer's whole wait at the reserve (PACING, ftl_bggc.c) */
		if (!paced) {
			paced = true;
			if (ftl_bggc_pace(f, pages))
				continue;       /* the lock was let go: again */
		}
		if (!ftl_host_needs_block(f))
			return 0;
		/* at the reserve: waits for the GC thread; inline GC only
		 * without its help */
		t = ftl_bggc_throttle(f, &waits);
		if (t == 0)
			return 0;
		if (t == 2)
			continue;       /* the lock was let go: again */
		CADD(f, m.gc_fg_runs, 1);       /* the writer waits */
		r = ftl_gc_free_space(f);
		if (r == FTL_GC_WL_DUE)
			r = ftl_wl_static(f);   /* after the erase round */
		/* -ENOSPC here is not "bad blocks took the spares": the
		 * spares absorb bb_limit bad blocks with room for GC to
		 * spare, and more turn the engine read-only where they are
		 * retired (ftl_bb_grown).  It is the backing's (a full
		 * filesystem under a sparse image): the write fails, the
		 * next one tries again, nothing is persisted. */
		if (r)
			return r;
	}
}
