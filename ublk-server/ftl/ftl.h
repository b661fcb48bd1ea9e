/* SPDX-License-Identifier: MIT */
/*
 * ftl — the ublk-flash engine's public face: a disk of 512-byte logical
 * sectors stored on emulated NAND flash through a log-structured
 * translation layer.  Frontends (FUSE + loop, ublk) and the CLI use only
 * this header.  Prefix ftl_, 0 / -errno returns, thread-safe: any number of
 * threads may call read/write/flush/discard concurrently.
 *
 * Block-layer contract: a volatile write cache.  ftl_flush() makes every
 * write that completed before it durable; a write with FTL_FUA is durable
 * when it returns.  Discard and write-zeroes unmap (reads return zeroes).
 */
#ifndef OCTANT_FTL_H
#define OCTANT_FTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "align.h"
#include "ftl-counters.h"
#include "nand-fault.h"

#define FTL_SECTOR 512u

enum ftl_align_mode { FTL_ALIGN_ODD = 1, FTL_ALIGN_1M = 2 };
enum ftl_gc_policy  { FTL_GC_GREEDY = 0, FTL_GC_COST_BENEFIT = 1 };
enum ftl_mount_kind { FTL_MOUNT_CLEAN = 0, FTL_MOUNT_ROLL_FORWARD, FTL_MOUNT_SCAN };
/* Why a valid page was copied (ftl_open_opts.copy_fn): the counter that
 * counts it, gc_relocations, wl_relocations, bad_relocations. */
enum ftl_copy_why { FTL_COPY_GC = 0, FTL_COPY_WL, FTL_COPY_BAD };

#define FTL_FUA 0x1u   /* ftl_write flag: durable on return */
#define FTL_ERASE_HIST 16u   /* ftl_stats: erase-count histogram buckets */
#define FTL_WEAR_MAP 2048u   /* ftl_stats: wear-map cells at most */
#define FTL_PE_DEFAULT 3000u /* rated endurance (erases per block) of
                                images that record none */
#define FTL_PE_MAX 10000000u /* ... at most */

struct ftl;
struct nand_backing;

/* Geometry and mode chosen at create time. Zero fields take defaults. */
struct ftl_create_opts {
	uint64_t size;              /* exported logical size, bytes (required) */
	enum ftl_align_mode align;  /* required */
	uint32_t page_size;         /* 4096 (default), 8192, 16384 */
	uint32_t pages_per_block;   /* 64 default */
	uint32_t oob_size;          /* per-page OOB bytes, default 64 */
	uint32_t op_permille;       /* over-provisioning, default 70 (7 %) */
	bool force;                 /* overwrite an existing signature */
	double bad_block_rate;      /* factory bad blocks: each data block is
	                               bad with this probability (0 none) */
	uint64_t bad_block_seed;    /* ... drawn from this seed */
	bool integrity;             /* OCT_SB_F_PI: per-sector T10-DIF guards
	                               in the OOB (needs the OOB room) */
	uint32_t pe_cycles;         /* rated endurance: erases a block takes
	                               (percentage used, ftl_health), up to
	                               FTL_PE_MAX; 0: FTL_PE_DEFAULT */
	uint64_t max_size;          /* bytes the image may grow to in place
	                               (ftl_grow): its checkpoint slots are
	                               sized for it; 0 or <= size: size */
};

struct ftl_open_opts {
	bool scan;                  /* ignore checkpoints, rebuild from OOB */
	bool readonly;              /* never write to the medium */
	enum ftl_gc_policy gc;      /* victim selection */
	uint32_t wl_threshold;      /* static WL: max-min erase count, default 128 */
	bool unshifted;             /* expose the medium from byte 0 (no odd
	                               shift, size rounded up to whole pages,
	                               alignment_offset 0): for a dm-linear on
	                               top that carries the 512-byte shift */
	const struct nand_fault_spec *faults; /* NULL: a perfect medium;
	                               else the fault model (nand-fault.h)
	                               for the data blocks of this open */
	uint32_t gc_batch;          /* 0: GC victims per forced sync adapt to
	                               the measured sync time (1, 4 or 16);
	                               else fixed at this (up to the spare
	                               area's limit): deterministic tests */
	bool accept_loss;           /* open even when recovery found flushed
	                               pages lost to media damage whose
	                               logical pages are unknown (they may read
	                               an older version): fsck --repair; else
	                               such an open fails with -EUCLEAN */
	bool streams;               /* placement streams: hot and cold host
	                               data (by measured update temperature)
	                               in two open blocks, hot GC copies in
	                               a second GC one, on devices with the
	                               spare blocks for it; false (default):
	                               one host and one GC open block
	                               (docs/engine.md, Placement streams:
	                               not the default yet: on images
	                               without OCT_SB_F_CKPT_OPEN two open
	                               blocks are closed at each checkpoint.
	                               GC passes over blocks being emptied
	                               now with or without streams,
	                               ftl_dying.c) */
	bool bg_gc;                 /* read-write opens: collect garbage in a
	                               background thread between two free-block
	                               watermarks, writers only below the low
	                               one; false: only inline, in the writer
	                               (deterministic: unit tests) */
	int lock_fd;                /* read-write opens of a path: > 0 a
	                               descriptor of the same file on which the
	                               caller already holds the image lock
	                               (flock LOCK_EX, e.g. taken before a
	                               fork): the lock is taken on it (a no-op
	                               when held), never dropped in between;
	                               the caller keeps it open until
	                               ftl_close.  0: the engine locks its own
	                               descriptor.  Not the same file: -EINVAL */
	/* A test and bench hook (NULL: none): called once for every valid
	 * page copied and counted in stats (gc_relocations, wl_relocations,
	 * bad_relocations: @why), with its logical page (byte offset / the
	 * page size) and @copy_ctx, right after the map points at the copy;
	 * the sum over calls is those counters' increase.  It runs in the
	 * thread that copies (a writer's inline GC, the GC thread, close)
	 * with the engine's lock held, so calls never overlap: it must not
	 * call into the engine, nor block (count and return). */
	void (*copy_fn)(void *copy_ctx, uint64_t lpn, enum ftl_copy_why why);
	void *copy_ctx;
};

/* Counters; all monotonic since create unless noted. */
struct ftl_stats {
	/* One uint64_t per entry of ftl-counters.h (same names as the JSON
	 * keys), e.g. host_read_sectors ... host_discard_sectors;
	 * page_reads, page_programs, block_erases; rmw_subpage (page RMWs:
	 * write covers part of one page), rmw_straddle (page RMWs caused by
	 * a write straddling pages); gc_relocations and wl_relocations
	 * (valid pages copied by GC / static WL); ckpt_writes;
	 * nand_violations (program-twice etc.: always 0 unless a bug). */
#define FTL_X_FIELD(name, src) uint64_t name;
	FTL_COUNTERS(FTL_X_FIELD)
	FTL_MOUNT_COUNTERS(FTL_X_FIELD)
	FTL_LIFE_COUNTERS(FTL_X_FIELD)
#undef FTL_X_FIELD
	uint32_t erase_min, erase_max;
	double   erase_mean, erase_stddev;
	uint64_t mapped_pages, free_blocks;
	enum ftl_mount_kind last_mount;
	double   last_mount_ms;     /* time the last open took */
	double   write_amplification; /* flash bytes programmed / host bytes written */
	/* added by the engine (also JSON keys) */
	uint64_t last_mount_time;   /* unix seconds of the last read-write open */
	uint64_t ckpt_lost;         /* this open: 1 if it found a newer
	                               checkpoint lost (its slot gone, pages
	                               numbered past the one used) and rolled
	                               forward over everything since; fsck
	                               reports it; 0 otherwise */
	enum ftl_align_mode align;  /* JSON: "odd" / "1m" */
	bool     pi;                /* OCT_SB_F_PI; JSON integrity: "t10dif" / "none" */
	bool     streams;           /* placement streams in use on this mount
	                               (ftl_open_opts.streams and the spare
	                               blocks for them); JSON streams */
	uint32_t page_size;         /* flash page, bytes */
	/* bad blocks (from the bad-block table) */
	uint64_t bad_blocks_factory, bad_blocks_grown;
	uint64_t bad_block_limit;   /* bad blocks the spare area absorbs */
	bool     read_only;         /* spares ran out: writes fail EROFS */
	/* flash programs by origin (derived, since create): programs_gc =
	 * gc_relocations + wl_relocations (the GC stream), programs_ckpt =
	 * ckpt_bytes / page size + fsum_pages (the checkpoint and flush
	 * summary pages programmed), programs_host = the
	 * rest (host stream: host data, RMW rewrites, scrub and bad-block
	 * moves) */
	uint64_t programs_host, programs_gc, programs_ckpt;
	/* erase counts of the data blocks: a histogram of FTL_ERASE_HIST
	 * buckets, bucket i counting the blocks with erase_hist_base +
	 * i * erase_hist_width <= ec < ... + erase_hist_width; and a wear
	 * map, block order, wear_map[i] = the highest erase count of data
	 * blocks i * wear_map_group ... (i + 1) * wear_map_group - 1
	 * (wear_map_len cells; group 1 up to FTL_WEAR_MAP data blocks) */
	uint32_t erase_hist_base, erase_hist_width;
	uint32_t erase_hist[FTL_ERASE_HIST];
	uint32_t wear_map_group, wear_map_len;
	uint32_t wear_map[FTL_WEAR_MAP];
};

/* Create a fresh image at @path (file created or a block device used).
 * -EEXIST if it holds an octant image or another signature and !force;
 * -EINVAL bad geometry (see ftl_create_max_size for the size limit);
 * -EISDIR / -ENOTBLK @path is a directory / not a file or block device;
 * -ENOSPC a block device smaller than the image. */
int ftl_create(const char *path, const struct ftl_create_opts *o);

/* The largest size (bytes) an image with @o's other fields can have, 0 if
 * they are out of range.  @o->size is ignored. */
uint64_t ftl_create_max_size(const struct ftl_create_opts *o);

/* Open an image. -EBADMSG corrupt (or not an octant image at all),
 * -EPROTONOSUPPORT other version, -EINVAL wrong size/geometry, -EBUSY
 * already opened read-write elsewhere, -EISDIR / -ENOTBLK @path is a
 * directory / neither a regular file nor a block device. */
int ftl_open(const char *path, const struct ftl_open_opts *o, struct ftl **out);

/* Stop the background GC thread, write a clean checkpoint (unless
 * read-only) and free everything.  Also returns an error the GC thread hit
 * that no write has returned yet. */
int ftl_close(struct ftl *f);

uint64_t ftl_size(const struct ftl *f);                 /* bytes */
/* How this open found the image: FTL_MOUNT_CLEAN when its last writer
 * closed it cleanly (a clean checkpoint and no mount marker after it: a
 * read-only open tells that without writing), else the roll-forward (or
 * the scan) it took. */
enum ftl_mount_kind ftl_mount_kind(const struct ftl *f);
void ftl_topology(const struct ftl *f, struct align_topology *t);

/* @off and @len are multiples of FTL_SECTOR. */
int ftl_read(struct ftl *f, void *buf, uint64_t off, size_t len);
int ftl_write(struct ftl *f, const void *buf, uint64_t off, size_t len,
	      unsigned flags);
int ftl_flush(struct ftl *f);
/*
 * ftl_write, only when it cannot wait: for a caller that must not block
 * (the ublk ring thread, which answers the ring; frontend/ublk-queue.c).
 * Served (0, or ftl_write's -EINVAL / -EROFS / -EIO) when the write is
 * whole pages of the medium, at most FTL_WRITE_TRY_PAGES of them, without
 * FTL_FUA, its range locks and the engine lock are free at once, and the
 * host stream's open block takes all of it with nothing due first (no
 * checkpoint, GC, pacing behind the GC thread, new block, move off a
 * retired block, scrub, nor host run of another writer still being
 * programmed).  Else -EAGAIN with
 * nothing written: call ftl_write (which may wait for all of those).
 * Once served it is what ftl_write would have done: on the map for every
 * reader and covered by the next ftl_flush.  Counted in stats as
 * write_try_served / write_try_again.  (A program failure that leaves the
 * stream without a block also gives -EAGAIN, some pages perhaps already
 * written: ftl_write writes them all again, the same data.)
 */
#define FTL_WRITE_TRY_PAGES 7u
int ftl_write_try(struct ftl *f, const void *buf, uint64_t off, size_t len,
		  unsigned flags);
int ftl_discard(struct ftl *f, uint64_t off, uint64_t len);
int ftl_write_zeroes(struct ftl *f, uint64_t off, uint64_t len);

/*
 * Protection information (images made with create --integrity, OCT_SB_F_PI;
 * ftl_pi.c, docs/engine.md "Protection information"): T10-DIF type 1
 * tuples, 8 bytes per 512-byte sector, big-endian: CRC16 guard of the
 * sector (crc_t10dif), app tag, ref tag = the low 32 bits of the sector.
 */
#define FTL_PI_TUPLE 8u
/* The CRC16 T10-DIF guard of @len bytes. */
uint16_t ftl_pi_crc16(const void *buf, size_t len);
/* Fill @pi with the tuples of the @n sectors at @buf, the first being
 * sector @sector (app tag 0). */
void ftl_pi_generate(const void *buf, void *pi, uint64_t sector, size_t n);
/* Check @n tuples @pi against the sectors at @buf (guard; ref tag against
 * @sector + i; the app tag is not checked): the index of the first that
 * does not match, or -1. */
long ftl_pi_check(const void *buf, const void *pi, uint64_t sector, size_t n);
/* Was the image made with --integrity (OCT_SB_F_PI)? */
bool ftl_has_pi(const struct ftl *f);
/* ftl_write after checking the kernel's tuples @pi (len / 512 of them):
 * -EILSEQ, nothing written, when one does not match its sector. */
int ftl_write_pi(struct ftl *f, const void *buf, const void *pi,
		 uint64_t off, size_t len, unsigned flags);
/* ftl_read with the tuples of what it read in @pi.  A page that fails its
 * CRC (or has a codeword the ECC cannot correct) is served when its PI
 * record checks out: each sector with the guard stored when it was
 * programmed, so exactly the damaged sectors carry a guard that does not
 * match them (a sector in an uncorrectable codeword whose damage happens
 * to match gets the complement: never good-looking), and the caller's
 * verifier (the kernel's integrity layer) reports exactly those; counted
 * in media_errors.  -EIO where the record does not check out either (no
 * sector can be told good), -EOPNOTSUPP on an image without PI. */
int ftl_read_pi(struct ftl *f, void *buf, void *pi, uint64_t off, size_t len);

void ftl_stats_get(struct ftl *f, struct ftl_stats *st);

/* Writes fail with EROFS: opened read-only, or the spare blocks are used
 * up (the bad-block table's read-only state, ftl_stats.read_only). */
bool ftl_read_only(struct ftl *f);

/* Call @fn(@ctx) once when the spare blocks run out while the engine is
 * open (it turns read-only: writes fail with EROFS), so a frontend can
 * tell the kernel.  @fn runs in the thread that hit it with the engine's
 * lock held: it must only signal (write an eventfd, set a flag).  Returns
 * true, and keeps nothing, when they ran out already (at open); @fn NULL
 * forgets the hook. */
bool ftl_on_read_only(struct ftl *f, void (*fn)(void *ctx), void *ctx);
/* Print stats as JSON (one object) or a readable table. */
void ftl_stats_print(const struct ftl_stats *st, FILE *out, bool json);

/* A drive's health log: NVMe's SMART / Health Information log page (the
 * fields it has a meaning for here, same names) and the flash behind it,
 * all since create (ublk-flash(8) HEALTH says where it differs). */
#define FTL_SPARE_THRESHOLD 10u      /* available_spare_threshold, % */
#define FTL_CW_SPARE     0x01u       /* critical_warning: available spare
                                        below the threshold */
#define FTL_CW_DEGRADED  0x04u       /* ... media errors: media_errors or
                                        damaged_pages not 0 */
#define FTL_CW_READ_ONLY 0x08u       /* ... spares used up: read-only */
struct ftl_health {
	uint32_t critical_warning;   /* FTL_CW_* bits */
	uint32_t available_spare;    /* % of the spare blocks left, 0..100 */
	uint32_t available_spare_threshold; /* FTL_SPARE_THRESHOLD */
	uint32_t percentage_used;    /* 100 x mean data-block erase count /
	                                pe_cycles, rounded down, may pass 100,
	                                at most 255 */
	uint64_t data_units_read;    /* host 512-byte sectors / 1000, rounded
	                                up */
	uint64_t data_units_written;
	uint64_t host_read_commands, host_write_commands;
	uint64_t power_cycles;       /* read-write opens */
	uint64_t power_on_hours;     /* power_on_seconds / 3600, rounded down */
	uint64_t power_on_seconds;   /* served read-write */
	uint64_t unsafe_shutdowns;   /* opens that rolled forward */
	uint64_t media_errors;       /* requests failed with EIO */
	/* the flash behind it */
	uint64_t host_read_sectors, host_write_sectors;
	uint32_t page_size;
	uint64_t page_reads, page_programs, block_erases;
	double   erase_mean;         /* data blocks */
	uint32_t erase_max;
	uint32_t pe_cycles;          /* rated endurance (ftl_create_opts) */
	uint64_t bad_blocks_factory, bad_blocks_grown;
	uint64_t bad_block_limit;    /* bad blocks the spare area absorbs */
	uint64_t spare_blocks;       /* ... of which left */
	uint64_t damaged_pages;      /* logical pages mapped now whose data
	                                was lost to media damage (EIO) */
	bool     read_only;          /* spares used up */
};
void ftl_health_get(struct ftl *f, struct ftl_health *h);
/* Print @h as one JSON object (the field names) or as a table with the
 * labels of smartctl -a. */
void ftl_health_print(const struct ftl_health *h, FILE *out, bool json);

/* Grow the image at @path, which nobody holds (the engine's lock), to
 * @size logical bytes (a multiple of FTL_SECTOR, the same meaning as
 * ftl_create_opts.size in both align modes): new erase blocks are added
 * after the last one, free with erase count 0, and a file is extended (a
 * block device must be large enough).  Power-cut safe: cut at any write,
 * the image opens at the old size or the new one, every flushed byte
 * intact (ftl_grow.c has the order).  @size equal: 0, nothing written.
 * -ERANGE @size smaller (shrinking is not supported); -EFBIG the
 * checkpoint slots have no room for @size (*@max, if not NULL, gets the
 * largest size they hold: the image's create --max-size); -EINVAL @size
 * not a multiple of FTL_SECTOR or out of range; -EOPNOTSUPP an image of
 * layout 1.0 (OOB area at the end); -ENOSPC a block device smaller than
 * the grown image; -EBUSY held; else as ftl_open. */
int ftl_grow(const char *path, uint64_t size, uint64_t *max);

/* ftl_grow through @lock_fd, a descriptor of @path on which the caller
 * holds the image lock (ftl_lock_dup of an engine it then closed: an
 * online resize, the lock never dropped).  -EINVAL another file; else as
 * ftl_grow. */
int ftl_grow_locked(const char *path, int lock_fd, uint64_t size,
		    uint64_t *max);

/* Could the image at @path (served or not: its superblock is read, no
 * lock) grow to @size?  1 it has that size; 0 yes (a block device may
 * still be too small: -ENOSPC from the grow); else as ftl_grow, nothing
 * written. */
int ftl_grow_check(const char *path, uint64_t size, uint64_t *max);

/* A new descriptor (close-on-exec) sharing the image lock of the
 * read-write engine @f (its open file description): the lock outlives
 * ftl_close while it is open; give it to ftl_grow_locked and as the next
 * open's lock_fd.  -EBADF read-only or no file (a remote medium). */
int ftl_lock_dup(const struct ftl *f);

/* ---- offline inspection (no mount; used by info / fsck / libalign) ---- */

/* What the superblock says; no mount, never writes. */
struct ftl_info {
	enum ftl_align_mode align;
	uint32_t page_size, pages_per_block, oob_size, nblocks, op_permille;
	uint64_t logical_size;     /* bytes exported */
	uint64_t flash_size;       /* bytes of emulated flash */
	uint64_t image_size;       /* bytes the backing file/device must have */
	uint8_t  uuid[16];
	struct align_topology topo; /* what to report to the kernel */
	bool oob_inline;           /* medium layout 1.1 or later */
	bool erase_stamps;         /* layout 1.2: OCT_SB_F_OOB_STAMP */
	bool ckpt_delta;           /* OCT_SB_F_CKPT_DELTA */
	uint32_t pe_cycles;        /* rated endurance, erases per block */
	bool flush_sum;            /* OCT_SB_F_FLUSH_SUM: flush summaries */
	bool pi;                   /* OCT_SB_F_PI: T10-DIF type 1 guards */
};
int ftl_info_read(const char *path, struct ftl_info *info);
/* ftl_info_read of the image on backing @b of exactly @size bytes (a
 * set's part through its window); the same errors. */
int ftl_info_read_backing(struct nand_backing *b, uint64_t size,
			  struct ftl_info *info);
/* @image (NULL: left out) is the path shown as "image". */
void ftl_info_print(const struct ftl_info *info, const char *image, FILE *out,
		    bool json);

/* Check an image: superblocks, checkpoints, map vs OOB, CRCs, NAND-rule
 * invariants.  Never writes unless @repair.  Findings go to @out (text or
 * one JSON object).  Returns 0 clean, 1 problems found and repaired,
 * 4 problems left, or -errno if the check could not run. */
int ftl_fsck(const char *path, bool repair, FILE *out, bool json);
/* ftl_fsck of the engine image in bytes [@off, @off + @len) of backing @b
 * (a set's part; not taken): its size is @len exactly, and nothing is
 * locked (the caller holds the image's lock when @repair). */
int ftl_fsck_backing(struct nand_backing *b, uint64_t off, uint64_t len,
		     bool repair, FILE *out, bool json);

#endif /* OCTANT_FTL_H */
