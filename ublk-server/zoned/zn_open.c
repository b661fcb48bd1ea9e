/* SPDX-License-Identifier: MIT */
/* Opening a zoned medium: write pointers rebuilt from the OOB records
 * (zoned.h, docs/engine.md "Zone state machine", Recovery). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zn-int.h"

static bool oob_blank(const uint8_t *o, uint32_t os)
{
	for (uint32_t k = 0; k < os; k++)
		if (o[k])
			return false;
	return true;
}

/*
 * Zone @i from its blocks' OOB: the last page of the block's current
 * generation holding a record of its own (zone, page), or a record that
 * does not check out (damaged: it reads EIO, fsck reports it), ends what
 * was programmed (prog); a finish mark there makes the zone FULL.  Pages
 * below it without a valid record (a reset or a power cut that left a
 * hole) stay inside: they read as EIO, never as other data.  Each block
 * gets its write pointer (so the NAND rules hold on the next program)
 * and the highest erase count its records carry.
 */
static int recover_zone(struct zn *z, uint32_t i)
{
	uint32_t os = nand_geom(z->nand)->oob_size, ppb = z->g.ppb;
	struct zn_state *s = &z->zs[i];
	uint32_t last = 0;     /* pages up to the last valid record */
	bool finished = false;
	int r;

	for (uint32_t b = 0; b < z->g.zone_blocks; b++) {
		uint32_t blk = i * z->g.zone_blocks + b, ec = 0, wp = 0;

		if (nand_block_oob_hole(z->nand, blk)) {
			nand_set_block(z->nand, blk, 0, 0);
			continue;
		}
		r = nand_read_block_oob(z->nand, blk, z->obuf);
		if (r)
			return r;
		for (uint32_t p = 0; p < ppb; p++) {
			const uint8_t *o = z->obuf + (size_t)p * os;
			const struct zn_oob *rec = (const struct zn_oob *)o;

			if (!zn_oob_ok(o, i, b * ppb + p, 0)) {
				/* an OOB that is not blank was programmed in
				 * the block's current generation (the nand
				 * blanks every other one): a damaged record.
				 * The page counts as written (it reads EIO),
				 * never as a hole the wp may fall back over */
				if (!oob_blank(o, os)) {
					wp = p + 1;
					last = b * ppb + p + 1;
					finished = false;
				}
				continue;
			}
			wp = p + 1;
			if (rec->ec > ec)
				ec = rec->ec;
			last = b * ppb + p + 1;
			finished = rec->kind == ZN_OOB_FINISH;
		}
		nand_set_block(z->nand, blk, wp, ec);
	}
	/* blocks below the last one written are used up to their end */
	for (uint32_t b = 0; last && b < (last - 1) / ppb; b++) {
		uint32_t blk = i * z->g.zone_blocks + b;

		nand_set_block(z->nand, blk, ppb, nand_block_ec(z->nand, blk));
	}
	s->prog = last;
	s->wp = finished ? z->zpages : last;
	s->cond = 0;             /* counted by zn_set_cond from nothing */
	zn_set_cond(z, i, !last ? ZN_COND_EMPTY : s->wp == z->zpages ?
		    ZN_COND_FULL : ZN_COND_CLOSED);
	return 0;
}

int zn_open(struct nand *n, const struct zn_geom *g, bool readonly,
	    struct zn **out)
{
	const struct nand_geom *ng = nand_geom(n);
	struct zn *z;
	int r = 0;

	if (ng->page_size != g->page_size || g->page_size != ZN_LBS ||
	    ng->ppb != g->ppb || !g->zone_blocks || !g->nzones ||
	    ng->nblocks != g->nzones * g->zone_blocks ||
	    !ng->oob_stamp || ng->oob_size < sizeof(struct zn_oob) +
	    NAND_STAMP_SIZE)
		return -EINVAL;
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	z->nand = n;
	z->g = *g;
	z->zpages = g->zone_blocks * g->ppb;
	z->readonly = readonly;
	pthread_mutex_init(&z->lock, NULL);
	z->zs = calloc(g->nzones, sizeof(*z->zs));
	z->pbuf = malloc(g->page_size);
	z->obuf = malloc((size_t)g->ppb * ng->oob_size);
	if (!z->zs || !z->pbuf || !z->obuf)
		r = -ENOMEM;
	for (uint32_t i = 0; !r && i < g->nzones; i++)
		r = recover_zone(z, i);
	/* a power cut may leave more zones partly written than active zones
	 * allowed (zones that went FULL by writes not flushed): finish the
	 * excess, the highest first (their data stays) */
	for (uint32_t i = g->nzones; !r && !readonly && i-- > 0 &&
	     g->max_active && z->nactive > g->max_active;)
		if (z->zs[i].cond == ZN_COND_CLOSED) {
			r = zn_mgmt_locked(z, ZN_OP_FINISH, i);
			z->c.recovery_finishes++;
		}
	if (r) {
		z->nand = NULL;          /* still the caller's */
		zn_close(z);
		return r;
	}
	*out = z;
	return 0;
}

int zn_close(struct zn *z)
{
	int r = 0;

	if (!z)
		return 0;
	if (z->nand) {
		if (!z->readonly)
			r = nand_sync(z->nand);
		nand_destroy(z->nand);
	}
	pthread_mutex_destroy(&z->lock);
	free(z->zs);
	free(z->pbuf);
	free(z->obuf);
	free(z);
	return r;
}

const struct zn_geom *zn_geom(const struct zn *z)
{
	return &z->g;
}

struct nand *zn_nand(struct zn *z)
{
	return z->nand;
}

uint64_t zn_zone_sectors(const struct zn *z)
{
	return (uint64_t)z->zpages * ZN_SPP;
}

uint64_t zn_sectors(const struct zn *z)
{
	return zn_zone_sectors(z) * z->g.nzones;
}

void zn_counters_get(struct zn *z, struct zn_counters *c)
{
	pthread_mutex_lock(&z->lock);
	*c = z->c;
	pthread_mutex_unlock(&z->lock);
}
