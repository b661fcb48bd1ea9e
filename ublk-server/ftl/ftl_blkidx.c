/* SPDX-License-Identifier: MIT */
/*
 * Block indexes, so that a free block and a GC victim are found in
 * O(log n) instead of by a scan of every block (f->lock held):
 *  - the free blocks, in two binary heaps: fewest erases first (host
 *    writes) and most erases first (GC and WL copies), each ordered by
 *    (erase count, block number);
 *  - the FULL data blocks, bucketed by valid-page count (ppb + 1 buckets),
 *    each bucket a binary heap ordered by (last program, block number)
 *    under cost-benefit, by block number under greedy.  Greedy takes the
 *    lowest non-empty bucket's first block; cost-benefit the best of the
 *    buckets' first blocks (within a bucket the oldest scores best).  Both
 *    pick exactly the block the scan of every block (ftl_victim_scan)
 *    picks: ties go to the lower block number.  A FULL block holding
 *    pages of a host run still in flight (f->idx.run_pages: reserved, not
 *    published) is left out until the run is published: its valid count
 *    does not count those pages yet, and a victim chosen by it would be
 *    data written a moment ago (ftl_run_busy).  With placement streams
 *    both first look past the blocks being emptied now (ftl_dying.c; a
 *    bucket's first block dying: the rest of the bucket is scanned), then,
 *    if that found nothing, take them too.
 * The indexes are rebuilt from the block states at every mount
 * (ftl_rebuild_lists) and kept up to date by ftl_set_state(),
 * ftl_valid_inc/dec() and the free-set calls.  A bucket grows by realloc;
 * when that fails the victim choice scans until a rebuild succeeds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"

/* ---- an indexed binary heap of block numbers ---------------------------- */

static bool h_less(const struct ftl_heap *h, uint32_t x, uint32_t y)
{
	if (h->key && h->key[x] != h->key[y])
		return h->max ? h->key[x] > h->key[y] : h->key[x] < h->key[y];
	return x < y;
}

static void h_set(struct ftl_heap *h, uint32_t i, uint32_t b)
{
	h->a[i] = b;
	h->pos[b] = i;
}

static void h_up(struct ftl_heap *h, uint32_t i)
{
	uint32_t b = h->a[i];

	while (i) {
		uint32_t p = (i - 1) / 2;

		if (!h_less(h, b, h->a[p]))
			break;
		h_set(h, i, h->a[p]);
		i = p;
	}
	h_set(h, i, b);
}

static void h_down(struct ftl_heap *h, uint32_t i)
{
	uint32_t b = h->a[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h_less(h, h->a[c + 1], h->a[c]))
			c++;
		if (!h_less(h, h->a[c], b))
			break;
		h_set(h, i, h->a[c]);
		i = c;
	}
	h_set(h, i, b);
}

static int h_push(struct ftl_heap *h, uint32_t b)
{
	if (h->n == h->cap) {
		uint32_t c = h->cap ? h->cap * 2 : 16;
		uint32_t *a = realloc(h->a, (size_t)c * sizeof(*a));

		if (!a)
			return -ENOMEM;
		h->a = a;
		h->cap = c;
	}
	h->a[h->n] = b;
	h->pos[b] = h->n;
	h_up(h, h->n++);
	return 0;
}

static void h_del(struct ftl_heap *h, uint32_t b)
{
	uint32_t i = h->pos[b], last = h->a[--h->n];

	h->pos[b] = FTL_NONE;
	if (i == h->n)
		return;
	h_set(h, i, last);
	h_up(h, i);
	h_down(h, h->pos[last]);
}

/* ---- setup -------------------------------------------------------------- */

int ftl_idx_init(struct ftl *f)
{
	size_t nb = f->g.nblocks;

	f->idx.fkey = calloc(nb, sizeof(*f->idx.fkey));
	f->idx.vkey = calloc(nb, sizeof(*f->idx.vkey));
	f->idx.vbk = malloc(nb * sizeof(*f->idx.vbk));
	f->idx.vpos = malloc(nb * sizeof(*f->idx.vpos));
	f->idx.vh = calloc((size_t)f->g.ppb + 1, sizeof(*f->idx.vh));
	if (!f->idx.fkey || !f->idx.vkey || !f->idx.vbk || !f->idx.vpos || !f->idx.vh)
		return -ENOMEM;
	memset(f->idx.vbk, 0xff, nb * sizeof(*f->idx.vbk));
	memset(f->idx.vpos, 0xff, nb * sizeof(*f->idx.vpos));
	for (int i = 0; i < 2; i++) {
		struct ftl_heap *h = &f->idx.fh[i];

		h->a = malloc(nb * sizeof(*h->a));
		h->pos = malloc(nb * sizeof(*h->pos));
		if (!h->a || !h->pos)
			return -ENOMEM;
		memset(h->pos, 0xff, nb * sizeof(*h->pos));
		h->cap = (uint32_t)nb;          /* never grows */
		h->key = f->idx.fkey;
		h->max = i == 1;
	}
	for (uint32_t v = 0; v <= f->g.ppb; v++) {
		f->idx.vh[v].pos = f->idx.vpos;
		f->idx.vh[v].key = f->idx.vkey;
	}
	return 0;
}

void ftl_idx_fini(struct ftl *f)
{
	for (int i = 0; i < 2; i++) {
		free(f->idx.fh[i].a);
		free(f->idx.fh[i].pos);
	}
	if (f->idx.vh)
		for (uint32_t v = 0; v <= f->g.ppb; v++)
			free(f->idx.vh[v].a);
	free(f->idx.vh);
	free(f->idx.fkey);
	free(f->idx.vkey);
	free(f->idx.vbk);
	free(f->idx.vpos);
}

/* ---- free blocks -------------------------------------------------------- */

/* @b joins the free set (its erase count now is its key). */
void ftl_free_put(struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	f->idx.fkey[b] = nand_block_ec(f->nand, b);
	for (int i = 0; i < 2; i++)
		(void)h_push(&f->idx.fh[i], b);     /* preallocated: cannot fail */
	f->idx.nfree = f->idx.fh[0].n;
}

/*
 * Dynamic wear levelling: host writes (hot) get the free block with the
 * fewest erases, GC and WL copies (cold: they survived) the one with the
 * most, so worn blocks rest under cold data.  f->idx.nfree > 0.
 */
uint32_t ftl_free_take(struct ftl *f, bool most_worn)
{
	uint32_t b = f->idx.fh[most_worn ? 1 : 0].a[0];

	FTL_ASSERT_HELD(&f->lock);
	ftl_free_drop(f, b);
	return b;
}

/* @b leaves the free set if it is there. */
void ftl_free_drop(struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	if (f->idx.fh[0].pos[b] == FTL_NONE)
		return;
	for (int i = 0; i < 2; i++)
		h_del(&f->idx.fh[i], b);
	f->idx.nfree = f->idx.fh[0].n;
}

bool ftl_free_has(const struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	return f->idx.fh[0].pos[b] != FTL_NONE;
}

/* Block @b was erased: FREE, no valid page left, in the free set. */
void ftl_free_erased(struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	ftl_set_state(f, b, FTL_BLK_FREE);
	f->idx.valid[b] = 0;
	ftl_free_put(f, b);
}

/* ---- full blocks by valid count ------------------------------------------ */

static void full_add(struct ftl *f, uint32_t b)
{
	uint32_t v = f->idx.valid[b] < f->g.ppb ? f->idx.valid[b] : f->g.ppb;

	if (f->idx.run_pages[b])
		return;                 /* joins when the run is published */
	f->idx.vkey[b] = f->o.gc == FTL_GC_COST_BENEFIT ? f->log.mtime[b] : 0;
	if (h_push(&f->idx.vh[v], b))
		f->idx.lost = true;             /* scan until rebuilt */
	else
		f->idx.vbk[b] = v;
}

static void full_del(struct ftl *f, uint32_t b)
{
	if (f->idx.vbk[b] == FTL_NONE)
		return;
	h_del(&f->idx.vh[f->idx.vbk[b]], b);
	f->idx.vbk[b] = FTL_NONE;
}

/* Set block @b's state, keeping the victim index. */
void ftl_set_state(struct ftl *f, uint32_t b, uint8_t s)
{
	bool was = f->idx.state[b] == FTL_BLK_FULL;

	FTL_ASSERT_HELD(&f->lock);
	f->idx.state[b] = s;
	ftl_ckpt_blk_dirty(f, b);
	if (b < f->g.ckpt_blocks || was == (s == FTL_BLK_FULL))
		return;
	if (was)
		full_del(f, b);
	else
		full_add(f, b);
}

static void refile(struct ftl *f, uint32_t b)
{
	if (f->idx.vbk[b] == FTL_NONE)
		return;
	full_del(f, b);
	full_add(f, b);
}

/* A host run reserved @n pages of block @b (f->lock held): out of the
 * victim index until ftl_run_unbusy has taken them all back.  (A block is
 * reserved in while it is its stream's open block, never indexed; the
 * next run's allocation may close it at once, FULL with a valid count
 * short of those pages: greedy then took it first and copied data just
 * written.) */
void ftl_run_busy(struct ftl *f, uint32_t b, uint32_t n)
{
	FTL_ASSERT_HELD(&f->lock);
	f->idx.run_pages[b] += n;
	full_del(f, b);
}

/* The run's @n pages in block @b are published (or given up). */
void ftl_run_unbusy(struct ftl *f, uint32_t b, uint32_t n)
{
	FTL_ASSERT_HELD(&f->lock);
	f->idx.run_pages[b] -= n;
	if (!f->idx.run_pages[b] && f->idx.state[b] == FTL_BLK_FULL &&
	    b >= f->g.ckpt_blocks && f->idx.vbk[b] == FTL_NONE)
		full_add(f, b);
}

void ftl_valid_inc(struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	f->idx.valid[b]++;
	refile(f, b);
}

void ftl_valid_dec(struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	f->idx.valid[b]--;
	ftl_dying_note(f, b);
	refile(f, b);
}

/* Rebuild both indexes from the block states and valid counts; the free
 * set holds exactly the FREE data blocks. */
void ftl_idx_rebuild(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;

	FTL_ASSERT_HELD(&f->lock);
	for (int i = 0; i < 2; i++) {
		f->idx.fh[i].n = 0;
		memset(f->idx.fh[i].pos, 0xff, (size_t)g->nblocks * sizeof(uint32_t));
	}
	for (uint32_t v = 0; v <= g->ppb; v++)
		f->idx.vh[v].n = 0;
	memset(f->idx.vpos, 0xff, (size_t)g->nblocks * sizeof(*f->idx.vpos));
	memset(f->idx.vbk, 0xff, (size_t)g->nblocks * sizeof(*f->idx.vbk));
	f->idx.lost = false;
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		if (f->idx.state[b] == FTL_BLK_FREE)
			ftl_free_put(f, b);
		else if (f->idx.state[b] == FTL_BLK_FULL)
			full_add(f, b);
	}
	f->idx.nfree = f->idx.fh[0].n;
}

/* The victim the scan of every block picks (the reference; used when a
 * bucket could not grow). */
static uint32_t scan_pass(const struct ftl *f, uint32_t max_valid, bool skip)
{
	const struct ftl_geom *g = &f->g;
	uint32_t best = FTL_NONE, bv = UINT32_MAX;
	double bscore = -1;

	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		uint32_t v = f->idx.valid[b];

		if (f->idx.state[b] != FTL_BLK_FULL || v >= g->ppb || v > max_valid ||
		    b == f->gc.cur || f->idx.run_pages[b] ||
		    (skip && v && ftl_dying(f, b)))
			continue;
		if (f->o.gc == FTL_GC_COST_BENEFIT) {
			double u = (double)v / g->ppb;
			double age = (double)(f->log.seq - f->log.mtime[b]) + 1;
			double score = (1 - u) * age / (1 + u);
			if (score > bscore) {
				bscore = score;
				best = b;
			}
		} else if (v < bv) {
			bv = v;
			best = b;
			if (!v)
				break;
		}
	}
	return best;
}

uint32_t ftl_victim_scan(const struct ftl *f, uint32_t max_valid)
{
	uint32_t b;

	FTL_ASSERT_HELD(&f->lock);
	b = scan_pass(f, max_valid, true);
	return b != FTL_NONE ? b : scan_pass(f, max_valid, false);
}

/* The first block of bucket @h in its order that is neither the GC
 * thread's victim nor being emptied now (ftl_dying); FTL_NONE if none.
 * O(blocks in the bucket): only when its first block is dying. */
static uint32_t bucket_alive(const struct ftl *f, const struct ftl_heap *h)
{
	uint32_t best = FTL_NONE;

	for (uint32_t i = 0; i < h->n; i++) {
		uint32_t b = h->a[i];

		if (b != f->gc.cur && !ftl_dying(f, b) &&
		    (best == FTL_NONE || h_less(h, b, best)))
			best = b;
	}
	return best;
}

/*
 * The GC victim: a FULL block with fewer valid pages than a block holds
 * and at most @max_valid (what GC has room to copy); greedy: the fewest
 * valid pages; cost-benefit: the highest (1-u)·age/(1+u); with placement
 * streams not a block being emptied now (ftl_dying) while there is
 * another; never the GC
 * thread's victim (f->gc.cur), never a block with a host run in flight
 * (not indexed).  FTL_NONE if there is none.  O(ppb + log n).
 */
static uint32_t victim_pass(struct ftl *f, uint32_t max_valid, bool skip)
{
	const struct ftl_geom *g = &f->g;
	uint32_t best = FTL_NONE;
	double bscore = -1;

	for (uint32_t v = 0; v < g->ppb && v <= max_valid; v++) {
		uint32_t b;
		double u, age, score;

		if (!f->idx.vh[v].n)
			continue;
		b = f->idx.vh[v].a[0];
		if (b == f->gc.cur) {
			/* the GC thread's victim, half evacuated: the next
			 * of this bucket (a child of the root), if any */
			const struct ftl_heap *h = &f->idx.vh[v];

			if (h->n < 2)
				continue;
			b = h->a[1];
			if (h->n > 2 && h_less(h, h->a[2], b))
				b = h->a[2];
		}
		if (skip && v && ftl_dying(f, b)) {
			b = bucket_alive(f, &f->idx.vh[v]);
			if (b == FTL_NONE)
				continue;
		}
		if (f->o.gc != FTL_GC_COST_BENEFIT)
			return b;
		u = (double)v / g->ppb;
		age = (double)(f->log.seq - f->log.mtime[b]) + 1;
		score = (1 - u) * age / (1 + u);
		if (score > bscore || (score == bscore && b < best)) {
			bscore = score;
			best = b;
		}
	}
	return best;
}

uint32_t ftl_victim(struct ftl *f, uint32_t max_valid)
{
	uint32_t b;

	FTL_ASSERT_HELD(&f->lock);
	if (f->idx.lost) {
		ftl_idx_rebuild(f);
		if (f->idx.lost)
			return ftl_victim_scan(f, max_valid);
	}
	b = victim_pass(f, max_valid, true);
	return b != FTL_NONE ? b : victim_pass(f, max_valid, false);
}

/* ---- checks (tests) ------------------------------------------------------ */

static int h_check(const struct ftl_heap *h)
{
	for (uint32_t i = 0; i < h->n; i++) {
		if (h->pos[h->a[i]] != i)
			return -1;
		if (i && h_less(h, h->a[i], h->a[(i - 1) / 2]))
			return -1;
	}
	return 0;
}

/*
 * Every invariant of the indexes: the free set is exactly the FREE data
 * blocks, keyed by their erase count; every FULL data block without a
 * host run in flight sits in the bucket of its valid count, keyed by its
 * last program (cost-benefit); nothing else is indexed; every heap is a
 * heap.  0 or the first broken
 * block + 1 (a negative number for a broken heap).
 */
long ftl_idx_check(const struct ftl *f)
{
	const struct ftl_geom *g = &f->g;
	uint64_t nfull = 0, inb = 0;

	FTL_ASSERT_HELD(&f->lock);
	for (int i = 0; i < 2; i++)
		if (h_check(&f->idx.fh[i]) || f->idx.fh[i].n != f->idx.nfree)
			return -1;
	for (uint32_t v = 0; v <= g->ppb; v++) {
		if (h_check(&f->idx.vh[v]))
			return -2 - (long)v;
		inb += f->idx.vh[v].n;
	}
	for (uint32_t b = 0; b < g->nblocks; b++) {
		bool data = b >= g->ckpt_blocks;
		bool isfree = data && f->idx.state[b] == FTL_BLK_FREE;
		bool full = data && f->idx.state[b] == FTL_BLK_FULL &&
			    !f->idx.run_pages[b];
		uint32_t v = f->idx.valid[b] < g->ppb ? f->idx.valid[b] : g->ppb;

		if (isfree != ftl_free_has(f, b) ||
		    (isfree != (f->idx.fh[1].pos[b] != FTL_NONE)) ||
		    (isfree && f->idx.fkey[b] != nand_block_ec(f->nand, b)))
			return (long)b + 1;
		if (f->idx.lost)
			continue;
		nfull += full;
		if (full != (f->idx.vbk[b] != FTL_NONE) ||
		    (full && (f->idx.vbk[b] != v || f->idx.vpos[b] >= f->idx.vh[v].n ||
			      f->idx.vh[v].a[f->idx.vpos[b]] != b ||
			      f->idx.vkey[b] != (f->o.gc == FTL_GC_COST_BENEFIT ?
					     f->log.mtime[b] : 0))))
			return (long)b + 1;
	}
	if (!f->idx.lost && nfull != inb)
		return -1000;
	return 0;
}
