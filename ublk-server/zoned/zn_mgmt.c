/* SPDX-License-Identifier: MIT */
/* Zone management: open, close, finish, reset; report (zoned.h; the
 * state machine of docs/engine.md). */
#include <errno.h>
#include <string.h>

#include "zn-int.h"

static int zone_open(struct zn *z, uint32_t i)
{
	int r;

	switch (z->zs[i].cond) {
	case ZN_COND_EXP_OPEN:
		return 0;
	case ZN_COND_EMPTY:
	case ZN_COND_IMP_OPEN:
	case ZN_COND_CLOSED:
		r = zn_open_room(z, i);
		if (r)
			return r;
		zn_set_cond(z, i, ZN_COND_EXP_OPEN);
		z->c.opens++;
		return 0;
	default:                 /* FULL, READONLY, OFFLINE */
		return -EIO;
	}
}

static int zone_close(struct zn *z, uint32_t i)
{
	switch (z->zs[i].cond) {
	case ZN_COND_CLOSED:
		return 0;
	case ZN_COND_IMP_OPEN:
	case ZN_COND_EXP_OPEN:
		zn_set_cond(z, i, z->zs[i].wp ? ZN_COND_CLOSED : ZN_COND_EMPTY);
		z->c.closes++;
		return 0;
	default:                 /* EMPTY, FULL, READONLY, OFFLINE */
		return -EIO;
	}
}

/* Program the finish mark at the write pointer (a page of zeroes whose
 * OOB says FINISH), then sync: the zone is FULL for good. */
static int zone_finish(struct zn *z, uint32_t i)
{
	struct zn_state *s = &z->zs[i];
	uint32_t os = nand_geom(z->nand)->oob_size;
	int r;

	switch (s->cond) {
	case ZN_COND_FULL:
		return 0;
	case ZN_COND_EMPTY:
		if (z->g.max_active && z->nactive >= z->g.max_active) {
			z->c.resource_refusals++;
			return -EOVERFLOW;
		}
		break;
	case ZN_COND_IMP_OPEN:
	case ZN_COND_EXP_OPEN:
	case ZN_COND_CLOSED:
		break;
	default:
		return -EIO;
	}
	memset(z->pbuf, 0, z->g.page_size);
	memset(z->obuf, 0, os);
	zn_oob_fill((struct zn_oob *)z->obuf, ZN_OOB_FINISH, i, s->wp, z->pbuf,
		    z->g.page_size, nand_block_ec(z->nand, zn_block(z, i, s->wp)));
	r = nand_program(z->nand, zn_ppn(z, i, s->wp), z->pbuf, z->obuf);
	if (r == -NAND_EFAIL) {
		z->c.media_failures++;
		s->prog = s->wp + 1;
		zn_set_cond(z, i, ZN_COND_READONLY);
	}
	if (r)
		return -EIO;
	z->c.finish_pages++;
	s->prog = s->wp + 1;
	s->wp = z->zpages;
	zn_set_cond(z, i, ZN_COND_FULL);
	z->c.finishes++;
	return nand_sync(z->nand);
}

/* Erase the blocks holding pages, the last first: a reset a crash cuts
 * short leaves a shorter zone, never one with a hole. */
static int zone_reset(struct zn *z, uint32_t i, bool sync)
{
	struct zn_state *s = &z->zs[i];
	uint32_t nb;
	int r;

	switch (s->cond) {
	case ZN_COND_EMPTY:
		return 0;
	case ZN_COND_READONLY:
	case ZN_COND_OFFLINE:
		return -EIO;
	default:
		break;
	}
	nb = (s->prog + z->g.ppb - 1) / z->g.ppb;
	while (nb) {
		r = nand_erase(z->nand, zn_block(z, i, (nb - 1) * z->g.ppb));
		if (r) {
			z->c.media_failures++;
			zn_set_cond(z, i, ZN_COND_OFFLINE);
			return -EIO;
		}
		z->c.erases++;
		nb--;
		s->prog = nb * z->g.ppb;
		if (s->wp > s->prog)
			s->wp = s->prog;
	}
	s->wp = s->prog = 0;
	zn_set_cond(z, i, ZN_COND_EMPTY);
	z->c.resets++;
	return sync ? nand_sync(z->nand) : 0;
}

int zn_mgmt_locked(struct zn *z, enum zn_op op, uint32_t i)
{
	switch (op) {
	case ZN_OP_OPEN:
		return zone_open(z, i);
	case ZN_OP_CLOSE:
		return zone_close(z, i);
	case ZN_OP_FINISH:
		return zone_finish(z, i);
	case ZN_OP_RESET:
		return zone_reset(z, i, true);
	}
	return -EINVAL;
}

int zn_mgmt(struct zn *z, enum zn_op op, uint64_t zone, bool all)
{
	uint64_t zsect = (uint64_t)z->zpages * ZN_SPP;
	int r = 0, r2;

	if (z->readonly)
		return -EROFS;
	if (all) {
		if (op != ZN_OP_RESET)
			return -EINVAL;
		pthread_mutex_lock(&z->lock);
		for (uint32_t i = 0; i < z->g.nzones; i++) {
			uint8_t c = z->zs[i].cond;

			if (c == ZN_COND_READONLY || c == ZN_COND_OFFLINE)
				continue;    /* as the kernel skips them */
			r2 = zone_reset(z, i, false);
			if (r2 && !r)
				r = r2;
		}
		r2 = nand_sync(z->nand);
		pthread_mutex_unlock(&z->lock);
		return r ? r : r2;
	}
	if (zone % zsect || zone >= zsect * z->g.nzones)
		return -EINVAL;
	pthread_mutex_lock(&z->lock);
	r = zn_mgmt_locked(z, op, (uint32_t)(zone / zsect));
	pthread_mutex_unlock(&z->lock);
	return r;
}

int zn_report(struct zn *z, uint64_t sect, struct zn_zone *out, uint32_t max)
{
	uint64_t zsect = (uint64_t)z->zpages * ZN_SPP;
	uint32_t i = (uint32_t)(sect / zsect), k = 0;

	if (sect >= zsect * z->g.nzones)
		return 0;
	pthread_mutex_lock(&z->lock);
	for (; i < z->g.nzones && k < max; i++, k++) {
		struct zn_zone *o = &out[k];

		o->start = i * zsect;
		o->len = o->capacity = zsect;
		o->wp = o->start + (uint64_t)z->zs[i].wp * ZN_SPP;
		o->cond = z->zs[i].cond;
	}
	pthread_mutex_unlock(&z->lock);
	return (int)k;
}
