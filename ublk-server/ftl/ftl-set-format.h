/* SPDX-License-Identifier: MIT */
/*
 * On-medium header of a set of engines (ftl_set.c): an image holding
 * nparts ordinary engine images ("parts"), logical space striped over
 * them.  Little-endian like the rest of the format (ftl-format.h).
 *
 * Layout: the first FTL_SET_AREA bytes hold two copies of the header, at
 * FTL_SET_COPY0 and FTL_SET_COPY1 (where a plain engine image has its
 * superblock copies: an image is a set or an engine, never both); part i
 * is an engine image of parts[i].len bytes at byte parts[i].off, every
 * offset a multiple of FTL_SET_ALIGN, at or after FTL_SET_AREA, parts in
 * ascending order without overlap.  A copy is valid when magic, version,
 * hdr_size and crc (crc32c of the FTL_SET_HDR_SIZE bytes with crc = 0)
 * match and every field passes ftl_set_hdr_check; open takes the first
 * valid copy.
 */
#ifndef OCTANT_FTL_SET_FORMAT_H
#define OCTANT_FTL_SET_FORMAT_H

#include <stdint.h>

#define FTL_SET_MAGIC     "OCTFSET1"   /* 8 bytes, no NUL */
#define FTL_SET_VERSION   1u
#define FTL_SET_HDR_SIZE  512u         /* bytes covered by the crc */
#define FTL_SET_COPY0     0u
#define FTL_SET_COPY1     4096u
#define FTL_SET_AREA      (1u << 20)   /* header area; parts start here */
#define FTL_SET_ALIGN     (1u << 20)   /* part offsets are multiples */
#define FTL_SET_MIN_PARTS 2u
#define FTL_SET_MAX_PARTS 16u
#define FTL_SET_STRIPE    (1u << 20)   /* default stripe, bytes */
#define FTL_SET_STRIPE_MAX (1u << 30)  /* largest stripe, bytes */

struct ftl_set_part_rec {
	uint64_t off;                /* byte offset of the part's image in
	                                the set's image, FTL_SET_ALIGN
	                                multiple, >= FTL_SET_AREA */
	uint64_t len;                /* bytes of the part's image (its
	                                engine's image size) */
} __attribute__((packed));

struct ftl_set_hdr {
	char     magic[8];           /* FTL_SET_MAGIC */
	uint32_t version;            /* FTL_SET_VERSION */
	uint32_t crc;                /* crc32c(hdr[0..FTL_SET_HDR_SIZE) with
	                                crc = 0) */
	uint32_t hdr_size;           /* FTL_SET_HDR_SIZE */
	uint32_t align_mode;         /* OCT_ALIGN_ODD (logical byte 0 at byte
	                                512 of the flash byte space) or
	                                OCT_ALIGN_1M (at 0) */
	uint64_t logical_size;       /* the set's exported size, bytes, a
	                                multiple of 512, > 0 */
	uint32_t page_size;          /* the parts' flash page, bytes */
	uint32_t nparts;             /* FTL_SET_MIN_PARTS .. _MAX_PARTS */
	uint64_t stripe;             /* bytes of flash byte space per stripe:
	                                a power of two, a multiple of
	                                page_size, <= FTL_SET_STRIPE_MAX */
	uint8_t  uuid[16];           /* the set's, random at create */
	uint64_t create_time;        /* unix seconds */
	uint8_t  reserved[40];       /* 0 */
	struct ftl_set_part_rec parts[FTL_SET_MAX_PARTS]; /* nparts used, the
	                                rest 0 */
	uint8_t  pad[FTL_SET_HDR_SIZE - 112 -
		     16 * FTL_SET_MAX_PARTS];               /* 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct ftl_set_hdr) == FTL_SET_HDR_SIZE,
	       "set header size");

#endif
