/* SPDX-License-Identifier: MIT */
/*
 * Background garbage collection (ftl_bggc.c, ftl_open_opts.bg_gc).
 * 1. Refill: a device overwritten with inline GC only (free blocks left
 *    below the high watermark), closed, reopened with the thread: with no
 *    host I/O at all, free blocks reach the high watermark within a
 *    generous timeout, the thread's counters moved, no writer collected,
 *    and every page reads back.
 * 2. Power cut inside the thread's GC: the k-th medium write the thread
 *    makes (k seeded, 1..16: relocations and erase rounds) takes a crash
 *    image (unsynced writes: a prefix or subset, one torn), the power goes
 *    off and the engine is abandoned (the thread joined); the image must
 *    open (roll-forward) with every flushed page intact.  12 rounds.
 * 3. Writers and the thread together: random overwrites, flushes, a
 *    crash after a flush, clean reopens, all with the thread on; every
 *    read matches a shadow copy.
 * 4. An error of the thread is not lost: an idle engine on a file whose
 *    descriptor is swapped for a read-only one (under the engine lock),
 *    the watermark raised so the thread has work: its program fails; with
 *    the writable descriptor back, the next host write returns that error
 *    (and writes nothing), the one after succeeds, gc_bg_errors counts it,
 *    and every flushed page still reads back after a clean reopen.  A
 *    read-only open with bg_gc starts no thread.
 * 5. Short steps: with 64-page blocks, a host write of a page of the
 *    thread's victim completes while that victim is half evacuated (a
 *    test hook between steps, not timing); the thread then finishes it.
 * 6. Host writes inside the thread's unlocked sync (GC-SIDE SYNC,
 *    ftl_gc.c): a hook after the backing's sync, before the thread takes
 *    the lock again, lets the test thread overwrite pages and write on
 *    (unsynced: each may be dropped or torn); after the thread's step
 *    more writes, then a power cut takes the crash image.  Every page must then read as its
 *    synced value or one of its later writes, never fail (EIO: a page
 *    vouched for as flushed that was not): the sync may claim only what
 *    was written before it (flushed_seq = seq0), never what the writers
 *    did in the window.  100 rounds, seeded.
 * 7. Room made while a writer waited for it: (a) collecting on a device
 *    that has room (free blocks at GC's target, nothing pending) is
 *    success, not ENOSPC; (b) with the thread paused (a step hook) and
 *    fixed GC batches (the throttle on), a writer at the reserve waits for
 *    room; another thread makes it (inline GC) and keeps f->lock past the
 *    writer's deadline, so its wait times out with room there.  The
 *    writer must go on writing, not collect (it found nothing to collect
 *    and failed with ENOSPC: make compare --aged under load, "critical
 *    space allocation error"; the write's own retries hid most of them).
 * 8. Paced writers (PACING, ftl_bggc.c): a slow backing sync (a hook in
 *    the thread's unlocked sync sleeps SLOW_SYNC_MS, as an fdatasync of a
 *    loaded disk does) and fixed GC batches; one writer overwrites at
 *    random on a full device.  At the end of each of the thread's syncs
 *    the hook counts whether a writer is waiting at the reserve for it
 *    (f->bggc.waiters: a write that stalled for a whole sync).  Unpaced,
 *    the writer ran through the free blocks above the reserve at memory
 *    speed and waited in nearly every sync (old code: 100 %); paced, the
 *    delays in proportion to the debt keep it above the reserve: at most
 *    a quarter of the syncs may end with a writer waiting.  Counts
 *    events, not latencies.
 * Seeded: OCTANT_SEED replays.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): the GC thread's
 * watermark and step hook (f->bggc), free blocks and its victim (f->idx,
 * f->gc).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftl-int.h"
#include "shadow.h"
#include "test.h"

#define SIZE   (8u << 20)
#define PAGES  (SIZE / 4096)

static uint64_t rs;
static uint8_t *shadow, *rbuf;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static const struct ftl_create_opts copts = { .size = SIZE,
	.align = FTL_ALIGN_1M, .pages_per_block = 8, .op_permille = 250 };

static struct ftl *open_on(struct nand_backing *b, bool bg)
{
	struct ftl_open_opts o = { .bg_gc = bg };
	struct ftl *f = NULL;
	int r;

	nand_mem_hold(b);
	r = ftl_open_backing(b, &o, &f);
	T_CHECK(r == 0, "open (bg_gc %d): %d", bg, r);
	if (r)
		exit(t_result());
	return f;
}

/* @n random 4 KiB overwrites (into the shadow too). */
static void overwrite(struct ftl *f, unsigned n)
{
	t_shadow_overwrite(f, &(struct t_shadow){ shadow, rbuf, PAGES, &rs }, n);
}

static bool verify(struct ftl *f, const char *when)
{
	return t_shadow_verify(f, &(struct t_shadow){ shadow, rbuf, PAGES, &rs },
			when);
}

static uint32_t nfree(struct ftl *f)
{
	uint32_t n;

	ftl_lock(&f->lock);
	n = f->idx.nfree;
	ftl_unlock(&f->lock);
	return n;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait on @cv (@mx held) for 10 ms at most. */
static void wait_10ms(pthread_cond_t *cv, pthread_mutex_t *mx)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 10000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(cv, mx, &ts);
}

/* Write whole device, then overwrite with inline GC until free blocks are
 * below the high watermark; flushed and closed clean. */
static struct nand_backing *prepare(void)
{
	struct nand_backing *b;
	struct ftl *f;

	T_CHECK(nand_backing_mem(ftl_test_image_size(&copts), true, &b) == 0,
		"mem");
	T_CHECK(ftl_create_backing(b, &copts) == 0, "create");
	f = open_on(b, false);
	T_CHECK(ftl_write(f, shadow, 0, SIZE, 0) == 0, "fill");
	overwrite(f, PAGES * 2);
	/* inline GC's victims depend on block ages (time): under load it can
	 * stop with free blocks above the high watermark; write on until not */
	int more = 0;
	for (; more < 8 && nfree(f) >= f->bggc.hi; more++)
		overwrite(f, PAGES / 2);
	fprintf(stderr, "inline GC only: %u free blocks, low watermark %u, "
		"high %u (%d more overwrite rounds)\n", nfree(f), f->gc.reserve,
		f->bggc.hi, more);
	T_CHECK(f->bggc.hi > f->gc.reserve + 1, "watermarks %u %u", f->gc.reserve,
		f->bggc.hi);
	T_CHECK(nfree(f) < f->bggc.hi, "precondition: %u free, below %u",
		nfree(f), f->bggc.hi);
	T_CHECK(ftl_close(f) == 0, "close");
	return b;
}

static void refill(void)
{
	struct nand_backing *b = prepare();
	struct ftl_stats a, z;
	struct ftl *f = open_on(b, true);
	uint32_t n = 0;
	int waited = 0;

	ftl_stats_get(f, &a);
	/* no host I/O: the thread alone must bring free blocks up */
	for (; waited < 30000; waited += 5) {
		n = nfree(f);
		if (n >= f->bggc.hi)
			break;
		nap_ms(5);
	}
	ftl_stats_get(f, &z);
	fprintf(stderr, "refill: %u free blocks after %d ms (high watermark "
		"%u); %llu victims, %llu erase rounds in the background\n", n,
		waited, f->bggc.hi, (unsigned long long)z.gc_bg_victims,
		(unsigned long long)z.gc_bg_erase_rounds);
	T_CHECK(n >= f->bggc.hi, "free blocks %u reached the high watermark %u",
		n, f->bggc.hi);
	T_CHECK(z.gc_bg_victims > 0, "background victims");
	T_CHECK(z.gc_bg_erase_rounds > 0, "background erase rounds");
	T_EQ_U64(z.gc_fg_runs, 0, "no writer collected");
	T_EQ_U64(z.gc_bg_errors, 0, "background errors");
	T_EQ_U64(z.host_write_sectors, a.host_write_sectors, "no host writes");
	T_CHECK(z.gc_relocations > a.gc_relocations, "pages relocated");
	verify(f, "after background GC");
	T_CHECK(ftl_close(f) == 0, "close");
	f = open_on(b, false);
	verify(f, "reopened");
	T_EQ_U64(z.nand_violations, 0, "nand violations");
	T_CHECK(ftl_close(f) == 0, "close");
	b->ops->destroy(b);
}

/* ---- 2: a power cut inside the thread's GC ------------------------------ */

struct cut {
	struct nand_backing *b;
	pthread_t main;
	uint64_t seed;
	int left;               /* the thread's writes before the cut */
	uint8_t *img;
	int fired;              /* atomic */
};

static void fire(void *ctx)
{
	struct cut *c = ctx;

	/* the mount's own writes (marker) come from the opening thread */
	if (pthread_equal(pthread_self(), c->main) || --c->left > 0) {
		nand_mem_set_trigger(c->b, 1, fire, c);
		return;
	}
	nand_mem_crash_image(c->b, c->seed, true, c->img);
	nand_mem_power_off(c->b);       /* nothing reaches the medium now */
	__atomic_store_n(&c->fired, 1, __ATOMIC_RELEASE);
}

/* The thread made room up to its high watermark and sleeps: it writes
 * nothing more without host writes. */
static bool thread_done(struct ftl *f)
{
	bool done;

	ftl_lock(&f->lock);
	done = !f->bggc.busy && f->gc.cur == FTL_NONE && !f->ck.due &&
	       f->idx.nfree >= f->bggc.hi;
	ftl_unlock(&f->lock);
	return done;
}

static void cut_in_gc(void)
{
	uint64_t isz = ftl_test_image_size(&copts);
	struct nand_backing *b = prepare(), *m;
	struct cut c = { .img = malloc(isz), .main = pthread_self() };
	int fired = 0, rounds = 0, inside = 0;

	for (int round = 0; round < 12 && !t_failures; round++) {
		struct ftl *f;
		bool done = false;
		int waited;

		c.b = b;
		if (round) {    /* the image left by the last round */
			f = open_on(b, false);
			T_CHECK(nfree(f) < f->bggc.hi, "round %d: %u free blocks, "
				"below %u", round, nfree(f), f->bggc.hi);
			T_CHECK(ftl_close(f) == 0, "close");
		}
		c.seed = rnd();
		c.left = 1 + (int)(rnd() % 16);
		__atomic_store_n(&c.fired, 0, __ATOMIC_RELAXED);
		nand_mem_set_trigger(b, 1, fire, &c);
		f = open_on(b, true);
		for (waited = 0; waited < 30000 && !done &&
		     !__atomic_load_n(&c.fired, __ATOMIC_ACQUIRE); waited += 2) {
			nap_ms(2);
			done = thread_done(f);
		}
		rounds++;
		if (done) {
			/* the thread reached its high watermark in fewer
			 * writes than the cut waited for (how many a round
			 * takes varies with the image the last cut left):
			 * cut now, after its last write */
			nand_mem_set_trigger(b, 0, NULL, NULL);
			if (!__atomic_load_n(&c.fired, __ATOMIC_ACQUIRE)) {
				nand_mem_crash_image(b, c.seed, true, c.img);
				nand_mem_power_off(b);
				__atomic_store_n(&c.fired, 1, __ATOMIC_RELEASE);
			} else {
				inside++;
			}
		} else if (__atomic_load_n(&c.fired, __ATOMIC_ACQUIRE)) {
			inside++;
		}
		fired = __atomic_load_n(&c.fired, __ATOMIC_ACQUIRE);
		T_CHECK(fired, "round %d: the GC thread made neither %d medium "
			"writes nor room up to its high watermark", round, c.left);
		ftl_abandon(f);                 /* joins the thread */
		nand_mem_set_trigger(b, 0, NULL, NULL);
		b->ops->destroy(b);             /* the test's reference */
		b = NULL;
		if (!fired)
			break;
		/* the image the cut left: every flushed page intact */
		T_CHECK(nand_backing_mem(isz, true, &m) == 0, "mem");
		nand_mem_load(m, c.img);
		b = m;
		f = open_on(b, false);
		if (!verify(f, "after a power cut inside background GC"))
			fprintf(stderr, "round %d: cut after the thread's write "
				"%llu\n", round, (unsigned long long)c.seed);
		/* more overwrites, inline, until space is low again for the next
		 * round (how much the cut kept of the thread's work varies) */
		for (int k = 0; k < 8 && (!k || nfree(f) >= f->bggc.hi); k++)
			overwrite(f, PAGES / 2);
		T_CHECK(ftl_close(f) == 0, "close");
	}
	/* most cuts land inside the thread's work, else the case is lost */
	T_CHECK(2 * inside >= rounds, "%d of %d cuts inside the GC thread's "
		"writes", inside, rounds);
	printf("cut in background GC: %d of %d rounds cut inside the thread's "
	       "writes, the rest after its last\n", inside, rounds);
	if (b)
		b->ops->destroy(b);
	free(c.img);
}

/* ---- 3: writers and the thread together --------------------------------- */

static void mixed(void)
{
	struct nand_backing *b;
	struct ftl_stats st;
	struct ftl *f;

	T_CHECK(nand_backing_mem(ftl_test_image_size(&copts), false, &b) == 0,
		"mem");
	T_CHECK(ftl_create_backing(b, &copts) == 0, "create");
	memset(shadow, 0, SIZE);
	f = open_on(b, true);
	for (int i = 0; i < 40 && !t_failures; i++) {
		unsigned k = (unsigned)(rnd() % 10);

		overwrite(f, (unsigned)(rnd() % PAGES));
		if (k < 6) {
			T_CHECK(ftl_flush(f) == 0, "flush");
		} else if (k < 8) {
			T_CHECK(ftl_close(f) == 0, "close");
			f = open_on(b, true);
			verify(f, "clean reopen");
		} else {
			T_CHECK(ftl_flush(f) == 0, "flush");
			ftl_abandon(f);
			f = open_on(b, true);
			verify(f, "after a crash");
		}
	}
	verify(f, "end");
	ftl_stats_get(f, &st);
	ftl_stats_print(&st, stderr, true);
	T_EQ_U64(st.nand_violations, 0, "nand violations");
	T_EQ_U64(st.gc_bg_errors, 0, "background errors");
	T_CHECK(ftl_close(f) == 0, "close");
	b->ops->destroy(b);
}

/* ---- 4: an error of the thread reaches the next host write -------------- */

static void thread_error(void)
{
	struct ftl_open_opts off = { 0 }, on = { .bg_gc = true };
	char path[] = "/tmp/octant-ftl-bggc-XXXXXX";
	int tfd = mkstemp(path), ro = -1, rw = -1, r;
	struct ftl_stats st;
	struct ftl *f = NULL;
	uint8_t w[4096];
	int waited;

	if (tfd < 0 || ftl_create(path, &copts) || ftl_open(path, &off, &f)) {
		T_CHECK(0, "error test: setup");
		goto out;
	}
	memset(shadow, 0, SIZE);
	overwrite(f, PAGES * 3);        /* enough garbage to collect */
	T_CHECK(ftl_close(f) == 0, "close");
	f = NULL;
	T_CHECK(ftl_open(path, &on, &f) == 0, "open with the thread");
	if (!f)
		goto out;
	for (waited = 0; waited < 30000 && nfree(f) < f->bggc.hi; waited += 5)
		nap_ms(5);              /* the thread idle at the watermark */
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ftl_lock(&f->lock);
	rw = dup(f->fd);
	T_CHECK(ro >= 0 && rw >= 0 && dup2(ro, f->fd) == f->fd, "swap fd");
	f->bggc.hi += 4;                  /* work for the thread */
	f->bggc.retry_seq = 0;
	pthread_cond_signal(&f->bggc.cv);
	ftl_unlock(&f->lock);
	for (waited = 0; waited < 30000; waited += 5) {
		ftl_stats_get(f, &st);
		if (st.gc_bg_errors)
			break;
		nap_ms(5);
	}
	T_EQ_U64(st.gc_bg_errors, 1, "the thread's error counted");
	ftl_lock(&f->lock);
	T_CHECK(dup2(rw, f->fd) == f->fd, "fd back");
	close(rw);                      /* its flock is f->fd's again */
	rw = -1;
	f->bggc.hi -= 4;
	ftl_unlock(&f->lock);
	memset(w, 0xa5, sizeof(w));
	ftl_stats_get(f, &st);
	r = ftl_write(f, w, 0, sizeof(w), 0);
	fprintf(stderr, "error test: the next host write returned %d\n", r);
	T_CHECK(r == -EBADF, "the thread's error (-EBADF) reaches the next "
		"host write: %d", r);
	{
		struct ftl_stats z;

		ftl_stats_get(f, &z);
		T_EQ_U64(z.host_write_sectors, st.host_write_sectors,
			 "... which wrote nothing");
	}
	r = ftl_write(f, w, 0, sizeof(w), 0);
	T_CHECK(r == 0, "the write after it: %d", r);
	memcpy(shadow, w, sizeof(w));
	T_CHECK(ftl_flush(f) == 0, "flush");
	verify(f, "after the thread's error");
	T_CHECK(ftl_close(f) == 0, "close");
	T_CHECK(ftl_open(path, &off, &f) == 0, "reopen");
	verify(f, "reopened after the thread's error");
	T_CHECK(ftl_close(f) == 0, "close");
	/* a read-only engine starts no thread, whatever the options say */
	on.readonly = true;
	f = NULL;
	T_CHECK(ftl_open(path, &on, &f) == 0, "read-only open");
	T_CHECK(f && !f->bggc.running, "no GC thread on a read-only engine");
	if (f)
		T_CHECK(ftl_close(f) == 0, "close");
	f = NULL;
out:
	if (f)
		ftl_close(f);
	if (ro >= 0)
		close(ro);
	if (rw >= 0)
		close(rw);
	if (tfd >= 0) {
		close(tfd);
		unlink(path);
	}
}

/* ---- 5: the thread releases f->lock inside a victim --------------------- */

struct half {
	pthread_mutex_t mx;
	pthread_cond_t cv;
	int state;              /* 0 wait, 1 a victim half evacuated, 2 the
	                           host write is done, 3 over */
	uint32_t v, lpn;
};

/* The GC thread, after a step (f->lock released): with its victim half
 * evacuated, hand a logical page still in it to the test thread and wait
 * until that thread's host write of it completed. */
static void half_hook(struct ftl *f, void *ctx)
{
	struct half *h = ctx;
	uint32_t v = f->gc.cur, lpn = FTL_NONE;

	if (v == FTL_NONE)
		return;
	pthread_mutex_lock(&h->mx);
	for (uint32_t l = 0; h->state == 0 && l < f->g.nlpn; l++) {
		uint32_t ppn = ftl_map_get(f, l);

		if (ppn != FTL_UNMAPPED && ppn / f->g.ppb == v &&
		    ppn % f->g.ppb >= f->gc.ev[1].pg) {
			lpn = l;
			break;
		}
	}
	if (lpn != FTL_NONE) {
		h->v = v;
		h->lpn = lpn;
		h->state = 1;
		pthread_cond_broadcast(&h->cv);
		while (h->state == 1)
			pthread_cond_wait(&h->cv, &h->mx);
	}
	pthread_mutex_unlock(&h->mx);
}

/*
 * Blocks of 64 pages, the thread on: its steps copy at most
 * FTL_GC_STEP_PAGES pages of a victim and release f->lock in between.  A
 * host write (from the test thread) of a page still in the thread's
 * victim completes while the victim is half evacuated; the thread then
 * finishes the victim (not copying that page) and reaches the watermark;
 * every page reads back, also after a clean reopen.
 */
static void half_evacuated(void)
{
	const struct ftl_create_opts big = { .size = SIZE,
		.align = FTL_ALIGN_1M, .pages_per_block = 64,
		.op_permille = 250 };
	struct half h = { .mx = PTHREAD_MUTEX_INITIALIZER,
			  .cv = PTHREAD_COND_INITIALIZER };
	struct nand_backing *b;
	struct ftl_stats z;
	struct ftl *f;
	uint8_t w[4096];
	int waited, st = 0;

	T_CHECK(nand_backing_mem(ftl_test_image_size(&big), false, &b) == 0,
		"mem");
	T_CHECK(ftl_create_backing(b, &big) == 0, "create");
	f = open_on(b, false);
	T_CHECK(ftl_write(f, shadow, 0, SIZE, 0) == 0, "fill");
	overwrite(f, PAGES);
	T_CHECK(ftl_close(f) == 0, "close");
	f = open_on(b, false);          /* the hook before the thread runs */
	f->bggc.step_hook = half_hook;
	f->bggc.step_ctx = &h;
	T_CHECK(f->bggc.hi > f->idx.nfree, "work for the thread: %u free, high "
		"watermark %u", f->idx.nfree, f->bggc.hi);
	T_CHECK(ftl_bggc_start(f) == 0, "start the thread");
	/* wait for a victim half evacuated, or the thread done without one */
	pthread_mutex_lock(&h.mx);
	for (waited = 0; waited < 30000 && h.state == 0; waited += 10) {
		wait_10ms(&h.cv, &h.mx);
		if (h.state == 0 && nfree(f) >= f->bggc.hi)
			break;          /* the thread is done */
	}
	st = h.state;
	pthread_mutex_unlock(&h.mx);
	T_CHECK(st == 1, "the GC thread released its lock with a victim half "
		"evacuated (state %d)", st);
	if (st == 1) {
		uint32_t ppn;

		for (size_t k = 0; k < sizeof(w); k += 8)
			*(uint64_t *)(w + k) = rnd();
		T_CHECK(ftl_write(f, w, (uint64_t)h.lpn * 4096, sizeof(w), 0) == 0,
			"a host write of a page of the half evacuated victim");
		memcpy(shadow + (size_t)h.lpn * 4096, w, sizeof(w));
		ftl_lock(&f->lock);
		ppn = ftl_map_get(f, h.lpn);
		T_CHECK(f->gc.cur == h.v && f->idx.state[h.v] == FTL_BLK_FULL,
			"the victim %u still the thread's, FULL", h.v);
		T_CHECK(ppn / f->g.ppb != h.v, "the page left the victim");
		ftl_unlock(&f->lock);
	}
	pthread_mutex_lock(&h.mx);
	h.state = 3;
	pthread_cond_broadcast(&h.cv);
	pthread_mutex_unlock(&h.mx);
	for (waited = 0; waited < 30000 && nfree(f) < f->bggc.hi; waited += 5)
		nap_ms(5);
	T_CHECK(nfree(f) >= f->bggc.hi, "the thread reached the watermark");
	ftl_lock(&f->lock);
	f->bggc.step_hook = NULL;
	ftl_unlock(&f->lock);
	ftl_stats_get(f, &z);
	T_EQ_U64(z.gc_bg_errors, 0, "background errors");
	T_EQ_U64(z.nand_violations, 0, "nand violations");
	ftl_lock(&f->lock);
	T_CHECK(ftl_idx_check(f) == 0, "block indexes");
	ftl_unlock(&f->lock);
	verify(f, "after a host write inside a victim");
	T_CHECK(ftl_close(f) == 0, "close");
	f = open_on(b, false);
	verify(f, "reopened");
	T_CHECK(ftl_close(f) == 0, "close");
	b->ops->destroy(b);
}

/* ---- 6: host writes inside the thread's unlocked sync, then a cut ------- */

struct win {
	pthread_mutex_t mx;
	pthread_cond_t cv;
	int state;              /* 0 wait, 1 the thread is in its sync, 2 the
	                           writes are done, 3 the cut was taken */
	uint64_t seed;
	uint8_t *img;
};

static void win_wait(struct win *w, int until, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (w->state < until &&
	       pthread_cond_timedwait(&w->cv, &w->mx, &ts) == 0)
		;
}

/* The GC thread inside its unlocked sync: hand over to the test thread
 * once, wait for its writes. */
static void win_sync_hook(struct ftl *f, void *ctx)
{
	struct win *w = ctx;

	(void)f;
	pthread_mutex_lock(&w->mx);
	if (w->state == 0) {
		w->state = 1;
		pthread_cond_broadcast(&w->cv);
		win_wait(w, 2, 30000);
	}
	pthread_mutex_unlock(&w->mx);
}

/* The GC thread after the step with that sync. */
static void win_step_hook(struct ftl *f, void *ctx)
{
	struct win *w = ctx;

	(void)f;
	pthread_mutex_lock(&w->mx);
	if (w->state == 2) {
		w->state = 3;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mx);
}

/* @n overwrites of pages not written yet this round, unsynced. */
static void win_writes(struct ftl *f, unsigned n, uint8_t *later, bool *wrote)
{
	uint8_t pg[4096];

	for (unsigned i = 0; i < n; i++) {
		uint64_t p = rnd() % PAGES;

		if (wrote[p])
			continue;
		for (size_t k = 0; k < sizeof(pg); k += 8)
			*(uint64_t *)(pg + k) = rnd();
		T_CHECK(ftl_write(f, pg, p * 4096, 4096, 0) == 0, "write");
		memcpy(later + p * 4096, pg, 4096);
		wrote[p] = true;
	}
}

static void cut_in_sync(void)
{
	uint64_t isz = ftl_test_image_size(&copts);
	struct nand_backing *b = prepare(), *m;
	struct win w = { .mx = PTHREAD_MUTEX_INITIALIZER,
			 .cv = PTHREAD_COND_INITIALIZER, .img = malloc(isz) };
	uint8_t *later = malloc(SIZE);          /* a page's later write */
	bool *wrote = calloc(PAGES, 1);
	int rounds = 0;

	for (int round = 0; round < 100 && !t_failures; round++) {
		struct ftl *f;
		int st;

		f = open_on(b, false);          /* hooks before the thread */
		for (int k = 0; k < 8 && nfree(f) >= f->bggc.hi; k++)
			overwrite(f, PAGES / 2);
		T_CHECK(ftl_flush(f) == 0, "flush");
		w.seed = rnd();
		w.state = 0;
		f->bggc.sync_hook = win_sync_hook;
		f->bggc.sync_ctx = &w;
		f->bggc.step_hook = win_step_hook;
		f->bggc.step_ctx = &w;
		T_CHECK(ftl_bggc_start(f) == 0, "start the thread");
		pthread_mutex_lock(&w.mx);
		win_wait(&w, 1, 30000);
		st = w.state;
		pthread_mutex_unlock(&w.mx);
		memset(wrote, 0, PAGES);
		if (st == 1) {
			/* overwrites, unsynced, while the thread is unlocked */
			win_writes(f, 8 + (unsigned)(rnd() % 24), later, wrote);
			rounds++;
		}
		pthread_mutex_lock(&w.mx);
		w.state = st == 1 ? 2 : 3;
		pthread_cond_broadcast(&w.cv);
		win_wait(&w, 3, 30000);
		st = w.state;
		pthread_mutex_unlock(&w.mx);
		T_CHECK(st == 3, "round %d: the thread's step ended", round);
		/* more writes, whose records vouch for what was flushed, then
		 * the cut (the thread excluded) */
		win_writes(f, 1 + (unsigned)(rnd() % 4), later, wrote);
		ftl_lock(&f->lock);
		nand_mem_crash_image(b, w.seed, true, w.img);
		nand_mem_power_off(b);
		ftl_unlock(&f->lock);
		ftl_abandon(f);
		b->ops->destroy(b);
		b = NULL;
		if (st != 3)
			break;
		T_CHECK(nand_backing_mem(isz, true, &m) == 0, "mem");
		nand_mem_load(m, w.img);
		b = m;
		f = open_on(b, false);
		{
			int r = ftl_read(f, rbuf, 0, SIZE);

			T_CHECK(r == 0, "round %d (seed %llu): read after the cut: "
				"%d", round, (unsigned long long)w.seed, r);
			for (uint32_t p = 0; !r && p < PAGES; p++) {
				uint8_t *got = rbuf + (size_t)p * 4096;

				if (!memcmp(got, shadow + (size_t)p * 4096, 4096))
					continue;
				if (wrote[p] && !memcmp(got, later + (size_t)p * 4096,
							4096)) {
					/* the later write survived: it is the
					 * page's value from now on */
					memcpy(shadow + (size_t)p * 4096, got, 4096);
					continue;
				}
				T_CHECK(0, "round %d (seed %llu): page %u neither "
					"its synced value nor its later write", round,
					(unsigned long long)w.seed, p);
				break;
			}
			if (r) {        /* go on from what can be read */
				for (uint32_t p = 0; p < PAGES; p++)
					ftl_read(f, shadow + (size_t)p * 4096,
						 (uint64_t)p * 4096, 4096);
			}
		}
		T_CHECK(ftl_close(f) == 0, "close");
	}
	fprintf(stderr, "cut in the thread's sync: %d rounds with writes in "
		"the window\n", rounds);
	T_CHECK(rounds > 0, "writes inside the thread's unlocked sync");
	if (b)
		b->ops->destroy(b);
	free(w.img);
	free(later);
	free(wrote);
}

/* ---- 7: room made while a writer waited for it ------------------------ */

struct late {
	pthread_mutex_t mx;
	pthread_cond_t cv;
	bool hold;              /* the GC thread stays in its step hook */
	bool in_hook;
	struct ftl *f;
	int stop;               /* atomic */
	int made;               /* times room was made under a waiter */
	int err;                /* ftl_gc_free_space's error, if any */
	uint64_t fg_after;      /* gc_fg_runs when the lock was let go */
	uint64_t fg_spurious;   /* writers' GC runs with room there */
	int writes;             /* atomic: the writer's completed writes */
};

static void late_hook(struct ftl *f, void *ctx)
{
	struct late *l = ctx;

	(void)f;
	pthread_mutex_lock(&l->mx);
	l->in_hook = true;
	pthread_cond_broadcast(&l->cv);
	while (l->hold)
		pthread_cond_wait(&l->cv, &l->mx);
	l->in_hook = false;
	pthread_mutex_unlock(&l->mx);
}

/* Another thread: when a writer waits for room at the reserve, make room
 * (inline GC, under f->lock, as the GC thread would) and keep the lock
 * past the writer's deadline (WAIT_NS, 50 ms).  Then count the writer's
 * GC runs until its write completes: with room there, none. */
static void *late_room(void *arg)
{
	struct late *l = arg;
	struct ftl *f = l->f;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE) && l->made < 3) {
		bool made = false;
		int w0 = 0;

		ftl_lock(&f->lock);
		if (f->bggc.waiters > 0 && f->idx.nfree <= f->gc.reserve) {
			int r = ftl_gc_free_space(f);

			if (r < 0) {
				l->err = r;
				ftl_unlock(&f->lock);
				break;
			}
			if (f->idx.nfree > f->gc.reserve) {
				nap_ms(150);
				made = true;
				l->made++;
				l->fg_after = f->ctr.m.gc_fg_runs;
				w0 = __atomic_load_n(&l->writes, __ATOMIC_ACQUIRE);
			}
		}
		ftl_unlock(&f->lock);
		if (!made) {
			nap_ms(1);
			continue;
		}
		/* the waiting write completes (it had room) */
		for (int k = 0; k < 5000 && w0 ==
		     __atomic_load_n(&l->writes, __ATOMIC_ACQUIRE); k++)
			nap_ms(1);
		ftl_lock(&f->lock);
		l->fg_spurious += f->ctr.m.gc_fg_runs - l->fg_after;
		ftl_unlock(&f->lock);
	}
	return NULL;
}

static void late_wait(void)
{
	struct late l = { .mx = PTHREAD_MUTEX_INITIALIZER,
			  .cv = PTHREAD_COND_INITIALIZER, .hold = true };
	struct ftl_open_opts o = { .gc_batch = 2 };
	struct nand_backing *b = prepare();
	struct ftl *f = NULL;
	pthread_t th;
	uint8_t w[4096];
	int r, n, fails = 0;

	/* (a) room there already: success, nothing done */
	f = open_on(b, false);
	ftl_lock(&f->lock);
	r = 0;
	for (int k = 0; k < 4 && r >= 0 && f->idx.nfree < f->gc.reserve + 2; k++)
		r = ftl_gc_free_space(f);
	T_CHECK(r >= 0 && f->idx.nfree >= f->gc.reserve + 2 && !f->gc.npend,
		"room made: %d, %u free, reserve %u, %u pending", r,
		f->idx.nfree, f->gc.reserve, f->gc.npend);
	n = (int)f->idx.nfree;
	r = ftl_gc_free_space(f);
	T_CHECK(r == 0 && (int)f->idx.nfree == n, "collecting with %d free "
		"blocks (reserve %u) and nothing pending: %d (not ENOSPC), %u "
		"free", n, f->gc.reserve, r, f->idx.nfree);
	ftl_unlock(&f->lock);
	T_CHECK(ftl_close(f) == 0, "close");

	/* (b) a writer's wait that times out with room there */
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, &o, &f) == 0, "open (gc_batch 2)");
	f->bggc.step_hook = late_hook;
	f->bggc.step_ctx = &l;
	T_CHECK(nfree(f) < f->bggc.hi, "work for the thread");
	T_CHECK(ftl_bggc_start(f) == 0, "start the thread");
	pthread_mutex_lock(&l.mx);
	for (int k = 0; k < 3000 && !l.in_hook; k++)
		wait_10ms(&l.cv, &l.mx);
	T_CHECK(l.in_hook, "the GC thread paused after a step");
	pthread_mutex_unlock(&l.mx);
	l.f = f;
	T_CHECK(pthread_create(&th, NULL, late_room, &l) == 0, "thread");
	for (n = 0; n < 4 * (int)PAGES && l.made < 3 && !l.err; n++) {
		uint64_t p = rnd() % PAGES;

		for (size_t k = 0; k < sizeof(w); k += 8)
			*(uint64_t *)(w + k) = rnd();
		r = ftl_write(f, w, p * 4096, sizeof(w), 0);
		if (r) {
			if (!fails++)
				T_CHECK(0, "write %d (page %llu) after room was made "
					"under its wait: %d", n,
					(unsigned long long)p, r);
		} else {
			memcpy(shadow + p * 4096, w, sizeof(w));
		}
		__atomic_fetch_add(&l.writes, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	fprintf(stderr, "room made under a waiting writer %d times in %d "
		"writes; the writers' GC runs with room there: %llu\n", l.made,
		n, (unsigned long long)l.fg_spurious);
	T_CHECK(l.err == 0, "making room: %d", l.err);
	T_CHECK(l.made > 0, "a writer waited at the reserve and room was made "
		"under its wait");
	T_EQ_U64(l.fg_spurious, 0, "writers' GC runs on a device with room");
	pthread_mutex_lock(&l.mx);
	l.hold = false;
	pthread_cond_broadcast(&l.cv);
	pthread_mutex_unlock(&l.mx);
	ftl_lock(&f->lock);
	f->bggc.step_hook = NULL;
	ftl_unlock(&f->lock);
	verify(f, "after room made under a waiting writer");
	T_CHECK(ftl_close(f) == 0, "close");
	f = open_on(b, false);
	verify(f, "reopened");
	T_CHECK(ftl_close(f) == 0, "close");
	b->ops->destroy(b);
}

#define SLOW_SYNC_MS 3

struct slow {
	int syncs, stalled;     /* the thread's syncs; ended with a waiter */
};

static void slow_sync_hook(struct ftl *f, void *ctx)
{
	struct slow *s = ctx;

	nap_ms(SLOW_SYNC_MS);
	s->syncs++;
	if (__atomic_load_n(&f->bggc.waiters, __ATOMIC_RELAXED))
		s->stalled++;
}

static void paced(void)
{
	struct ftl_open_opts o = { .gc_batch = 2 };
	struct nand_backing *b = prepare();
	struct slow s = { 0 };
	struct ftl *f = NULL;

	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, &o, &f) == 0, "open (gc_batch 2)");
	f->bggc.sync_hook = slow_sync_hook;
	f->bggc.sync_ctx = &s;
	T_CHECK(ftl_bggc_start(f) == 0, "start the thread");
	overwrite(f, 2 * PAGES);
	ftl_bggc_stop(f);
	fprintf(stderr, "paced writer: %d of the thread's %d slow syncs ended "
		"with a writer waiting at the reserve; %llu writes paced\n",
		s.stalled, s.syncs, (unsigned long long)f->ctr.m.gc_paced);
	T_CHECK(s.syncs >= 8, "the thread synced (%d times)", s.syncs);
	T_CHECK(s.stalled * 4 <= s.syncs, "%d of %d syncs ended with a writer "
		"stalled at the reserve (at most a quarter)", s.stalled, s.syncs);
	verify(f, "after paced writes");
	T_CHECK(ftl_close(f) == 0, "close");
	b->ops->destroy(b);
}

int main(void)
{
	rs = t_seed() | 1;
	shadow = malloc(SIZE);
	rbuf = malloc(SIZE);
	for (size_t k = 0; k < SIZE; k += 8)
		*(uint64_t *)(shadow + k) = rnd();
	refill();
	if (!t_failures)
		cut_in_gc();
	if (!t_failures)
		mixed();
	if (!t_failures)
		thread_error();
	if (!t_failures)
		half_evacuated();
	if (!t_failures)
		cut_in_sync();
	if (!t_failures)
		late_wait();
	if (!t_failures)
		paced();
	free(shadow);
	free(rbuf);
	return t_result();
}
