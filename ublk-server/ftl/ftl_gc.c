/* SPDX-License-Identifier: MIT */
/*
 * Garbage collection: victims (greedy or cost-benefit, ftl_blkidx.c),
 * their valid pages copied to the GC stream, and erasing them only once
 * what superseded them is durable; one step at a time for the GC thread
 * (ftl_bggc.c).  Block allocation is in ftl_append.c; when to collect is
 * decided in ftl_balance.c; retiring, scrub and static wear levelling
 * move data through the copy path here (ftl_maint.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-int.h"

/* Greedy or cost-benefit, from the valid-count buckets (ftl_blkidx.c),
 * among the blocks GC has room to empty (with what is pending erased):
 * cost-benefit's favourite may hold more valid pages than that, and
 * stopping there failed host writes with ENOSPC on a device not full.
 * Blocks with host runs in flight are not candidates (ftl_run_busy);
 * when nothing else is, the runs are published (ftl_inflight_drain, as
 * evacuation would) and the choice made again with their true counts. */
static uint32_t pick_victim(struct ftl *f, uint64_t room)
{
	uint32_t max, v;

	room += (uint64_t)f->gc.npend * f->g.ppb;
	max = room < f->g.ppb ? (uint32_t)room : f->g.ppb;
	v = ftl_victim(f, max);
	if (v == FTL_NONE && f->pipe.inflight) {
		ftl_inflight_drain(f);
		v = ftl_victim(f, max);
	}
	return v;
}

/* GC's stream @s may take the reserve; when even that is gone, erase
 * what is pending first. */
static int stream_ready(struct ftl *f, int s)
{
	int r;

	if (!ftl_stream_needs_block(f, s) || f->idx.nfree)
		return 0;
	r = ftl_erase_pending(f, true);
	if (r)
		return r;
	return f->idx.nfree ? 0 : -ENOSPC;
}

int ftl_gc_stream_ready(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	return stream_ready(f, STREAM_GC);
}

/* Pages the GC stream can still program without an erase (the fuller of
 * the two with STREAM_GCHOT: a victim's copies may go to either). */
static uint64_t gc_room(const struct ftl *f)
{
	const struct ftl_stream *st = &f->log.st[STREAM_GC];
	const struct ftl_stream *sh = &f->log.st[STREAM_GCHOT];
	uint64_t left = st->blk == FTL_NONE ? 0 : f->g.ppb - st->wp;

	if (ftl_place_on(f) && (sh->blk == FTL_NONE || f->g.ppb - sh->wp < left))
		left = sh->blk == FTL_NONE ? 0 : f->g.ppb - sh->wp;

	return left + (uint64_t)f->idx.nfree * f->g.ppb;
}

/* Program a copy of a data page for @lpn into the GC stream, carrying
 * @crc, its source's data CRC (see evac_run); when a failed program used
 * up the free blocks, erase what is pending and go on. */
int ftl_gc_prog(struct ftl *f, uint32_t lpn, const void *data, uint32_t crc)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	for (;;) {
		r = ftl_gc_stream_ready(f);
		if (!r)
			r = ftl_prog_copy(f, STREAM_GC, lpn, data, crc);
		if (r != -ENOSPC || !f->gc.npend)
			return r;
		r = ftl_erase_pending(f, true);
		if (r)
			return r;
	}
}

/* Victims up to this size are read whole, in one run (by pointer: any). */
#define GC_BLOCK_READ_MAX (4u << 20)

/*
 * Start evacuating block @v with @e: all of it at once, OOB into e->oob
 * and e->at[i] pointing at page i's data: in the backing's mapping where
 * it has one (nand_read_run_view: no copy, the OOB only; good until the
 * victim's erase, which comes only after its copies are on the medium,
 * and only programmed from), else read into e->blk with one nand run (one
 * backing call on layout 1.1).  e->whole = false when only the OOB was
 * read (a fault model, a large block not mapped, no memory): then the
 * pages are read one by one.
 */
static int evac_read(struct ftl *f, struct ftl_evac *e, uint32_t v);

static int evac_start(struct ftl *f, struct ftl_evac *e, uint32_t v)
{
	e->v = v;
	e->pg = 0;
	e->unreadable = 0;
	return evac_read(f, e, v);
}

/* The reads of evac_start: e->at, e->blk, e->oob, e->res and e->whole
 * only (the GC thread's run with f->lock released, see ftl_gc_bg_step). */
static int evac_read(struct ftl *f, struct ftl_evac *e, uint32_t v)
{
	const struct ftl_geom *g = &f->g;
	size_t len = (size_t)g->ppb * g->ps;
	int r;

	e->whole = false;
	/* by pointer (any size: no memory), unless PI guards are computed
	 * over the data (ftl_pi_fill would read the mapping unguarded) */
	r = g->pi ? -EOPNOTSUPP :
		nand_read_run_view(f->nand, (uint64_t)v * g->ppb, g->ppb,
				   e->at, e->oob, e->res);
	if (r != -EOPNOTSUPP) {
		e->whole = !r;
		return r;
	}
	if (len > GC_BLOCK_READ_MAX)
		return nand_read_block_oob(f->nand, v, e->oob);
	if (!e->blk)
		e->blk = malloc(len);
	if (e->blk) {
		r = nand_read_run(f->nand, (uint64_t)v * g->ppb, g->ppb,
				  e->blk, e->oob, e->res);
		for (uint32_t i = 0; i < g->ppb; i++)
			e->at[i] = e->blk + (size_t)i * g->ps;
		if (r != -EOPNOTSUPP) {
			e->whole = !r;
			return r;
		}
	}
	return nand_read_block_oob(f->nand, v, e->oob);
}

/* Program the @n copies gathered in @e (e->run: pointers to their data,
 * e->lpn, e->from) into the GC stream as runs; when a failed program used
 * up the free blocks, erase what is pending and go on.  *done: copies
 * programmed (fewer when sequence numbers run short: the caller then
 * checkpoints first). */
static int evac_prog(struct ftl *f, struct ftl_evac *e, uint32_t n,
		     uint32_t *done, uint64_t *counter)
{
	int s = ftl_gc_dest(f, e->lpn, n); /* by the copies' temperature */
	int r;

	*done = 0;
	for (;;) {
		uint32_t d = 0;

		r = stream_ready(f, s);
		if (!r)
			r = ftl_prog_copies(f, s, e->lpn + *done,
					    e->from + *done, e->crc + *done,
					    e->run + *done, n - *done, &d,
					    counter);
		if (r == -ENOMEM && !d) {       /* no run buffer: one page */
			r = ftl_gc_prog(f, e->lpn[*done], e->run[*done],
					e->crc[*done]);
			if (!r)
				ftl_copy_count(f, counter, e->lpn[*done]);
			d = !r;
		}
		*done += d;
		if (!r && *done < n && d &&
		    ftl_seq_room(f, FTL_PROG_RETRIES + 1))
			continue;               /* the next block */
		if (r != -ENOSPC || !f->gc.npend)
			return r;
		r = ftl_erase_pending(f, true);
		if (r)
			return r;
	}
}

/*
 * Copy the valid pages of e->v from page e->pg on to the GC stream, at
 * most @budget of them, gathered into runs of FTL_GC_RUN_PAGES (one
 * backing write each on layout 1.1) programmed straight from where
 * evac_read found them (e->at: one copy per page on a mapped backing, the
 * program's; two else); pages the whole-block read could not
 * give are read (with retries) and programmed one by one.  A page moves
 * only while the map points at it, checked under f->lock after every
 * host run in flight is published (ftl_inflight_drain): between two calls
 * f->lock may be released, and host writes may supersede more pages.  A
 * page the ECC cannot correct stays mapped where it is, so reads of
 * exactly its sectors keep failing until the host rewrites them; its
 * block is then retired (never erased).  0: done, 1: @budget used up
 * (call again), -EAGAIN: a checkpoint first (e->pg stays at the first
 * page not moved yet), else -errno.
 *
 * A copy carries its source's data CRC (the OOB's data_crc, whose record
 * passed its own CRC) instead of a CRC computed over the bytes read: the
 * copy's OOB then vouches for exactly what the host wrote, never for what
 * the read returned.  The data is not checked here (that is what cost a
 * page CRC per copy, the engine's largest cost under TCG, and the old code
 * did not check it either: it recomputed the CRC over what it read, so a
 * page damaged on the medium, or in memory on its way, became a copy with
 * a CRC that matched the damage -- bad data laundered into good).  With
 * the CRC carried, damage moves with the page and stays detectable:
 * every read of the copy fails its CRC (EIO, ftl_read.c), fsck reports
 * it, a later GC carries it on again; recovery treats a copy whose data
 * fails its CRC like any page that does (torn past the recorded flush,
 * else damaged: FTL_DAMAGED unless an intact page with the same CRC is
 * still mapped, ftl_recover.c) -- never as good data.  The single-page
 * paths (a page read on its own through the ECC model; no run buffer)
 * carry it too: the ECC corrects what it sees, never a bit it missed
 * (they recomputed the CRC until 2026-12, which laundered such a bit:
 * tests/unit/ftl-rmw-crc.c).
 */
static int evac_run(struct ftl *f, struct ftl_evac *e, uint64_t *counter,
		    uint32_t budget)
{
	const struct ftl_geom *g = &f->g;
	uint32_t v = e->v;
	int r;

	/* Host runs programmed outside f->lock (ftl_append.c) first: on the
	 * medium and in the map before the valid count and the map are read
	 * here.  A copy of a logical page whose host program is in flight
	 * would get a newer sequence number than that program and win at
	 * roll-forward (old data back after a crash), and a block with
	 * programs in flight must never be emptied and erased.  f->lock is
	 * kept: no run is reserved meanwhile. */
	ftl_inflight_drain(f);
	while (e->pg < g->ppb && f->idx.valid[v] > 0) {
		uint32_t n = 0, done, max;

		if (!budget)
			return 1;
		if (!ftl_seq_room(f, FTL_PROG_RETRIES + 1))
			return -EAGAIN;         /* a checkpoint first */
		max = budget < FTL_GC_RUN_PAGES ? budget : FTL_GC_RUN_PAGES;
		for (; e->pg < g->ppb && n < max; e->pg++) {
			const struct ftl_oob *o = (const struct ftl_oob *)
				(e->oob + (size_t)e->pg * g->oob);
			uint64_t ppn = (uint64_t)v * g->ppb + e->pg;

			if (!ftl_oob_at(g, o, ppn) || o->kind != FTL_OOB_DATA ||
			    o->lpn >= g->nlpn || ftl_map_get(f, o->lpn) != ppn)
				continue;
			if (!e->whole || e->res[e->pg])
				break;          /* one by one, below */
			/* no copy here: programmed from where it was read
			 * (e->at: the mapping, or e->blk) */
			e->run[n] = e->at[e->pg];
			e->crc[n] = o->data_crc;        /* carried: see above */
			e->lpn[n] = o->lpn;
			e->from[n++] = (uint32_t)ppn;
		}
		if (!n && e->pg < g->ppb) {
			/* a page read on its own (its run read failed, or no
			 * whole-block read) */
			const struct ftl_oob *o = (const struct ftl_oob *)
				(e->oob + (size_t)e->pg * g->oob);
			uint64_t ppn = (uint64_t)v * g->ppb + e->pg;

			r = ftl_read_page(f, FTL_UNMAPPED, (uint32_t)ppn, 0,
					  f->buf.page, g->ps);
			if (r == -EBADMSG) {
				e->unreadable++;
				e->pg++;
				continue;
			}
			if (!r)
				r = ftl_gc_prog(f, o->lpn, f->buf.page,
						o->data_crc);
			if (r)
				return r;
			ftl_copy_count(f, counter, o->lpn);
			e->pg++;
			budget--;
			continue;
		}
		if (!n)
			break;
		r = evac_prog(f, e, n, &done, counter);
		budget -= done;
		if (done < n)           /* again from the first one not moved */
			e->pg = e->from[done] % g->ppb;
		if (r)
			return r;
	}
	if (e->unreadable && f->idx.state[v] != FTL_BLK_BAD)
		return ftl_retire_block(f, v, "uncorrectable read");
	return 0;
}

/*
 * Copy the valid pages of block @v to the GC stream, all of them (a
 * writer's GC, static WL, retiring: f->lock held throughout).  -EAGAIN
 * when a checkpoint must come first (the block keeps what was not moved
 * yet).
 */
int ftl_gc_evacuate(struct ftl *f, uint32_t v, uint64_t *counter)
{
	struct ftl_evac *e = &f->gc.ev[0];
	int r;

	FTL_ASSERT_HELD(&f->lock);
	ftl_inflight_drain(f);          /* see evac_run */
	if (!f->idx.valid[v])
		return 0;               /* nothing to move, nothing to read */
	r = evac_start(f, e, v);
	if (!r)
		r = evac_run(f, e, counter, UINT32_MAX);
	e->v = FTL_NONE;
	return r;
}

/* Victim @v was evacuated: it becomes PENDING (erase later), unless it
 * was retired (some pages could not be read). */
static int victim_done(struct ftl *f, uint32_t v)
{
	if (f->idx.state[v] == FTL_BLK_BAD)
		return 0;
	if (f->idx.valid[v])
		return -EIO;            /* map and OOB disagree: a bug */
	ftl_set_state(f, v, FTL_BLK_PENDING);
	/* during the GC thread's unlocked sync: the generation it will end
	 * (GC-SIDE SYNC) */
	f->gc.pend_gen[f->gc.npend] = f->log.sync_gen + f->gc.syncing;
	f->gc.pend[f->gc.npend++] = v;
	return 0;
}

/* Copy the valid pages of block @v away; it becomes PENDING (erase later),
 * or is retired when some could not be read (GC victims, static WL). */
int ftl_gc_relocate(struct ftl *f, uint32_t v, uint64_t *counter)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	r = ftl_gc_evacuate(f, v, counter);
	return r ? r : victim_done(f, v);
}

/*
 * With flush summaries (ftl_fsum.c), does pending block @b hold a page
 * the two newest checkpoints do not both cover?  Erased, it would be gone
 * from the log while it may still be needed: a summary lists it (so a
 * missing page is media damage), and a roll-forward from the checkpoint
 * before, should the newest one be damaged, needs it (data, trim
 * records).
 */
static bool pend_uncovered(const struct ftl *f, uint32_t b)
{
	return f->g.flush_sum && f->log.mtime[b] > f->ck.prev_seq;
}

/*
 * With flush summaries, does pending block @b hold a summary (or a trim
 * record) the newest checkpoint of the slot before the newest base does
 * not cover?  Should that base's block be lost, its delta records go with
 * it and recovery starts from that checkpoint: the summary is then the
 * only witness of the flushed pages it lists (ftl_fsum_covered keeps
 * them listed until a base), so a base comes first.
 */
static bool pend_unslotted(const struct ftl *f, uint32_t b)
{
	return f->g.flush_sum && f->log.trim_seq[b] > f->ck.slot_seq;
}

/* A sync only for an erase round, started at @a, ended: batch more
 * victims per sync when it is expensive (a disk file).  Learnt from a
 * moving average (1/8 of each sync): on a disk one sync that found little
 * dirty took under 0.5 ms and made syncs "cheap" (batch 1) until the
 * next; a writer then collected inline and synced itself on its own path
 * (bench-engine latency: 568-680 writes over 1 ms, 8-10 ms each).  One
 * victim a sync only where a sync is nearly free (FTL_SYNC_FREE_MS; was
 * 0.5 ms: the GC thread on an ext4 file of a fast disk, 0.2-0.5 ms a sync,
 * synced after every victim, ~7 pages gained a sync). */
static void learn_batch(struct ftl *f, const struct timespec *a)
{
	struct timespec b;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (double)(b.tv_sec - a->tv_sec) * 1e3 +
	     (double)(b.tv_nsec - a->tv_nsec) / 1e6;
	f->gc.sync_ms += (float)(ms - f->gc.sync_ms) / 8;
	ms = f->gc.sync_ms;
	f->gc.batch = f->o.gc_batch ? f->o.gc_batch :
		      ms < FTL_SYNC_FREE_MS ? 1 : ms < 5 ? 4 : 16;
	if (f->gc.batch > f->gc.batch_max)
		f->gc.batch = f->gc.batch_max;
}

/*
 * GC-SIDE SYNC.  The GC thread's erase rounds (and the sync before its
 * checkpoints, ftl_bggc.c) flush the backing with f->lock released, so
 * host writers go on programming meanwhile instead of waiting for an
 * fdatasync of a disk file (tens of ms).  The ordering, step by step:
 *  1. under f->lock: host runs in flight are published
 *     (ftl_inflight_drain) and the OOB buffers written back
 *     (nand_sync_begin); seq0 = log.seq; gc.syncing = true.  Every page
 *     with a sequence number <= seq0 is now written to the backing.
 *  2. f->lock released: the backing's sync (nand_sync_backing) makes at
 *     least those writes durable.  Writers, a writer's inline GC, even a
 *     locked ftl_sync, may run meanwhile; what they write may or may not
 *     be made durable by this sync, so nothing written after step 1 is
 *     claimed by it.
 *  3. f->lock again: sync_gen++ and flushed_seq = max(flushed_seq, seq0).
 *     flushed_seq is what later OOB records vouch for (roll-forward's
 *     torn/damaged line): seq0, never log.seq at step 3, whose pages
 *     written in step 2 may be torn.  The flush record (ftl_fsum.c) is
 *     untouched: a host flush still syncs itself, under f->lock.
 * A block pended during step 2 (victim_done) records pend_gen =
 * sync_gen + 1 (gc.syncing): its copies may postdate step 1, so the
 * increment of step 3 must not count as its sync; a sync that starts
 * after it (sync_gen then exceeds pend_gen) does.  One pended before step
 * 1 has pend_gen <= sync_gen of step 1 and is covered by step 3.  Erases
 * themselves, and checkpoints, stay under f->lock (ftl_erase_pending
 * decides again after step 3 what still needs a sync or a checkpoint).
 * f->lock held on entry and on return.
 */
int ftl_gc_sync_unlocked(struct ftl *f)
{
	struct timespec a;
	uint64_t seq0;
	int r;

	FTL_ASSERT_HELD(&f->lock);
	ftl_inflight_drain(f);
	r = nand_sync_begin(f->nand);
	if (r)
		return r;
	seq0 = f->log.seq;
	f->gc.syncing = true;
	ftl_unlock(&f->lock);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = nand_sync_backing(f->nand);
	if (f->bggc.sync_hook)          /* tests: writers inside step 2 */
		f->bggc.sync_hook(f, f->bggc.sync_ctx);
	ftl_lock(&f->lock);
	f->gc.syncing = false;
	if (r)
		return r;
	learn_batch(f, &a);
	f->log.sync_gen++;
	if (seq0 > f->log.flushed_seq)
		f->log.flushed_seq = seq0;
	return 0;
}

/* Does pending block @b need a checkpoint before its erase? */
static bool pend_needs_ckpt(const struct ftl *f, uint32_t b)
{
	return f->log.trim_seq[b] > f->ck.seq || pend_uncovered(f, b) ||
	       pend_unslotted(f, b);
}

/* The GC thread's erase round: the sync it needs with f->lock released
 * (GC-SIDE SYNC) when no pending block needs a checkpoint, then
 * ftl_erase_pending (what was pended during that sync gets one more,
 * locked). */
static int gc_bg_erase(struct ftl *f)
{
	bool need_sync = false;

	for (uint32_t i = 0; i < f->gc.npend; i++) {
		if (pend_needs_ckpt(f, f->gc.pend[i]))
			return ftl_erase_pending(f, true);
		if (f->gc.pend_gen[i] >= f->log.sync_gen)
			need_sync = true;
	}
	if (need_sync) {
		int r = ftl_gc_sync_unlocked(f);

		if (r)
			return r;
	}
	return ftl_erase_pending(f, true);
}

/*
 * Erase every PENDING block.  Their data was superseded (relocated,
 * overwritten or trimmed); make that durable first: a sync, or a
 * checkpoint when a block holds trim records the last checkpoint does not
 * cover (with flush summaries: pages the two newest checkpoints do not
 * both cover, two checkpoints if need be).  Readers are excluded while
 * blocks are erased.
 */
int ftl_erase_pending(struct ftl *f, bool force_sync)
{
	bool need_sync = false, need_ckpt = false;
	int r = 0;

	FTL_ASSERT_HELD(&f->lock);
	(void)force_sync;
	if (!f->gc.npend)
		return 0;
	for (uint32_t i = 0; i < f->gc.npend; i++) {
		if (f->gc.pend_gen[i] >= f->log.sync_gen)
			need_sync = true;
		if (f->log.trim_seq[f->gc.pend[i]] > f->ck.seq ||
		    pend_uncovered(f, f->gc.pend[i]))
			need_ckpt = true;
	}
	if (need_ckpt) {
		r = ftl_ckpt_write(f, false);
		for (uint32_t i = 0; !r && i < f->gc.npend; i++)
			if (pend_uncovered(f, f->gc.pend[i])) {
				r = ftl_ckpt_write(f, false);
				break;
			}
	} else if (need_sync) {
		/* a sync only for the erase: learn what it costs */
		struct timespec a;

		clock_gettime(CLOCK_MONOTONIC, &a);
		r = ftl_sync(f);
		learn_batch(f, &a);
	}
	for (uint32_t i = 0; !r && i < f->gc.npend; i++)
		if (pend_unslotted(f, f->gc.pend[i])) {
			/* a record of everything first: the base after it
			 * then covers every summary so far, not only those
			 * before the last record (fewer bases) */
			if (f->log.seq > f->ck.seq)
				r = ftl_ckpt_write(f, false);
			ftl_ckpt_force_base(f);
			if (!r)
				r = ftl_ckpt_write(f, false);
			break;
		}
	if (r)
		return r;
	ftl_wrlock(&f->io_rw);
	while (f->gc.npend) {
		uint32_t b = f->gc.pend[f->gc.npend - 1];

		/* readers of its pages are excluded (LOCKING: io_rw) */
		FTL_ASSERT_WRITER(&f->io_rw);
		r = ftl_erase(f, b);
		if (r == -NAND_EFAIL) {         /* grown bad: retire it */
			f->gc.npend--;
			r = ftl_retire_block(f, b, "erase failed");
			if (r)
				break;
			continue;
		}
		if (r)
			break;
		f->gc.npend--;
		ftl_log_erased(f, b);
		ftl_free_erased(f, b);
		f->gc.erased++;         /* static WL counts them */
	}
	ftl_rwunlock(&f->io_rw);
	return r;
}

/* Make room: collect a few victims, then one durable erase round.  0,
 * FTL_GC_WL_DUE after the erase round (the caller runs the static-WL
 * check, ftl_wl_static), or -errno: -ENOSPC only when the host stream
 * still has no block to open (nothing pending to erase, no victim GC can
 * finish); room that is there already, or that an erase on the way made,
 * is success. */
int ftl_gc_free_space(struct ftl *f)
{
	uint32_t target = f->gc.reserve + 2;
	uint64_t erased0 = f->gc.erased;
	bool synced = true;
	int r;

	FTL_ASSERT_HELD(&f->lock);
	for (int pass = 0; pass < 2; pass++) {
		while (f->idx.nfree + f->gc.npend < target) {
			uint32_t v = pick_victim(f, gc_room(f));

			if (v == FTL_NONE && f->gc.cur != FTL_NONE) {
				/* only the GC thread's victim is left: the
				 * writer takes it over (the thread, between
				 * two steps, starts another) */
				ftl_gc_bg_drop(f);
				v = pick_victim(f, gc_room(f));
			}
			if (v == FTL_NONE)
				break;
			/* start a victim with room to finish it and a block
			 * to spare for a failed program, when erasing what is
			 * pending gives it; never without room to finish */
			if (gc_room(f) < (uint64_t)f->idx.valid[v] + f->g.ppb &&
			    f->gc.npend) {
				r = ftl_erase_pending(f, true);
				if (r)
					return r;
			}
			if (gc_room(f) < f->idx.valid[v])
				break;
			r = ftl_gc_relocate(f, v, &f->ctr.m.gc_relocations);
			if (r == -EAGAIN)
				return 0;       /* ftl_balance checkpoints */
			if (r)
				return r;
		}
		for (uint32_t i = 0; i < f->gc.npend; i++)
			synced &= f->gc.pend_gen[i] < f->log.sync_gen;
		if (synced)
			break;          /* erasing needs no sync: done */
		/* a sync is due anyway: make it free several blocks */
		target = f->gc.reserve + 1 + f->gc.batch;
	}
	if (!f->gc.npend) {
		if (f->idx.nfree <= f->gc.reserve)
			return -ENOSPC;
		return f->gc.erased != erased0 ? FTL_GC_WL_DUE : 0;
	}
	r = ftl_erase_pending(f, true);
	return r ? r : FTL_GC_WL_DUE;
}

/*
 * UNLOCKED READ.  The GC thread reads a new victim whole (evac_read: up
 * to 4 MiB, the larger part of a victim's cost after its programs) with
 * f->lock released, so host writers program meanwhile.  Why the copies
 * stay exact:
 *  - the victim is FULL: its pages do not change until it is erased, and
 *    it is marked first (gc.cur: no other GC picks it); a writer whose
 *    inline GC finds nothing else takes it over (ftl_gc_bg_drop clears
 *    gc.cur) and may then erase it -- the read holds f->io_rw shared, so
 *    that erase waits for the read to end (nand.h, Threads), and the
 *    thread, f->lock taken again, drops a read whose victim is no longer
 *    gc.cur;
 *  - what was read is only a candidate: each page moves only while the
 *    map still points at it, checked under f->lock after the host runs in
 *    flight are published (evac_run, as between any two steps): a host
 *    overwrite of the same logical page before that check wins (the copy
 *    is skipped); one after it gets a newer sequence number than the copy
 *    (both under f->lock), so it wins at roll-forward too;
 *  - copies take their sequence numbers and the map under f->lock, in
 *    the GC stream, exactly as before; the victim is pended, synced and
 *    erased as any other (GC-SIDE SYNC).
 * The same holds between two steps of one victim, where f->lock was
 * always let go.
 *
 * One bounded step of background GC toward @target free blocks (the GC
 * thread, ftl_bggc.c, holds f->lock for one step only): the next
 * FTL_GC_STEP_PAGES copies of the victim it is evacuating (marked in
 * f->gc.cur so no other GC takes it; f->lock is released between steps,
 * host writes go on and may supersede more of its pages); or, while free
 * + pending blocks are short of @target and fewer than gc.batch victims
 * wait for a sync, a new victim (erasing first when GC's stream would
 * have no room to finish it) and its first copies; else one durable
 * erase round (a sync, then every pending block: FTL_GC_WL_DUE, the
 * caller runs the static-WL check).  Victims always hold an invalid page
 * (ftl_victim), so each one gains.
 */
int ftl_gc_bg_step(struct ftl *f, uint32_t target)
{
	struct ftl_evac *e = &f->gc.ev[1];
	uint32_t v = f->gc.cur;
	int r;

	FTL_ASSERT_HELD(&f->lock);
	if (v == FTL_NONE) {
		if (f->idx.nfree >= target)
			return 1;
		/* a batch of victims per sync (gc.batch, adapted to what a
		 * sync costs), or what reaches @target: then erase them.  A
		 * batch begun is filled: on a full device a victim gains a
		 * tenth of a block, and the one that reaches @target would
		 * otherwise have a sync to itself */
		if (f->gc.npend < f->gc.batch &&
		    (f->idx.nfree + f->gc.npend < target || f->gc.npend))
			v = pick_victim(f, gc_room(f));
		if (v != FTL_NONE &&
		    gc_room(f) < (uint64_t)f->idx.valid[v] + f->g.ppb && f->gc.npend)
			return gc_bg_erase(f);
		if (v != FTL_NONE && gc_room(f) < f->idx.valid[v])
			v = FTL_NONE;
		if (v == FTL_NONE) {
			if (!f->gc.npend)
				return 1;       /* nothing left to gain */
			r = gc_bg_erase(f);
			if (r)
				return r;
			CADD(f, m.gc_bg_erase_rounds, 1);
			return FTL_GC_WL_DUE;
		}
		if (!f->idx.valid[v]) {
			r = victim_done(f, v);
			if (!r)
				CADD(f, m.gc_bg_victims, 1);
			return r;
		}
		/* the victim read with f->lock released (UNLOCKED READ) */
		f->gc.cur = v;
		e->v = v;
		e->pg = 0;
		e->unreadable = 0;
		ftl_unlock(&f->lock);
		ftl_rdlock(&f->io_rw);
		r = evac_read(f, e, v);
		ftl_rwunlock(&f->io_rw);
		ftl_lock(&f->lock);
		if (f->gc.cur != v)
			return 0;       /* a writer took it over meanwhile */
		if (r) {
			ftl_gc_bg_drop(f);
			return r;
		}
	}
	r = evac_run(f, e, &f->ctr.m.gc_relocations, FTL_GC_STEP_PAGES);
	if (r == 1 || r == -EAGAIN)
		return r == 1 ? 0 : r;  /* the victim stays marked */
	f->gc.cur = FTL_NONE;           /* done, or given up (an error) */
	e->v = FTL_NONE;
	if (!r) {
		r = victim_done(f, v);
		if (!r)
			CADD(f, m.gc_bg_victims, 1);
	}
	return r;
}

/* The GC thread stops: its victim, half evacuated, is any GC's again. */
void ftl_gc_bg_drop(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	f->gc.cur = FTL_NONE;
	f->gc.ev[1].v = FTL_NONE;
}
