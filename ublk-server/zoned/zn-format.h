/* SPDX-License-Identifier: MIT */
/*
 * On-medium structures of a zoned image (superblock flag OCT_SB_F_ZONED):
 * the superblock's zone fields and the per-page OOB record of the zone
 * layer.  Little-endian, each with magic, version and crc32c.
 * docs/image-format.md ("Zoned images").
 */
#ifndef OCTANT_ZN_FORMAT_H
#define OCTANT_ZN_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "nand.h"
#include "oct-format.h"
#include "zoned.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ublk-flash on-medium format is little-endian"
#endif

/* ---- superblock: oct_sb with OCT_SB_F_ZONED ------------------------------
 * align_mode OCT_ALIGN_1M (shift 0: a zoned image has no odd mode),
 * logical_size ZN_LBS, logical_sectors the disk in ZN_LBS units,
 * page_size ZN_LBS, op_permille 0, ckpt_blocks 0 (no FTL, no checkpoint),
 * flags OCT_SB_F_ZONED | OCT_SB_F_OOB_INLINE | OCT_SB_F_OOB_STAMP, and
 * the first bytes of `reserved` hold this (the rest stays zero). */
#define ZN_SB_VERSION 1u
struct zn_sb_ext {
	uint32_t version;      /* ZN_SB_VERSION (the superblock's crc covers
	                          it) */
	uint32_t zone_blocks;  /* erase blocks per zone, a power of two */
	uint32_t max_open;     /* open zones at most */
	uint32_t max_active;   /* active (open or closed) zones at most */
} __attribute__((packed));
_Static_assert(sizeof(struct zn_sb_ext) == 16, "zoned sb ext size");

/* ---- OOB record: bytes 0..32 of every page the zone layer programs ------
 * (the nand's erase stamp holds the last 16; a page counts only when its
 * stamp is of the block's current generation, nand.h).  It names the page
 * it belongs to (zone, page in zone): a record read anywhere else does
 * not check out. */
#define ZN_OOB_MAGIC   0x314e5a4fu   /* "OZN1" */
#define ZN_OOB_VERSION 1u
enum zn_oob_kind {
	ZN_OOB_DATA = 1,     /* host data; data_crc over the page */
	ZN_OOB_FINISH = 2,   /* finish mark: the zone is FULL from here,
	                        data zeroes */
};
struct zn_oob {
	uint32_t magic;      /* ZN_OOB_MAGIC */
	uint8_t  kind;       /* enum zn_oob_kind */
	uint8_t  version;    /* ZN_OOB_VERSION */
	uint16_t pad;        /* 0 */
	uint32_t zone;       /* zone number */
	uint32_t zpage;      /* page index inside the zone */
	uint32_t data_crc;   /* crc32c of the page's page_size data bytes */
	uint32_t ec;         /* the block's erase count when programmed */
	uint32_t reserved;   /* 0 */
	uint32_t crc;        /* crc32c of these 32 bytes with crc = 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct zn_oob) == 32, "zoned oob size");

/* What `create --zoned` asks for.  Zero fields take defaults. */
struct zn_create_opts {
	uint64_t size;        /* disk bytes (required), rounded up to zones */
	uint64_t zone_size;   /* bytes, default ZN_ZONE_DEFAULT */
	uint32_t ppb;         /* pages per erase block, default 64 */
	uint32_t oob_size;    /* default 64 (a power of two, 64..512) */
	uint32_t pe_cycles;   /* rated endurance (0: not recorded) */
	bool force;           /* overwrite an existing signature */
};
#define ZN_ZONE_DEFAULT (16ull << 20)
#define ZN_LIMIT_MIN 16u      /* open/active limit at least: twice what
                                 btrfs asks for (8: 3 superblock log
                                 zones, system, metadata, data, tree
                                 log, relocation; a 7.3 guest's btrfs
                                 stalled at 8), f2fs 6 open logs */
#define ZN_LIMIT_MAX 128u

/* The geometry @o asks for (@ng: the nand's); -EINVAL with a reason in
 * @why (a line) when it cannot be. */
int zn_create_geom(const struct zn_create_opts *o, struct zn_geom *g,
		   struct nand_geom *ng, char *why, size_t len);
/* Image bytes of that geometry. */
uint64_t zn_image_size(const struct nand_geom *ng);
/* The superblock of @g (a fresh uuid and time). */
void zn_sb_build(struct oct_sb *sb, const struct zn_geom *g,
		 const struct nand_geom *ng, uint32_t pe_cycles);
/* Check a superblock copy: -EBADMSG bad magic, crc or inconsistent field,
 * -EPROTONOSUPPORT another superblock or zoned version, -ENOTTY a valid
 * superblock of an image that is not zoned. */
int zn_sb_decode(const struct oct_sb *sb, struct zn_geom *g,
		 struct nand_geom *ng);
/* Read the superblock area from @b (copy 0, else copy 1) and decode it.
 * *@bad (unless NULL): a bit per copy that is not the same sound
 * superblock (damaged, torn, zeroed; a copy of another version is not
 * counted), to report and mend. */
int zn_sb_read(struct nand_backing *b, struct oct_sb *sb, struct zn_geom *g,
	       struct nand_geom *ng, int *bad);
/* Write @sb over the copies in @bad, then sync; with @say, one line a
 * copy on stderr.  0 or -errno. */
int zn_sb_mend(struct nand_backing *b, const struct oct_sb *sb, int bad,
	       bool say);

/* Format @b (its size zn_image_size) as an empty zoned image. */
int zn_format_backing(struct nand_backing *b, const struct zn_create_opts *o);
/* The create on @b: on a @reused medium (a block device: it may hold an
 * old image) everything zeroed first (nand_backing_wipe), then
 * zn_format_backing.  A cut anywhere leaves the old image whole, no
 * superblock, or the empty zoned disk (tests/unit/zoned-create-cut.c). */
int zn_create_backing(struct nand_backing *b, const struct zn_create_opts *o,
		      bool reused);
/* create --zoned on a file or block device @path. */
int zn_create(const char *path, const struct zn_create_opts *o, char *why,
	      size_t len);

/* OOB records (zn_format.c) */
void zn_oob_fill(struct zn_oob *o, uint8_t kind, uint32_t zone,
		 uint32_t zpage, const void *data, uint32_t page_size,
		 uint32_t ec);
/* True when @oob holds a record of @kind (0: any) for page @zpage of
 * @zone. */
bool zn_oob_ok(const void *oob, uint32_t zone, uint32_t zpage, uint8_t kind);

#endif /* OCTANT_ZN_FORMAT_H */
