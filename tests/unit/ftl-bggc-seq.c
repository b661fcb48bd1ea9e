/* SPDX-License-Identifier: MIT */
/*
 * The GC thread leaves victims with no valid page to the writers while
 * syncs are cheap (ftl_bggc.c, bggc_inline_cheaper; issue 29 item 5): a
 * sequential overwrite of a full in-memory engine (gc.batch 1) with the
 * thread on.
 * 1. Two more passes over the full device in 128 KiB writes (4 blocks
 *    each), 1 ms apart (time for the thread to act): the thread takes at
 *    most one victim in 8 of the blocks the writes used (before the change
 *    it took nearly all: each block woke it; 3.7 context switches per 1M
 *    write on /dev/shm), the writers collected (gc_fg_runs moved).
 * 2. Then quiet: with no host I/O the thread still takes the empty
 *    victims and reaches the high watermark (bounded wait, 30 s).
 * 3. Every page reads back (seeded data), also after a clean reopen.
 * Seeded: OCTANT_SEED replays.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): free blocks, the
 * watermark, gc.batch.
 */
#include <string.h>
#include <time.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE   (8u << 20)
#define MIB    (1u << 20)
#define WR     (128u << 10)     /* the timed passes' write size */

static uint64_t rs;
static uint8_t *shadow, *rbuf;

static uint32_t nfree(struct ftl *f)
{
	uint32_t n;

	ftl_lock(&f->lock);
	n = f->idx.nfree;
	ftl_unlock(&f->lock);
	return n;
}

/* One pass of @len writes over the device, new data each (shadow too),
 * @nap_us apart. */
static void pass(struct ftl *f, uint32_t len, long nap_us)
{
	for (uint32_t off = 0; off < SIZE; off += len) {
		for (uint32_t k = 0; k < len; k += 8)
			*(uint64_t *)(shadow + off + k) = t_xorshift(&rs);
		if (ftl_write(f, shadow + off, off, len, 0)) {
			T_CHECK(0, "write at %u", off);
			exit(t_result());
		}
		if (nap_us)
			nanosleep(&(struct timespec){ 0, nap_us * 1000 }, NULL);
	}
}

static void verify(struct ftl *f, const char *when)
{
	int r = ftl_read(f, rbuf, 0, SIZE);

	T_CHECK(r == 0, "%s: read: %d", when, r);
	T_CHECK(!r && !memcmp(rbuf, shadow, SIZE), "%s: data differs", when);
}

int main(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 8, .op_permille = 250 };
	struct ftl_open_opts o = { .bg_gc = true };
	struct nand_backing *b;
	struct ftl_stats a, z;
	struct ftl *f = NULL;
	uint64_t blocks;
	int waited;

	rs = t_seed() | 1;
	shadow = malloc(SIZE);
	rbuf = malloc(SIZE);
	T_CHECK(shadow && rbuf, "malloc");
	T_CHECK(nand_backing_mem(ftl_test_image_size(&c), false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, &o, &f) == 0 && f, "open");
	if (t_failures)
		return t_result();
	T_CHECK(f->gc.batch <= 1, "precondition: syncs cheap (gc.batch %u)",
		f->gc.batch);
	pass(f, MIB, 0);                /* fresh */
	pass(f, MIB, 0);                /* full: GC from here on */
	ftl_stats_get(f, &a);
	pass(f, WR, 1000);
	pass(f, WR, 1000);
	ftl_stats_get(f, &z);
	blocks = 2ull * SIZE / ((uint64_t)f->g.ppb * f->g.ps);
	fprintf(stderr, "2 passes: %llu blocks written, the thread took %llu "
		"victims, writers collected %llu times\n",
		(unsigned long long)blocks,
		(unsigned long long)(z.gc_bg_victims - a.gc_bg_victims),
		(unsigned long long)(z.gc_fg_runs - a.gc_fg_runs));
	T_CHECK((z.gc_bg_victims - a.gc_bg_victims) * 8 <= blocks,
		"the thread took %llu victims of %llu blocks (at most 1 in 8)",
		(unsigned long long)(z.gc_bg_victims - a.gc_bg_victims),
		(unsigned long long)blocks);
	T_CHECK(z.gc_fg_runs > a.gc_fg_runs, "the writers collected");
	verify(f, "after the passes");
	/* quiet: the thread takes what the writers left */
	for (waited = 0; waited < 30000 && nfree(f) < f->bggc.hi; waited += 5)
		nanosleep(&(struct timespec){ 0, 5000000L }, NULL);
	fprintf(stderr, "quiet: %u free blocks after %d ms (high watermark %u)\n",
		nfree(f), waited, f->bggc.hi);
	T_CHECK(nfree(f) >= f->bggc.hi, "quiet: %u free blocks, high "
		"watermark %u", nfree(f), f->bggc.hi);
	verify(f, "quiet");
	T_CHECK(ftl_close(f) == 0, "close");
	nand_mem_hold(b);
	f = NULL;
	T_CHECK(ftl_open_backing(b, &o, &f) == 0 && f, "reopen");
	if (f) {
		verify(f, "reopened");
		T_CHECK(ftl_close(f) == 0, "close");
	}
	b->ops->destroy(b);
	free(shadow);
	free(rbuf);
	return t_result();
}
