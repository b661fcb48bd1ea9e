/* SPDX-License-Identifier: MIT */
/*
 * Blocks being emptied now (f->lock held): a block that lost at least
 * FTL_DYING_FRAC of a block's pages within the last block's worth of
 * programs (f->log.seq) is being overwritten by a sequential stream, and
 * will likely lose the rest in a moment.  GC passes it over while it
 * has another candidate (ftl_victim; with one host frontier or streams):
 * greedy and cost-benefit otherwise take a block half way through, copy
 * pages that die right after into a GC block that then dies young (4
 * sequential writers and a random one, docs/engine.md "Placement
 * streams").  4 KiB
 * writes at random lose a block a few pages per block's worth of
 * programs (90/10 hot, 100 valid pages of 6.5k hot ones: 3.5).
 *
 * A window that reached twice the share (a quarter of a block) lasts two
 * blocks' worth of programs: the same rate over twice the time.  The
 * streams' 64 KiB or 256 KiB writes, the random writes and GC copies
 * between them spread a block's overwrite over more programs than it
 * holds pages (up to 100 for a 64-page block on the 32 MiB mix): the
 * window ran out half way, the block read alive with 4 to 26 valid pages
 * until the next write into it, and greedy took it then, copying pages
 * that died right after (1.2-2.5 % of the streams' pages copied; none
 * since, ftl-place case 2b).
 * Memory: 12 bytes per block.
 */
#include <errno.h>
#include <stdlib.h>

#include "ftl-int.h"

#define FTL_DYING_FRAC 8u       /* a block's pages / this: dying */

int ftl_dying_init(struct ftl *f)
{
	f->dying.from = calloc(f->g.nblocks, sizeof(*f->dying.from));
	f->dying.n = calloc(f->g.nblocks, sizeof(*f->dying.n));
	if (!f->dying.from || !f->dying.n) {
		ftl_dying_fini(f);
		return -ENOMEM;
	}
	return 0;
}

void ftl_dying_fini(struct ftl *f)
{
	free(f->dying.from);
	free(f->dying.n);
	f->dying.from = NULL;
	f->dying.n = NULL;
}

/* How long block @b's window lasts, in programs: a block's worth, two
 * once it lost twice the dying share (a quarter of a block: the same rate
 * over twice the time). */
static uint64_t window(const struct ftl *f, uint32_t b)
{
	return f->dying.n[b] >= 2 * (f->g.ppb / FTL_DYING_FRAC) ?
	       2 * (uint64_t)f->g.ppb : f->g.ppb;
}

void ftl_dying_note(struct ftl *f, uint32_t b)
{
	struct ftl_dying *d = &f->dying;

	FTL_ASSERT_HELD(&f->lock);
	if (!d->from)
		return;
	if (f->log.seq - d->from[b] > window(f, b)) {
		d->from[b] = f->log.seq;        /* a new window */
		d->n[b] = 0;
	}
	d->n[b]++;
}

bool ftl_dying(const struct ftl *f, uint32_t b)
{
	const struct ftl_dying *d = &f->dying;

	return d->from && f->log.seq - d->from[b] <= window(f, b) &&
	       d->n[b] >= f->g.ppb / FTL_DYING_FRAC;
}
