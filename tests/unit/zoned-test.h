/* SPDX-License-Identifier: MIT */
/* Helpers of the zoned unit tests: a small zoned medium in memory. */
#ifndef OCTANT_ZONED_TEST_H
#define OCTANT_ZONED_TEST_H

#include <string.h>

#include "test.h"
#include "zn-format.h"
#include "zoned.h"

#define ZT_PPB    8u                        /* pages per block */
#define ZT_ZBLK   2u                        /* blocks per zone */
#define ZT_ZPAGES (ZT_PPB * ZT_ZBLK)        /* pages per zone */
#define ZT_ZSECT  (ZT_ZPAGES * 8u)          /* sectors per zone */
#define ZT_NZONES 16u

static inline struct zn_create_opts zt_opts(void)
{
	struct zn_create_opts o = {
		.size = (uint64_t)ZT_NZONES * ZT_ZPAGES * ZN_LBS,
		.zone_size = (uint64_t)ZT_ZPAGES * ZN_LBS,
		.ppb = ZT_PPB,
	};
	return o;
}

/* A formatted memory medium (kept alive by one extra holder, so that the
 * test may reopen its bytes after closing an engine on it). */
static inline struct nand_backing *zt_medium(bool powercut, uint64_t *size)
{
	struct zn_create_opts o = zt_opts();
	struct nand_backing *b;
	struct nand_geom ng;
	struct zn_geom g;
	char why[160];

	if (zn_create_geom(&o, &g, &ng, why, sizeof(why)) ||
	    nand_backing_mem(zn_image_size(&ng), powercut, &b) ||
	    zn_format_backing(b, &o)) {
		fprintf(stderr, "FAIL: cannot make a zoned medium (%s)\n", why);
		exit(T_EXIT_FAIL);
	}
	*size = zn_image_size(&ng);
	return b;
}

/* Open the zone engine over @b (b stays the test's: one holder is added)
 * with the limits @max_open and @max_active (0: the superblock's). */
static inline int zt_open(struct nand_backing *b, uint32_t max_open,
			  uint32_t max_active, struct zn **out)
{
	struct nand_geom ng;
	struct zn_geom g;
	struct oct_sb sb;
	struct nand *n;
	int r;

	r = zn_sb_read(b, &sb, &g, &ng, NULL);
	if (r)
		return r;
	if (max_open)
		g.max_open = max_open;
	if (max_active)
		g.max_active = max_active;
	nand_mem_hold(b);
	r = nand_create(b, &ng, &n);
	if (r) {
		b->ops->destroy(b);
		return r;
	}
	r = zn_open(n, &g, false, out);
	if (r)
		nand_destroy(n);
	return r;
}

/* A copy of @b's bytes now (what a kill -9 leaves: the page cache), a
 * memory backing that logs writes for a power cut when @powercut. */
static inline struct nand_backing *zt_copy(struct nand_backing *b,
					   bool powercut)
{
	uint64_t size;
	uint8_t *bytes = nand_mem_bytes(b, &size);
	struct nand_backing *c;

	if (nand_backing_mem(size, powercut, &c))
		exit(T_EXIT_FAIL);
	nand_mem_load(c, bytes);
	return c;
}

/* Fill one page of pattern: zone, page and a tag in every word. */
static inline void zt_fill(uint8_t *p, uint32_t zone, uint32_t zpage,
			   uint32_t tag)
{
	for (uint32_t k = 0; k < ZN_LBS / 4; k++) {
		uint32_t v = zone * 0x10000u + zpage * 0x100u + tag + k * 7u;

		memcpy(p + k * 4, &v, 4);
	}
}

static inline struct zn_zone zt_zone(struct zn *z, uint32_t i)
{
	struct zn_zone r = { 0 };

	if (zn_report(z, (uint64_t)i * ZT_ZSECT, &r, 1) != 1)
		r.cond = 0;
	return r;
}

#endif
