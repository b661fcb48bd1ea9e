/* SPDX-License-Identifier: MIT */
/*
 * zoned — the medium as a host-managed zoned disk, with no FTL: zone z is
 * the zone_blocks consecutive erase blocks from z * zone_blocks, its byte
 * x the page x / page_size of those blocks; a write programs the pages at
 * the zone's write pointer, a reset erases the blocks written since the
 * last reset.  Prefix zn_, 0 / -errno returns, thread-safe (one lock: the
 * calls are serialized).  docs/engine.md ("Zone state machine") and
 * docs/image-format.md ("Zoned images").
 *
 * Units: 512-byte sectors, as the kernel's zoned block layer counts; the
 * logical block is a page (4096 bytes, ZN_LBS): every read and write
 * starts and ends on one (-EINVAL otherwise).
 *
 * Errors, as the kernel's zoned block layer expects them (null_blk's
 * model): -EIO a write not at its zone's write pointer, into a FULL,
 * READONLY or OFFLINE zone, across a zone's end, and a management op a
 * zone's condition refuses; -ETOOMANYREFS (BLK_STS_ZONE_OPEN_RESOURCE) no
 * open zone left; -EOVERFLOW (BLK_STS_ZONE_ACTIVE_RESOURCE) no active zone
 * left; -EINVAL unaligned or past the disk; -EIO too for a page that
 * fails its checksum (never other data in its place).
 *
 * Durability: a volatile write cache.  zn_flush() makes every completed
 * write durable, ZN_FUA one write; reset and finish are durable when they
 * return.  Write pointers are rebuilt from the pages' OOB records at open
 * (nothing else on the medium records them): a kill -9 loses nothing, a
 * power cut nothing flushed.
 */
#ifndef OCTANT_ZONED_H
#define OCTANT_ZONED_H

#include <stdbool.h>
#include <stdint.h>

#include "nand.h"

#define ZN_LBS 4096u          /* logical block = flash page, bytes */
#define ZN_FUA 0x1u           /* zn_write / zn_append: durable on return */

/* Zone conditions: the values of the kernel's enum blk_zone_cond. */
enum zn_cond {
	ZN_COND_EMPTY = 0x1,
	ZN_COND_IMP_OPEN = 0x2,
	ZN_COND_EXP_OPEN = 0x3,
	ZN_COND_CLOSED = 0x4,
	ZN_COND_READONLY = 0xd,
	ZN_COND_FULL = 0xe,
	ZN_COND_OFFLINE = 0xf,
};

/* Zone management operations. */
enum zn_op { ZN_OP_OPEN, ZN_OP_CLOSE, ZN_OP_FINISH, ZN_OP_RESET };

/* One zone as zn_report() gives it (blk_zone's fields, sectors). */
struct zn_zone {
	uint64_t start;       /* first sector */
	uint64_t len;         /* sectors (a power of two) */
	uint64_t capacity;    /* writable sectors: len */
	uint64_t wp;          /* write pointer, absolute sector; start + len
	                         when FULL */
	uint8_t  cond;        /* enum zn_cond */
};

/* Geometry of a zoned medium (from its superblock, zn_sb_decode). */
struct zn_geom {
	uint32_t page_size;   /* ZN_LBS */
	uint32_t ppb;         /* pages per erase block */
	uint32_t zone_blocks; /* erase blocks per zone, a power of two */
	uint32_t nzones;      /* zones; the medium's nblocks = nzones *
	                         zone_blocks */
	uint32_t max_open;    /* open zones at most (0: no limit) */
	uint32_t max_active;  /* active zones at most (0: no limit) */
	uint32_t pe_cycles;   /* rated endurance, erases per block (0: not
	                         recorded) */
};

struct zn_counters {
	uint64_t host_writes, host_reads;    /* pages */
	uint64_t appends;                    /* zone append commands */
	uint64_t resets, finishes, opens, closes; /* that changed a zone */
	uint64_t erases;                     /* blocks erased by resets */
	uint64_t finish_pages;               /* pages programmed by finish */
	uint64_t wp_violations;              /* writes refused off the wp */
	uint64_t resource_refusals;          /* open/active limit hits */
	uint64_t crc_errors;                 /* pages that failed a check */
	uint64_t media_failures;             /* programs/erases the medium
	                                        failed (zone read-only or
	                                        offline) */
	uint64_t recovery_finishes;          /* zones an open finished (more
	                                        partly written than active
	                                        zones allowed) */
};

struct zn;

/*
 * Take over @n (zn_close destroys it) laid out as @g and rebuild every
 * zone's write pointer and condition from the OOB records (a zone with
 * 0 < wp < capacity comes back CLOSED).  When a power cut left more
 * zones partly written than max_active allows (zones filled by writes
 * that were not flushed), a read-write open finishes the excess, the
 * highest first.  -EINVAL a geometry @n does not match.  On error @n is
 * still the caller's.
 */
int zn_open(struct nand *n, const struct zn_geom *g, bool readonly,
	    struct zn **out);
/* Open the zoned image on @b (its superblock read, the nand made): the
 * engine owns @b from then on, also when the open fails.  -ENOTTY not a
 * zoned image, -EBADMSG / -EPROTONOSUPPORT as zn_sb_decode. */
int zn_load(struct nand_backing *b, bool readonly, struct zn **out);
/* Flush (unless read-only) and free everything, the nand too. */
int zn_close(struct zn *z);
const struct zn_geom *zn_geom(const struct zn *z);
struct nand *zn_nand(struct zn *z);
uint64_t zn_sectors(const struct zn *z);      /* the disk, sectors */
uint64_t zn_zone_sectors(const struct zn *z); /* one zone, sectors */

/* Read @nsect sectors at @sect (may cross zones).  Sectors at or past a
 * zone's write pointer read as zeroes (unrestricted reads, as null_blk);
 * an OFFLINE zone -EIO; a page that fails its checks -EIO. */
int zn_read(struct zn *z, uint64_t sect, uint32_t nsect, void *buf);
/* Write @nsect sectors at @sect, which must be its zone's write pointer;
 * the zone opens implicitly (limits permitting), goes FULL at its end. */
int zn_write(struct zn *z, uint64_t sect, uint32_t nsect, const void *buf,
	     unsigned flags);
/* Zone append: write at the write pointer of the zone starting at @zone
 * (-EINVAL when it is not a zone's start); *@at gets the sector written. */
int zn_append(struct zn *z, uint64_t zone, uint32_t nsect, const void *buf,
	      unsigned flags, uint64_t *at);
/* Open, close, finish or reset the zone starting at @zone; with
 * ZN_OP_RESET and @all, every zone (REQ_OP_ZONE_RESET_ALL). */
int zn_mgmt(struct zn *z, enum zn_op op, uint64_t zone, bool all);
/* Up to @max zones from the one holding @sect; returns how many. */
int zn_report(struct zn *z, uint64_t sect, struct zn_zone *out,
	      uint32_t max);
int zn_flush(struct zn *z);
void zn_counters_get(struct zn *z, struct zn_counters *c);

/* ---- tools (zn_info.c): info and fsck of a zoned image file ------------ */
#include <stdio.h>

/* 1 when @path holds a zoned image's superblock (either copy valid, any
 * zoned version), 0 when it holds something else, -errno when it cannot
 * be read. */
int zn_image_probe(const char *path);
/* The same, with the disk's size in bytes in *@size when it is one (0 for
 * another zoned version). */
int zn_image_disk(const char *path, uint64_t *size);
/* Geometry, limits and the zones by condition, read-only (the write
 * pointers rebuilt as an open does); -errno as zn_load. */
int zn_info(const char *path, FILE *out, bool json);
/* Check both superblock copies and every page below each zone's write
 * pointer (record and data CRC); read-only unless @repair, which writes
 * the good superblock copy over a damaged one first (the caller holds the
 * image's lock; a damaged page cannot be mended: it reads EIO until the
 * host resets its zone).  0 clean, 1 repaired and now clean, 4 problems
 * (each on a line), -errno when the image cannot be opened. */
int zn_fsck(const char *path, bool repair, FILE *out, bool json);

/* ---- stats and health (zn_stats.c; zn_image_report in zn_info.c) ----- */
struct zn_stats {
	struct zn_geom g;
	uint32_t oob_size;          /* bytes per page */
	uint64_t zone_bytes;        /* one zone */
	uint32_t cond[16];          /* zones by enum zn_cond */
	uint64_t written_pages;     /* below the write pointers */
	uint64_t lifetime_erases;   /* the blocks' erase counts summed: every
	                               erase since create while served; read
	                               offline, a block's count is its pages'
	                               records' (an erased block not written
	                               since counts 0 until it is) */
	uint32_t erase_min, erase_max;  /* per block (the same counts) */
	double erase_mean, erase_stddev;
	/* the same counts as the FTL's stats show them (make compare reads
	 * both alike): a histogram of ZN_ERASE_HIST buckets of hist_width
	 * from hist_base, and the highest count of every map_group blocks */
	uint32_t hist_base, hist_width, map_group, map_len;
	uint32_t hist[16];          /* ZN_ERASE_HIST */
	uint32_t map[2048];         /* ZN_WEAR_MAP cells at most */
	struct zn_counters c;       /* since this open (not on the medium) */
	struct nand_counters n;     /* the same */
	double write_amplification; /* flash pages programmed / host pages
	                               written since this open (0: none) */
	bool read_only;             /* opened read-only */
};
/* Fill @st from @z (under its lock). */
void zn_stats_get(struct zn *z, struct zn_stats *st);
/* `stats` as a table or one JSON object (keys: ublk-flash(8), JSON,
 * "stats of a zoned image"); `health` in the NVMe health log's shape, then the zones. */
void zn_stats_print(const struct zn_stats *st, FILE *out, bool json);
void zn_health_print(const struct zn_stats *st, FILE *out, bool json);
/* Open the zoned image @path read-only and print its stats (or its
 * health, @health); -errno as zn_load. */
int zn_image_report(const char *path, FILE *out, bool json, bool health);

#endif /* OCTANT_ZONED_H */
