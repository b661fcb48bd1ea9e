/* SPDX-License-Identifier: MIT */
/*
 * Engine internals shared by the ftl_*.c files.  Not a public API.
 *
 * FILES, top to bottom: each calls only files below it (tests/file-circles;
 * docs/engine.md, "Where things live"):
 *   ftl_grow.c         growing an image in place (calls ftl_open.c)
 *   ftl_open.c ftl_create.c ftl_fsck.c ftl_info.c ftl_health.c ftl_stats.c
 *                      the API besides the I/O; ftl_core.c: alloc, mount
 *   ftl_write.c ftl_read.c        host I/O
 *   ftl_fsum.c         the proof a host flush leaves
 *   ftl_balance.c      before each host page: checkpoint, maintenance, GC
 *   ftl_bggc.c         the GC thread
 *   ftl_maint.c        moves off retired blocks, scrub, static WL
 *   ftl_gc.c           garbage collection, erase rounds
 *   ftl_ckpt_write.c   checkpoints
 *   ftl_append.c       programs pages, moves the map, runs in flight
 *   ftl_place.c        host write temperature: which host frontier
 *   ftl_badblock.c ftl_blkidx.c ftl_readpage.c ftl_counters.c
 *   ftl_dying.c
 *   ftl_fsum_list.c ftl_ckpt_load.c ftl_recover.c ftl_geom.c
 *
 * LOCKING.  Taken in this order (never one while a lock below it is held
 * by the same thread); what each guards:
 *  1. f->stripe[i]    (ftl_write.c, range_lock) one mutex per stripe of
 *     FTL_STRIPE_PAGES logical pages (ftl_stripe_of), 256 in all.  A host
 *     write or discard takes the stripes of every page it touches, in
 *     ascending index order, first, and holds them to its end: two
 *     read-modify-writes of one page serialize.  Guards no field.
 *  2. f->lock         the engine mutex.  Guards the parts below marked so
 *     (the log, the block index, the bad-block table, maintenance,
 *     checkpoints, the flush summaries, GC and the GC thread's state) and
 *     every nand call except data reads and host program runs.  Taken by
 *     host writes, discards and flushes (ftl_write.c: once per run or page,
 *     after the stripes), the GC thread (one step at a time, ftl_bggc.c;
 *     it waits on f->bggc.cv with it), stats, open and close, fsck --repair,
 *     and a read whose page did not check out (ftl_read.c, read_settled).
 *  3. f->io_rw        a rwlock: shared by readers of data pages (ftl_read.c,
 *     no f->lock), exclusive by the erase of data blocks (ftl_gc.c,
 *     ftl_erase_pending, under f->lock): a page looked up in the map is not
 *     erased while it is read.  read_settled lets it go, takes f->lock,
 *     then takes it again.  Writer ownership is recorded, readers are not.
 *  4. f->pipe.mx      tickets of host runs programmed outside f->lock
 *     (ftl_append.c) and their condition variables: taken under f->lock
 *     (ftl_run_reserve, ftl_inflight_drain) or with no lock
 *     (ftl_run_program).  Nothing is taken under it.
 *  5. f->scrub.lock   the scrub queue (ftl_readpage.c): taken by readers
 *     (io_rw shared) and by ftl_scrub_take (f->lock).  Nothing is taken
 *     under it.
 * The frontend's read-only hook (f->bb.ro_fn) runs with f->lock held and
 * must only signal.  Without a lock: map entries (atomic loads; a page is
 * mapped only after its program), the counters (f->ctr.m, relaxed
 * atomics), the checkpoint's map marks (atomic), bb.worn_out (atomic),
 * scrub.n (a hint).  The nand has no lock: its callers serialize it except
 * for data reads and unlocked program runs (nand.h, Threads).
 *
 * Checked: the locks are struct ftl_mutex / ftl_rwlock (below), taken with
 * ftl_lock / ftl_unlock / ftl_cond_wait, ftl_rdlock / ftl_wrlock /
 * ftl_rwunlock.  Built with FTL_LOCK_CHECK (make SANITIZE=1: the unit-san
 * tier) each mutex records the thread holding it, and the rwlock its
 * writer; every function that needs a lock asserts it at its entry
 * (FTL_ASSERT_HELD: all of ftl_append.c but ftl_run_program, ftl_blkidx.c,
 * ftl_badblock.c's changes, the checkpoint writer, GC, maintenance,
 * balance, flush summaries, the GC thread's poke, the host write path's
 * stripes), and the ones that must not hold it assert that
 * (FTL_ASSERT_NOT_HELD: range_lock, ftl_read_whole, ftl_run_program,
 * ftl_bggc_stop).  A failed assertion names the function and the lock,
 * then aborts (tests/unit/ftl-lockcheck.c).  Without FTL_LOCK_CHECK the
 * wrappers are the pthread calls and the assertions nothing.
 */
#ifndef OCTANT_FTL_INT_H
#define OCTANT_FTL_INT_H

#include <pthread.h>

#include "ftl.h"
#include "ftl-format.h"
#include "nand.h"
#include "oct-format.h"

#define FTL_NSTRIPES     256u   /* range locks: stripes of ... */
#define FTL_IO_TURNS     16u    /* ticket wait slots (struct ftl_pipe turn) */
#define FTL_STRIPE_PAGES 64u    /* ... this many consecutive pages */
#define FTL_GC_RESERVE   3u     /* free blocks only GC may take */
#define FTL_MIN_SPARE    4u     /* spare blocks beyond the logical size */
#define FTL_MAX_PAGE     16384u
#define STREAM_HOST      0      /* host writes (hot ones: ftl_place.c) */
#define STREAM_GC        1      /* GC / WL copies, flush summaries */
#define STREAM_COLD      2      /* cold and sequential host writes; its
                                   pages carry OOB stream STREAM_HOST;
                                   checkpoint xopen[0] (version 6), closed
                                   before each checkpoint on older images
                                   (ftl_frontiers_close) */
#define STREAM_GCHOT     3      /* GC copies out of blocks STREAM_HOST
                                   wrote (young survivors of hot data);
                                   OOB stream STREAM_GC, xopen[1] */
#define FTL_NFRONT       4u     /* open blocks in memory (FTL_NSTREAMS +
                                   FTL_CKPT_XOPEN in checkpoints) */
#define FTL_READ_RETRIES 3u     /* re-reads after an uncorrectable read */
#define FTL_PROG_RETRIES 8u     /* blocks tried for one page */
#define FTL_CKPT_DELTA_PAGES 16384u /* with delta checkpoints: one at least
                                  every this many block pages allocated */

/* ---- locks that know their holder (LOCKING: Checked) ------------------- */

#ifdef FTL_LOCK_CHECK
#include <stdio.h>
#include <stdlib.h>
#define FTL_LC(x) x
#else
#define FTL_LC(x)
#endif

/* A mutex; with FTL_LOCK_CHECK it records the thread holding it. */
struct ftl_mutex {
	pthread_mutex_t mx;
#ifdef FTL_LOCK_CHECK
	unsigned long owner;         /* pthread_self() of the holder, 0: none
	                                (atomic) */
#endif
};

/* A rwlock; with FTL_LOCK_CHECK it records the thread holding it for
 * writing (readers are not recorded). */
struct ftl_rwlock {
	pthread_rwlock_t rw;
#ifdef FTL_LOCK_CHECK
	unsigned long writer;        /* the same, for writing */
#endif
};

static inline unsigned long ftl_self(void)
{
	return (unsigned long)pthread_self();
}

static inline void ftl_mutex_init(struct ftl_mutex *m)
{
	pthread_mutex_init(&m->mx, NULL);
	FTL_LC(m->owner = 0;)
}

static inline void ftl_lock(struct ftl_mutex *m)
{
	pthread_mutex_lock(&m->mx);
	FTL_LC(__atomic_store_n(&m->owner, ftl_self(), __ATOMIC_RELAXED);)
}

/* Take @m only if it is free: true when taken (ftl_write_try). */
static inline bool ftl_trylock(struct ftl_mutex *m)
{
	if (pthread_mutex_trylock(&m->mx))
		return false;
	FTL_LC(__atomic_store_n(&m->owner, ftl_self(), __ATOMIC_RELAXED);)
	return true;
}

static inline void ftl_unlock(struct ftl_mutex *m)
{
	FTL_LC(__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);)
	pthread_mutex_unlock(&m->mx);
}

/* pthread_cond_wait on @m (held; it is let go while waiting). */
static inline void ftl_cond_wait(pthread_cond_t *c, struct ftl_mutex *m)
{
	FTL_LC(__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);)
	pthread_cond_wait(c, &m->mx);
	FTL_LC(__atomic_store_n(&m->owner, ftl_self(), __ATOMIC_RELAXED);)
}

/* The same, waking by @abstime (CLOCK_REALTIME) at the latest:
 * ETIMEDOUT then, else 0. */
static inline int ftl_cond_timedwait(pthread_cond_t *c, struct ftl_mutex *m,
				     const struct timespec *abstime)
{
	int r;

	FTL_LC(__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);)
	r = pthread_cond_timedwait(c, &m->mx, abstime);
	FTL_LC(__atomic_store_n(&m->owner, ftl_self(), __ATOMIC_RELAXED);)
	return r;
}

static inline void ftl_rdlock(struct ftl_rwlock *l)
{
	pthread_rwlock_rdlock(&l->rw);
}

static inline void ftl_wrlock(struct ftl_rwlock *l)
{
	pthread_rwlock_wrlock(&l->rw);
	FTL_LC(__atomic_store_n(&l->writer, ftl_self(), __ATOMIC_RELAXED);)
}

/* Let go of @l, held for reading or (by this thread) for writing. */
static inline void ftl_rwunlock(struct ftl_rwlock *l)
{
	FTL_LC(if (__atomic_load_n(&l->writer, __ATOMIC_RELAXED) == ftl_self())
		__atomic_store_n(&l->writer, 0, __ATOMIC_RELAXED);)
	pthread_rwlock_unlock(&l->rw);
}

/*
 * FTL_ASSERT_HELD(&f->lock): this thread holds the mutex, at the entry of
 * every function that needs it; FTL_ASSERT_NOT_HELD where taking it (or a
 * lock before it) would deadlock; FTL_ASSERT_WRITER(&f->io_rw) for the
 * rwlock held for writing.  With FTL_LOCK_CHECK (the sanitizer build) a
 * failed one says which and where on stderr, then aborts; else they cost
 * nothing.
 */
#ifdef FTL_LOCK_CHECK
static inline void ftl_lock_fail(const char *what, const char *func)
{
	fprintf(stderr, "ftl: %s: %s (FTL_LOCK_CHECK)\n", func, what);
	abort();
}
#define FTL_ASSERT_HELD(m) \
	(__atomic_load_n(&(m)->owner, __ATOMIC_RELAXED) == ftl_self() ? \
	 (void)0 : ftl_lock_fail(#m " is not held by this thread", __func__))
#define FTL_ASSERT_NOT_HELD(m) \
	(__atomic_load_n(&(m)->owner, __ATOMIC_RELAXED) != ftl_self() ? \
	 (void)0 : ftl_lock_fail(#m " is held by this thread", __func__))
#define FTL_ASSERT_WRITER(l) \
	(__atomic_load_n(&(l)->writer, __ATOMIC_RELAXED) == ftl_self() ? \
	 (void)0 : ftl_lock_fail(#l " is not held for writing by this " \
				 "thread", __func__))
#else
#define FTL_ASSERT_HELD(m)     ((void)0)
#define FTL_ASSERT_NOT_HELD(m) ((void)0)
#define FTL_ASSERT_WRITER(l)   ((void)0)
#endif

/* Geometry derived from the create options or the superblock. */
struct ftl_geom {
	enum ftl_align_mode align;
	uint32_t shift;              /* 512 odd, 0 1m */
	uint64_t size;               /* logical bytes */
	uint64_t room;               /* logical bytes the checkpoint slots are
	                                sized for (superblock ckpt_sectors):
	                                the image grows in place up to it;
	                                0 or <= size: size */
	uint32_t ps, ppb, oob, op;   /* page size, pages/block, oob, permille */
	uint32_t nlpn;               /* logical pages */
	uint32_t data_blocks, ckpt_blocks, nblocks, slot_blocks;
	uint32_t payload_pages;      /* checkpoint payload */
	uint64_t flash_off, oob_off, image_size;
	bool oob_inline;             /* OCT_SB_F_OOB_INLINE layout */
	bool ckpt_delta;             /* OCT_SB_F_CKPT_DELTA: delta records */
	bool oob_stamp;              /* OCT_SB_F_OOB_STAMP: erase stamps in the
	                                last NAND_STAMP_SIZE OOB bytes */
	uint32_t pe_cycles;          /* rated endurance, erases per block
	                                (superblock; FTL_PE_DEFAULT when it
	                                records none) */
	bool flush_sum;              /* OCT_SB_F_FLUSH_SUM: flush summaries
	                                (ftl_fsum.c) */
	bool pi;                     /* OCT_SB_F_PI: per-sector guards in
	                                data pages' OOB (ftl_pi.c) */
	bool ckpt_open;              /* OCT_SB_F_CKPT_OPEN: checkpoints name
	                                every open block (version 6) */
};

/* Byte offsets of flash page @ppn's data and OOB in the image. */
static inline uint64_t ftl_page_off(const struct ftl_geom *g, uint64_t ppn)
{
	return g->flash_off + ppn * (g->ps + (g->oob_inline ? g->oob : 0));
}

static inline uint64_t ftl_oob_off(const struct ftl_geom *g, uint64_t ppn)
{
	return g->oob_inline ? ftl_page_off(g, ppn) + g->ps
			     : g->oob_off + ppn * g->oob;
}

struct ftl_stream {
	uint32_t blk, wp;            /* FTL_NONE: no open block */
};

/* A host program run reserved under f->lock and programmed outside it
 * (ftl_append.c): on the owner's stack, linked in f->pipe.inflight until
 * its owner takes it back. */
struct ftl_inflight {
	struct ftl_inflight *next;
	uint64_t ppn, seq0;          /* first page and its sequence number */
	uint64_t ticket;             /* programs go to the nand in this order */
	uint32_t lpn, n;             /* logical pages lpn .. lpn + n - 1 */
	const uint8_t *oob;          /* their OOB records (the owner's) */
	uint32_t done;               /* pages the nand programmed */
	int r;                       /* the program's result */
	bool io_done;                /* under pipe.mx */
	bool published;              /* the map points at it (f->lock) */
};

/* A victim being evacuated (ftl_gc.c): one for GC in a writer's critical
 * section (whole victims, inside one hold of f->lock), one for the GC
 * thread (resumed across steps, f->lock released in between: its victim
 * is marked, f->gc.cur, so no other GC picks it).  Buffers lazy. */
#define FTL_GC_RUN_PAGES 64u    /* copies programmed per run at most */
#define FTL_GC_STEP_PAGES 32u   /* copies per step of the GC thread */
#define FTL_SYNC_FREE_MS 0.05   /* a sync learnt shorter is nearly free
                                   (tmpfs, memory): one victim a sync,
                                   writers collect inline (ftl_bggc.c) */
struct ftl_evac {
	uint32_t v;                  /* the victim, FTL_NONE: none */
	uint32_t pg;                 /* next page of it to look at */
	uint32_t unreadable;         /* pages the ECC could not correct */
	bool whole;                  /* at[] holds the victim's data */
	uint8_t *blk;                /* ppb * ps: the victim's data, read */
	const void **at;             /* ppb: page i's data, in blk or in the
	                                backing's mapping (nand_read_run_view:
	                                good until the victim's erase; only
	                                to program from) */
	uint8_t *oob;                /* ppb * oob: its OOB */
	int *res;                    /* ppb: per page read results */
	const void *run[FTL_GC_RUN_PAGES]; /* a run's pages (from at[]) */
	uint32_t lpn[FTL_GC_RUN_PAGES], from[FTL_GC_RUN_PAGES];
	uint32_t crc[FTL_GC_RUN_PAGES]; /* data CRCs from the victim's OOB */
};

/* A binary heap of block numbers ordered by (key[b], b), min first (max
 * first with @max); pos[b] is b's index, FTL_NONE when absent. */
struct ftl_heap {
	uint32_t *a, n, cap;
	uint32_t *pos;
	const uint64_t *key;         /* NULL: block number only */
	bool max;
};

/* The range-lock stripe of logical page @lpn: runs of FTL_STRIPE_PAGES
 * pages share one, so a 1 MiB write takes a few stripes, not all. */
static inline unsigned ftl_stripe_of(uint64_t lpn)
{
	return (unsigned)(lpn / FTL_STRIPE_PAGES % FTL_NSTRIPES);
}

/*
 * ---- struct ftl: the parts and who owns them ------------------------------
 *
 * OWNERSHIP.  Each part below is owned by one file: that file writes its
 * fields; other files read them under the part's guard, and change them
 * only through the owner's functions or the inline notes declared with
 * the part (a note records an event for a part above, and calls nothing).
 * Before the engine is handed out (single-threaded) the open fills every
 * part: ftl_alloc and ftl_mount (ftl_core.c), the checkpoint loader
 * (ftl_ckpt_load.c), recovery (ftl_recover.c), ftl_bb_apply; and create
 * (ftl_create.c, ftl_bb_factory).  Parts in the order of LOCKING above.
 */

/* The log (ftl_append.c).  f->lock; map entries are also loaded without it
 * (atomic, ftl_map_get): they move only after the program. */
struct ftl_log {
	uint32_t *map;               /* lpn -> ppn, FTL_UNMAPPED, FTL_DAMAGED;
	                                atomic */
	uint64_t mapped;             /* logical pages mapped (FTL_DAMAGED too) */
	struct ftl_stream st[FTL_NFRONT]; /* open blocks: host (hot), GC
	                                copies, host (cold), GC copies of
	                                hot data */
	uint8_t *hotblk;             /* per block: opened by STREAM_HOST (a
	                                hint for GC's destination; 0 after a
	                                mount) */
	uint64_t seq;                /* last sequence number used */
	uint64_t sync_gen;           /* completed nand_syncs */
	uint64_t flushed_seq;        /* seq at the last completed sync: goes
	                                into every page's flush record */
	uint64_t *mtime;             /* per block: seq of last program */
	uint64_t *trim_seq;          /* per block: newest trim record or
	                                flush summary in it (0 after an
	                                erase: ftl_log_erased) */
	uint8_t  *fdirty;            /* per block: free but maybe not erased
	                                (after a crash); checked before use */
	uint8_t *runoob;             /* OOB of a program run (lazy: ppb * oob) */
};

/* Placement (ftl_place.c).  f->lock.  Update temperature per group of
 * FTL_PLACE_GROUP logical pages; the policy is in ftl_place.c's header. */
#define FTL_PLACE_GROUP  8u     /* logical pages per temperature counter */
#define FTL_PLACE_EPOCH  8u     /* updates per group per epoch (counters
                                   halve at each epoch's end) */
/* Blocks being emptied now (ftl_dying.c).  f->lock.  Per block, the
 * newest window of invalidations: up to a block's worth of programs long
 * (two once it counts a quarter of a block). */
struct ftl_dying {
	uint64_t *from;              /* per block: f->log.seq at the window's
	                                first invalidation */
	uint32_t *n;                 /* per block: invalidations in it */
};

struct ftl_place {
	uint8_t *cnt;                /* per group: updates, decayed (255 max) */
	uint8_t *ep;                 /* per group: epoch (low 8 bits) of cnt */
	uint32_t ngroups;
	uint32_t epoch;              /* epochs ended */
	uint64_t upd;                /* host pages written in this epoch */
	uint64_t ups;                /* group updates (counter raises) in this
	                                epoch */
	uint64_t ups_prev;           /* ... in the previous one (at init: what
	                                4 KiB writes give, ngroups *
	                                FTL_PLACE_EPOCH) */
	bool off;                    /* !ftl_open_opts.streams */
};

/* Host program runs outside f->lock (ftl_append.c): tickets are handed out
 * under f->lock (next, also under mx) and complete in order (done, under
 * mx).  A run waiting for its turn sleeps on turn[ticket % FTL_IO_TURNS],
 * which is woken only when done reaches a ticket of that slot (a broadcast
 * on one cv woke every waiting writer per completion: 8 FUSE workers, 1M
 * writes, ~7 futile wakeups per MiB); cv wakes ftl_inflight_drain() when
 * done reaches next. */
struct ftl_pipe {
	struct ftl_mutex mx;
	pthread_cond_t cv;
	pthread_cond_t turn[FTL_IO_TURNS];
	uint64_t next, done;         /* mx */
	struct ftl_inflight *inflight; /* f->lock: reserved, owner not back */
};

/* Block states, valid counts and the free / victim indexes (ftl_blkidx.c).
 * f->lock.  Runtime changes of state and valid counts go through
 * ftl_set_state, ftl_valid_inc / _dec, ftl_run_busy / _unbusy and the
 * free-set calls, which keep the indexes. */
struct ftl_idx {
	uint8_t  *state;             /* per block: enum ftl_blk_state */
	uint32_t *valid;             /* per block: valid pages */
	uint32_t *run_pages;         /* per block: pages of host runs reserved
	                                in it and not yet published: while
	                                nonzero the block is out of the victim
	                                index (ftl_run_busy) */
	uint32_t nfree;              /* free blocks (in fh) */
	struct ftl_heap fh[2];       /* free blocks: fewest / most erases */
	uint64_t *fkey;              /* per free block: its erase count */
	struct ftl_heap *vh;         /* FULL data blocks by valid count
	                                (ppb + 1 buckets) */
	uint64_t *vkey;              /* per block: bucket order (mtime under
	                                cost-benefit, else 0) */
	uint32_t *vbk, *vpos;        /* per block: bucket, index; FTL_NONE */
	bool lost;                   /* a bucket could not grow: rebuild */
};

/* The bad-block table (ftl_badblock.c).  f->lock; worn_out is also loaded
 * without it (atomic: ftl_read_only, the write path's check). */
struct ftl_bbt {
	uint32_t *tab;               /* table entries (FTL_BBT_GROWN flag) */
	uint32_t n, limit;           /* entries; bad blocks the spares absorb */
	uint64_t gen;                /* generation of the copy on the medium */
	bool worn_out;               /* spares used up: host writes EROFS */
	void (*ro_fn)(void *ctx);    /* called when worn_out is set
	                                (ftl_on_read_only) */
	void *ro_ctx;
	bool dirty;                  /* the mount added entries: write it */
};

/* Maintenance: moves off retired blocks and static wear levelling
 * (ftl_maint.c).  f->lock.  Note: ftl_retire_note (the table, when a block
 * goes bad). */
struct ftl_maint {
	bool retire_scan;            /* BAD blocks may still hold valid pages */
	uint32_t retire_next;        /* ftl_retire_move resumes here: no block
	                                below holds pages left to move */
	uint64_t retire_visits;      /* blocks ftl_retire_move looked at
	                                (tests) */
	uint8_t *bb_done;            /* per block: BAD, evacuated (what is
	                                left could not be read) */
	uint64_t wl_mark;            /* gc.erased as far as static-WL checks
	                                were made for */
	uint32_t wl_spread;          /* erase counts: max - min over the data
	                                blocks at the last static-WL check (0
	                                before one); near the threshold the
	                                checks run at every erase */
};

/* Checkpoints (ftl_ckpt_write.c; loaded by ftl_ckpt_load.c).  f->lock;
 * dirty, ndirty and dsum are atomic (map changes mark them, also from a
 * run published by another writer).  Notes: ftl_ckpt_dirty (a map entry),
 * ftl_ckpt_blk_dirty (a block's table entry), ftl_ckpt_note_alloc (a block
 * opened). */
struct ftl_ckpt {
	uint64_t gen, seq;           /* newest durable checkpoint */
	uint64_t prev_seq;           /* the one before it (0: unknown, after
	                                an open); flush summaries: a block is
	                                erased only once both cover it */
	uint64_t slot_seq;           /* seq of the newest checkpoint of the
	                                slot before the newest base's (0:
	                                unknown, until the first base after
	                                an open); flush summaries: a block
	                                with log.trim_seq above it is erased
	                                only after a base (ftl_gc.c), list
	                                entries above it stay listed
	                                (ftl_fsum_covered) */
	uint32_t interval;           /* blocks opened between checkpoints */
	uint32_t allocs;             /* blocks opened since the newest one */
	bool due;                    /* allocs reached interval */
	uint64_t seq_gap;            /* a checkpoint at least every seq_gap
	                                programs; recovery skips this far */
	uint8_t *buf;                /* the block table, then a page: scratch */
	/* delta records (g.ckpt_delta) */
	uint32_t pos;                /* slot page of the next record; 0: the
	                                next checkpoint is a base */
	uint32_t mark;               /* slot page of the newest record's mount
	                                marker */
	uint32_t didx;               /* newest record: 0 base, else delta idx */
	uint64_t *dirty;             /* per logical page: changed since the
	                                newest record (atomic bits) */
	uint64_t ndirty;             /* bits set in dirty (atomic) */
	uint64_t *dsum;              /* per dirty word: it may be nonzero
	                                (atomic; a nonzero word always has
	                                its bit here outside ftl_ckpt_write) */
	uint64_t *bdirty;            /* per block: its table entry (state,
	                                flags, mtime, erase count) may differ
	                                from tab (set where they change,
	                                ftl_ckpt_blk_dirty) */
	struct ftl_ckpt_blk *tab;    /* block table as of the newest record */
	uint32_t *chg;               /* scratch: blocks whose entry changed */
};

/* The host pages the next flush summary lists (ftl_fsum_list.c; read by
 * ftl_fsum.c).  f->lock. */
struct ftl_sumlist {
	struct ftl_fsum_ent *ent;    /* host pages programmed since the last
	                                flush summary that the newest
	                                checkpoint of the slot before does
	                                not cover (ftl_fsum_covered) */
	uint32_t n, cap;
	bool need;                   /* a host page since then: the next host
	                                flush programs a summary */
	bool oom;                    /* an entry could not be kept: the next
	                                host flush writes a checkpoint and a
	                                base */
	uint64_t host;               /* host pages programmed since the last
	                                checkpoint (the flush mark's count) */
};

/* The flush mark (ftl_fsum.c).  f->lock. */
struct ftl_marks {
	struct ftl_fmark last;       /* the newest valid flush mark (read at
	                                open, then the newest written; gen 0:
	                                none) */
	uint32_t bad;                /* flush mark copies that did not check
	                                out at open (fsck note) */
};

/* Garbage collection (ftl_gc.c).  f->lock. */
struct ftl_gc {
	uint32_t reserve;            /* free blocks only GC may take
	                                (FTL_GC_RESERVE, less on tiny devices;
	                                fixed at alloc) */
	uint32_t *pend;              /* PENDING blocks awaiting erase */
	uint64_t *pend_gen;          /* sync generation when they became so */
	uint32_t npend;
	uint32_t batch, batch_max;   /* victims per forced sync (adaptive) */
	float sync_ms;               /* what an erase round's sync costs, ms:
	                                a moving average (learn_batch) */
	uint64_t erased;             /* blocks its erase rounds erased */
	struct ftl_evac ev[2];       /* victims: [0] a writer's (whole), [1]
	                                the GC thread's (resumable) */
	uint32_t cur;                /* the GC thread's victim, half
	                                evacuated (FTL_NONE: none); never a
	                                victim of other GC */
	bool syncing;                /* the GC thread's sync runs with f->lock
	                                released: blocks pended meanwhile are
	                                not covered by it (ftl_gc.c, GC-SIDE
	                                SYNC) */
};

/* The background GC thread (ftl_bggc.c; the policy is described there).
 * f->lock, except running. */
struct ftl_bggc {
	pthread_t thread;            /* the GC thread, while running */
	bool running;                /* thread started: written only by open
	                                (before the engine is handed out) and
	                                ftl_bggc_stop (after the last host
	                                call); read by writers under f->lock */
	pthread_cond_t cv;           /* wakes the thread; waited on with
	                                f->lock, signalled with f->lock held */
	bool stop;                   /* the thread must exit */
	bool busy;                   /* the thread is collecting (a signal now
	                                would be wasted) */
	bool timed;                  /* the thread waits with a timeout, idle
	                                only for the writers' sake (ftl_bggc.c,
	                                bggc_inline_cheaper): a writer does not
	                                wake it for that */
	int err;                     /* the thread's unreported error (-errno):
	                                the next host write returns it
	                                (ftl_balance) and clears it */
	uint32_t hi;                 /* the thread collects while nfree < hi
	                                (set at alloc) */
	pthread_cond_t room;         /* the thread made room (or stopped
	                                trying): wakes throttled writers */
	uint32_t waiters;            /* writers waiting on room at the
	                                reserve: the thread does not pause */
	uint64_t retry_seq;          /* the thread found nothing to gain;
	                                writers wake it again only once
	                                log.seq reaches this */
	int64_t pace_slot;           /* CLOCK_MONOTONIC ns: the writers' next
	                                slot (f->lock) */
	double step_ms;              /* ftl_now_ms() when the thread last
	                                began or ended a step: a writer at
	                                the reserve collects itself only
	                                when it is this stale (ftl_bggc.c,
	                                STUCK_MS) */
	/* tests: called by the thread after each step, f->lock released */
	void (*step_hook)(struct ftl *f, void *ctx);
	void *step_ctx;
	/* tests: called inside the thread's unlocked sync (ftl_gc.c), after
	 * the backing's sync, f->lock released */
	void (*sync_hook)(struct ftl *f, void *ctx);
	void *sync_ctx;
};

/* The scrub queue: pages read with many corrected bits (ftl_readpage.c;
 * taken by ftl_maint.c through ftl_scrub_take).  scrub.lock. */
#define FTL_SCRUB_Q      64u    /* pages waiting for a scrub rewrite */
struct ftl_scrubq {
	struct ftl_mutex lock;
	uint32_t lpn[FTL_SCRUB_Q], ppn[FTL_SCRUB_Q];
	uint32_t n;                  /* stored atomically: read without the
	                                lock as a hint (ftl_scrub_take) */
	uint32_t bits;               /* rewrite at this many corrected bits
	                                (fixed at open) */
};

/* This mount's increments of the ENG counters (ftl-counters.h). */
struct ftl_mctr {
#define FTL_X_FIELD(name, src) uint64_t name;
	FTL_COUNTERS(FTL_X_FIELD)
	FTL_MOUNT_COUNTERS(FTL_X_FIELD)
	FTL_LIFE_COUNTERS(FTL_X_FIELD)
#undef FTL_X_FIELD
};

/* Counters (ftl_counters.c): the persisted part (checkpoints) and this
 * mount's.  m: relaxed atomics, added to anywhere (CADD); base and nbase
 * are set at open. */
struct ftl_ctr {
	struct ftl_ckpt_counters base; /* as the checkpoint loaded (+ the open's
	                                OPEN counters) */
	struct nand_counters nbase;  /* nand counters at mount */
	struct ftl_mctr m;
	double rw_t0;                /* CLOCK_MONOTONIC ms when a read-write
	                                open began serving (power_on_seconds);
	                                0 read-only */
};

/* What the open found (ftl_core.c's ftl_mount, the checkpoint loader,
 * recovery): written before the engine is handed out, read-only after
 * (stats, fsck). */
struct ftl_found {
	enum ftl_mount_kind kind;
	double ms;                   /* the open's time */
	bool ckpt_fallback;          /* a damaged slot may have held a newer
	                                one: roll forward, never a clean mount */
	bool ckpt_lost;              /* roll-forward found pages numbered
	                                past the loaded checkpoint's limit:
	                                a newer checkpoint was durable and
	                                its slot is gone (fsck, stats) */
	bool marker_bad;             /* the mount marker page is programmed
	                                but does not check out (fsck) */
	bool ckpt_torn;              /* the chain ends in a torn record: roll
	                                forward without a sequence limit */
	bool bad_delta;              /* a damaged delta record ended the
	                                chain (counted as a damaged slot) */
	uint64_t rf_unknown;         /* after roll-forward: flushed host pages
	                                lost with their logical page unknown
	                                (the flush mark counts more than the
	                                medium holds): the open refuses */
	uint64_t rf_lost_sums;       /* after roll-forward: flush summaries
	                                damaged at or below the last flush */
	uint64_t rf_sum_trims;       /* ... trim records lost to damage,
	                                restored from a summary */
	uint64_t rf_lost, rf_lost_trims; /* after roll-forward: logical pages
	                                lost to damage, damaged trim records */
	uint64_t rf_lost_unknown;    /* flushed pages whose OOB is damaged */
	uint64_t rf_gens_lost;       /* after roll-forward: checkpoints the
	                                flush mark names past the one used,
	                                if 2 or more (two slots lost: GC may
	                                have erased what the roll-forward
	                                needs), else 0: the open refuses */
};

/* Scratch pages: f->lock (or the open). */
struct ftl_scratch {
	uint8_t *page;               /* a page: GC / scrub / recovery reads,
	                                a flush summary being built */
	uint8_t *oob, *oob2;         /* a block's OOB (oob2: the append layer,
	                                while a relocation may walk oob) */
	uint8_t *zero;               /* a page of zeroes */
};

struct ftl {
	/* fixed at open: no lock */
	struct ftl_geom g;
	struct oct_sb sb;
	struct nand *nand;
	int fd;
	bool readonly;
	struct ftl_open_opts o;

	/* the locks (LOCKING) */
	struct ftl_mutex stripe[FTL_NSTRIPES]; /* ftl_write.c: range locks */
	struct ftl_mutex lock;       /* the engine mutex */
	struct ftl_rwlock io_rw;     /* shared: data reads; exclusive: erases */

	/* the parts (OWNERSHIP) */
	struct ftl_log log;          /* ftl_append.c */
	struct ftl_place place;      /* ftl_place.c */
	struct ftl_dying dying;      /* ftl_dying.c */
	struct ftl_pipe pipe;        /* ftl_append.c */
	struct ftl_idx idx;          /* ftl_blkidx.c */
	struct ftl_bbt bb;           /* ftl_badblock.c */
	struct ftl_maint maint;      /* ftl_maint.c */
	struct ftl_ckpt ck;          /* ftl_ckpt_write.c */
	struct ftl_sumlist fsl;      /* ftl_fsum_list.c */
	struct ftl_marks fmark;      /* ftl_fsum.c */
	struct ftl_gc gc;            /* ftl_gc.c */
	struct ftl_bggc bggc;        /* ftl_bggc.c */
	struct ftl_scrubq scrub;     /* ftl_readpage.c */
	struct ftl_ctr ctr;          /* ftl_counters.c */
	struct ftl_found mnt;        /* the open */
	struct ftl_scratch buf;      /* f->lock */
};

/* Count @n into this mount's counter @field (ftl_mctr: "m.name"). */
#define CADD(f, field, n) \
	__atomic_fetch_add(&(f)->ctr.field, (n), __ATOMIC_RELAXED)

/* ---- the notes: a part's fields written from another file --------------- */

/* Logical page @lpn's map entry changed (ftl_map_set/unset). */
static inline void ftl_ckpt_dirty(struct ftl *f, uint32_t lpn)
{
	uint64_t bit = 1ull << (lpn % 64), old;

	if (!f->ck.dirty)
		return;
	old = __atomic_fetch_or(&f->ck.dirty[lpn / 64], bit, __ATOMIC_RELAXED);
	if (!(old & bit))
		__atomic_fetch_add(&f->ck.ndirty, 1, __ATOMIC_RELAXED);
	if (!old)       /* the word was empty: a delta must look at it */
		__atomic_fetch_or(&f->ck.dsum[lpn / 4096],
				  1ull << (lpn / 64 % 64), __ATOMIC_RELAXED);
}

/*
 * Block @b's checkpoint-table entry may have changed (f->lock held): the
 * next delta record compares only the blocks marked so, instead of the
 * whole table (which grows with the device).  Every write of idx.state,
 * log.mtime, log.fdirty or the nand's erase count after mount goes through
 * a mark; FTL_CKPT_CHECK builds (the sanitizer build) compare the whole
 * table at every delta and abort on a change nobody marked.
 */
static inline void ftl_ckpt_blk_dirty(struct ftl *f, uint32_t b)
{
	uint64_t bit = 1ull << (b % 64);

	FTL_ASSERT_HELD(&f->lock);
	if (f->ck.bdirty && !(f->ck.bdirty[b / 64] & bit))
		f->ck.bdirty[b / 64] |= bit;
}

/* A block was opened (ftl_append.c, f->lock held): a checkpoint is due
 * every ck.interval of them. */
static inline void ftl_ckpt_note_alloc(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	if (++f->ck.allocs >= f->ck.interval)
		f->ck.due = true;
}

/* Block @b went bad (ftl_bb_grown, f->lock held): its valid pages are to
 * be moved (ftl_retire_move). */
static inline void ftl_retire_note(struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	f->maint.bb_done[b] = 0;
	f->maint.retire_scan = true;
	if (b < f->maint.retire_next)
		f->maint.retire_next = b;
}

/* Block @b was erased (ftl_gc.c, f->lock held): it holds no trim record
 * or flush summary. */
static inline void ftl_log_erased(struct ftl *f, uint32_t b)
{
	FTL_ASSERT_HELD(&f->lock);
	f->log.trim_seq[b] = 0;
}

/* Erase block @b: nand_erase, and its erase count changes, done or not
 * (f->lock held). */
static inline int ftl_erase(struct ftl *f, uint32_t b)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	r = nand_erase(f->nand, b);
	ftl_ckpt_blk_dirty(f, b);
	return r;
}

static inline uint32_t ftl_map_get(const struct ftl *f, uint32_t lpn)
{
	return __atomic_load_n(&f->log.map[lpn], __ATOMIC_ACQUIRE);
}

/* ---- functions, by file, top to bottom (FILES above) ------------------- */

/* ftl_open.c */
/* Size of a regular file or block device; -EISDIR for a directory,
 * -ENOTBLK for any other file type. */
int ftl_fd_size(int fd, uint64_t *size, bool *blkdev);
/* The backing ftl_open makes of @path (ftl_set_open too): an NBD / RBD
 * URI's connection (*@fdp -1, *@blkdev true), else the file or block
 * device opened O_RDWR (O_RDONLY with @o->readonly), flocked LOCK_EX
 * through @o->lock_fd (checked to be the same file) or the new descriptor
 * unless read-only, sized (*@size, *@blkdev), its descriptor in *@fdp
 * (the caller's, not the backing's: close it after destroying *@b).
 * -EBUSY locked elsewhere, -EINVAL a lock_fd of another file, ftl_fd_size's
 * errors, else the open's / the backing's -errno; nothing held then. */
int ftl_path_backing(const char *path, const struct ftl_open_opts *o,
		     struct nand_backing **b, uint64_t *size, bool *blkdev,
		     int *fdp);
/* ftl_create's medium handling for an image of @image_size bytes at
 * @path (ftl_set_create too): an NBD / RBD URI (an RBD image made when
 * missing; -ENOSPC smaller; -EEXIST anything but zeroes in its first
 * bytes unless @force), else the file or block device opened O_CREAT
 * (-EEXIST an octant image, a set, or a libblkid signature unless @force;
 * a block device: -ENOSPC smaller; a file: truncated to 0 then
 * @image_size), then @make(its backing, @reused: a block device or remote
 * medium that may hold old data, @ctx).  @make's result, else -errno. */
int ftl_create_medium(const char *path, bool force, uint64_t image_size,
		      int (*make)(struct nand_backing *b, bool reused,
				  void *ctx),
		      void *ctx);
/* Build an engine over backing @b sized @bsize (@blkdev: may be larger
 * than the image), as ftl_open does after ftl_path_backing: @b is the
 * engine's on success (its fd stays -1: the caller sets it), the
 * caller's on failure.  ftl_open's errors. */
int ftl_open_on(struct nand_backing *b, uint64_t bsize, bool blkdev,
		const struct ftl_open_opts *o, struct ftl **out);
/* Size an open image and load its superblock area: returns 0 or -errno of
 * the I/O; ftl_sb_load's verdict goes to *load (bad-copy mask to *bad). */
int ftl_sb_read_fd(int fd, uint64_t *size, bool *blkdev, struct oct_sb *sb,
		   struct ftl_geom *g, int *bad, int *load);
/* The same for an image on the NBD export @uri (read-only connection). */
int ftl_sb_read_uri(const char *uri, uint64_t *size, struct oct_sb *sb,
		    struct ftl_geom *g, int *bad, int *load);
void ftl_topo_fill(const struct ftl_geom *g, struct align_topology *t);

/* ftl_create.c */
int ftl_create_opts_geom(const struct ftl_create_opts *o, struct ftl_geom *g);

/* ftl_core.c: building an engine on a nand (before it is handed out) */
int ftl_alloc(const struct ftl_geom *g, struct ftl **out);
void ftl_free(struct ftl *f);
void ftl_rebuild_lists(struct ftl *f);
int ftl_mount(struct ftl *f, const struct ftl_open_opts *o);

/* ftl_read.c: the whole of logical page @lpn into @buf (ps bytes; f->lock
 * not held), checked as ftl_read() checks it: the old data a write or
 * discard covering the page in part merges with.  Unmapped: zeroes.  -EIO
 * when it does not read back as written (FTL_DAMAGED, beyond the ECC, not
 * matching its OOB record: read_crc_errors), else 0 or -errno. */
int ftl_read_whole(struct ftl *f, uint32_t lpn, uint8_t *buf);

/* ftl_fsum.c: flush summaries (g.flush_sum; f->lock held) */
/* A host flush: sync, then (after host pages) the proof of it on the
 * medium, a summary or a checkpoint, synced too. */
int ftl_fsum_sync(struct ftl *f);
/* The flush mark copies in the superblock area @area (OCT_SB_AREA bytes)
 * into f->fmark (the newest valid one; copies that do not check out). */
void ftl_fmark_load(struct ftl *f, const uint8_t *area);

/* ftl_balance.c: before each host page, checkpoint / GC / retire /
 * scrub as needed (f->lock held) */
int ftl_balance(struct ftl *f, uint32_t pages);

/* ftl_bggc.c: the background GC thread of a writable engine */
void ftl_bggc_marks(struct ftl *f);
int ftl_bggc_start(struct ftl *f);
void ftl_bggc_stop(struct ftl *f);
/* Writers (f->lock held): wake the thread when free space is below the
 * high watermark; returns the thread's unreported error (and clears it). */
int ftl_bggc_poke(struct ftl *f);
/* Writers (f->lock held), before @pages host pages: below bggc.hi a delay
 * in proportion to the thread's debt, f->lock let go (1: decide again),
 * else 0. */
int ftl_bggc_pace(struct ftl *f, uint32_t pages);
/* Would @pages host pages be paced now (f->lock held)?  A writer that must
 * not wait (ftl_write_try) leaves such a write to ftl_write. */
bool ftl_bggc_pacing(const struct ftl *f, uint32_t pages);
/* Writers (f->lock held) about to open a host block: wait for the thread
 * at the reserve.  0: go on, 1: collect inline (at the reserve, no thread
 * that can help), 2: the lock was let go, decide again. */
int ftl_bggc_throttle(struct ftl *f, unsigned *waits);
/* Writers (f->lock held) with a checkpoint due that the thread has not
 * written in two intervals: 1 when it is the writer's (no thread that can
 * help, or one stuck: STUCK_MS), else 0 (the writer waited, the lock was
 * let go: decide again). */
int ftl_bggc_ckpt_wait(struct ftl *f);

/* ftl_maint.c: moves above GC (f->lock held) */
int ftl_retire_move(struct ftl *f);
int ftl_scrub_run(struct ftl *f);
int ftl_wl_static(struct ftl *f);

/* ftl_gc.c (f->lock held) */
/* ftl_gc_free_space / ftl_gc_bg_step: an erase round was done, the
 * static-WL check is due (ftl_wl_static). */
#define FTL_GC_WL_DUE 2
int ftl_gc_free_space(struct ftl *f);
int ftl_gc_evacuate(struct ftl *f, uint32_t blk, uint64_t *counter);
int ftl_gc_relocate(struct ftl *f, uint32_t blk, uint64_t *counter);
int ftl_gc_stream_ready(struct ftl *f);
int ftl_gc_prog(struct ftl *f, uint32_t lpn, const void *data, uint32_t crc);
int ftl_erase_pending(struct ftl *f, bool force_sync);
/* One step of background GC toward @target free blocks: at most
 * FTL_GC_STEP_PAGES copies of one victim, or one erase round.  0
 * progress, 1 nothing (more) to gain, FTL_GC_WL_DUE an erase round,
 * -EAGAIN a checkpoint first, else -errno. */
int ftl_gc_bg_step(struct ftl *f, uint32_t target);
/* The thread's victim, half evacuated, is any GC's again. */
void ftl_gc_bg_drop(struct ftl *f);
/* The GC thread's sync, f->lock released while the backing syncs (see
 * GC-SIDE SYNC in ftl_gc.c). */
int ftl_gc_sync_unlocked(struct ftl *f);

/* ftl_ckpt_write.c (f->lock held) */
int ftl_ckpt_write(struct ftl *f, bool clean);
int ftl_ckpt_marker_write(struct ftl *f);
/* The next checkpoint is a base in the next slot (fsck --repair). */
void ftl_ckpt_force_base(struct ftl *f);
/* Every block's entry may have changed (mount, a forced base). */
void ftl_ckpt_blk_dirty_all(struct ftl *f);

/* ftl_append.c: the only code that programs data pages; talks to the
 * nand only (never GC or checkpoints).  f->lock held, but for
 * ftl_run_program. */
int ftl_sync(struct ftl *f);
/* The stream an OOB record names for frontier @s: both host frontiers
 * write host pages (OOB stream STREAM_HOST; recovery, flush summaries and
 * fsck know two streams of data, FTL_NSTREAMS). */
static inline int ftl_oob_stream(int s)
{
	return s == STREAM_COLD ? STREAM_HOST : s == STREAM_GCHOT ? STREAM_GC : s;
}
/* Is @s one of the host frontiers (STREAM_HOST, STREAM_COLD)? */
static inline bool ftl_host_stream(int s)
{
	return s == STREAM_HOST || s == STREAM_COLD;
}
/* The GC frontier for copies of logical pages @lpn[0 .. n-1]:
 * STREAM_GCHOT when most of them are hot (ftl_place_hot; with two host
 * frontiers), else STREAM_GC. */
int ftl_gc_dest(struct ftl *f, const uint32_t *lpn, uint32_t n);
/* Close the open blocks version-5 checkpoints do not record (STREAM_COLD's
 * and STREAM_GCHOT's: FULL, the rest of it unused), after the runs in
 * flight: before every checkpoint of an image without OCT_SB_F_CKPT_OPEN
 * (and while those frontiers are out of use), so roll-forward finds every
 * page written after it by its block's first page (ftl_recover.c,
 * is_candidate). */
void ftl_frontiers_close(struct ftl *f);
/* Retire block @blk in use: out of its stream, into the bad-block table
 * (ftl_bb_grown); ftl_maint.c moves its valid pages later. */
int ftl_retire_block(struct ftl *f, uint32_t blk, const char *why);
bool ftl_stream_needs_block(const struct ftl *f, int stream);
/* Does a host frontier in use (STREAM_HOST; STREAM_COLD with two) need a
 * new block before its next page?  ftl_balance collects garbage then when
 * only GC's reserve is free. */
bool ftl_host_needs_block(const struct ftl *f);
int ftl_streams_check(struct ftl *f);
bool ftl_seq_room(const struct ftl *f, uint64_t n);
int ftl_alloc_page(struct ftl *f, int stream, uint64_t *ppn);
int ftl_prog_page(struct ftl *f, int stream, uint32_t lpn, const void *data,
		  uint8_t kind, uint64_t *seq_out);
/* The same for one copy of a data page (GC, scrub): @crc is its source
 * page's data CRC (from its OOB record), carried, not recomputed. */
int ftl_prog_copy(struct ftl *f, int stream, uint32_t lpn, const void *data,
		  uint32_t crc);
/* @crc: the pages' data CRCs, computed by the caller before it took
 * f->lock (NULL: computed here, under it). */
int ftl_prog_run(struct ftl *f, int stream, uint32_t lpn, const void *data,
		 uint32_t n, const uint32_t *crc, uint32_t *done);
/* Program copies (GC): the page at @pages[i] (in a buffer, or in the
 * backing's mapping: nand_read_run_view, only programmed from, never
 * read here) for logical page @lpn[i], which the map points at @from[i],
 * as runs like ftl_prog_run, with @crc[i] as its data CRC (the one its
 * source page's OOB holds, not recomputed); a page's map moves (and
 * *@counter counts it) only while it still points at @from[i].  -ENOMEM:
 * no run buffer (nothing done; page by page). */
int ftl_prog_copies(struct ftl *f, int stream, const uint32_t *lpn,
		    const uint32_t *from, const uint32_t *crc,
		    const void *const *pages, uint32_t n, uint32_t *done,
		    uint64_t *counter);
/* Host runs outside f->lock: reserve (f->lock held; -EAGAIN when the nand
 * cannot program outside it, or @n is 0: use ftl_prog_run), program (no
 * lock, in ticket order), take back (f->lock held: publishes unless
 * already done, returns the result).  @crc: the data CRC of each page,
 * @oob: room for n OOB areas. */
int ftl_run_reserve(struct ftl *f, int stream, uint32_t lpn, uint32_t n,
		    const uint32_t *crc, uint8_t *oob, size_t oob_room,
		    struct ftl_inflight *x);
void ftl_run_program(struct ftl *f, struct ftl_inflight *x, const void *data,
		     const uint8_t *oob);
int ftl_run_finish(struct ftl *f, struct ftl_inflight *x);
/* Wait until every reserved host run is on the medium, then point the map
 * at them (f->lock held; it is not released).  Before a sync (flush
 * records), GC copies (sequence order), checkpoints and programs into the
 * host stream under the lock. */
void ftl_inflight_drain(struct ftl *f);
void ftl_map_set(struct ftl *f, uint32_t lpn, uint32_t ppn);
void ftl_map_unset(struct ftl *f, uint32_t lpn);
/* A copy of logical page @lpn was programmed and mapped: count it in
 * *@counter (one of f->ctr.m's gc_, wl_, bad_relocations) and tell the
 * open's copy_fn. */
void ftl_copy_count(struct ftl *f, uint64_t *counter, uint32_t lpn);

/* ftl_dying.c: blocks being emptied now (f->lock held but for init/fini) */
int ftl_dying_init(struct ftl *f);
void ftl_dying_fini(struct ftl *f);
/* A page of block @b was superseded or unmapped. */
void ftl_dying_note(struct ftl *f, uint32_t b);
/* Did @b lose at least 1/8 of a block's pages within the last block's
 * worth of programs (a quarter within two)?  GC passes it over then
 * (ftl_victim) while it has another candidate. */
bool ftl_dying(const struct ftl *f, uint32_t b);

/* ftl_place.c: host write temperature (f->lock held but for init/fini) */
int ftl_place_init(struct ftl *f, bool off);
void ftl_place_fini(struct ftl *f);
/* Host pages @lpn .. @lpn + n - 1 were written by one request turn: one
 * update for each group they touch. */
void ftl_place_note(struct ftl *f, uint32_t lpn, uint32_t n);
/* Is logical page @lpn's group hot (updated more than twice as often as
 * uniform traffic would)? */
bool ftl_place_hot(struct ftl *f, uint32_t lpn);
/* The host frontier for a write starting at @lpn: STREAM_HOST (hot) or
 * STREAM_COLD; always STREAM_HOST for FTL_NONE (a trim record), without
 * ftl_open_opts.streams or with fewer than FTL_PLACE_MIN_SPARE spare blocks. */
int ftl_place_host(struct ftl *f, uint32_t lpn);
/* Two host frontiers in use (ftl_open_opts.streams, enough spare
 * blocks). */
bool ftl_place_on(const struct ftl *f);

/* ftl_badblock.c: the table (f->lock held at runtime) */
int ftl_bbt_load(struct ftl *f, const uint8_t *area);
void ftl_bbt_encode(struct ftl *f, uint8_t *area);
int ftl_bb_factory(struct ftl *f, double rate, uint64_t seed);
int ftl_bb_factory_check(const struct ftl_geom *g, double rate, uint64_t seed);
void ftl_bb_apply(struct ftl *f);
int ftl_bb_sync(struct ftl *f);
int ftl_bbt_reset(struct nand_backing *b);
int ftl_bb_grown(struct ftl *f, uint32_t blk, const char *why);
bool ftl_bb_ro_unjustified(const struct ftl *f);
int ftl_bb_clear_ro(struct ftl *f);
void ftl_bb_stats(struct ftl *f, struct ftl_stats *st);
/* f->g changed size (ftl_grow.c): the spares it absorbs again. */
void ftl_bb_relimit(struct ftl *f);
bool ftl_bb_is(const struct ftl *f, uint32_t blk, bool *grown);

/* ftl_blkidx.c: free blocks by erase count, FULL blocks by valid count
 * (f->lock held).  Runtime state and valid-count changes of data blocks
 * go through ftl_set_state / ftl_valid_inc / ftl_valid_dec. */
int ftl_idx_init(struct ftl *f);
void ftl_idx_fini(struct ftl *f);
void ftl_idx_rebuild(struct ftl *f);
void ftl_free_put(struct ftl *f, uint32_t b);
uint32_t ftl_free_take(struct ftl *f, bool most_worn);
void ftl_free_drop(struct ftl *f, uint32_t b);
bool ftl_free_has(const struct ftl *f, uint32_t b);
/* Block @b was erased: FREE, no valid page, in the free set. */
void ftl_free_erased(struct ftl *f, uint32_t b);
void ftl_set_state(struct ftl *f, uint32_t b, uint8_t s);
void ftl_valid_inc(struct ftl *f, uint32_t b);
void ftl_valid_dec(struct ftl *f, uint32_t b);
uint32_t ftl_victim(struct ftl *f, uint32_t max_valid);
/* @n pages of a host run reserved in block @b / published or given up
 * (ftl_append.c): a block with any in flight is no GC victim. */
void ftl_run_busy(struct ftl *f, uint32_t b, uint32_t n);
void ftl_run_unbusy(struct ftl *f, uint32_t b, uint32_t n);
uint32_t ftl_victim_scan(const struct ftl *f, uint32_t max_valid);
long ftl_idx_check(const struct ftl *f);

/* ftl_readpage.c: a flash page through the ECC (read retry), the scrub
 * queue */
int ftl_read_page(struct ftl *f, uint32_t lpn, uint32_t ppn, uint32_t off,
		  void *buf, uint32_t len);
uint32_t ftl_scrub_take(struct ftl *f, uint32_t *lpn, uint32_t *ppn,
			uint32_t max);

/* ftl_counters.c */
double ftl_now_ms(void);             /* CLOCK_MONOTONIC, milliseconds */
void ftl_counters_snapshot(struct ftl *f, struct ftl_ckpt_counters *c);
void ftl_counters_mount(const struct ftl *f, const struct nand_counters *n,
			struct ftl_stats *st);

/* ftl_fsum_list.c: what the next flush summary lists (g.flush_sum;
 * f->lock held) */
/* Host page @seq (data or trim record @data) was programmed at @ppn:
 * remember it for the next summary (@crc: the data CRC). */
void ftl_fsum_note(struct ftl *f, uint8_t kind, uint32_t lpn, uint64_t ppn,
		   uint64_t seq, uint32_t crc, const void *data);
/* A checkpoint was written: drop the entries the newest checkpoint of the
 * slot before covers (ck.slot_seq). */
void ftl_fsum_covered(struct ftl *f);
/* A base was written after entries could not be kept (fsl.oom): it
 * proves the flush; no summary is needed for it. */
void ftl_fsum_based(struct ftl *f);
/* A summary lists every page noted so far (the flush mark still counts
 * them, until a checkpoint). */
void ftl_fsum_listed(struct ftl *f);

/* ftl_ckpt_load.c (the open, fsck) */
int ftl_ckpt_find(struct ftl *f, uint64_t *gen_out, uint32_t *flags,
		  int *bad, FILE *report);
int ftl_ckpt_marker_read(struct ftl *f, bool *present);

/* ftl_recover.c (the open, fsck) */
int ftl_roll_forward(struct ftl *f, bool full_scan);

/* Checkpoint slots: physical page @idx of the slot generation @gen uses;
 * pages of a slot; the payload: the map (4 bytes per logical page), then
 * the block table. */
static inline uint64_t ftl_ckpt_slot_page(const struct ftl *f, uint64_t gen,
					  uint32_t idx)
{
	return gen % FTL_CKPT_SLOTS * f->g.slot_blocks * f->g.ppb + idx;
}

static inline uint32_t ftl_ckpt_slot_pages(const struct ftl_geom *g)
{
	return g->slot_blocks * g->ppb;
}

static inline uint64_t ftl_ckpt_map_bytes(const struct ftl_geom *g)
{
	return (uint64_t)g->nlpn * sizeof(uint32_t);
}

static inline uint64_t ftl_ckpt_tab_bytes(const struct ftl_geom *g)
{
	return (uint64_t)g->nblocks * sizeof(struct ftl_ckpt_blk);
}

/* ftl_geom.c */
/* Switch @g to the inline (OCT_SB_F_OOB_INLINE) or the separate layout
 * (same image size; ftl_geom_compute() gives the inline one). */
void ftl_geom_layout(struct ftl_geom *g, bool oob_inline);
/* Erase stamps (OCT_SB_F_OOB_STAMP) fit @g; the nand geometry of @g. */
bool ftl_geom_stamp_ok(const struct ftl_geom *g);
struct nand_geom ftl_nand_geom(const struct ftl_geom *g);
/* Size the checkpoint slots with or without room for delta records
 * (OCT_SB_F_CKPT_DELTA; ftl_geom_compute() gives with). */
int ftl_geom_ckpt(struct ftl_geom *g, bool delta);
int ftl_geom_compute(struct ftl_geom *g, uint64_t size, enum ftl_align_mode a,
		     uint32_t ps, uint32_t ppb, uint32_t oob, uint32_t op);
/* Growing (ftl_grow.c): the geometry @g0 becomes at @size logical bytes
 * (-ERANGE smaller, -EFBIG beyond the checkpoint slots' room, -EINVAL,
 * -EOPNOTSUPP layout 1.0); the largest size it can grow to; whether
 * @size bytes of backing fit @g (a file longer by whole blocks up to
 * that: a grow cut short). */
int ftl_geom_grow(const struct ftl_geom *g0, uint64_t size,
		  struct ftl_geom *g1);
uint64_t ftl_geom_grow_max(const struct ftl_geom *g0);
bool ftl_geom_size_ok(const struct ftl_geom *g, uint64_t size, bool blkdev);
int ftl_sb_build(struct oct_sb *sb, const struct ftl_geom *g);
int ftl_sb_decode(const struct oct_sb *sb, struct ftl_geom *g);
int ftl_sb_load(const uint8_t *area, size_t len, struct oct_sb *sb,
		struct ftl_geom *g, int *bad_copies);
void ftl_oob_fill(struct ftl_oob *o, uint8_t kind, uint16_t stream,
		  uint32_t lpn, uint64_t seq, uint32_t ec, const void *data,
		  uint32_t ps);
/* The same with the data CRC given (computed before, or carried from the
 * page a GC copy was read from: see evac_run in ftl_gc.c). */
void ftl_oob_fill_crc(struct ftl_oob *o, uint8_t kind, uint16_t stream,
		      uint32_t lpn, uint64_t seq, uint32_t ec,
		      uint32_t data_crc);
bool ftl_oob_ok(const struct ftl_oob *o);
/* The flush record of flash page @ppn's OOB @oob (ftl-format.h): add it
 * (after the filled OOB record); its value, 0 when absent or bad. */
void ftl_oob_set_flushed(const struct ftl_geom *g, void *oob, uint64_t ppn,
			 uint64_t flushed);
uint64_t ftl_oob_flushed(const struct ftl_geom *g, const void *oob,
			 uint64_t ppn);
/* Is @oob a valid OOB record of flash page @ppn: ftl_oob_ok, and on images
 * with flush summaries a flush record bound to @ppn (data, trim records,
 * summaries): a record programmed at another page does not check out. */
bool ftl_oob_at(const struct ftl_geom *g, const void *oob, uint64_t ppn);
/* ftl_pi.c: the PI record (OCT_SB_F_PI).  Does @g's OOB hold it (beside
 * the records before it and the erase stamp)? */
bool ftl_pi_fits(const struct ftl_geom *g);
/* Add the PI record of page data @data after the records of OOB area
 * @oob (its ftl_oob filled); nothing unless g->pi. */
void ftl_pi_fill(const struct ftl_geom *g, void *oob, const void *data);
/* T10-DIF type 1 tuple at @t: @guard, app tag 0, ref tag the low 32 bits of
 * @sector (big-endian). */
void ftl_pi_tuple(uint8_t *t, uint16_t guard, uint64_t sector);
/* The guards of OOB area @oob (its ftl_oob valid) into @guard (ps / 512
 * of them, host order): false when the record does not check out. */
bool ftl_pi_guards(const struct ftl_geom *g, const void *oob,
		   uint16_t *guard);
/* The PI record of OOB area @oob checks out and holds the guards of page
 * data @data (fsck). */
bool ftl_pi_page_ok(const struct ftl_geom *g, const void *oob,
		    const void *data);
bool ftl_oob_blank(const void *oob, size_t n);
/* Payload page @i of an empty engine's checkpoint (left unprogrammed:
 * ftl_ckpt_write.c); is @buf that page? */
void ftl_ckpt_blank_page(const struct ftl_geom *g, uint32_t i, uint8_t *buf);
bool ftl_ckpt_page_blank(const struct ftl_geom *g, uint32_t i,
			 const uint8_t *buf);

/* ---- seams for tests (tests/unit/ftl-*.c) -------------------------------
 * Tests use ftl.h and these, plus the format (ftl-format.h, ftl_page_off,
 * ftl_oob_off, ftl_oob_ok...) to damage images; only the tests listed in
 * docs/engine.md (Tests: "inspect internals") reach into struct ftl. */

/* Create an image on any backing of g.image_size bytes (see
 * ftl_test_image_size). */
int ftl_create_backing(struct nand_backing *b, const struct ftl_create_opts *o);
/* Image size for create options (0 on bad options). */
uint64_t ftl_test_image_size(const struct ftl_create_opts *o);
/* The same two in the format before delta checkpoints (version 3 slots). */
int ftl_test_create_backing_full(struct nand_backing *b,
				 const struct ftl_create_opts *o);
uint64_t ftl_test_image_size_full(const struct ftl_create_opts *o);
/* Delta checkpoints but no erase stamps (format 1.1 images made before
 * OCT_SB_F_OOB_STAMP: erase zeroes the block); same image size. */
int ftl_test_create_backing_nostamp(struct nand_backing *b,
				    const struct ftl_create_opts *o);
/* Delta checkpoints and erase stamps, no flush summaries (images made
 * before OCT_SB_F_FLUSH_SUM); same image size. */
int ftl_test_create_backing_nofsum(struct nand_backing *b,
				   const struct ftl_create_opts *o);
/* Everything but OCT_SB_F_CKPT_OPEN (images made before it: version-5
 * checkpoints, two open blocks named); same image size. */
int ftl_test_create_backing_noopen(struct nand_backing *b,
				   const struct ftl_create_opts *o);
/* ftl_create's make on a reused medium (a block device, an export: what
 * it held is zeroed first) of at least the image's size. */
int ftl_test_create_reused(struct nand_backing *b,
			   const struct ftl_create_opts *o);
/* The same for a set of @nparts parts (ftl_set_create's make). */
int ftl_test_set_create_reused(struct nand_backing *b,
			       const struct ftl_create_opts *o,
			       unsigned nparts, uint64_t stripe);
/* Open an image on a backing; the engine owns @b afterwards. */
int ftl_open_backing(struct nand_backing *b, const struct ftl_open_opts *o,
		     struct ftl **out);
/* The same on any backing of @size bytes (a test's own wrapper). */
int ftl_open_backing_sized(struct nand_backing *b, uint64_t size,
			   const struct ftl_open_opts *o, struct ftl **out);
/* ftl_grow on a memory backing (not taken) at least as large as the
 * grown image. */
int ftl_test_grow_backing(struct nand_backing *b, uint64_t size,
			  uint64_t *max);
/* Free without a checkpoint (as if the process died). */
void ftl_abandon(struct ftl *f);
/* The nand under an engine, its geometry; holding its mutex (no host
 * write, checkpoint or GC thread step meanwhile: a power cut between two
 * operations). */
struct nand *ftl_test_nand(struct ftl *f);
const struct ftl_geom *ftl_test_geom(const struct ftl *f);
void ftl_test_hold(struct ftl *f, bool hold);

#endif
