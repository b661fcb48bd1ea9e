/* SPDX-License-Identifier: MIT */
/* Engine internals shared by the ftl_*.c files.  Not a public API. */
#ifndef OCTANT_FTL_INT_H
#define OCTANT_FTL_INT_H

#include <pthread.h>

#include "ftl.h"
#include "ftl-format.h"
#include "nand.h"
#include "oct-format.h"

#define FTL_NSTRIPES     256u   /* range locks: stripes of ... */
#define FTL_IO_TURNS     16u    /* ticket wait slots (struct ftl io_turn) */
#define FTL_STRIPE_PAGES 64u    /* ... this many consecutive pages */
#define FTL_GC_RESERVE   3u     /* free blocks only GC may take */
#define FTL_MIN_SPARE    4u     /* spare blocks beyond the logical size */
#define FTL_MAX_PAGE     16384u
#define STREAM_HOST      0
#define STREAM_GC        1
#define FTL_SCRUB_Q      64u    /* pages waiting for a scrub rewrite */
#define FTL_READ_RETRIES 3u     /* re-reads after an uncorrectable read */
#define FTL_PROG_RETRIES 8u     /* blocks tried for one page */
#define FTL_CKPT_DELTA_PAGES 16384u /* with delta checkpoints: one at least
                                  every this many block pages allocated */

/* Geometry derived from the create options or the superblock. */
struct ftl_geom {
	enum ftl_align_mode align;
	uint32_t shift;              /* 512 odd, 0 1m */
	uint64_t size;               /* logical bytes */
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
 * (ftl_append.c): on the owner's stack, linked in f->inflight until its
 * owner takes it back. */
struct ftl_inflight {
	struct ftl_inflight *next;
	uint64_t ppn, seq0;          /* first page and its sequence number */
	uint64_t ticket;             /* programs go to the nand in this order */
	uint32_t lpn, n;             /* logical pages lpn .. lpn + n - 1 */
	const uint8_t *oob;          /* their OOB records (the owner's) */
	uint32_t done;               /* pages the nand programmed */
	int r;                       /* the program's result */
	bool io_done;                /* under io_mx */
	bool published;              /* the map points at it (f->lock) */
};

/* A victim being evacuated (ftl_gc.c): one for GC in a writer's critical
 * section (whole victims, inside one hold of f->lock), one for the GC
 * thread (resumed across steps, f->lock released in between: its victim
 * is marked, f->gc_cur, so no other GC picks it).  Buffers lazy. */
#define FTL_GC_RUN_PAGES 64u    /* copies programmed per run at most */
#define FTL_GC_STEP_PAGES 32u   /* copies per step of the GC thread */
struct ftl_evac {
	uint32_t v;                  /* the victim, FTL_NONE: none */
	uint32_t pg;                 /* next page of it to look at */
	uint32_t unreadable;         /* pages the ECC could not correct */
	bool whole;                  /* blk holds the victim's data */
	uint8_t *blk;                /* ppb * ps: the victim's data */
	uint8_t *oob;                /* ppb * oob: its OOB */
	int *res;                    /* ppb: per page read results */
	uint8_t *run;                /* FTL_GC_RUN_PAGES * ps: a run's data */
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

struct ftl {
	pthread_mutex_t lock;        /* map updates, blocks, streams, nand */
	pthread_rwlock_t io_rw;      /* shared: data reads; exclusive: erases */
	pthread_mutex_t stripe[FTL_NSTRIPES];
	/* host program runs outside f->lock (ftl_append.c): tickets are
	 * handed out under f->lock (io_next, also under io_mx) and complete in
	 * order (io_done, under io_mx).  A run waiting for its turn sleeps on
	 * io_turn[ticket % FTL_IO_TURNS], which is woken only when io_done
	 * reaches a ticket of that slot (a broadcast on one cv woke every
	 * waiting writer per completion: 8 FUSE workers, 1M writes, ~7 futile
	 * wakeups per MiB); io_cv wakes ftl_inflight_drain() when io_done
	 * reaches io_next. */
	pthread_mutex_t io_mx;
	pthread_cond_t io_cv;
	pthread_cond_t io_turn[FTL_IO_TURNS];
	uint64_t io_next, io_done;
	struct ftl_inflight *inflight; /* reserved, owner not back (f->lock) */
	struct ftl_geom g;
	struct oct_sb sb;
	struct nand *nand;
	int fd;
	bool readonly;
	struct ftl_open_opts o;

	uint32_t *map;               /* lpn -> ppn, FTL_UNMAPPED, FTL_DAMAGED;
	                                atomic */
	uint32_t *valid;             /* per block: valid pages */
	uint32_t *run_pages;         /* per block: pages of host runs reserved
	                                in it and not yet published (f->lock):
	                                while nonzero the block is out of the
	                                victim index (ftl_run_busy) */
	uint8_t  *state;             /* per block: enum ftl_blk_state */
	uint64_t *mtime;             /* per block: seq of last program */
	uint64_t *trim_seq;          /* per block: newest trim record or
	                                flush summary in it */
	uint8_t  *fdirty;            /* per block: free but maybe not erased
	                                (after a crash); checked before use */
	uint32_t nfree;              /* free blocks (in fh, ftl_blkidx.c) */
	struct ftl_heap fh[2];       /* free blocks: fewest / most erases */
	uint64_t *fkey;              /* per free block: its erase count */
	struct ftl_heap *vh;         /* FULL data blocks by valid count
	                                (ppb + 1 buckets) */
	uint64_t *vkey;              /* per block: bucket order (mtime under
	                                cost-benefit, else 0) */
	uint32_t *vbk, *vpos;        /* per block: bucket, index; FTL_NONE */
	bool idx_lost;               /* a bucket could not grow: rebuild */
	uint32_t *pend;              /* PENDING blocks awaiting erase */
	uint64_t *pend_gen;          /* sync generation when they became so */
	uint32_t npend;
	struct ftl_stream st[FTL_NSTREAMS];
	uint64_t seq;                /* last sequence number used */
	uint64_t sync_gen;           /* completed nand_syncs */
	uint64_t flushed_seq;        /* f->seq at the last completed sync: goes
	                                into every page's flush record */
	struct ftl_fsum_ent *fsum;   /* host pages programmed since the last
	                                flush summary or checkpoint (ftl_fsum.c;
	                                g.flush_sum) */
	uint32_t fsum_n, fsum_cap;
	bool fsum_need;              /* a host page since then: the next host
	                                flush programs a summary */
	bool fsum_oom;               /* an entry could not be kept: the next
	                                host flush writes a checkpoint and a
	                                base */
	uint64_t fsum_host;          /* host pages programmed since the last
	                                checkpoint (the flush mark's count) */
	struct ftl_fmark fm;         /* the newest valid flush mark read at
	                                open (fm.gen 0: none) */
	uint32_t fm_bad;             /* flush mark copies that did not check
	                                out (fsck note) */
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
	uint64_t rf_gens_lost;       /* checkpoints the flush mark names past
	                                the one used, if 2 or more (two slots
	                                lost: GC may have erased what the
	                                roll-forward needs): the open refuses */
	uint64_t ckpt_gen, ckpt_seq; /* newest durable checkpoint */
	uint64_t ckpt_prev_seq;      /* the one before it (0: unknown, after
	                                an open); flush summaries: a block is
	                                erased only once both cover it */
	uint64_t ckpt_slot_seq;      /* the newest of the slot before the
	                                newest base's (0: unknown, until the
	                                first base after an open); flush
	                                summaries: a block with trim_seq above
	                                it is erased only after a base */
	bool ckpt_fallback;          /* a damaged slot may have held a newer
	                                one: roll forward, never a clean mount */
	bool ckpt_lost;              /* roll-forward found pages numbered
	                                past the loaded checkpoint's limit:
	                                a newer checkpoint was durable and
	                                its slot is gone (fsck, stats) */
	bool ck_marker_bad;          /* the mount marker page is programmed
	                                but does not check out (fsck) */
	bool ckpt_torn;              /* the chain ends in a torn record: roll
	                                forward without a sequence limit */
	/* delta checkpoints (ftl_ckpt.c; g.ckpt_delta) */
	uint32_t ck_pos;             /* slot page of the next record; 0: the
	                                next checkpoint is a base */
	uint32_t ck_mark;            /* slot page of the newest record's mount
	                                marker */
	uint32_t ck_didx;            /* newest record: 0 base, else delta idx */
	uint64_t *ck_dirty;          /* per logical page: changed since the
	                                newest record (atomic bits) */
	uint64_t ck_ndirty;          /* bits set in ck_dirty (atomic) */
	uint64_t *ck_dsum;           /* per ck_dirty word: it may be nonzero
	                                (atomic; a nonzero word always has
	                                its bit here outside ftl_ckpt_write) */
	uint64_t *ck_bdirty;         /* per block: its table entry (state,
	                                flags, mtime, erase count) may differ
	                                from ck_tab (f->lock; set where they
	                                change, ftl_ckpt_blk_dirty) */
	struct ftl_ckpt_blk *ck_tab; /* block table as of the newest record */
	uint32_t *ck_chg;            /* scratch: blocks whose entry changed */
	bool ck_bad_delta;           /* a damaged delta record ended the
	                                chain (counted as a damaged slot) */
	uint32_t ckpt_interval, allocs_since_ckpt;
	uint64_t seq_gap;            /* a checkpoint at least every seq_gap
	                                programs; recovery skips this far */
	bool ckpt_due;
	uint32_t gc_reserve;         /* free blocks only GC may take
	                                (FTL_GC_RESERVE, less on tiny devices) */
	uint64_t mapped;
	uint64_t wl_erases;          /* erases since the last static-WL move */
	uint32_t gc_batch, gc_batch_max; /* victims per forced sync (adaptive) */
	uint8_t *gcbuf, *oobbuf, *oobbuf2, *zero, *ckbuf;
	struct ftl_evac ev[2];        /* GC victims: [0] a writer's (whole),
	                                 [1] the GC thread's (resumable) */
	uint32_t gc_cur;              /* f->lock: the GC thread's victim,
	                                 half evacuated (FTL_NONE: none);
	                                 never a victim of other GC */
	uint8_t *runoob;              /* OOB of a program run (ftl_append.c,
	                                 lazy: ppb * oob) */

	/* counters: persisted part (ckpt) + this mount's atomics */
	struct ftl_ckpt_counters base;
	struct nand_counters nbase;  /* nand counters at mount */
	struct {                     /* ftl-counters.h; ENG ones counted here */
#define FTL_X_FIELD(name, src) uint64_t name;
		FTL_COUNTERS(FTL_X_FIELD)
		FTL_MOUNT_COUNTERS(FTL_X_FIELD)
		FTL_LIFE_COUNTERS(FTL_X_FIELD)
#undef FTL_X_FIELD
	} m;
	enum ftl_mount_kind mount_kind;
	double mount_ms;
	double rw_t0;                /* CLOCK_MONOTONIC ms when a read-write
	                                open began serving (power_on_seconds);
	                                0 read-only */

	/* bad blocks (ftl_badblock.c) */
	uint32_t *bbt;               /* table entries (FTL_BBT_GROWN flag) */
	uint32_t nbbt, bb_limit;
	uint64_t bbt_gen;
	bool worn_out;               /* spares used up: host writes EROFS */
	void (*ro_fn)(void *ctx);    /* f->lock: called when worn_out is set
	                                (ftl_on_read_only) */
	void *ro_ctx;
	bool bbt_dirty;              /* the mount added entries: write it */
	bool retire_scan;            /* BAD blocks may still hold valid pages */
	uint32_t retire_next;        /* ftl_bb_retire resumes here: no block
	                                below holds pages left to move */
	uint64_t retire_visits;      /* blocks ftl_bb_retire looked at (tests) */
	uint8_t *bb_done;            /* per block: BAD, evacuated (what is
	                                left could not be read) */
	/* scrub queue (ftl_scrub.c): pages read with many corrected bits */
	pthread_mutex_t scrub_lock;
	uint32_t scrub_lpn[FTL_SCRUB_Q], scrub_ppn[FTL_SCRUB_Q];
	uint32_t nscrub;             /* scrub_lock; stored atomically: read
	                                without it as a hint (ftl_scrub_run) */
	uint32_t scrub_bits;         /* rewrite at this many corrected bits */

	/* background GC (ftl_bggc.c); the policy is described there */
	pthread_t gc_thread;         /* the GC thread, while gc_running */
	bool gc_running;             /* thread started: written only by open
	                                (before the engine is handed out) and
	                                ftl_bggc_stop (after the last host
	                                call); read by writers under f->lock */
	pthread_cond_t gc_cv;        /* wakes the thread; waited on with
	                                f->lock, signalled with f->lock held */
	bool gc_stop;                /* f->lock: the thread must exit */
	bool gc_busy;                /* f->lock: the thread is collecting (a
	                                signal now would be wasted) */
	int gc_err;                  /* f->lock: the thread's unreported error
	                                (-errno): the next host write returns
	                                it (ftl_balance) and clears it */
	uint32_t gc_hi;              /* f->lock: the thread collects while
	                                nfree < gc_hi (set at alloc) */
	uint64_t gc_retry_seq;       /* f->lock: the thread found nothing to
	                                gain; writers wake it again only once
	                                f->seq reaches this */
	/* tests: called by the thread after each step, f->lock released */
	void (*gc_step_hook)(struct ftl *f, void *ctx);
	void *gc_step_ctx;
};

#define CADD(f, field, n) __atomic_fetch_add(&(f)->field, (n), __ATOMIC_RELAXED)

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

/* ftl_open.c, ftl_stats.c */
/* Size of a regular file or block device; -EISDIR for a directory,
 * -ENOTBLK for any other file type. */
int ftl_fd_size(int fd, uint64_t *size, bool *blkdev);
/* Size an open image and load its superblock area: returns 0 or -errno of
 * the I/O; ftl_sb_load's verdict goes to *load (bad-copy mask to *bad). */
int ftl_sb_read_fd(int fd, uint64_t *size, bool *blkdev, struct oct_sb *sb,
		   struct ftl_geom *g, int *bad, int *load);
/* The same for an image on the NBD export @uri (read-only connection). */
int ftl_sb_read_uri(const char *uri, uint64_t *size, struct oct_sb *sb,
		    struct ftl_geom *g, int *bad, int *load);
void ftl_topo_fill(const struct ftl_geom *g, struct align_topology *t);
void ftl_counters_snapshot(struct ftl *f, struct ftl_ckpt_counters *c);
int ftl_create_opts_geom(const struct ftl_create_opts *o, struct ftl_geom *g);

/* ftl_core.c: building an engine on a nand */
int ftl_alloc(const struct ftl_geom *g, struct ftl **out);
void ftl_free(struct ftl *f);
void ftl_rebuild_lists(struct ftl *f);
int ftl_mount(struct ftl *f, const struct ftl_open_opts *o);
double ftl_now_ms(void);             /* CLOCK_MONOTONIC, milliseconds */

/* ftl_ckpt.c */
int ftl_ckpt_write(struct ftl *f, bool clean);
int ftl_ckpt_find(struct ftl *f, uint64_t *gen_out, uint32_t *flags,
		  int *bad, FILE *report);
int ftl_ckpt_mount_marker(struct ftl *f, bool *present, bool write);
uint64_t ftl_ckpt_slot_page(const struct ftl *f, uint64_t gen, uint32_t idx);
/* The next checkpoint is a base in the next slot (fsck --repair). */
void ftl_ckpt_force_base(struct ftl *f);
/* Logical page @lpn's map entry changed (ftl_map_set/unset). */
static inline void ftl_ckpt_dirty(struct ftl *f, uint32_t lpn)
{
	uint64_t bit = 1ull << (lpn % 64), old;

	if (!f->ck_dirty)
		return;
	old = __atomic_fetch_or(&f->ck_dirty[lpn / 64], bit, __ATOMIC_RELAXED);
	if (!(old & bit))
		__atomic_fetch_add(&f->ck_ndirty, 1, __ATOMIC_RELAXED);
	if (!old)       /* the word was empty: a delta must look at it */
		__atomic_fetch_or(&f->ck_dsum[lpn / 4096],
				  1ull << (lpn / 64 % 64), __ATOMIC_RELAXED);
}
/*
 * Block @b's checkpoint-table entry may have changed (f->lock held): the
 * next delta record compares only the blocks marked so, instead of the
 * whole table (which grows with the device).  Every write of f->state,
 * f->mtime, f->fdirty or the nand's erase count after mount goes through
 * a mark; FTL_CKPT_CHECK builds (the sanitizer build) compare the whole
 * table at every delta and abort on a change nobody marked.
 */
static inline void ftl_ckpt_blk_dirty(struct ftl *f, uint32_t b)
{
	uint64_t bit = 1ull << (b % 64);

	if (f->ck_bdirty && !(f->ck_bdirty[b / 64] & bit))
		f->ck_bdirty[b / 64] |= bit;
}
/* Every block's entry may have changed (mount, a forced base). */
void ftl_ckpt_blk_dirty_all(struct ftl *f);
/* Erase block @b: nand_erase, and its erase count changes, done or not. */
static inline int ftl_erase(struct ftl *f, uint32_t b)
{
	int r = nand_erase(f->nand, b);

	ftl_ckpt_blk_dirty(f, b);
	return r;
}
void ftl_ckpt_blank_page(const struct ftl_geom *g, uint32_t i, uint8_t *buf);

/* ftl_recover.c */
int ftl_roll_forward(struct ftl *f, bool full_scan);

/* ftl_fsum.c: flush summaries (g.flush_sum; f->lock held) */
/* Host page @seq (data or trim record @data) was programmed at @ppn:
 * remember it for the next summary (@crc: the data CRC). */
void ftl_fsum_note(struct ftl *f, uint8_t kind, uint32_t lpn, uint64_t ppn,
		   uint64_t seq, uint32_t crc, const void *data);
/* A checkpoint was written: drop the entries the newest checkpoint of the
 * slot before covers (f->ckpt_slot_seq). */
void ftl_fsum_covered(struct ftl *f);
/* A host flush: sync, then (after host pages) the proof of it on the
 * medium, a summary or a checkpoint, synced too. */
int ftl_fsum_sync(struct ftl *f);
/* The flush mark copies in the superblock area @area (OCT_SB_AREA bytes)
 * into f->fm (the newest valid one), f->fm_bad. */
void ftl_fmark_load(struct ftl *f, const uint8_t *area);

/* ftl_append.c: the only code that programs data pages; talks to the
 * nand only (never GC or checkpoints).  f->lock held. */
int ftl_sync(struct ftl *f);
bool ftl_stream_needs_block(const struct ftl *f, int stream);
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
/* Program copies (GC): page i of @data for logical page @lpn[i], which
 * the map points at @from[i], as runs like ftl_prog_run, with @crc[i] as
 * its data CRC (the one its source page's OOB holds, not recomputed); a
 * page's map moves (and *@counter counts it) only while it still points
 * at @from[i].  -ENOMEM: no run buffer (nothing done; page by page). */
int ftl_prog_copies(struct ftl *f, int stream, const uint32_t *lpn,
		    const uint32_t *from, const uint32_t *crc,
		    const void *data, uint32_t n, uint32_t *done,
		    uint64_t *counter);
/* Host runs outside f->lock: reserve (f->lock held; -EAGAIN when the nand
 * cannot program outside it, or @n is 0: use ftl_prog_run), program (no
 * lock, in ticket order), take
 * back (f->lock held: publishes unless already done, returns the
 * result).  @crc: the data CRC of each page, @oob: room for n OOB areas. */
int ftl_run_reserve(struct ftl *f, uint32_t lpn, uint32_t n,
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

/* ftl_balance.c: before each host page, checkpoint / GC / retire /
 * scrub as needed */
int ftl_balance(struct ftl *f);

/* ftl_badblock.c */
int ftl_bbt_load(struct ftl *f, const uint8_t *area);
void ftl_bbt_encode(struct ftl *f, uint8_t *area);
int ftl_bb_factory(struct ftl *f, double rate, uint64_t seed);
int ftl_bb_factory_check(const struct ftl_geom *g, double rate, uint64_t seed);
void ftl_bb_apply(struct ftl *f);
int ftl_bb_sync(struct ftl *f);
int ftl_bbt_reset(const char *path);
int ftl_bb_grown(struct ftl *f, uint32_t blk, const char *why);
int ftl_bb_retire(struct ftl *f);
bool ftl_bb_ro_unjustified(const struct ftl *f);
int ftl_bb_clear_ro(struct ftl *f);
void ftl_bb_stats(struct ftl *f, struct ftl_stats *st);
bool ftl_bb_is(const struct ftl *f, uint32_t blk, bool *grown);

/* ftl_read.c: the whole of logical page @lpn into @buf (ps bytes; f->lock
 * not held), checked as ftl_read() checks it: the old data a write or
 * discard covering the page in part merges with.  Unmapped: zeroes.  -EIO
 * when it does not read back as written (FTL_DAMAGED, beyond the ECC, not
 * matching its OOB record: read_crc_errors), else 0 or -errno. */
int ftl_read_whole(struct ftl *f, uint32_t lpn, uint8_t *buf);

/* ftl_scrub.c */
int ftl_read_page(struct ftl *f, uint32_t lpn, uint32_t ppn, uint32_t off,
		  void *buf, uint32_t len);
int ftl_scrub_run(struct ftl *f);

/* ftl_gc.c */
int ftl_gc_free_space(struct ftl *f);
int ftl_gc_evacuate(struct ftl *f, uint32_t blk, uint64_t *counter);
int ftl_gc_stream_ready(struct ftl *f);
int ftl_gc_prog(struct ftl *f, uint32_t lpn, const void *data, uint32_t crc);
int ftl_erase_pending(struct ftl *f, bool force_sync);
/* One step of background GC toward @target free blocks (f->lock held):
 * at most FTL_GC_STEP_PAGES copies of one victim, or one erase round.
 * 0 progress, 1 nothing (more) to gain, -EAGAIN a checkpoint first, else
 * -errno. */
int ftl_gc_bg_step(struct ftl *f, uint32_t target);
/* The thread's victim, half evacuated, is any GC's again (f->lock). */
void ftl_gc_bg_drop(struct ftl *f);

/* ftl_bggc.c: the background GC thread of a writable engine */
void ftl_bggc_marks(struct ftl *f);
int ftl_bggc_start(struct ftl *f);
void ftl_bggc_stop(struct ftl *f);
/* Writers (f->lock held): wake the thread when free space is below the
 * high watermark; returns the thread's unreported error (and clears it). */
int ftl_bggc_poke(struct ftl *f);

static inline uint32_t ftl_map_get(const struct ftl *f, uint32_t lpn)
{
	return __atomic_load_n(&f->map[lpn], __ATOMIC_ACQUIRE);
}

/* ---- seams for tests (tests/unit/ftl-*.c) ----------------------------- */

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
/* Open an image on a backing; the engine owns @b afterwards. */
int ftl_open_backing(struct nand_backing *b, const struct ftl_open_opts *o,
		     struct ftl **out);
/* The same on any backing of @size bytes (a test's own wrapper). */
int ftl_open_backing_sized(struct nand_backing *b, uint64_t size,
			   const struct ftl_open_opts *o, struct ftl **out);
/* Free without a checkpoint (as if the process died). */
void ftl_abandon(struct ftl *f);
struct nand *ftl_test_nand(struct ftl *f);

#endif
