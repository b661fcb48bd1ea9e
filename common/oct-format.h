/* SPDX-License-Identifier: MIT */
/*
 * octant flash image: the superblock that every octant image starts with.
 * This is the one on-medium structure shared by libalign (which reads the
 * topology from it) and the ublk-flash engine (which owns the rest of the
 * format, documented in docs/image-format.md).
 *
 * All fields little-endian.  Two copies: at byte 0 and at byte
 * OCT_SB_COPY_OFFSET of the image.  A copy is valid when magic, version and
 * crc (crc32c of the OCT_SB_SIZE bytes with the crc field zeroed) all match.
 */
#ifndef OCTANT_OCT_FORMAT_H
#define OCTANT_OCT_FORMAT_H

#include <stdint.h>

#define OCT_SB_MAGIC       "OCTFLASH"  /* 8 bytes, no NUL */
#define OCT_SB_VERSION     1u
#define OCT_SB_SIZE        512u        /* bytes covered by the crc */
#define OCT_SB_COPY_OFFSET 4096u
#define OCT_SB_AREA        8192u       /* bytes reserved for the two copies */

#define OCT_ALIGN_ODD 1u   /* logical byte x lives at medium byte x + 512 */
#define OCT_ALIGN_1M  2u   /* logical byte x lives at medium byte x */

struct oct_sb {
	char     magic[8];          /* OCT_SB_MAGIC */
	uint32_t version;           /* OCT_SB_VERSION */
	uint32_t crc;               /* crc32c(sb[0..OCT_SB_SIZE) with crc = 0) */
	uint32_t sb_size;           /* OCT_SB_SIZE */
	uint32_t align_mode;        /* OCT_ALIGN_ODD / OCT_ALIGN_1M */
	uint32_t align_shift;       /* 512 (odd) or 0 (1m), bytes */
	uint32_t logical_size;      /* 512 */
	uint64_t logical_sectors;   /* exported disk size, logical sectors */
	uint32_t page_size;         /* flash page, bytes: 4096/8192/16384 */
	uint32_t oob_size;          /* out-of-band bytes per page */
	uint32_t pages_per_block;   /* pages per erase block */
	uint32_t nblocks;           /* erase blocks in the flash area */
	uint64_t flash_offset;      /* byte offset of erase block 0 in the image */
	uint64_t oob_offset;        /* byte offset of the OOB area in the image */
	uint32_t op_permille;       /* over-provisioning, 1/1000 of logical size */
	uint32_t ckpt_blocks;       /* erase blocks reserved for checkpoints */
	uint8_t  uuid[16];
	uint64_t create_time;       /* unix seconds */
	uint32_t flags;             /* OCT_SB_F_* */
	uint32_t pe_cycles;         /* rated endurance: erases a block takes,
	                               0 = not recorded (images made before
	                               it: the engine's default) */
	uint8_t  reserved[OCT_SB_SIZE - 120];
	uint64_t ckpt_sectors;      /* FTL: the logical size (sectors) the
	                               checkpoint area is sized for, so the
	                               image can grow up to it in place
	                               (ublk-flash resize); 0 = logical_sectors
	                               (images made before it: reserved) */
} __attribute__((packed));

_Static_assert(sizeof(struct oct_sb) == OCT_SB_SIZE, "superblock size");

/* flags: the medium layout revision.  0 (format 1): the OOB of page p at
 * oob_offset + p * oob_size.  OCT_SB_F_OOB_INLINE (format 1.1): each page
 * is a slot of page_size + oob_size bytes from flash_offset, its OOB right
 * after its data, oob_offset = flash_offset + page_size. */
#define OCT_SB_F_OOB_INLINE 0x1u
/* OCT_SB_F_CKPT_DELTA: checkpoint slots with room for delta records after
 * their base (ublk-server/ftl/ftl-format.h, docs/image-format.md) */
#define OCT_SB_F_CKPT_DELTA 0x2u
/* OCT_SB_F_OOB_STAMP (format 1.2, with OCT_SB_F_OOB_INLINE only): the last
 * 16 bytes of every page's OOB hold the nand's erase stamp (its block's
 * generation); an erase writes one stamp into page 0's OOB instead of
 * zeroing the block (ublk-server/nand/nand.h, docs/image-format.md) */
#define OCT_SB_F_OOB_STAMP  0x4u
/* OCT_SB_F_FLUSH_SUM (image revision 3): every host flush leaves a flush
 * summary page in the log (the pages written since the last one), and a
 * block written since the last checkpoint is erased only after a newer
 * checkpoint (ublk-server/ftl/ftl-format.h, docs/image-format.md) */
#define OCT_SB_F_FLUSH_SUM  0x8u
/* OCT_SB_F_ZONED: a zoned image (ublk-server/zoned/zn-format.h): zones
 * of erase blocks written in place, no FTL, no checkpoints; not in
 * OCT_SB_F_KNOWN, the FTL's flags: the FTL refuses such an image */
#define OCT_SB_F_ZONED      0x10u
/* OCT_SB_F_PI (`create --integrity t10dif`): every data page's OOB keeps
 * the T10-DIF CRC16 guard of each of its 512-byte sectors (struct
 * ftl_oob_pi, ftl-format.h); served over ublk with UBLK_F_INTEGRITY */
#define OCT_SB_F_PI         0x20u
/* OCT_SB_F_CKPT_OPEN: checkpoints (version 6, delta version 3) name every
 * open block of the engine, not only the host and GC streams' (the
 * others are no longer closed before each checkpoint) */
#define OCT_SB_F_CKPT_OPEN  0x40u
#define OCT_SB_F_KNOWN      (OCT_SB_F_OOB_INLINE | OCT_SB_F_CKPT_DELTA | \
			     OCT_SB_F_OOB_STAMP | OCT_SB_F_FLUSH_SUM | \
			     OCT_SB_F_PI | OCT_SB_F_CKPT_OPEN)

/* The checks every reader of a copy makes first (oct-sb.c): 0, -EBADMSG
 * (magic or crc) or -EPROTONOSUPPORT (another version); the fields are
 * the caller's to check. */
int oct_sb_check(const struct oct_sb *sb);

#endif /* OCTANT_OCT_FORMAT_H */
