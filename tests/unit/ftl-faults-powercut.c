/* SPDX-License-Identifier: MIT */
/*
 * Power cuts on a failing medium: factory bad blocks (a 1e-3 rate, and a
 * 2e-2 one so that some certainly exist), injected program and erase
 * failures (grown bad blocks, retired while the workload runs), and power
 * cuts after operations and inside them (in page programs, GC, erases,
 * checkpoints and bad-block table updates).  Every image a cut leaves must
 * open, and every sector must read as its newest flushed value or a newer
 * one: 0 flushed sectors lost.  The reopened engine runs on a failing
 * medium too.  Seeded (OCTANT_SEED); >= 2,000 cuts; OCTANT_LONG=1: up
 * to 10,000 within the long budget (test.h).
 * The two seeded runs go again with the background GC thread on the
 * workload engine (ftl_open_opts.bg_gc): cuts between operations hold the
 * engine's lock, cuts inside operations stay on the test's thread.
 * Without the thread a seed replays exactly: the engines' GC batch is
 * fixed (ftl_open_opts.gc_batch 1, what a quiet host learns from a
 * memory backing's sync).  Learnt, it followed the sync times of a
 * loaded host, and so did where the cuts inside operations fell and the
 * workload after them: the regression run of seed 1 (300 cuts) then
 * drew no program or erase failure in about 1 run of 40, on main and
 * branch alike (runs of seed 3590089889 and 2516591189: "failures
 * injected" failed with 0 of each).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE   (1u << 20)
#define NSECT  (SIZE / 512)

#include "sector-history.h"

static uint8_t *crash_img, *rbuf;
static struct nand_fault_spec spec;

/* Build the crash image for @seed, open it on a failing medium, check
 * every sector, write a little more. */
static void cut(struct nand_backing *b, uint64_t isz, uint64_t seed)
{
	struct nand_fault_spec s2 = spec;
	struct ftl_open_opts oo = { .faults = &s2, .gc_batch = 1 };
	struct nand_backing *m;
	struct ftl *g = NULL;
	int r;

	nand_mem_crash_image(b, seed, true, crash_img);
	if (nand_backing_mem(isz, false, &m))
		return;
	nand_mem_load(m, crash_img);
	s2.seed = seed;
	r = ftl_open_backing(m, &oo, &g);
	if (r) {
		T_CHECK(0, "seed %llu: open after power cut: %d",
			(unsigned long long)seed, r);
		m->ops->destroy(m);
		return;
	}
	r = ftl_read(g, rbuf, 0, SIZE);
	T_CHECK(r == 0, "seed %llu: read after power cut: %d",
		(unsigned long long)seed, r);
	if (!r)
		hist_verify(rbuf, seed);
	/* the recovered engine takes writes (or is read-only: spares gone) */
	for (int i = 0; i < 8 && !r; i++) {
		uint8_t w[4096];
		uint32_t off = (uint32_t)(rnd() % (SIZE / 4096)) * 4096;

		memset(w, 0, sizeof(w));
		r = ftl_write(g, w, off, sizeof(w), 0);
		T_CHECK(r == 0 || r == -EROFS, "seed %llu: write after "
			"recovery: %d", (unsigned long long)seed, r);
	}
	ftl_abandon(g);
}

struct trig {
	struct nand_backing *b;
	uint64_t isz, seed;
};
static struct trig tc;
static bool armed;
static int inside, done;
static bool bg;                 /* the workload engine runs the GC thread */
static pthread_t main_tid;

static void *fire_thread(void *ctx)
{
	struct trig *t = ctx;

	cut(t->b, t->isz, t->seed);
	return NULL;
}

/* Inside the engine's write to the medium: cut the power there (checked
 * on another thread: the interrupted one's scratch page is in use). */
static void fire(void *ctx)
{
	pthread_t th;

	if (!pthread_equal(pthread_self(), main_tid)) {
		/* the GC thread's write (f->lock held): the test thread may
		 * be updating the history now; cut at a later write of its */
		nand_mem_set_trigger(((struct trig *)ctx)->b, 1, fire, ctx);
		return;
	}
	if (pthread_create(&th, NULL, fire_thread, ctx) == 0)
		pthread_join(th, NULL);
	done++;
	inside++;
	armed = false;
}

/* The long mode's budget (test.h): run number @slot of 5 (the regression
 * seed's and four) has the @slot-th fifth of it, and does at least the
 * short mode's 1,000 cuts.  @cuts_want sums the cuts asked for. */
static int slot;
static long cuts_want;
/* Program and erase failures the workload engines drew, all runs: at the
 * rates here a run draws ~3 on average, and one can draw none (the fixed
 * seed-1 run did, once GC passed over blocks being emptied with one
 * frontier too: its workload took other victims); checked once, over
 * all of them, so that the injection is proven on. */
static uint64_t injected;

static void run(double bad_rate, int cuts, uint64_t seed0)
{
	struct ftl_create_opts c = { .size = SIZE, .pages_per_block = 8,
		.op_permille = 500, .align = FTL_ALIGN_ODD,
		.bad_block_rate = bad_rate, .bad_block_seed = seed0 };
	/* a fixed GC batch: the same workload for the same seed (above) */
	struct ftl_open_opts oo = { .faults = &spec, .bg_gc = bg,
				    .gc_batch = bg ? 0 : 1 };
	uint8_t *w = malloc(65536);
	struct nand_backing *b;
	struct ftl_stats st;
	struct ftl *f = NULL;
	uint64_t isz = ftl_test_image_size(&c);
	int start = done, goal = done + cuts, r;

	crash_img = malloc(isz);
	rbuf = malloc(SIZE);
	for (uint32_t s = 0; s < NSECT; s++) {
		h[s].n = 0;
		push(s, 0);
	}
	T_CHECK(nand_backing_mem(isz, true, &b) == 0, "mem");
	r = ftl_create_backing(b, &c);
	T_CHECK(r == 0, "create (bad-block rate %g): %d", bad_rate, r);
	nand_mem_hold(b);
	spec.seed = seed0;
	T_CHECK(ftl_open_backing(b, &oo, &f) == 0, "open");
	if (r || !f)
		goto out;
	slot++;
	cuts_want += cuts;
	while (done < goal && t_long_upto(done - start, 1000, slot, 5) &&
	       !t_failures) {
		uint64_t k;
		uint32_t len, off;

		pick_op(&k, &len, &off);
		if (k < 75) {
			bool fua = k < 5;
			uint32_t id = stamp_write(w, off, len);
			for (uint32_t s = off / 512; s < (off + len) / 512; s++)
				push(s, id);
			r = ftl_write(f, w, off, len, fua ? FTL_FUA : 0);
			if (r == -EROFS)
				break;          /* spares used up */
			T_CHECK(r == 0, "write: %d", r);
			for (uint32_t s = off / 512; fua && s < (off + len) / 512; s++)
				barrier(s);
		} else if (k < 83) {
			for (uint32_t s = off / 512; s < (off + len) / 512; s++)
				push(s, 0);
			r = ftl_discard(f, off, len);
			if (r == -EROFS)
				break;
			T_CHECK(r == 0, "discard: %d", r);
		} else if (k < 93) {
			T_CHECK(ftl_flush(f) == 0, "flush");
			for (uint32_t s = 0; s < NSECT; s++)
				barrier(s);
		}
		if (bg)                 /* the GC thread between two steps */
			ftl_test_hold(f, true);
		if (rnd() % 2) {
			cut(b, isz, seed0 * 1000003 + (uint64_t)done);
			done++;
		} else if (!armed) {
			tc = (struct trig){ b, isz, seed0 * 1000003 + (uint64_t)done };
			armed = true;
			nand_mem_set_trigger(b, 1 + rnd() % 24, fire, &tc);
		}
		if (bg)
			ftl_test_hold(f, false);
	}
	if (bg)
		ftl_test_hold(f, true);
	nand_mem_set_trigger(b, 0, NULL, NULL);
	if (bg)
		ftl_test_hold(f, false);
	armed = false;
	ftl_stats_get(f, &st);
	fprintf(stderr, "bad-block rate %g, GC %s: %d cuts (%d inside "
		"operations); ", bad_rate, bg ? "in the background" : "inline",
		done, inside);
	ftl_stats_print(&st, stderr, true);
	injected += st.program_fails + st.erase_fails;
	T_EQ_U64(st.nand_violations, 0, "violations");
	ftl_abandon(f);
out:
	b->ops->destroy(b);
	free(crash_img);
	free(rbuf);
	free(w);
}

int main(void)
{
	uint64_t seed0 = t_seed();
	int cuts = t_long() ? 5000 : 1000;
	char err[200];

	rs = seed0 | 1;
	main_tid = pthread_self();
	T_CHECK(nand_fault_parse("program=1e-3,erase=5e-3", &spec, err,
				 sizeof(err)) == 0, "%s", err);
	/* seed 1 once left the recovered engine without a free block after a
	 * failed program (ENOSPC for ever): a fixed regression case */
	if (!getenv("OCTANT_SEED")) {
		fprintf(stderr, "regression seed 1\n");
		rs = 1;
		run(1e-3, 300, 1);
		rs = seed0 | 1;
	}
	run(1e-3, cuts, seed0);
	run(2e-2, cuts, seed0 + 1);
	bg = true;
	rs = seed0 | 1;
	run(1e-3, cuts, seed0);
	run(2e-2, cuts, seed0 + 1);
	T_CHECK(injected > 0 || t_failures, "failures injected (all runs)");
	t_long_covered("cut points", done, cuts_want);
	for (uint32_t s = 0; s < NSECT; s++)
		free(h[s].v);
	return t_result();
}
