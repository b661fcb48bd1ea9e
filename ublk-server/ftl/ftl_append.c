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
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

/* Flush the write cache. */
int ftl_sync(struct ftl *f)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	/* the flush record must not cover a program still in flight */
	ftl_inflight_drain(f);
	r = nand_sync(f->nand);

	if (!r) {
		f->log.sync_gen++;
		f->log.flushed_seq = f->log.seq;
	}
	return r;
}

/*
 * Retire block @blk in use (a program or erase failed, a page could not be
 * read back; f->lock held): it leaves its stream and goes into the
 * bad-block table (ftl_bb_grown); its valid pages stay readable where
 * they are until ftl_balance() moves them (ftl_maint.c).  -EIO when @blk
 * is not a data block; else the table's write.
 */
int ftl_retire_block(struct ftl *f, uint32_t blk, const char *why)
{
	FTL_ASSERT_HELD(&f->lock);
	if (blk >= f->g.ckpt_blocks && blk < f->g.nblocks) {
		for (unsigned s = 0; s < FTL_NFRONT; s++)
			if (f->log.st[s].blk == blk)
				f->log.st[s].blk = FTL_NONE;
		f->log.fdirty[blk] = 0;
	}
	return ftl_bb_grown(f, blk, why);
}

/* Point @lpn at @ppn, keeping valid counts. */
void ftl_map_set(struct ftl *f, uint32_t lpn, uint32_t ppn)
{
	uint32_t old = f->log.map[lpn];

	FTL_ASSERT_HELD(&f->lock);
	if (old == FTL_UNMAPPED)
		f->log.mapped++;
	else if (old != FTL_DAMAGED)
		ftl_valid_dec(f, old / f->g.ppb);
	ftl_valid_inc(f, ppn / f->g.ppb);
	__atomic_store_n(&f->log.map[lpn], ppn, __ATOMIC_RELEASE);
	ftl_ckpt_dirty(f, lpn);
}

/* Unmap @lpn. */
void ftl_map_unset(struct ftl *f, uint32_t lpn)
{
	uint32_t old = f->log.map[lpn];

	FTL_ASSERT_HELD(&f->lock);
	if (old == FTL_UNMAPPED)
		return;
	if (old != FTL_DAMAGED)
		ftl_valid_dec(f, old / f->g.ppb);
	f->log.mapped--;
	__atomic_store_n(&f->log.map[lpn], FTL_UNMAPPED, __ATOMIC_RELEASE);
	ftl_ckpt_dirty(f, lpn);
}

/* Can @n more pages be programmed before a checkpoint is needed (sequence
 * numbers stay below ck.seq + ck.seq_gap)?  Long runs of copies (GC,
 * retiring, scrub) stop when not, and ftl_balance() checkpoints. */
bool ftl_seq_room(const struct ftl *f, uint64_t n)
{
	FTL_ASSERT_HELD(&f->lock);
	return f->log.seq + n <= f->ck.seq + f->ck.seq_gap;
}

int ftl_gc_dest(struct ftl *f, const uint32_t *lpn, uint32_t n)
{
	uint32_t hot = 0;

	FTL_ASSERT_HELD(&f->lock);
	if (!ftl_place_on(f))
		return STREAM_GC;
	for (uint32_t i = 0; i < n; i++)
		hot += ftl_place_hot(f, lpn[i]);
	return 2 * hot > n ? STREAM_GCHOT : STREAM_GC;
}

void ftl_frontiers_close(struct ftl *f)
{
	static const int named[] = { STREAM_HOST, STREAM_GC };
	static const int extra[] = { STREAM_COLD, STREAM_GCHOT };

	FTL_ASSERT_HELD(&f->lock);
	for (unsigned i = 0; i < 2; i++) {
		struct ftl_stream *st = &f->log.st[extra[i]];
		struct ftl_stream *nm = &f->log.st[named[i]], t;

		if (st->blk == FTL_NONE)
			continue;
		ftl_inflight_drain(f);  /* its runs on the medium first */
		/* the checkpoint names the emptier of the two, the fuller is
		 * closed: closing a nearly empty block left a young victim
		 * with few valid pages, whose erase (flush summaries) wanted
		 * two checkpoints, which closed the next one... (4 sequential
		 * writers and a random one: 191 checkpoints instead of 13) */
		if (nm->blk == FTL_NONE || nm->wp > st->wp) {
			t = *nm;
			*nm = *st;
			*st = t;
			if (st->blk == FTL_NONE)
				continue;
		}
		ftl_set_state(f, st->blk, FTL_BLK_FULL);
		nand_set_block(f->nand, st->blk, f->g.ppb,
			       nand_block_ec(f->nand, st->blk));
		st->blk = FTL_NONE;
	}
}

bool ftl_host_needs_block(const struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	return ftl_stream_needs_block(f, STREAM_HOST) ||
	       (ftl_place_on(f) && ftl_stream_needs_block(f, STREAM_COLD));
}

/* Does stream @s need a new block before its next page? */
bool ftl_stream_needs_block(const struct ftl *f, int s)
{
	FTL_ASSERT_HELD(&f->lock);
	return f->log.st[s].blk == FTL_NONE || f->log.st[s].wp >= f->g.ppb;
}

/* Does block @b hold anything (a non-blank OOB) from page @from on?
 * Uses buf.oob2 (a relocation may be walking buf.oob). */
static int holds_past(struct ftl *f, uint32_t b, uint32_t from, bool *any)
{
	const struct ftl_geom *g = &f->g;
	int r;

	*any = false;
	if (from >= g->ppb || nand_block_oob_hole(f->nand, b))
		return 0;
	r = nand_read_block_oob(f->nand, b, f->buf.oob2);
	for (size_t i = (size_t)from * g->oob;
	     !r && i < (size_t)g->ppb * g->oob && !*any; i++)
		*any = f->buf.oob2[i] != 0;
	return r;
}

/*
 * After a mount: a stream's open block that holds something past its
 * write pointer (stray bytes: the medium changed, or pages a crash left)
 * is closed (FULL; GC reclaims it) rather than programmed over.
 */
int ftl_streams_check(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	for (unsigned s = 0; s < FTL_NFRONT; s++) {
		struct ftl_stream *st = &f->log.st[s];
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
 * f->gc.reserve free blocks to GC (-ENOSPC when only those are left)
 * unless @dip (a retry after a failed program).  A free block that holds
 * anything (left by a crash, or stray bytes on the medium: checked for
 * every block, one OOB read) is erased first; one whose erase fails is
 * retired. */
static int open_block(struct ftl *f, int s, bool dip)
{
	uint32_t b;
	int r;

	for (;;) {
		if (ftl_host_stream(s) && !dip ? f->idx.nfree <= f->gc.reserve
					     : !f->idx.nfree)
			return -ENOSPC;
		/* dynamic wear levelling (ftl_free_take) */
		b = ftl_free_take(f, s == STREAM_GC);
		/* erase it if anything is left in it */
		bool dirty = false;
		r = holds_past(f, b, 0, &dirty);
		if (!r && dirty)
			r = ftl_erase(f, b);
		if (r == -NAND_EFAIL) {
			r = ftl_retire_block(f, b, "erase failed");
			if (r)
				return r;
			continue;
		}
		if (r) {
			ftl_free_put(f, b);
			return r;
		}
		f->log.fdirty[b] = 0;
		break;
	}
	ftl_set_state(f, b, FTL_BLK_OPEN);
	f->log.hotblk[b] = s == STREAM_HOST;
	f->log.st[s].blk = b;
	f->log.st[s].wp = 0;
	ftl_ckpt_note_alloc(f);
	return 0;
}

/* Next page of stream @s's open block, opening one when needed. */
static int alloc_page(struct ftl *f, int s, uint64_t *ppn, bool dip)
{
	struct ftl_stream *st = &f->log.st[s];
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
	FTL_ASSERT_HELD(&f->lock);
	return alloc_page(f, s, ppn, false);
}

/*
 * Program one page into stream @stream's open block with a fresh sequence
 * number and its OOB record; a data page becomes @lpn's mapping.
 * Sequence numbers stay below ck.seq + ck.seq_gap (recovery relies on it):
 * ftl_balance() checkpoints early enough; running past it is a bug.
 * A failed program retires its block and the page goes to the next one
 * (up to FTL_PROG_RETRIES blocks, dipping into GC's reserve).  @crc: the
 * data CRC the OOB record carries (NULL: computed over @data).
 */
static int prog_page(struct ftl *f, int stream, uint32_t lpn,
		     const void *data, uint8_t kind, const uint32_t *crc,
		     uint64_t *seq_out)
{
	uint8_t oob[1024];
	uint64_t ppn, seq;
	uint32_t blk;
	int r;

	if (ftl_host_stream(stream))
		ftl_inflight_drain(f);  /* in order after the runs in flight */
	for (unsigned tries = 0;; tries++) {
		if (f->log.seq + 1 > f->ck.seq + f->ck.seq_gap)
			return -EIO;
		r = alloc_page(f, stream, &ppn, tries > 0);
		if (r)
			return r;
		blk = (uint32_t)(ppn / f->g.ppb);
		seq = ++f->log.seq;
		memset(oob, 0, f->g.oob);
		if (crc)
			ftl_oob_fill_crc((struct ftl_oob *)oob, kind,
					 (uint16_t)ftl_oob_stream(stream), lpn, seq,
					 nand_block_ec(f->nand, blk), *crc);
		else
			ftl_oob_fill((struct ftl_oob *)oob, kind,
				     (uint16_t)ftl_oob_stream(stream), lpn, seq,
				     nand_block_ec(f->nand, blk), data, f->g.ps);
		ftl_oob_set_flushed(&f->g, oob, ppn, f->log.flushed_seq);
		if (kind == FTL_OOB_DATA)
			ftl_pi_fill(&f->g, oob, data);
		r = nand_program(f->nand, ppn, data, oob);
		if (r != -NAND_EFAIL)
			break;
		/* status FAIL: retire the block (its valid pages move at the
		 * next balance) and program the page elsewhere */
		r = ftl_retire_block(f, blk, "program failed");
		if (r)
			return r;
		if (tries + 1 >= FTL_PROG_RETRIES)
			return -EIO;
	}
	if (r)
		return r;
	f->log.mtime[blk] = seq;
	ftl_ckpt_blk_dirty(f, blk);
	if (kind == FTL_OOB_DATA)
		ftl_map_set(f, lpn, (uint32_t)ppn);
	else if (kind == FTL_OOB_TRIM || kind == FTL_OOB_FSUM)
		f->log.trim_seq[blk] = seq;
	if (ftl_host_stream(stream)) {  /* for the next flush summary */
		ftl_fsum_note(f, kind, lpn, ppn, seq,
			      ((struct ftl_oob *)oob)->data_crc, data);
		if (kind == FTL_OOB_DATA)
			ftl_place_note(f, lpn, 1);
	}
	if (seq_out)
		*seq_out = seq;
	return 0;
}

int ftl_prog_page(struct ftl *f, int stream, uint32_t lpn, const void *data,
		  uint8_t kind, uint64_t *seq_out)
{
	FTL_ASSERT_HELD(&f->lock);
	return prog_page(f, stream, lpn, data, kind, NULL, seq_out);
}

int ftl_prog_copy(struct ftl *f, int stream, uint32_t lpn, const void *data,
		  uint32_t crc)
{
	FTL_ASSERT_HELD(&f->lock);
	return prog_page(f, stream, lpn, data, FTL_OOB_DATA, &crc, NULL);
}

/*
 * The run core of ftl_prog_run and ftl_prog_copies: page i of @data
 * (@n pages; or @pages[i], with @crcs and no PI: never read here) for
 * logical page @lpns[i] (@lpn + i when @lpns is NULL),
 * into stream @stream's open block as one run, opening one when needed:
 * at most the rest of that block, and fewer when sequence numbers run
 * short (FTL_PROG_RETRIES stay for retries).  Each page gets its own
 * sequence number, data CRC and flush record in its OOB, so recovery
 * takes a torn run page by page.  The map moves only for pages the nand
 * reports programmed (*done counts them; the caller goes on with the
 * rest), and with @from only while the map still points at @from[i] (a
 * copy).  A failed program retires its block, the pages the map does not
 * point at yet go to the next block (up to FTL_PROG_RETRIES blocks,
 * dipping into GC's reserve).  f->lock held.
 */
static int prog_run(struct ftl *f, int stream, uint32_t lpn,
		    const uint32_t *lpns, const uint32_t *from,
		    const uint32_t *crcs, const void *data,
		    const void *const *pages, uint32_t n,
		    uint32_t *done, uint64_t *counter)
{
	const struct ftl_geom *g = &f->g;
	const uint8_t *src = data;
	struct ftl_stream *st = &f->log.st[stream];
	int r;

	*done = 0;
	if (!f->log.runoob)
		f->log.runoob = malloc((size_t)g->ppb * g->oob);
	if (!f->log.runoob)
		return -ENOMEM;
	for (unsigned tries = 0;; tries++) {
		uint64_t room = f->log.seq < f->ck.seq + f->ck.seq_gap ?
				f->ck.seq + f->ck.seq_gap - f->log.seq : 0;
		uint64_t ppn, seq = 0, c, cap;
		uint32_t blk, pd;

		if (!room)
			return -EIO;
		r = alloc_page(f, stream, &ppn, tries > 0);
		if (r)
			return r;
		/* this block's pages from ppn on, within the sequence room */
		cap = room > FTL_PROG_RETRIES + 1 ? room - FTL_PROG_RETRIES - 1
						  : 1;
		c = (uint64_t)g->ppb - st->wp + 1;
		if (c > cap)
			c = cap;
		if (c > n - *done)
			c = n - *done;
		st->wp += (uint32_t)c - 1;
		blk = (uint32_t)(ppn / g->ppb);
		for (uint32_t i = 0; i < c; i++) {
			uint8_t *oob = f->log.runoob + (size_t)i * g->oob;
			uint32_t k = *done + i;

			seq = ++f->log.seq;
			memset(oob, 0, g->oob);
			ftl_oob_fill_crc((struct ftl_oob *)oob, FTL_OOB_DATA,
				(uint16_t)ftl_oob_stream(stream),
				lpns ? lpns[k] : lpn + k,
				seq, nand_block_ec(f->nand, blk),
				crcs ? crcs[k] : oct_crc32c(0, src +
					(size_t)k * g->ps, g->ps));
			ftl_oob_set_flushed(g, oob, ppn + i, f->log.flushed_seq);
			ftl_pi_fill(g, oob, pages ? pages[k] :
				    src + (size_t)k * g->ps);
		}
		seq -= c;               /* the seq before the run's first */
		r = pages ? nand_program_runv(f->nand, ppn, (uint32_t)c,
					      pages + *done, f->log.runoob, &pd)
			  : nand_program_run(f->nand, ppn, (uint32_t)c,
					     src + (size_t)*done * g->ps,
					     f->log.runoob, &pd);
		/* publish what is on the medium, nothing more */
		for (uint32_t i = 0; i < pd; i++) {
			uint32_t k = *done + i, l = lpns ? lpns[k] : lpn + k;

			if (from && ftl_map_get(f, l) != from[k])
				continue;       /* superseded (callers check
						   before, under f->lock) */
			ftl_map_set(f, l, (uint32_t)(ppn + i));
			if (counter)
				ftl_copy_count(f, counter, l);
			if (ftl_host_stream(stream))
				ftl_fsum_note(f, FTL_OOB_DATA, l, ppn + i,
					      seq + 1 + i, ((struct ftl_oob *)
					      (f->log.runoob + (size_t)i * g->oob))
					      ->data_crc, NULL);
		}
		if (pd) {
			f->log.mtime[blk] = seq + pd;
			ftl_ckpt_blk_dirty(f, blk);
			if (ftl_host_stream(stream) && !lpns)
				ftl_place_note(f, lpn + *done, pd);
		}
		*done += pd;
		if (r != -NAND_EFAIL)
			return r;
		/* status FAIL: retire the block (its valid pages move at the
		 * next balance); the rest of the run goes elsewhere */
		r = ftl_retire_block(f, blk, "program failed");
		if (r)
			return r;
		if (tries + 1 >= FTL_PROG_RETRIES)
			return -EIO;
	}
}

/*
 * Program host data pages for logical pages @lpn, @lpn + 1, ... from
 * @data (@n pages) as one run (prog_run above; one page without its CRC:
 * ftl_prog_page).
 */
int ftl_prog_run(struct ftl *f, int stream, uint32_t lpn, const void *data,
		 uint32_t n, const uint32_t *crc, uint32_t *done)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	*done = 0;
	if (ftl_host_stream(stream))
		ftl_inflight_drain(f);  /* in order after the runs in flight */
	if (n > 1 || crc) {
		r = prog_run(f, stream, lpn, NULL, NULL, crc, data, NULL, n,
			     done, NULL);
		if (r != -ENOMEM || *done)
			return r;
	}
	/* one page, or no memory for a run's OOB: the page path */
	r = ftl_prog_page(f, stream, lpn, data, FTL_OOB_DATA, NULL);
	*done = !r;
	return r;
}

void ftl_copy_count(struct ftl *f, uint64_t *counter, uint32_t lpn)
{
	const struct ftl_mctr *m = &f->ctr.m;

	FTL_ASSERT_HELD(&f->lock);
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
	if (f->o.copy_fn)
		f->o.copy_fn(f->o.copy_ctx, lpn,
			     counter == &m->wl_relocations ? FTL_COPY_WL :
			     counter == &m->bad_relocations ? FTL_COPY_BAD :
			     FTL_COPY_GC);
}

int ftl_prog_copies(struct ftl *f, int stream, const uint32_t *lpn,
		    const uint32_t *from, const uint32_t *crc,
		    const void *const *pages, uint32_t n, uint32_t *done,
		    uint64_t *counter)
{
	FTL_ASSERT_HELD(&f->lock);
	return prog_run(f, stream, 0, lpn, from, crc, NULL, pages, n, done,
			counter);
}

/* ---- host runs outside f->lock ------------------------------------------
 *
 * A host write reserves a run under f->lock (pages of the host stream's
 * open block, sequence numbers, OOB records, a ticket), programs it with
 * the lock released, and takes f->lock again to point the map at it.
 * The rules that keep this safe:
 * - programs reach the nand in ticket order (in order inside a block);
 * - the map moves only after the program (readers are lock-free);
 * - ftl_inflight_drain() (wait for every ticket, then publish them all,
 *   f->lock kept) comes first in ftl_sync (the flush record never covers
 *   a program in flight), so in checkpoints; in GC (ftl_gc_evacuate: a
 *   copy of a logical page must never get a newer sequence number than a
 *   host program of it reserved before, and a block with programs in
 *   flight is never emptied and erased); and before any program into the
 *   host stream under the lock (in order).
 * Writers of the same logical pages exclude each other (range locks), so
 * two runs in flight never share one.
 */

/* Point the map at what run @x programmed (f->lock held), once. */
static void run_publish(struct ftl *f, struct ftl_inflight *x)
{
	uint32_t blk = (uint32_t)(x->ppn / f->g.ppb);

	if (x->published)
		return;
	x->published = true;
	for (uint32_t i = 0; i < x->done; i++) {
		ftl_map_set(f, x->lpn + i, (uint32_t)(x->ppn + i));
		ftl_fsum_note(f, FTL_OOB_DATA, x->lpn + i, x->ppn + i,
			      x->seq0 + i, ((const struct ftl_oob *)
			      (x->oob + (size_t)i * f->g.oob))->data_crc, NULL);
	}
	ftl_place_note(f, x->lpn, x->done);
	if (x->done && f->log.mtime[blk] < x->seq0 + x->done - 1) {
		f->log.mtime[blk] = x->seq0 + x->done - 1;
		ftl_ckpt_blk_dirty(f, blk);
	}
	ftl_run_unbusy(f, blk, x->n);   /* a victim again, valid count true */
}

void ftl_inflight_drain(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	if (!f->pipe.inflight)
		return;
	ftl_lock(&f->pipe.mx);
	while (f->pipe.done != f->pipe.next)
		ftl_cond_wait(&f->pipe.cv, &f->pipe.mx);
	ftl_unlock(&f->pipe.mx);
	for (struct ftl_inflight *x = f->pipe.inflight; x; x = x->next)
		run_publish(f, x);
}

/* One page's OOB: data record with the data CRC computed before the lock
 * was taken, and the flush record. */
static void oob_fill_crc(struct ftl *f, uint8_t *oob, uint32_t lpn,
			 uint64_t ppn, uint64_t seq, uint32_t ec, uint32_t crc)
{
	struct ftl_oob *o = (struct ftl_oob *)oob;

	memset(oob, 0, f->g.oob);
	ftl_oob_fill_crc(o, FTL_OOB_DATA, STREAM_HOST, lpn, seq, ec, crc);
	ftl_oob_set_flushed(&f->g, oob, ppn, f->log.flushed_seq);
}

int ftl_run_reserve(struct ftl *f, int stream, uint32_t lpn, uint32_t n,
		    const uint32_t *crc, uint8_t *oob, size_t oob_room,
		    struct ftl_inflight *x)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_stream *st = &f->log.st[stream];
	uint64_t room = f->log.seq < f->ck.seq + f->ck.seq_gap ?
			f->ck.seq + f->ck.seq_gap - f->log.seq : 0;
	uint64_t ppn, c, cap;
	uint32_t blk, ec;
	int r;

	FTL_ASSERT_HELD(&f->lock);
	if (!nand_program_run_unlocked(f->nand) || oob_room < g->oob || !n)
		return -EAGAIN;         /* page by page, under the lock */
	if (!room)
		return -EIO;
	r = alloc_page(f, stream, &ppn, false);
	if (r)
		return r;
	blk = (uint32_t)(ppn / g->ppb);
	cap = room > FTL_PROG_RETRIES + 1 ? room - FTL_PROG_RETRIES - 1 : 1;
	c = (uint64_t)g->ppb - st->wp + 1;
	if (c > cap)
		c = cap;
	if (c > n)
		c = n;
	if (c > oob_room / g->oob)
		c = oob_room / g->oob;
	st->wp += (uint32_t)c - 1;
	ec = nand_block_ec(f->nand, blk);
	x->ppn = ppn;
	x->oob = oob;
	x->seq0 = f->log.seq + 1;
	x->lpn = lpn;
	x->n = (uint32_t)c;
	x->done = 0;
	x->r = 0;
	x->io_done = false;
	x->published = false;
	for (uint32_t i = 0; i < c; i++)
		oob_fill_crc(f, oob + (size_t)i * g->oob, lpn + i, ppn + i,
			     ++f->log.seq, ec, crc[i]);
	ftl_lock(&f->pipe.mx);
	x->ticket = f->pipe.next++;
	ftl_unlock(&f->pipe.mx);
	x->next = f->pipe.inflight;
	f->pipe.inflight = x;
	/* until published the block's valid count leaves these pages out:
	 * once the next run closes it, it must not look like a free victim */
	ftl_run_busy(f, blk, x->n);
	return 0;
}

/* Program run @x (no lock held), after every run reserved before it. */
void ftl_run_program(struct ftl *f, struct ftl_inflight *x, const void *data,
		     const uint8_t *oob)
{
	uint32_t pd = 0;
	int r;

	FTL_ASSERT_NOT_HELD(&f->lock);
	ftl_lock(&f->pipe.mx);
	while (f->pipe.done != x->ticket)
		ftl_cond_wait(&f->pipe.turn[x->ticket % FTL_IO_TURNS],
			      &f->pipe.mx);
	ftl_unlock(&f->pipe.mx);
	r = nand_program_run(f->nand, x->ppn, x->n, data, oob, &pd);
	ftl_lock(&f->pipe.mx);
	x->r = r;
	x->done = pd;
	x->io_done = true;
	f->pipe.done++;
	/* the next ticket's owner (and any of a later round of its slot,
	 * which sleeps again), and the drainers once all are done */
	pthread_cond_broadcast(&f->pipe.turn[f->pipe.done % FTL_IO_TURNS]);
	if (f->pipe.done == f->pipe.next)
		pthread_cond_broadcast(&f->pipe.cv);
	ftl_unlock(&f->pipe.mx);
}

int ftl_run_finish(struct ftl *f, struct ftl_inflight *x)
{
	struct ftl_inflight **p = &f->pipe.inflight;

	FTL_ASSERT_HELD(&f->lock);
	run_publish(f, x);
	while (*p && *p != x)
		p = &(*p)->next;
	if (*p)
		*p = x->next;
	if (x->r == -NAND_EFAIL) {      /* not on this path; if ever: */
		int r = ftl_retire_block(f, (uint32_t)(x->ppn / f->g.ppb),
					 "program failed");
		return r ? r : -EIO;
	}
	return x->r;
}
