/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the set tests (tests/unit/ftl-set*.c): a set made on a
 * memory backing, and the routing formula written out on its own (the
 * tests check that the parts hold what the formula says, so a set that
 * routes consistently but wrongly fails).
 */
#ifndef OCTANT_TEST_FTL_SET_H
#define OCTANT_TEST_FTL_SET_H

#include <stdbool.h>
#include <stdint.h>

#include "ftl-int.h"
#include "ftl-set.h"
#include "nand.h"
#include "test.h"

/* Create a set of @nparts parts and stripe @stripe exporting @size bytes
 * in @align on a new memory backing (*@b, held once more so closes leave
 * it: drop with t_set_drop), and open it with @o. */
static inline struct ftl_set *t_set_make(uint64_t size, enum ftl_align_mode align,
					 unsigned nparts, uint64_t stripe,
					 bool powercut,
					 const struct ftl_open_opts *o,
					 struct nand_backing **b)
{
	struct ftl_create_opts c = { .size = size, .align = align };
	uint64_t isz = ftl_set_image_size(&c, nparts, stripe);
	struct ftl_set *s = NULL;
	int r;

	T_CHECK(isz > 0, "image size %u parts stripe %llu", nparts,
		(unsigned long long)stripe);
	if (!isz || nand_backing_mem(isz, powercut, b))
		exit(t_result() == T_EXIT_PASS ? T_EXIT_FAIL : t_result());
	r = ftl_set_create_backing(*b, &c, nparts, stripe);
	T_CHECK(r == 0, "set create: %d", r);
	nand_mem_hold(*b);
	r = r ? r : ftl_set_open_backing(*b, o, &s);
	T_CHECK(r == 0, "set open: %d", r);
	if (r)
		exit(T_EXIT_FAIL);
	return s;
}

/* Open the set on @b again (held once more first). */
static inline int t_set_reopen(struct nand_backing *b,
			       const struct ftl_open_opts *o,
			       struct ftl_set **s)
{
	int r;

	nand_mem_hold(b);
	r = ftl_set_open_backing(b, o, s);
	if (r)
		b->ops->destroy(b);     /* the hold: not taken */
	return r;
}

/* Drop the test's own reference to @b. */
static inline void t_set_drop(struct nand_backing *b)
{
	b->ops->destroy(b);
}

/* Where logical byte @x of a set (@np parts, @stripe, @shift) lives:
 * its part, and its byte in that part. */
static inline unsigned t_set_where(uint64_t x, unsigned np, uint64_t stripe,
				   uint64_t shift, uint64_t *at)
{
	uint64_t y = x + shift, k = y / stripe;

	*at = k / np * stripe + y % stripe;
	return (unsigned)(k % np);
}

/* Does every part of @s hold, where the formula puts them, the bytes of
 * @want (the whole logical disk)?  Checked stripe piece by stripe piece
 * straight from the part engines. */
static inline bool t_set_parts_hold(struct ftl_set *s, const uint8_t *want,
				    const char *when)
{
	uint64_t size = ftl_set_size(s), stripe = ftl_set_stripe(s);
	uint64_t shift = ftl_set_align(s) == FTL_ALIGN_ODD ? 512 : 0;
	unsigned np = ftl_set_parts(s);
	uint8_t *buf = malloc(stripe);
	bool ok = true;

	for (uint64_t x = 0; ok && x < size;) {
		uint64_t at, n = stripe - (x + shift) % stripe;
		unsigned p = t_set_where(x, np, stripe, shift, &at);
		int r;

		if (n > size - x)
			n = size - x;
		r = ftl_read(ftl_set_part(s, p), buf, at, n);
		if (r || memcmp(buf, want + x, n)) {
			T_CHECK(0, "%s: logical byte %llu (part %u byte %llu, "
				"%llu bytes): %s", when, (unsigned long long)x,
				p, (unsigned long long)at,
				(unsigned long long)n, r ? "read failed" :
				"differs");
			ok = false;
		}
		x += n;
	}
	free(buf);
	return ok;
}

#endif
