/* SPDX-License-Identifier: MIT */
/*
 * On-medium structures of the ublk-flash engine besides the superblock
 * (common/oct-format.h): per-page OOB, trim records, checkpoints.  All
 * little-endian (the engine only builds on little-endian hosts), each with
 * magic, version and crc32c.  Described in docs/image-format.md.
 */
#ifndef OCTANT_FTL_FORMAT_H
#define OCTANT_FTL_FORMAT_H

#include <stdint.h>

#include "ftl-counters.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ublk-flash on-medium format is little-endian"
#endif

#define FTL_FMT_VERSION 1u

/* ---- OOB: the first 32 bytes of every page's out-of-band area ---------- */
#define FTL_OOB_MAGIC 0x3142304fu   /* "O0B1" */
enum ftl_oob_kind {
	FTL_OOB_DATA = 1,    /* lpn = logical page */
	FTL_OOB_TRIM = 2,    /* data = struct ftl_trim; lpn = range count */
	FTL_OOB_CKPT = 3,    /* lpn = page index inside the checkpoint, seq = gen */
	FTL_OOB_MOUNT = 4,   /* mount marker after a clean checkpoint, seq = gen */
	FTL_OOB_FSUM = 5,    /* flush summary (struct ftl_fsum); lpn = entries */
};

struct ftl_oob {
	uint32_t magic;
	uint8_t  kind;
	uint8_t  version;     /* FTL_FMT_VERSION */
	uint16_t stream;      /* which open block wrote it (0 host, 1 gc, 2 ckpt) */
	uint32_t lpn;
	uint32_t data_crc;    /* crc32c of the page's data */
	uint64_t seq;         /* global write sequence number (ckpt: generation) */
	uint32_t ec;          /* erase count of the block when programmed */
	uint32_t crc;         /* crc32c of these 32 bytes with crc = 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_oob) == 32, "oob size");

/* ---- flush record: OOB bytes 32..47 of data and trim pages ---------------
 * The newest sequence number known durable (every page up to it had been
 * flushed) when this page was programmed.  Recovery takes the highest one
 * it finds: a page at or below it whose data fails its CRC was flushed, so
 * it is media damage (reported, read as EIO), never a torn write.  Written
 * when oob_size >= FTL_OOB_FLUSH_MIN (create requires it); images without
 * it recover as before (every CRC failure after the checkpoint is torn).
 */
#define FTL_OOB_FLUSH_MAGIC   0x4c46u   /* "FL" */
#define FTL_OOB_FLUSH_VERSION 1u
#define FTL_OOB_FLUSH_VERSION_AT 2u     /* images with OCT_SB_F_FLUSH_SUM:
					   the crc also covers the flash
					   page number (u32) after the seed,
					   and every data, trim and summary
					   page carries one */
struct ftl_oob_flush {
	uint64_t flushed;     /* every page with seq <= this was durable */
	uint16_t magic;       /* FTL_OOB_FLUSH_MAGIC */
	uint8_t  version;     /* FTL_OOB_FLUSH_VERSION */
	uint8_t  pad;         /* 0 */
	uint32_t crc;         /* crc32c of these 16 bytes with crc = 0,
	                         seeded with the page's ftl_oob crc */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_oob_flush) == 16, "oob flush size");
#define FTL_OOB_FLUSH_MIN 48u     /* oob_size that holds both records */

/* ---- PI record: OOB bytes 48.. of data pages on OCT_SB_F_PI images ------
 * The T10-DIF guard (CRC16, polynomial 0x8bb7, the kernel's
 * crc_t10dif) of each 512-byte sector of the page, computed from the data
 * the page is programmed with (host writes are checked against the
 * kernel's tuples first, ftl_write_pi).  The tuples a read hands out are
 * built from it (ref tag: the sector; app tag 0).  docs/engine.md
 * ("Protection information").  The record sits between the flush record
 * and the erase stamp: oob_size >= 48 + FTL_OOB_PI_SIZE(ps) (+ 16 with
 * stamps), which create --integrity sees to.
 */
#define FTL_OOB_PI_AT      48u
#define FTL_OOB_PI_MAGIC   0x4950u      /* "PI" */
#define FTL_OOB_PI_VERSION 1u
struct ftl_oob_pi {
	uint16_t magic;       /* FTL_OOB_PI_MAGIC */
	uint8_t  version;     /* FTL_OOB_PI_VERSION */
	uint8_t  nsect;       /* guards that follow: page size / 512 */
	uint32_t crc;         /* crc32c of this header (crc = 0) and the
	                         guards, seeded with the page's ftl_oob crc */
	/* uint16_t guard[nsect], big-endian as on the wire */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_oob_pi) == 8, "oob pi size");
#define FTL_OOB_PI_SIZE(ps) (sizeof(struct ftl_oob_pi) + 2u * ((ps) / 512u))

/* ---- flush summary: a page a host flush programs (OCT_SB_F_FLUSH_SUM) ----
 * After the sync of a host flush (or FUA write) that followed host pages,
 * the engine programs a summary page (more if needed) into the GC
 * stream's open block, never a block holding the pages it lists: this
 * header, then one entry per host page (data page, or range of a trim
 * record) programmed since the previous summary or checkpoint.  Its OOB
 * (kind FTL_OOB_FSUM, stream 1, lpn = entries) carries the flush record of
 * that sync: the flush is on the medium even when nothing is programmed
 * after it.  Its entries let recovery tell a flushed page that was lost
 * (its block erased, its OOB record damaged, a page programmed over it)
 * from one never written: a block holding a page newer than the last
 * checkpoint is erased only after a newer checkpoint, so a listed page
 * goes missing only through damage.  docs/image-format.md.
 */
#define FTL_FSUM_MAGIC   "OCTFSUM1"
#define FTL_FSUM_VERSION 1u
struct ftl_fsum_ent {
	uint64_t seq;         /* the page's sequence number */
	uint32_t ppn;         /* where it was programmed */
	uint32_t lpn;         /* data: logical page; trim: first one */
	uint32_t aux;         /* data: its data crc; trim: pages trimmed */
	uint8_t  kind;        /* FTL_OOB_DATA or FTL_OOB_TRIM */
	uint8_t  pad[3];      /* 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_fsum_ent) == 24, "fsum entry size");

struct ftl_fsum {
	char     magic[8];            /* FTL_FSUM_MAGIC */
	uint32_t version;             /* FTL_FSUM_VERSION */
	uint32_t hdr_size;            /* sizeof(struct ftl_fsum) */
	uint32_t count;               /* entries that follow the header */
	uint32_t crc;                 /* crc32c of header (crc = 0) and the
	                                 entries */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_fsum) == 24, "fsum header size");
/* entries one summary page holds */
#define FTL_FSUM_PER_PAGE(ps) \
	(((ps) - sizeof(struct ftl_fsum)) / sizeof(struct ftl_fsum_ent))

/* ---- flush mark: the newest flush, outside the flash (OCT_SB_F_FLUSH_SUM)
 * Two copies in the superblock area (bytes FTL_FMARK_OFF0 and
 * FTL_FMARK_OFF1, after each superblock copy), written in turn (gen
 * mod 2) with each flush summary, before the sync that ends the flush.
 * A second witness of that flush, in a place apart from the flash: how far
 * it went, and how many host pages had been programmed since the
 * checkpoint it counts from.  When damage took a flush summary too, the
 * medium holding fewer of those pages than counted tells recovery that
 * flushed pages were lost whose logical pages nobody knows: the open
 * refuses (EUCLEAN) rather than serve older data, fsck reports it.  The
 * valid copy (magic, version, crc, uuid) with the highest gen is used; a
 * copy that does not check out is ignored (a torn update falls back).
 */
#define FTL_FMARK_MAGIC   "OCTFMRK1"
#define FTL_FMARK_VERSION 1u
#define FTL_FMARK_OFF0    512u      /* after superblock copy 0 */
#define FTL_FMARK_OFF1    4608u     /* after superblock copy 1 */
#define FTL_FMARK_BYTES   512u      /* written whole (zero padded) */
struct ftl_fmark {
	char     magic[8];            /* FTL_FMARK_MAGIC */
	uint32_t version;             /* FTL_FMARK_VERSION */
	uint32_t hdr_size;            /* sizeof(struct ftl_fmark) */
	uint64_t gen;                 /* update count, newest copy wins */
	uint8_t  uuid[16];            /* the superblock's */
	uint64_t ckpt_gen;            /* the checkpoint it counts from */
	uint64_t ckpt_seq;            /* ... and its seq */
	uint64_t flushed;             /* every page numbered <= this was
	                                 durable */
	uint64_t host_pages;          /* host pages (data, trim records)
	                                 numbered in (ckpt_seq, flushed] */
	uint64_t sum_seq;             /* the flush summary written with it */
	uint32_t sum_ppn;             /* ... and where */
	uint32_t crc;                 /* crc32c of these bytes with crc = 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_fmark) == 88, "fmark size");

/* ---- trim record: a page that unmaps logical page ranges ---------------- */
#define FTL_TRIM_MAGIC 0x4d495254u  /* "TRIM" */
struct ftl_trim_range {
	uint32_t lpn, count;
};
struct ftl_trim {
	uint32_t magic;
	uint32_t n;           /* ranges that follow */
	struct ftl_trim_range r[];
};

/* ---- checkpoint ----------------------------------------------------------
 * A checkpoint fills the first pages of one of FTL_CKPT_SLOTS slots (each
 * slot_blocks erase blocks at the start of the flash): page 0 the header,
 * then the payload (map: one uint32 per logical page; then one
 * struct ftl_ckpt_blk per erase block), then one spare page for the mount
 * marker.  Slots are used in turn (generation modulo FTL_CKPT_SLOTS).
 * From version 3 a payload page that equals the payload of an empty engine
 * (map bytes 0xff, block-table and tail bytes 0: ftl_ckpt_blank_page) is
 * not programmed; its OOB stays blank (all zero, as erased) and a reader
 * takes it as that content.  payload_crc still covers every page's
 * content, so a checkpoint torn before a page that was not blank fails it.
 * A checkpoint then costs the pages the data written needs, not the
 * device size, on sparse devices.
 */
#define FTL_CKPT_MAGIC "OCTCKPT1"
#define FTL_CKPT_VERSION 6u       /* 6: every open block (xopen, images
                                     with OCT_SB_F_CKPT_OPEN only; the
                                     others go on writing 5); 5: the
                                     lifetime counters (cnt grows
                                     by FTL_CKPT_LIFE_BYTES; every image
                                     writes it, the superblock's
                                     OCT_SB_F_CKPT_DELTA alone says whether
                                     delta records follow); 4: the base of
                                     a delta chain (images with
                                     OCT_SB_F_CKPT_DELTA only); 3: blank
                                     payload pages (see below) are not
                                     programmed; 2: the map may hold
                                     FTL_DAMAGED; 1 to 5 are read too */
#define FTL_CKPT_VERSION_LIFE 5u  /* first with FTL_LIFE_COUNTERS */
#define FTL_CKPT_VERSION_OPEN 6u  /* first with xopen */
#define FTL_CKPT_SLOTS 4u
#define FTL_CKPT_CLEAN 0x1u       /* written by a clean close */
#define FTL_NSTREAMS   2u         /* open blocks: host writes, GC/WL copies */
#define FTL_CKPT_XOPEN 2u         /* more open blocks (version 6) */
#define FTL_SEQ_MAX    (1ull << 48) /* sequence numbers and generations stay
                                     below (a checkpoint above is damaged) */
#define FTL_UNMAPPED   0xffffffffu
#define FTL_DAMAGED    0xfffffffeu /* map: flushed data lost to media damage
                                     (reads fail with EIO until rewritten) */
#define FTL_NONE       0xffffffffu

#define FTL_BLKF_MAYBE_DIRTY 0x1  /* free, but may hold pages left by a crash */

enum ftl_blk_state {
	FTL_BLK_FREE = 0,     /* erased, allocatable */
	FTL_BLK_OPEN = 1,     /* being written by a stream */
	FTL_BLK_FULL = 2,     /* written, holds valid and invalid pages */
	FTL_BLK_PENDING = 3,  /* GC victim, no valid pages, awaiting erase */
	FTL_BLK_CKPT = 4,     /* part of the checkpoint area */
	FTL_BLK_BAD = 5,      /* retired (in the bad-block table); never
	                         erased, its still-mapped pages stay readable */
};

struct ftl_ckpt_blk {
	uint32_t ec;          /* erase count */
	uint8_t  state;       /* enum ftl_blk_state */
	uint8_t  flags;       /* FTL_BLKF_MAYBE_DIRTY */
	uint8_t  pad[2];
	uint64_t mtime;       /* seq of its last program (GC age) */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_ckpt_blk) == 16, "ckpt blk size");

/* An open block beyond open[] (the host and GC streams' own): checkpoint
 * version 6 and delta version 3 (images with OCT_SB_F_CKPT_OPEN).  Entry
 * i is frontier FTL_NSTREAMS + i of the engine (2: cold host data, 3: GC
 * copies of hot data; docs/engine.md, Placement streams): @front says so,
 * @stream is the OOB stream its pages carry (0 host, 1 GC), blk FTL_NONE
 * when none is open.  Before version 6 the engine closed these blocks
 * before each checkpoint; a header older than xopen is
 * FTL_CKPT_XOPEN_BYTES shorter (it reads as no block open). */
struct ftl_ckpt_open {
	uint32_t blk, wp;             /* block, pages programmed in it */
	uint8_t  front;               /* FTL_NSTREAMS + its index */
	uint8_t  stream;              /* its pages' OOB stream */
	uint8_t  pad[2];              /* 0 */
} __attribute__((packed));
#define FTL_CKPT_XOPEN_BYTES (FTL_CKPT_XOPEN * 12u)
_Static_assert(sizeof(struct ftl_ckpt_open) * FTL_CKPT_XOPEN ==
	       FTL_CKPT_XOPEN_BYTES, "ckpt open entry");

/* Counters carried from one mount to the next.  The last member of both
 * headers, right before their crc: a header older than the lifetime
 * counters (checkpoint version < 5, delta version 1) is FTL_CKPT_LIFE_BYTES
 * shorter and reads them as 0. */
struct ftl_ckpt_counters {
#define FTL_X_FIELD(name, src) uint64_t name;
	FTL_COUNTERS(FTL_X_FIELD)      /* ftl-counters.h, 14 x uint64 in v1 */
	uint64_t last_mount_time;     /* unix seconds of the last rw mount */
	uint32_t last_mount;          /* enum ftl_mount_kind */
	uint32_t last_mount_us;       /* how long it took */
	FTL_LIFE_COUNTERS(FTL_X_FIELD) /* from version 5 / delta version 2 */
#undef FTL_X_FIELD
} __attribute__((packed));
#define FTL_CKPT_LIFE_BYTES (6u * 8)
_Static_assert(sizeof(struct ftl_ckpt_counters) == 14 * 8 + 16 +
	       FTL_CKPT_LIFE_BYTES, "v1 checkpoint counters + lifetime");

struct ftl_ckpt_hdr {
	char     magic[8];            /* FTL_CKPT_MAGIC */
	uint32_t version;             /* FTL_CKPT_VERSION */
	uint32_t hdr_size;            /* sizeof(struct ftl_ckpt_hdr), less
	                                 FTL_CKPT_XOPEN_BYTES in v5, and
	                                 FTL_CKPT_LIFE_BYTES more before */
	uint64_t gen;                 /* generation, 1 = written by create */
	uint64_t seq;                 /* covers every page with seq <= this */
	uint32_t flags;               /* FTL_CKPT_CLEAN */
	uint32_t payload_pages;
	uint32_t nlpn, nblocks;       /* must match the superblock */
	uint32_t payload_crc;         /* crc32c of the payload bytes */
	uint8_t  uuid[16];            /* the superblock's */
	struct { uint32_t blk, wp; } open[FTL_NSTREAMS];
	uint64_t write_time;          /* unix seconds */
	struct ftl_ckpt_counters cnt;
	struct ftl_ckpt_open xopen[FTL_CKPT_XOPEN]; /* from version 6 */
	uint32_t crc;                 /* crc32c of the header with crc = 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_ckpt_hdr) == 296, "checkpoint header v6");

/* ---- checkpoint deltas (images with OCT_SB_F_CKPT_DELTA) -----------------
 * A slot is sized for its base (header, payload, marker page) plus twice
 * the payload again (FTL_CKPT_DELTA_K) for delta records.  The base (a
 * version 4 checkpoint) is followed at slot page payload_pages + 2 by a
 * chain of records, each: its data pages (OOB kind FTL_OOB_CKPT, stream
 * FTL_CKPT_STREAM_DATA, lpn = slot page, seq = the base's generation), then
 * its header page (stream FTL_CKPT_STREAM_DHDR), then one page left for
 * the mount marker; the next record starts after it.  A data page holds
 * runs (struct ftl_ckpt_run and its entries, never across pages) up to a
 * run of kind 0 or the end of the page: map entries (uint32; single ones
 * as {lpn, entry} pairs) and block-table entries (struct ftl_ckpt_blk)
 * that changed since the record before.  The header comes last, so a record torn by a crash has none and
 * is never used.  A record is applied only whole, in order; the chain ends
 * at the first page that does not check out.
 */
#define FTL_CKPT_DELTA_MAGIC   "OCTCKDL1"
#define FTL_CKPT_DELTA_VERSION 3u /* 3: xopen (after a version 6 base);
                                     2: the lifetime counters (after a
                                     version 5 base); 1 after a version 4
                                     base (both read and written after
                                     such a base) */
#define FTL_CKPT_DELTA_K       2u     /* delta room = K x payload pages */
#define FTL_CKPT_STREAM_BASE   2u     /* OOB stream of base pages */
#define FTL_CKPT_STREAM_DATA   3u     /* ... of a delta's data pages */
#define FTL_CKPT_STREAM_DHDR   4u     /* ... of a delta's header page */
enum ftl_ckpt_run_kind {
	FTL_RUN_END = 0,              /* rest of the page unused */
	FTL_RUN_MAP = 1,              /* count uint32 map entries from start */
	FTL_RUN_BLK = 2,              /* count struct ftl_ckpt_blk from start */
	FTL_RUN_PAIRS = 3,            /* start 0; count {uint32 lpn, uint32
	                                 map entry} pairs (single entries) */
};
struct ftl_ckpt_run {
	uint32_t kind, start, count;
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_ckpt_run) == 12, "ckpt run size");

struct ftl_ckpt_delta {
	char     magic[8];            /* FTL_CKPT_DELTA_MAGIC */
	uint32_t version;             /* FTL_CKPT_DELTA_VERSION */
	uint32_t hdr_size;            /* sizeof(struct ftl_ckpt_delta), less
	                                 FTL_CKPT_XOPEN_BYTES in version 2,
	                                 FTL_CKPT_LIFE_BYTES more in 1 */
	uint64_t gen;                 /* the base's generation */
	uint32_t idx;                 /* 1 = the first record after the base */
	uint32_t count;               /* data pages right before this one */
	uint64_t seq;                 /* covers every page with seq <= this */
	uint64_t prev_seq;            /* the record before's seq (<= seq) */
	uint32_t flags;               /* FTL_CKPT_CLEAN */
	uint32_t data_crc;            /* crc32c of the data pages, in order */
	uint8_t  uuid[16];            /* the superblock's */
	struct { uint32_t blk, wp; } open[FTL_NSTREAMS];
	uint64_t write_time;          /* unix seconds */
	struct ftl_ckpt_counters cnt;
	struct ftl_ckpt_open xopen[FTL_CKPT_XOPEN]; /* from version 3 */
	uint32_t crc;                 /* crc32c of the header with crc = 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_ckpt_delta) == 300, "delta header v3");

/* ---- bad-block table -----------------------------------------------------
 * Two copies in the superblock area (bytes FTL_BBT_OFF0 and FTL_BBT_OFF1 of
 * the image, FTL_BBT_BYTES each): the header, then @count entries (block
 * number, FTL_BBT_GROWN set for blocks that went bad in use).  The newest
 * valid copy (gen) wins; an update writes the older copy and flushes.  Both
 * copies all zero: no bad blocks (images made before the table existed).
 */
#define FTL_BBT_MAGIC   "OCTBBT01"
#define FTL_BBT_VERSION 1u
#define FTL_BBT_OFF0    1024u     /* after superblock copy 0 */
#define FTL_BBT_OFF1    5120u     /* after superblock copy 1 */
#define FTL_BBT_BYTES   3072u
#define FTL_BBT_GROWN   0x80000000u
#define FTL_BBT_RDONLY  0x1u      /* flags: spares ran out, read-only */
#define FTL_BBT_GEN_MAX (1ull << 32) /* gen stays below (an update per
                                     retired block: above is damaged) */

struct ftl_bbt_hdr {
	char     magic[8];            /* FTL_BBT_MAGIC */
	uint32_t version;             /* FTL_BBT_VERSION */
	uint32_t hdr_size;            /* sizeof(struct ftl_bbt_hdr) */
	uint64_t gen;                 /* update count, newest copy wins */
	uint32_t nblocks;             /* must match the superblock */
	uint32_t count;               /* entries that follow */
	uint32_t limit;               /* bad blocks the spares absorb */
	uint32_t flags;               /* FTL_BBT_RDONLY */
	uint8_t  uuid[16];            /* the superblock's */
	uint32_t pad;                 /* 0 */
	uint32_t crc;                 /* crc32c of header (crc = 0) + entries */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_bbt_hdr) == 64, "bbt header size");
#define FTL_BBT_MAX ((FTL_BBT_BYTES - sizeof(struct ftl_bbt_hdr)) / 4)

#endif /* OCTANT_FTL_FORMAT_H */
