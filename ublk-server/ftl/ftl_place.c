/* SPDX-License-Identifier: MIT */
/*
 * Placement: which host frontier (open block) a host write goes to, by the
 * measured update temperature of its logical pages (docs/engine.md,
 * "Placement streams").  f->lock held throughout.
 *
 * Temperature: one counter per group of FTL_PLACE_GROUP logical pages,
 * raised by one per host write (request turn) touching the group, so a
 * sequential write counts one update per group it crosses and a 4 KiB
 * random write one for its page's group.  Every ngroups * FTL_PLACE_EPOCH
 * host pages written (one device's worth) an epoch ends and every counter
 * halves (lazily: a group keeps the epoch of its last update and is
 * shifted when next looked at).  In a steady state a group taking a share
 * p of E updates per epoch sits between E*p and 2*E*p; under uniform 4 KiB
 * traffic that is FTL_PLACE_EPOCH .. 2*FTL_PLACE_EPOCH, under sequential
 * overwrites of the whole device 1 .. 2.  A group is hot when its counter
 * is above twice the measured mean at this point of the epoch (hot_thr;
 * under uniform 4 KiB traffic 2 * FTL_PLACE_EPOCH * (1 + elapsed
 * fraction)).  Hot writes go to
 * STREAM_HOST, the rest (cold, sequential) to STREAM_COLD; GC copies keep
 * their own stream (STREAM_GC).  Memory: 2 bytes per group (1/4 byte per
 * logical page).
 */
#include <errno.h>
#include <stdlib.h>

#include "ftl-int.h"

/* Spare blocks (data blocks beyond the logical size, less bad blocks)
 * needed for a second host frontier: GC's reserve, three open blocks,
 * slack; fewer: one host frontier. */
#define FTL_PLACE_MIN_SPARE 16u

int ftl_place_init(struct ftl *f, bool off)
{
	struct ftl_place *p = &f->place;

	p->ngroups = (f->g.nlpn + FTL_PLACE_GROUP - 1) / FTL_PLACE_GROUP;
	p->cnt = calloc(p->ngroups, 1);
	p->ep = calloc(p->ngroups, 1);
	p->off = off;
	p->ups_prev = (uint64_t)p->ngroups * FTL_PLACE_EPOCH;
	if (!p->cnt || !p->ep) {
		ftl_place_fini(f);
		return -ENOMEM;
	}
	return 0;
}

void ftl_place_fini(struct ftl *f)
{
	free(f->place.cnt);
	free(f->place.ep);
	f->place.cnt = f->place.ep = NULL;
}

/* Group @gi's counter, brought up to the current epoch. */
static uint32_t temp(struct ftl_place *p, uint32_t gi)
{
	uint8_t d = (uint8_t)(p->epoch - p->ep[gi]);

	p->cnt[gi] = d >= 8 ? 0 : (uint8_t)(p->cnt[gi] >> d);
	p->ep[gi] = (uint8_t)p->epoch;
	return p->cnt[gi];
}

/* The hot threshold: twice the mean counter at this point of the epoch,
 * the mean measured (group updates over the last epoch's worth of pages,
 * this epoch's and the rest from the previous one, rounded up) rather
 * than assumed to be 4 KiB traffic's FTL_PLACE_EPOCH: long writes raise
 * one counter per group, so with sequential streams in the mix the mean is
 * lower and 4 KiB writes at random over a part of the device, rewriting
 * each page no more often than the streams do, still read hot (4
 * sequential writers and a random one: 8..16 updates per epoch against a
 * mean of 2.4).  Identical to 2 * FTL_PLACE_EPOCH * (1 + elapsed) under 4
 * KiB writes only.  At least 2: a group written twice is not hot. */
static uint64_t hot_thr(const struct ftl_place *p)
{
	uint64_t e = (uint64_t)p->ngroups * FTL_PLACE_EPOCH;
	uint64_t w = p->ups + (p->ups_prev * (e - p->upd) + e - 1) / e;
	__extension__ unsigned __int128 t = (unsigned __int128)2 * w *
					    (e + p->upd) /
					    ((unsigned __int128)p->ngroups * e);

	return t < 2 ? 2 : (uint64_t)t;
}

bool ftl_place_hot(struct ftl *f, uint32_t lpn)
{
	FTL_ASSERT_HELD(&f->lock);
	return temp(&f->place, lpn / FTL_PLACE_GROUP) > hot_thr(&f->place);
}

void ftl_place_note(struct ftl *f, uint32_t lpn, uint32_t n)
{
	struct ftl_place *p = &f->place;
	uint64_t e = (uint64_t)p->ngroups * FTL_PLACE_EPOCH;
	uint32_t g0 = lpn / FTL_PLACE_GROUP, g1;

	FTL_ASSERT_HELD(&f->lock);
	if (!n || lpn >= f->g.nlpn)
		return;
	g1 = (lpn + n - 1) / FTL_PLACE_GROUP;
	for (uint32_t gi = g0; gi <= g1 && gi < p->ngroups; gi++) {
		if (temp(p, gi) < 255)
			p->cnt[gi]++;
		p->ups++;
	}
	/* time runs in pages written: a sequential pass over the device
	 * gives each group one update where 4 KiB writes at random give it
	 * FTL_PLACE_GROUP */
	for (p->upd += n; p->upd >= e; p->upd -= e) {
		p->epoch++;
		p->ups_prev = p->ups;
		p->ups = 0;
	}
}

/* Enough spare blocks for a second host frontier? */
bool ftl_place_on(const struct ftl *f)
{
	uint32_t lb = (f->g.nlpn + f->g.ppb - 1) / f->g.ppb;
	uint32_t used = lb + f->bb.n;

	return !f->place.off && f->g.data_blocks >= used &&
	       f->g.data_blocks - used >= FTL_PLACE_MIN_SPARE;
}

int ftl_place_host(struct ftl *f, uint32_t lpn)
{
	FTL_ASSERT_HELD(&f->lock);
	return lpn != FTL_NONE && ftl_place_on(f) && !ftl_place_hot(f, lpn) ?
	       STREAM_COLD : STREAM_HOST;
}
