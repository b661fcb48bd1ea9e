/* SPDX-License-Identifier: MIT */
/*
 * No sync on the host writer's path while the GC thread makes room
 * (ftl_bggc.c, ftl_bggc_throttle; issue 31 item 3).
 *
 * A full device on a memory backing behind a wrapper that counts the
 * backing's syncs by the thread that calls them, fixed GC batches (the
 * throttle on, as on a disk file where a sync is expensive), the GC
 * thread started.  A step hook holds the thread for SLOW_STEP_MS after
 * every eighth step, lock released (a thread the host did not run for a
 * while, or a slow victim read): longer than a writer's single wait at
 * the reserve (WAIT_NS, 50 ms), much shorter than a stuck thread
 * (STUCK_MS, 1 s).  One writer overwrites pages at random.  The writer
 * must never call the backing's sync itself (no erase round, no
 * checkpoint of its own, gc_fg_runs 0) while the thread syncs many times;
 * every page reads back, also after a clean reopen.  The old code let a
 * writer whose wait ended with no step collect inline and sync on its own
 * path (bench-engine latency: ~50 fdatasyncs a round on the writer).
 * Seeded: OCTANT_SEED replays.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-int.h"
#include "shadow.h"
#include "test.h"

#define SIZE         (8u << 20)
#define PAGES        (SIZE / 4096)
#define SLOW_STEP_MS 80

static uint64_t rs;
static uint8_t *shadow, *rbuf;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

/* ---- a backing that counts syncs by thread ------------------------------ */

struct counting {
	struct nand_backing b;
	struct nand_backing *in;
	pthread_t writer;
	int writer_syncs, other_syncs;  /* atomic */
};

static struct nand_backing *inner(struct nand_backing *b)
{
	return ((struct counting *)b)->in;
}

static int c_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	return inner(b)->ops->pread(inner(b), buf, len, off);
}

static int c_pwrite(struct nand_backing *b, const void *buf, size_t len,
		    uint64_t off)
{
	return inner(b)->ops->pwrite(inner(b), buf, len, off);
}

static int c_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	return inner(b)->ops->punch(inner(b), off, len);
}

static int c_sync(struct nand_backing *b)
{
	struct counting *c = (struct counting *)b;

	if (pthread_equal(pthread_self(), c->writer))
		__atomic_fetch_add(&c->writer_syncs, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&c->other_syncs, 1, __ATOMIC_RELAXED);
	return c->in->ops->sync(c->in);
}

static void c_destroy(struct nand_backing *b)
{
	inner(b)->ops->destroy(inner(b));       /* a reference (hold) */
}

static int c_preadv(struct nand_backing *b, const struct iovec *iov, int cnt,
		    uint64_t off)
{
	return inner(b)->ops->preadv(inner(b), iov, cnt, off);
}

static int c_pwritev(struct nand_backing *b, const struct iovec *iov, int cnt,
		     uint64_t off)
{
	return inner(b)->ops->pwritev(inner(b), iov, cnt, off);
}

static const struct nand_backing_ops counting_ops = {
	.pread = c_pread, .pwrite = c_pwrite, .punch = c_punch, .sync = c_sync,
	.destroy = c_destroy, .preadv = c_preadv, .pwritev = c_pwritev,
};

/* ---- the test ----------------------------------------------------------- */

static const struct ftl_create_opts copts = { .size = SIZE,
	.align = FTL_ALIGN_1M, .pages_per_block = 8, .op_permille = 250 };

/* @n random 4 KiB overwrites (into the shadow too). */
static void overwrite(struct ftl *f, unsigned n)
{
	t_shadow_overwrite(f, &(struct t_shadow){ shadow, rbuf, PAGES, &rs }, n);
}

static void verify(struct ftl *f, const char *when)
{
	(void)t_shadow_verify(f, &(struct t_shadow){ shadow, rbuf, PAGES, &rs },
			when);
}

struct slow {
	int steps;
};

/* The GC thread after a step, f->lock released: every fourth one slow. */
static void slow_step(struct ftl *f, void *ctx)
{
	struct slow *s = ctx;

	(void)f;
	if (++s->steps % 8 == 0)
		nanosleep(&(struct timespec){ 0, SLOW_STEP_MS * 1000000L }, NULL);
}

int main(void)
{
	uint64_t isz = ftl_test_image_size(&copts);
	struct ftl_open_opts plain = { 0 }, o = { .gc_batch = 2 };
	static struct counting cb;
	struct counting *c = &cb;
	struct slow s = { 0 };
	struct ftl *f = NULL;

	rs = t_seed() | 1;
	shadow = malloc(SIZE);
	rbuf = malloc(SIZE);
	for (size_t k = 0; k < SIZE; k += 8)
		*(uint64_t *)(shadow + k) = rnd();
	T_CHECK(nand_backing_mem(isz, false, &c->in) == 0, "mem");
	c->b.ops = &counting_ops;
	c->writer = pthread_self();
	T_CHECK(ftl_create_backing(c->in, &copts) == 0, "create");
	nand_mem_hold(c->in);
	T_CHECK(ftl_open_backing(c->in, &plain, &f) == 0, "open (inline GC)");
	T_CHECK(ftl_write(f, shadow, 0, SIZE, 0) == 0, "fill");
	overwrite(f, 2 * PAGES);        /* GC steady state, inline */
	T_CHECK(ftl_close(f) == 0, "close");

	nand_mem_hold(c->in);
	T_CHECK(ftl_open_backing_sized(&c->b, isz, &o, &f) == 0,
		"open (gc_batch 2) on the counting backing");
	f->bggc.step_hook = slow_step;
	f->bggc.step_ctx = &s;
	T_CHECK(ftl_bggc_start(f) == 0, "start the thread");
	__atomic_store_n(&c->writer_syncs, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->other_syncs, 0, __ATOMIC_RELAXED);
	overwrite(f, PAGES / 2);
	ftl_bggc_stop(f);
	fprintf(stderr, "syncs while the thread ran: %d by the writer, %d by "
		"the thread; %d steps, %llu throttled waits, %llu writer GC "
		"runs\n", c->writer_syncs, c->other_syncs, s.steps,
		(unsigned long long)f->ctr.m.gc_throttled,
		(unsigned long long)f->ctr.m.gc_fg_runs);
	T_CHECK(c->other_syncs >= 8, "the thread synced (%d times)",
		c->other_syncs);
	T_CHECK(f->ctr.m.gc_throttled > 0, "the writer waited at the reserve");
	T_EQ_U64(c->writer_syncs, 0, "syncs on the writer's thread");
	T_EQ_U64(f->ctr.m.gc_fg_runs, 0, "the writer's own GC runs");
	T_EQ_U64(f->ctr.m.gc_bg_errors, 0, "background errors");
	verify(f, "after the writes");
	T_CHECK(ftl_close(f) == 0, "close");
	nand_mem_hold(c->in);
	T_CHECK(ftl_open_backing(c->in, &plain, &f) == 0, "reopen");
	verify(f, "reopened");
	T_CHECK(ftl_close(f) == 0, "close");
	c->in->ops->destroy(c->in);
	free(shadow);
	free(rbuf);
	return t_result();
}
