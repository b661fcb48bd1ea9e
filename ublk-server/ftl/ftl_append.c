/* SPDX-License-Identifier: MIT */
/*
 * The append layer: the only part of the FTL that programs pages.  It
 * opens blocks from the free list, hands out the next page of a stream's
 * open block, programs a page with its OOB record and moves the map.  It
 * talks to the NAND and nothing else: it never collects garbage or writes
 * a checkpoint (ftl_balance.c decides that before a host write; GC makes
 * sure its own stream has a block).  f->lock held throughout.
 */
#include <errno.h>
#include <string.h>

#include "ftl-int.h"

/* Flush the write cache. */
int ftl_sync(struct ftl *f)
{
	int r = nand_sync(f->nand);

	if (!r) {
		f->sync_gen++;
		f->flushed_seq = f->seq;
	}
	return r;
}

/* Point @lpn at @ppn, keeping valid counts. */
void ftl_map_set(struct ftl *f, uint32_t lpn, uint32_t ppn)
{
	uint32_t old = f->map[lpn];

	if (old == FTL_UNMAPPED)
		f->mapped++;
	else if (old != FTL_DAMAGED)
		ftl_valid_dec(f, old / f->g.ppb);
	ftl_valid_inc(f, ppn / f->g.ppb);
	__atomic_store_n(&f->map[lpn], ppn, __ATOMIC_RELEASE);
	ftl_ckpt_dirty(f, lpn);
}

/* Unmap @lpn. */
void ftl_map_unset(struct ftl *f, uint32_t lpn)
{
	uint32_t old = f->map[lpn];

	if (old == FTL_UNMAPPED)
		return;
	if (old != FTL_DAMAGED)
		ftl_valid_dec(f, old / f->g.ppb);
	f->mapped--;
	__atomic_store_n(&f->map[lpn], FTL_UNMAPPED, __ATOMIC_RELEASE);
	ftl_ckpt_dirty(f, lpn);
}

/* Can @n more pages be programmed before a checkpoint is needed (sequence
 * numbers stay below ckpt_seq + seq_gap)?  Long runs of copies (GC,
 * retiring, scrub) stop when not, and ftl_balance() checkpoints. */
bool ftl_seq_room(const struct ftl *f, uint64_t n)
{
	return f->seq + n <= f->ckpt_seq + f->seq_gap;
}

/* Does stream @s need a new block before its next page? */
bool ftl_stream_needs_block(const struct ftl *f, int s)
{
	return f->st[s].blk == FTL_NONE || f->st[s].wp >= f->g.ppb;
}

/* Does block @b hold anything (a non-blank OOB) from page @from on?
 * Uses oobbuf2 (a relocation may be walking oobbuf). */
static int holds_past(struct ftl *f, uint32_t b, uint32_t from, bool *any)
{
	const struct ftl_geom *g = &f->g;
	int r;

	*any = false;
	if (from >= g->ppb || nand_block_oob_hole(f->nand, b))
		return 0;
	r = nand_read_block_oob(f->nand, b, f->oobbuf2);
	for (size_t i = (size_t)from * g->oob;
	     !r && i < (size_t)g->ppb * g->oob && !*any; i++)
		*any = f->oobbuf2[i] != 0;
	return r;
}

/*
 * After a mount: a stream's open block that holds something past its
 * write pointer (stray bytes: the medium changed, or pages a crash left)
 * is closed (FULL; GC reclaims it) rather than programmed over.
 */
int ftl_streams_check(struct ftl *f)
{
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		struct ftl_stream *st = &f->st[s];
		bool any;
		int r;

		if (st->blk == FTL_NONE || st->wp >= f->g.ppb)
			continue;
		r = holds_past(f, st->blk, st->wp, &any);
		if (r)
			return r;
		if (!any)
			continue;
		ftl_set_state(f, st->blk, FTL_BLK_FULL);
		nand_set_block(f->nand, st->blk, f->g.ppb,
			       nand_block_ec(f->nand, st->blk));
		st->blk = FTL_NONE;
	}
	return 0;
}

/* Open a free block for stream @s.  The host stream leaves the last
 * f->gc_reserve free blocks to GC (-ENOSPC when only those are left)
 * unless @dip (a retry after a failed program).  A free block that holds
 * anything (left by a crash, or stray bytes on the medium: checked for
 * every block, one OOB read) is erased first; one whose erase fails is
 * retired. */
static int open_block(struct ftl *f, int s, bool dip)
{
	uint32_t b;
	int r;

	for (;;) {
		if (s == STREAM_HOST && !dip ? f->nfree <= f->gc_reserve
					     : !f->nfree)
			return -ENOSPC;
		/* dynamic wear levelling (ftl_free_take) */
		b = ftl_free_take(f, s != STREAM_HOST);
		/* erase it if anything is left in it */
		bool dirty = false;
		r = holds_past(f, b, 0, &dirty);
		if (!r && dirty)
			r = nand_erase(f->nand, b);
		if (r == -NAND_EFAIL) {
			r = ftl_bb_grown(f, b, "erase failed");
			if (r)
				return r;
			continue;
		}
		if (r) {
			ftl_free_put(f, b);
			return r;
		}
		f->fdirty[b] = 0;
		break;
	}
	ftl_set_state(f, b, FTL_BLK_OPEN);
	f->st[s].blk = b;
	f->st[s].wp = 0;
	if (++f->allocs_since_ckpt >= f->ckpt_interval)
		f->ckpt_due = true;
	return 0;
}

/* Next page of stream @s's open block, opening one when needed. */
static int alloc_page(struct ftl *f, int s, uint64_t *ppn, bool dip)
{
	struct ftl_stream *st = &f->st[s];
	int r;

	if (st->blk != FTL_NONE && st->wp >= f->g.ppb) {
		ftl_set_state(f, st->blk, FTL_BLK_FULL);
		st->blk = FTL_NONE;
	}
	if (st->blk == FTL_NONE) {
		r = open_block(f, s, dip);
		if (r)
			return r;
	}
	*ppn = (uint64_t)st->blk * f->g.ppb + st->wp++;
	return 0;
}

int ftl_alloc_page(struct ftl *f, int s, uint64_t *ppn)
{
	return alloc_page(f, s, ppn, false);
}

/*
 * Program one page into stream @stream's open block with a fresh sequence
 * number and its OOB record; a data page becomes @lpn's mapping.
 * Sequence numbers stay below ckpt_seq + seq_gap (recovery relies on it):
 * ftl_balance() checkpoints early enough; running past it is a bug.
 * A failed program retires its block and the page goes to the next one
 * (up to FTL_PROG_RETRIES blocks, dipping into GC's reserve).
 */
int ftl_prog_page(struct ftl *f, int stream, uint32_t lpn, const void *data,
		  uint8_t kind, uint64_t *seq_out)
{
	uint8_t oob[1024];
	uint64_t ppn, seq;
	uint32_t blk;
	int r;

	for (unsigned tries = 0;; tries++) {
		if (f->seq + 1 > f->ckpt_seq + f->seq_gap)
			return -EIO;
		r = alloc_page(f, stream, &ppn, tries > 0);
		if (r)
			return r;
		blk = (uint32_t)(ppn / f->g.ppb);
		seq = ++f->seq;
		memset(oob, 0, f->g.oob);
		ftl_oob_fill((struct ftl_oob *)oob, kind, (uint16_t)stream, lpn,
			     seq, nand_block_ec(f->nand, blk), data, f->g.ps);
		ftl_oob_set_flushed(oob, f->g.oob, f->flushed_seq);
		r = nand_program(f->nand, ppn, data, oob);
		if (r != -NAND_EFAIL)
			break;
		/* status FAIL: retire the block (its valid pages move at the
		 * next balance) and program the page elsewhere */
		r = ftl_bb_grown(f, blk, "program failed");
		if (r)
			return r;
		if (tries + 1 >= FTL_PROG_RETRIES)
			return -EIO;
	}
	if (r)
		return r;
	f->mtime[blk] = seq;
	if (kind == FTL_OOB_DATA)
		ftl_map_set(f, lpn, (uint32_t)ppn);
	else if (kind == FTL_OOB_TRIM)
		f->trim_seq[blk] = seq;
	if (seq_out)
		*seq_out = seq;
	return 0;
}
