/* SPDX-License-Identifier: MIT */
/*
 * Blocks being emptied now (f->lock held): a block that lost at least
 * FTL_DYING_FRAC of a block's pages within the last block's worth of
 * programs (f->log.seq) is being overwritten by a sequential stream, and
 * will likely lose the rest in a moment.  GC passes it over while it
 * has another candidate (ftl_victim, with placement streams): greedy and
 * cost-benefit otherwise take a block half way through, copy pages that
 * die right after into a GC block that then dies young (4 sequential
 * writers and a random one, docs/engine.md "Placement streams").  4 KiB
 * writes at random lose a block a few pages per block's worth of
 * programs (90/10 hot, 100 valid pages of 6.5k hot ones: 3.5).
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

void ftl_dying_note(struct ftl *f, uint32_t b)
{
	struct ftl_dying *d = &f->dying;

	FTL_ASSERT_HELD(&f->lock);
	if (!d->on || !d->from)
		return;         /* nothing asks (streams off): no work */
	if (f->log.seq - d->from[b] > f->g.ppb) {
		d->from[b] = f->log.seq;        /* a new window */
		d->n[b] = 0;
	}
	d->n[b]++;
}

bool ftl_dying(const struct ftl *f, uint32_t b)
{
	const struct ftl_dying *d = &f->dying;

	return d->on && d->from && f->log.seq - d->from[b] <= f->g.ppb &&
	       d->n[b] >= f->g.ppb / FTL_DYING_FRAC;
}
