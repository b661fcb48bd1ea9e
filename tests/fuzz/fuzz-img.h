/* SPDX-License-Identifier: MIT */
/*
 * Images for the engine fuzzers (fuzz-image.c, fuzz-fsck.c).
 *
 * A fuzz input does not carry a whole image: it names one of a few small
 * base images, built once per process by the engine's own create path and a
 * fixed workload (so they are byte-identical from run to run), and lists
 * patches against it.  That keeps inputs small and lets the fuzzer aim at
 * the on-medium structures.  Layout of an input:
 *
 *   byte 0   base image (modulo FZ_NBASES)
 *   byte 1   FZ_FIX_* bits: recompute these checksums after patching, so
 *            that mutated fields get past the CRC checks
 *   byte 2   harness flags (each harness defines its own)
 *   then     patch records: region u8, index u16, offset u16, len u8, bytes
 *            (see enum fz_region; index and offset are taken modulo the
 *            region's size, a record cut short by the end of input is
 *            applied as far as it goes)
 */
#ifndef OCTANT_FUZZ_IMG_H
#define OCTANT_FUZZ_IMG_H

#include <stddef.h>
#include <stdint.h>

#include "ftl-int.h"

enum fz_region {
	FZ_R_SB = 0,      /* superblock copy (index 0/1), offset < 512 */
	FZ_R_CKPT = 1,    /* checkpoint page: slot = index % 4, page in slot
	                     = index / 4 (header, payload, mount marker) */
	FZ_R_OOB = 2,     /* OOB bytes of flash page index */
	FZ_R_DATA = 3,    /* data bytes of flash page index */
	FZ_R_RAW = 4,     /* image byte (index << 16 | offset) */
	FZ_R_COPY = 5,    /* copy page index (data + OOB) onto page offset:
	                     a misdirected or duplicated program */
	FZ_R_ERASE = 6,   /* erase block index: data 0xff, OOB zeroes */
	/*
	 * FZ_R_BBT: the on-medium bad-block table (issue 12, "Bad blocks").
	 * Reserved until the engine has one: patches to it are ignored.  When
	 * it lands, map index/offset to its pages here (fz_apply) and recompute
	 * its checksum under a new FZ_FIX_BBT bit (fz_fixup), then add seeds
	 * that carry a table to tests/fuzz/corpus/image and .../fsck.
	 */
	FZ_R_BBT = 7,
	FZ_NREGIONS
};

#define FZ_FIX_SB    0x01u  /* superblock crc (both copies) */
#define FZ_FIX_CKPT  0x02u  /* checkpoint header crc, payload crc, OOB */
#define FZ_FIX_OOB   0x04u  /* OOB record crc of every page with the magic
                               (and its flush record, seeded with it) */
#define FZ_FIX_DATA  0x08u  /* OOB data_crc follows the page's data */

#define FZ_NBASES 6

struct fz_image {
	uint8_t *img;             /* image bytes (malloc'd, caller frees) */
	uint64_t size;
	struct ftl_geom g;        /* the base image's geometry */
	unsigned base, fix, flags;
};

/* Build (once) and describe base image @i: its bytes are shared, never
 * modify them.  0 or -errno. */
int fz_base(unsigned i, const uint8_t **img, uint64_t *size,
	    struct ftl_geom *g);

/* Decode a fuzz input into a patched copy of its base image. 0 or -errno
 * (-EINVAL for an input shorter than its 3-byte header). */
int fz_apply(const uint8_t *data, size_t n, struct fz_image *out);

/* Recompute the checksums @fix names on @img (geometry @g). */
void fz_fixup(uint8_t *img, uint64_t size, const struct ftl_geom *g,
	      unsigned fix);

/* A memory backing holding @img (size bytes), for ftl_open_backing. */
int fz_backing(const uint8_t *img, uint64_t size, struct nand_backing **out);

#endif
