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

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "nand.h"
#include "test.h"

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

/*
 * Run @op on a memory medium of @size bytes (holding @start, synced, unless
 * NULL) cut at its 1st write, then on a new one cut at its 2nd, ... until
 * it completes uncut (*@uncut gets that run's return).  After each cut,
 * @check(@arg, n, j, image) for each of its @nshots images (as cut_fire).
 * Returns the number of cuts, -ENOMEM; stops after 5 test failures.
 */
static inline int cut_each_write(uint64_t size, const uint8_t *start,
				 uint64_t seed, int nshots,
				 int (*op)(struct nand_backing *m, void *arg),
				 void (*check)(void *arg, uint64_t n, int j,
					       const uint8_t *image),
				 void *arg, int *uncut)
{
	struct cut_ctx cc = { .nshots = nshots };
	int cuts = 0, r = 0;

	for (int j = 0; j < nshots; j++)
		if (!(cc.shots[j] = malloc(size)))
			r = -ENOMEM;
	for (uint64_t n = 1; !r && t_failures < 5; n++) {
		struct nand_backing *m;
		int rc;

		if (nand_backing_mem(size, true, &m)) {
			r = -ENOMEM;
			break;
		}
		if (start) {
			nand_mem_load(m, start);
			m->ops->sync(m);
		}
		cc.m = m;
		cc.seed = seed + n;
		cc.fired = false;
		nand_mem_set_trigger(m, n, cut_fire, &cc);
		rc = op(m, arg);
		m->ops->destroy(m);
		if (!cc.fired) {
			*uncut = rc;
			break;
		}
		cuts++;
		for (int j = 0; j < nshots; j++)
			check(arg, n, j, cc.shots[j]);
	}
	for (int j = 0; j < nshots; j++)
		free(cc.shots[j]);
	return r ? r : cuts;
}

#endif /* OCTANT_CUT_TEST_H */
