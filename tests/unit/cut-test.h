/* SPDX-License-Identifier: MIT */
/*
 * A cut at the Nth write of an operation on a memory medium (the tests
 * that cut a create, a grow or a repair at every write): at the cut, the
 * crash images this instant may leave, then the medium powers off.
 *
 *   struct cut_ctx c = { .m = m, .seed = s, .nshots = 3, .shots = {...} };
 *   nand_mem_set_trigger(m, n, cut_fire, &c);
 *   ... the operation ...   (c.fired: the Nth write came)
 *
 * shots[0 .. nshots - 2] are power cuts (the writes since the last sync
 * as a prefix or subset; the first whole, the others with one torn),
 * shots[nshots - 1] a kill -9's (every write so far, whole).
 */
#ifndef OCTANT_CUT_TEST_H
#define OCTANT_CUT_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "nand.h"

#define CUT_SHOTS_MAX 4

struct cut_ctx {
	struct nand_backing *m;         /* the medium being cut */
	uint64_t seed;                  /* the crash images' */
	int nshots;                     /* 2..CUT_SHOTS_MAX */
	uint8_t *shots[CUT_SHOTS_MAX];  /* each the medium's size */
	bool fired;
};

static inline void cut_fire(void *ctx)
{
	struct cut_ctx *c = ctx;
	int kill = c->nshots - 1;

	for (int j = 0; j < kill; j++)
		nand_mem_crash_image(c->m, c->seed * 31 + (uint64_t)j, j != 0,
				     c->shots[j]);
	nand_mem_kill_image(c->m, c->shots[kill]);
	nand_mem_power_off(c->m);
	c->fired = true;
}

#endif /* OCTANT_CUT_TEST_H */
