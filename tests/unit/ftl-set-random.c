/* SPDX-License-Identifier: MIT */
/*
 * A randomised oracle of a set (ftl-set.h): a geometry drawn from the seed
 * (odd or 1m, 2..4 parts, stripe 4 KiB..1 MiB), then writes of 512 B to
 * 64 KiB (FUA or not, half of them 4K aligned), discards, write-zeroes and
 * flushes, every sector stamped with its write id; every few hundred
 * operations the whole disk is read through the set and must hold each
 * sector's newest value exactly, and the parts straight from the engines
 * where the routing formula puts each stripe; closes and reopens in
 * between.  A new seed each run (printed); OCTANT_SEED=N replays it.
 * OCTANT_LONG=1 runs more operations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-set-test.h"

#define SIZE  (4u << 20)
#define NSECT (SIZE / 512)

#include "sector-history.h"

/* The disk as the newest value of every sector says. */
static void expect(uint8_t *e)
{
	for (uint32_t s = 0; s < NSECT; s++) {
		uint32_t id = h[s].v[h[s].n - 1];

		if (id)
			stamp(e + (size_t)s * 512, id, s);
		else
			memset(e + (size_t)s * 512, 0, 512);
	}
}

static bool check(struct ftl_set *s, uint8_t *rbuf, uint8_t *e,
		  unsigned seed, long op)
{
	char when[64];
	int r = ftl_set_read(s, rbuf, 0, SIZE);

	snprintf(when, sizeof(when), "seed %u op %ld", seed, op);
	T_CHECK(r == 0, "%s: read %d", when, r);
	/* every history is one value (the newest): barrier after each op */
	if (!r && !hist_verify(rbuf, seed))
		return false;
	expect(e);
	return !r && t_set_parts_hold(s, e, when);
}

int main(void)
{
	unsigned seed = t_seed();
	long ops = t_long() ? 40000 : 4000, i;
	uint8_t *w = malloc(128 * 512), *rbuf = malloc(SIZE), *e = malloc(SIZE);
	enum ftl_align_mode al;
	struct nand_backing *b;
	struct ftl_set *s;
	unsigned np;
	uint64_t stripe;
	int r = 0;

	rs = (uint64_t)seed * 0x9e3779b97f4a7c15ull | 1;
	al = rnd() % 2 ? FTL_ALIGN_ODD : FTL_ALIGN_1M;
	np = 2 + (unsigned)(rnd() % 3);
	stripe = 4096ull << (rnd() % 9);
	fprintf(stderr, "%s, %u parts, stripe %llu\n",
		al == FTL_ALIGN_ODD ? "odd" : "1m", np,
		(unsigned long long)stripe);
	for (uint32_t x = 0; x < NSECT; x++)
		push(x, 0);
	s = t_set_make(SIZE, al, np, stripe, false, NULL, &b);
	for (i = 0; i < ops && !r && t_long_more(i, 4000); i++) {
		uint64_t k;
		uint32_t len, off;

		pick_op(&k, &len, &off);
		if (k < 70) {
			uint32_t id = stamp_write(w, off, len);

			r = ftl_set_write(s, w, off, len, k < 10 ? FTL_FUA : 0);
			T_CHECK(r == 0, "seed %u: write %u+%u: %d", seed, off,
				len, r);
			for (uint32_t x = off / 512; x < (off + len) / 512; x++)
				push(x, id);
		} else if (k < 90) {
			r = k < 80 ? ftl_set_discard(s, off, len)
				   : ftl_set_write_zeroes(s, off, len);
			T_CHECK(r == 0, "seed %u: %s %u+%u: %d", seed,
				k < 80 ? "discard" : "write zeroes", off, len, r);
			for (uint32_t x = off / 512; x < (off + len) / 512; x++)
				push(x, 0);
		} else {
			r = ftl_set_flush(s);
			T_CHECK(r == 0, "seed %u: flush %d", seed, r);
		}
		for (uint32_t x = off / 512; x < (off + len) / 512; x++)
			barrier(x);     /* only the newest is checked here */
		if (i % 500 == 499 && !check(s, rbuf, e, seed, i))
			break;
		if (i % 1500 == 1499) {
			T_CHECK(ftl_set_close(s) == 0, "seed %u: close", seed);
			r = t_set_reopen(b, NULL, &s);
			T_CHECK(r == 0, "seed %u: reopen %d", seed, r);
			if (r)
				break;
			check(s, rbuf, e, seed, i);
		}
	}
	fprintf(stderr, "%ld operations, write ids up to %u\n", i, next_id - 1);
	t_long_covered("operations", i, ops);
	if (!r) {
		check(s, rbuf, e, seed, i);
		ftl_set_close(s);
	}
	t_set_drop(b);
	for (uint32_t x = 0; x < NSECT; x++)
		free(h[x].v);
	free(w);
	free(rbuf);
	free(e);
	return t_result();
}
