/* SPDX-License-Identifier: MIT */
/*
 * Power cuts under a set (ftl-set.h): a 2- or 3-part set (odd or 1m, a
 * stripe of 8 KiB..1 MiB, drawn from the seed) on a memory backing that
 * logs every write since the last sync runs a random workload (writes
 * crossing stripes and parts, FUA or not, discards, write-zeroes,
 * flushes); after each round of it the image a power cut would leave now
 * (nand_mem_crash_image: everything synced, then a prefix or a subset of
 * the later backing writes, one torn) is opened as a set, and every
 * sector must hold its value as of the last completed ftl_set_flush (or
 * its FUA write) or a later one written to it: never older, torn or
 * garbage.  The recovered set must then take writes and a flush.  The
 * image a kill -9 would leave at the same instant (every write so far,
 * whole) must pass the set's fsck (exit 0): a stop, never damage.  The
 * workload's parts collect garbage inline or in their GC threads (seed).  A new
 * seed each run (printed); OCTANT_SEED=N replays; OCTANT_LONG=1 cuts more.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-set-test.h"
#include "image-fsck.h"

#define SIZE  (4u << 20)
#define NSECT (SIZE / 512)

#include "sector-history.h"

/* Open the crash image @img of @isz bytes as a set and check it. */
static void recover(const uint8_t *img, uint64_t isz, uint64_t seed,
		    uint8_t *rbuf)
{
	struct nand_backing *m;
	struct ftl_set *g;
	uint8_t w[4096];
	int r;

	if (nand_backing_mem(isz, false, &m)) {
		T_CHECK(0, "memory");
		return;
	}
	nand_mem_load(m, img);
	r = ftl_set_open_backing(m, NULL, &g);
	T_CHECK(r == 0, "seed %llu: open after the cut: %d",
		(unsigned long long)seed, r);
	if (r) {
		m->ops->destroy(m);
		return;
	}
	r = ftl_set_read(g, rbuf, 0, SIZE);
	T_CHECK(r == 0, "seed %llu: read after the cut: %d",
		(unsigned long long)seed, r);
	if (!r)
		hist_verify(rbuf, seed);
	memset(w, 0x3c, sizeof(w));
	for (int i = 0; i < 16 && !r; i++)
		r = ftl_set_write(g, w, (rnd() % (SIZE / 512 - 8)) * 512,
				  sizeof(w), 0);
	if (!r)
		r = ftl_set_flush(g);
	T_CHECK(r == 0, "seed %llu: writes after recovery: %d",
		(unsigned long long)seed, r);
	ftl_set_close(g);
}

/* What a kill -9 of the server leaves now on @b (@isz bytes, through
 * @img): the set's fsck finds no problem. */
static void kill_fsck(struct nand_backing *b, uint64_t isz, uint8_t *img,
		      uint64_t seed)
{
	char *rep;
	int r;

	nand_mem_kill_image(b, img);
	r = t_fsck_image(T_FSCK_SET, img, isz, &rep);
	T_CHECK(r == 0, "seed %llu: fsck of what a kill -9 leaves: %d: %s",
		(unsigned long long)seed, r, rep ? rep : "");
	free(rep);
}

int main(void)
{
	unsigned seed = t_seed();
	long rounds = t_long() ? 2000 : 200, i;
	struct ftl_open_opts oo = { 0 };
	uint8_t *w = malloc(128 * 512), *rbuf = malloc(SIZE), *img;
	struct ftl_create_opts c = { .size = SIZE };
	enum ftl_align_mode al;
	struct nand_backing *b;
	struct ftl_set *s;
	uint64_t stripe, isz;
	long pend = 0;
	unsigned np;
	int r = 0;

	rs = (uint64_t)seed * 0x9e3779b97f4a7c15ull | 1;
	al = rnd() % 2 ? FTL_ALIGN_ODD : FTL_ALIGN_1M;
	np = 2 + (unsigned)(rnd() % 2);
	stripe = 8192ull << (rnd() % 8);
	oo.bg_gc = rnd() % 2;
	fprintf(stderr, "%s, %u parts, stripe %llu, GC %s\n",
		al == FTL_ALIGN_ODD ? "odd" : "1m", np,
		(unsigned long long)stripe, oo.bg_gc ? "thread" : "inline");
	c.align = al;
	isz = ftl_set_image_size(&c, np, stripe);
	img = malloc(isz);
	for (uint32_t x = 0; x < NSECT; x++)
		push(x, 0);
	s = t_set_make(SIZE, al, np, stripe, true, &oo, &b);
	for (i = 0; i < rounds && !r && t_long_more(i, 200); i++) {
		int n = 1 + (int)(rnd() % 40);

		for (int j = 0; j < n && !r; j++) {
			uint64_t k;
			uint32_t len, off, x;

			pick_op(&k, &len, &off);
			if (k < 75) {
				uint32_t id = stamp_write(w, off, len);
				bool fua = k < 8;

				r = ftl_set_write(s, w, off, len,
						  fua ? FTL_FUA : 0);
				for (x = off / 512; !r && x < (off + len) / 512; x++) {
					push(x, id);
					if (fua)
						barrier(x);
				}
			} else if (k < 90) {
				r = k < 83 ? ftl_set_discard(s, off, len)
					   : ftl_set_write_zeroes(s, off, len);
				for (x = off / 512; !r && x < (off + len) / 512; x++)
					push(x, 0);
			} else {
				r = ftl_set_flush(s);
				for (x = 0; !r && x < NSECT; x++)
					barrier(x);
			}
			T_CHECK(r == 0, "seed %u: op %llu at %u+%u: %d", seed,
				(unsigned long long)k, off, len, r);
		}
		{
			uint64_t cs = (uint64_t)seed << 20 | (uint64_t)i;
			long p;

			kill_fsck(b, isz, img, cs);
			p = nand_mem_crash_image(b, cs, true, img);

			if (p > pend)
				pend = p;
			recover(img, isz, cs, rbuf);
		}
		if (t_failures)
			break;
	}
	fprintf(stderr, "%ld cuts, up to %ld backing writes pending\n", i,
		pend);
	t_long_covered("cuts", i, rounds);
	T_CHECK(pend > 0, "no cut had writes pending");
	ftl_set_close(s);
	t_set_drop(b);
	for (uint32_t x = 0; x < NSECT; x++)
		free(h[x].v);
	free(w);
	free(rbuf);
	free(img);
	return t_result();
}
