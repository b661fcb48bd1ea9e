/* SPDX-License-Identifier: MIT */
/*
 * Power-cut simulator.  The engine runs a random workload (writes of
 * 512 B..64 KiB, aligned and not, FUA, flushes, discards) on a memory
 * backing that logs every write since the last sync.  At seeded cut
 * points the image a power cut would leave is built: all synced writes,
 * then a prefix or an arbitrary subset of the later ones, one of them torn
 * (page programs, OOB writes, erases and checkpoint pages alike).  The
 * engine opens that image (roll-forward) and every sector must read as its
 * newest flushed/FUA value or a newer one: never older, torn or garbage.
 * The recovered engine must then take writes (64 x 4 KiB).  At every cut
 * point the image a kill -9 would leave there (every write so far, whole)
 * must look like a clean stop or an unclean one, never like damage: no
 * checkpoint taken for damaged, and fsck (every 4th) exit 0, as after
 * the kill -9 cycles of the integration tests.  >= 2,000 cut
 * points with a fresh seed normally; with OCTANT_LONG=1, >= 10,000 per seed
 * over the once-failing seeds and OCTANT_SEEDS fresh ones.  OCTANT_DUMP=FILE
 * saves the image of the first failing cut.  Every seed runs twice: GC
 * inline in the writer, then with the background GC thread
 * (ftl_open_opts.bg_gc) on the workload engine; cuts between operations
 * then hold the engine's lock (the thread between two steps: its unsynced
 * relocations and erases are in the crash image), cuts inside operations
 * stay on the test's own thread (the oracle's history is not locked).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "image-fsck.h"
#include "test.h"

#define SIZE   (1u << 20)
#define NSECT  (SIZE / 512)

#include "sector-history.h"

static uint8_t *crash_img, *kill_img, *rbuf;
static int kill_fscks;
static bool dumped;
static bool bg;                 /* the workload engine runs the GC thread */
static pthread_t main_tid;

/*
 * A crash after a crash: on the recovered engine @g (its backing @m logs
 * writes too), the state just read is durable (the mount wrote a
 * checkpoint); a few more unflushed writes, then another power cut.
 */
static void second_cut(struct ftl *g, struct nand_backing *m, uint64_t isz,
		       uint64_t seed)
{
	static uint32_t base[NSECT], late[NSECT];
	uint8_t w[8192], *img = malloc(isz);
	struct nand_backing *m2;
	struct ftl *g2 = NULL;

	for (uint32_t s = 0; s < NSECT; s++) {
		int64_t id = decode(rbuf + (size_t)s * 512, s);
		base[s] = late[s] = (uint32_t)id;
	}
	for (int i = 0; i < 6; i++) {
		uint32_t len = (uint32_t)(1 + rnd() % 16) * 512;
		uint32_t off = (uint32_t)(rnd() % ((SIZE - len) / 512 + 1)) * 512;
		uint32_t id = stamp_write(w, off, len);
		if (ftl_write(g, w, off, len, 0)) {
			T_CHECK(0, "seed %llu: write after recovery failed",
				(unsigned long long)seed);
			break;
		}
		for (uint32_t s = off / 512; s < (off + len) / 512; s++)
			late[s] = id;   /* only the newest matters here */
	}
	nand_mem_crash_image(m, seed ^ 0x5555, true, img);
	if (nand_backing_mem(isz, false, &m2) == 0) {
		nand_mem_load(m2, img);
		T_CHECK(ftl_open_backing(m2, NULL, &g2) == 0, "second open");
		if (g2 && ftl_read(g2, rbuf, 0, SIZE) == 0) {
			for (uint32_t s = 0; s < NSECT; s++) {
				int64_t id = decode(rbuf + (size_t)s * 512, s);
				bool ok = id == base[s] || (id >= 0 &&
					  (uint32_t)id > base[s] && (uint32_t)id <= late[s]);
				if (!ok) {
					T_CHECK(0, "seed %llu: second crash: sector %u "
						"reads %lld, flushed %u", (unsigned long long)seed,
						s, (long long)id, base[s]);
					break;
				}
			}
		}
		if (g2)
			ftl_abandon(g2);
		else
			m2->ops->destroy(m2);
	}
	free(img);
}

/* The recovered engine must take writes: 64 x 4 KiB over the device
 * (recovery once left 0 free blocks: ENOSPC for ever, or a stream's write
 * pointer off by one: EIO). */
static void write_after(struct ftl *g, uint64_t seed)
{
	uint8_t w[4096];
	int r = 0;

	memset(w, 0x5a, sizeof(w));
	for (uint32_t i = 0; i < 64 && !r; i++)
		r = ftl_write(g, w, (uint64_t)(rnd() % (SIZE / 4096 - 1)) * 4096,
			      sizeof(w), 0);
	if (!r)
		r = ftl_flush(g);
	T_CHECK(r == 0, "seed %llu: write after recovery: %d",
		(unsigned long long)seed, r);
}

/* The image a kill -9 would leave now: a stop, clean or not, never
 * damage (an open that takes no checkpoint for damaged; fsck exit 0 for
 * every 4th @seed).  A kill in a resize left both (ftl-grow.c). */
static void kill_check(struct nand_backing *b, uint64_t isz, uint64_t seed)
{
	struct ftl_open_opts ro = { .readonly = true };
	struct nand_backing *m;
	struct ftl *g = NULL;
	char *rep;
	int r;

	nand_mem_kill_image(b, kill_img);
	if (nand_backing_mem(isz, false, &m))
		return;
	nand_mem_load(m, kill_img);
	r = ftl_open_backing(m, &ro, &g);
	T_CHECK(r == 0 && !g->mnt.ckpt_fallback, "seed %llu: a kill -9 "
		"here: open %d, a checkpoint taken for damaged %d",
		(unsigned long long)seed, r, r ? -1 : g->mnt.ckpt_fallback);
	if (r)
		m->ops->destroy(m);
	else
		ftl_abandon(g);
	if (seed % 4)
		return;
	r = t_fsck_image(T_FSCK_ENGINE, kill_img, isz, &rep);
	T_CHECK(r == 0, "seed %llu: a kill -9 here: fsck %d: %s",
		(unsigned long long)seed, r, rep ? rep : "");
	free(rep);
	kill_fscks++;
}

/* Build the crash image for @seed, open it, check every sector. */
static void cut(struct nand_backing *b, uint64_t isz, uint64_t seed,
		int *pending_max)
{
	struct nand_backing *m;
	struct ftl *g = NULL;
	long n;
	int r;

	kill_check(b, isz, seed);
	n = nand_mem_crash_image(b, seed, true, crash_img);
	if (n > *pending_max)
		*pending_max = (int)n;
	if (nand_backing_mem(isz, seed % 8 == 0, &m))
		return;
	nand_mem_load(m, crash_img);
	r = ftl_open_backing(m, NULL, &g);
	if (r) {
		T_CHECK(0, "seed %llu: open after power cut: %d",
			(unsigned long long)seed, r);
		m->ops->destroy(m);
		return;
	}
	r = ftl_read(g, rbuf, 0, SIZE);
	T_CHECK(r == 0, "read after power cut");
	if (!r)
		hist_verify(rbuf, seed);
	if (!t_failures && seed % 8 == 0)
		second_cut(g, m, isz, seed);
	else if (!t_failures)
		write_after(g, seed);
	ftl_abandon(g);
	if (t_failures && getenv("OCTANT_DUMP") && !dumped) {
		/* the image this cut left, for a regression case */
		FILE *d = fopen(getenv("OCTANT_DUMP"), "wb");
		dumped = d && fwrite(crash_img, 1, isz, d) == isz;
		if (d)
			fclose(d);
		fprintf(stderr, "crash image of cut %llu %s %s\n",
			(unsigned long long)seed, dumped ? "written to" :
			"could not be written to", getenv("OCTANT_DUMP"));
	}
}

struct trig {
	struct nand_backing *b;
	uint64_t isz, seed0;
	int *done, *pmax;
};
static struct trig tc;
static bool armed;
static int inside;

static void *fire_thread(void *ctx)
{
	struct trig *t = ctx;

	cut(t->b, t->isz, t->seed0 * 1000003 + (uint64_t)*t->done, t->pmax);
	return NULL;
}

/* Runs inside the engine's write to the medium: cut the power there.  The
 * check runs on another thread (as another process would): the engine's
 * per-thread scratch page is in use by the interrupted operation. */
static void fire(void *ctx)
{
	struct trig *t = ctx;
	pthread_t th;

	if (!pthread_equal(pthread_self(), main_tid)) {
		/* the GC thread's write (f->lock held): the test thread may
		 * be updating the history now; cut at a later write of its */
		nand_mem_set_trigger(t->b, 1, fire, ctx);
		return;
	}

	if (pthread_create(&th, NULL, fire_thread, t) == 0)
		pthread_join(th, NULL);
	(*t->done)++;
	inside++;
	armed = false;
}

/* The long mode's budget (test.h): run number @slot of @nslots gets the
 * next 1/@nslots of it; @cuts_done and @cuts_want sum up what ran. */
static int slot, nslots = 1;
static long cuts_done, cuts_want;

/* One run: a workload of its own, cut @cuts times over two rounds (odd,
 * 1m), at least @floor times in the long mode whatever its budget.  The
 * cut seeds are seed0 * 1000003 + the cut's number. */
static void run(uint64_t seed0, int cuts, int floor)
{
	struct ftl_create_opts c = { .size = SIZE, .pages_per_block = 8,
		.op_permille = 250 };
	struct ftl_open_opts oo = { .bg_gc = bg };
	int done = 0, pmax = 0;
	uint8_t *w = malloc(65536);
	struct nand_backing *b;
	struct ftl_stats st;
	struct ftl *f = NULL;
	uint64_t isz;

	fprintf(stderr, "seed %llu: %d cut points, GC %s (replay: "
		"OCTANT_SEED=%llu)\n", (unsigned long long)seed0, cuts,
		bg ? "in the background thread" : "inline",
		(unsigned long long)seed0);
	rs = seed0 | 1;
	next_id = 1;
	inside = 0;
	for (int round = 0; round < 2 && !t_failures; round++) {
		c.align = round ? FTL_ALIGN_1M : FTL_ALIGN_ODD;
		isz = ftl_test_image_size(&c);
		crash_img = malloc(isz);
		kill_img = malloc(isz);
		rbuf = malloc(SIZE);
		for (uint32_t s = 0; s < NSECT; s++) {
			h[s].n = 0;
			push(s, 0);
		}
		T_CHECK(nand_backing_mem(isz, true, &b) == 0, "mem");
		T_CHECK(ftl_create_backing(b, &c) == 0, "create");
		nand_mem_hold(b);
		T_CHECK(ftl_open_backing(b, &oo, &f) == 0, "open");
		int d0 = done;

		for (int op = 0; done < cuts * (round + 1) / 2 && !t_failures &&
		     t_long_upto(done - d0, floor / 2, 2 * slot + round + 1,
				 2 * nslots); op++) {
			uint64_t k;
			uint32_t len, off;

			pick_op(&k, &len, &off);
			/* the history gets new values before the operation starts
			 * (a cut inside it may show them), barriers after it */
			if (k < 75) {
				bool fua = k < 5;
				uint32_t id = stamp_write(w, off, len);
				for (uint32_t s = off / 512; s < (off + len) / 512; s++)
					push(s, id);
				T_CHECK(ftl_write(f, w, off, len, fua ? FTL_FUA : 0) == 0,
					"write");
				for (uint32_t s = off / 512; fua && s < (off + len) / 512; s++)
					barrier(s);
			} else if (k < 83) {
				for (uint32_t s = off / 512; s < (off + len) / 512; s++)
					push(s, 0);
				T_CHECK(ftl_discard(f, off, len) == 0, "discard");
			} else if (k < 93) {
				T_CHECK(ftl_flush(f) == 0, "flush");
				for (uint32_t s = 0; s < NSECT; s++)
					barrier(s);
			}
			/* cut points: after an operation, or (armed here) right
			 * after one of the next few writes to the medium, i.e.
			 * inside a page program, GC, erase or checkpoint */
			if (bg)         /* the GC thread between two steps */
				ftl_test_hold(f, true);
			if (rnd() % 2) {
				cut(b, isz, seed0 * 1000003 + (uint64_t)done, &pmax);
				done++;
			} else if (!armed) {
				tc = (struct trig){ b, isz, seed0, &done, &pmax };
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
		fprintf(stderr, "%d cut points inside operations\n", inside);
		ftl_stats_get(f, &st);
		fprintf(stderr, "%s: %d cut points so far, up to %d writes pending "
			"at a cut; ", round ? "1m" : "odd", done, pmax);
		ftl_stats_print(&st, stderr, true);
		T_CHECK(st.gc_relocations > 0 && st.ckpt_writes > 4,
			"GC and checkpoints ran");
		T_EQ_U64(st.nand_violations, 0, "violations");
		ftl_abandon(f);
		b->ops->destroy(b);
		free(crash_img);
		free(kill_img);
		free(rbuf);
	}
	cuts_done += done;
	cuts_want += cuts;
	slot++;
	free(w);
}

/*
 * A fresh seed per run (OCTANT_SEED replays one).  The long mode runs the
 * seeds that once failed (4242: cut 5450 recovered to 0 free blocks;
 * 4: cut 4007492 reopened a block with its write pointer off by one),
 * then OCTANT_SEEDS (default 4) fresh ones.  The long budget (test.h) is
 * shared out evenly between the runs: the once-failing seeds run their
 * 10,000 cuts whole with GC inline (where they failed; past cuts 5450 and
 * 7480) in the plain build, every other run at least the short mode's
 * 2,000, and a fresh seed whose share of the budget is already spent is
 * left out.  Under ASan a cut took 40 ms at load 13 (7,000 cuts in 295 s),
 * the two whole runs alone some 13 minutes, past the runner's timeout at
 * load 25: there the once-failing seeds run within the budget like the
 * others.
 */
#ifdef __SANITIZE_ADDRESS__
#define FIXED_WHOLE 0
#else
#define FIXED_WHOLE 1
#endif
int main(void)
{
	static const unsigned fixed[] = { 4242, 4 };
	const char *ns = getenv("OCTANT_SEEDS");
	int cuts = t_long() ? 10000 : 2000;
	bool replay = getenv("OCTANT_SEED") && *getenv("OCTANT_SEED");
	unsigned seed0 = t_seed();
	int nseeds = ns && *ns ? atoi(ns) : 4;

	int nfixed = sizeof(fixed) / sizeof(fixed[0]);

	main_tid = pthread_self();
	if (t_long() && !replay)
		nslots = 2 * (nfixed + (nseeds > 1 ? nseeds : 1));
	for (int pass = 0; pass < 2 && !t_failures; pass++) {
		bg = pass;
		run(seed0, cuts, 2000);
		for (int i = 0; t_long() && !replay && i < nfixed &&
		     !t_failures; i++)
			run(fixed[i], cuts, !pass && FIXED_WHOLE ? cuts : 2000);
		for (int i = 1; t_long() && !replay && i < nseeds &&
		     !t_failures; i++) {
			if (t_long_upto(0, 0, slot + 1, nslots))
				run(t_seed_fresh(), cuts, 2000);
			else
				slot++;         /* its share is spent */
		}
	}
	fprintf(stderr, "kill -9 images: every cut point opened, %d fscked\n",
		kill_fscks);
	t_long_covered("cut points", cuts_done, cuts_want);
	for (uint32_t s = 0; s < NSECT; s++)
		free(h[s].v);
	return t_result();
}
