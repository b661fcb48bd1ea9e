/* SPDX-License-Identifier: MIT */
/*
 * The one place that decides, before a host write or trim, whether to
 * write a checkpoint or collect garbage first (like f2fs's
 * f2fs_balance_fs): the append layer below then always has a block and
 * sequence numbers to give out, and never calls back up.
 */
#include "ftl-int.h"

/* Most pages one ftl_gc_free_space() round (and its static-WL move) may
 * program: every victim it takes (at most FTL_GC_RESERVE + 1 +
 * gc_batch_max), one WL block, and the host page itself. */
static uint64_t round_pages(const struct ftl *f)
{
	return ((uint64_t)FTL_GC_RESERVE + 3 + f->gc_batch_max) * f->g.ppb + 1;
}

/* Checkpoint when one more round could run past ckpt_seq + seq_gap. */
static bool seq_room_low(const struct ftl *f)
{
	return f->seq + round_pages(f) > f->ckpt_seq + f->seq_gap;
}

/*
 * Make room for one host page (f->lock held): a checkpoint when one is
 * due, garbage collection while the host stream would have to open a
 * block from GC's reserve.
 */
int ftl_balance(struct ftl *f)
{
	int r;

	for (;;) {
		if (f->ckpt_due || seq_room_low(f)) {
			r = ftl_ckpt_write(f, false);
			if (r)
				return r;
		}
		if (!ftl_stream_needs_block(f, STREAM_HOST) ||
		    f->nfree > FTL_GC_RESERVE)
			return 0;
		r = ftl_gc_free_space(f);
		if (r)
			return r;
	}
}
