/* SPDX-License-Identifier: MIT */
/*
 * Background garbage collection: one thread per writable engine (opened
 * with ftl_open_opts.bg_gc) that keeps free blocks ready so host writers
 * do not relocate pages in their own critical section.
 *
 * Policy (free blocks, f->idx.nfree, counted in erase blocks):
 *   - low (critical) watermark = gc.reserve, the blocks only GC may take
 *     (FTL_GC_RESERVE, less on tiny devices; ftl_alloc).  A host write
 *     that needs a new block with nfree <= gc.reserve waits for the thread
 *     (ftl_bggc_throttle); it collects inline, as an engine without the
 *     thread always does (ftl_balance; counted as gc_fg_runs), only where
 *     syncs are nearly free (syncs_cheap), when the thread cannot help,
 *     or when it is stuck (STUCK_MS): the writer then waits, but is never
 *     refused space the thread has not made yet.
 *   - high watermark bggc.hi = gc.reserve + spare / 16, at least 2 and at
 *     most 32 above it, and at most spare - FTL_NSTREAMS - 1 (spare = data
 *     blocks beyond the logical size; free blocks beyond that cannot be
 *     had on a full device): on a 1 GiB device with 7 % OP (287 spare
 *     blocks) gc.reserve + 17; on the unit tests' devices of 8-12 spare
 *     blocks gc.reserve + 2, where inline GC stops too.  Held free blocks
 *     are over-provisioning GC cannot use, hence the small share.
 *   - pacing below bggc.hi (PACING, ftl_bggc_pace): each host write is
 *     delayed, f->lock released, in proportion to the thread's debt (the
 *     pages the host may still take before the reserve, against the
 *     span from hi down to it), up to PACE_MAX_NS a page at the reserve,
 *     each write sleeping to its own slot (TIMER_ABSTIME); at the reserve
 *     a writer waits for the thread as long as the thread can help
 *     (ftl_bggc_throttle), so the erase syncs and checkpoints stay on the
 *     thread's side.
 *   - a host write that finds nfree < hi signals the thread and goes
 *     on.  The thread, woken, takes f->lock for one step at a time (at
 *     most FTL_GC_STEP_PAGES of its victim's valid pages copied, one run;
 *     or one erase round: a sync, then every pending block erased) and
 *     releases it between steps, so writers interleave, also inside a
 *     victim, until nfree >= hi.  A victim half evacuated stays FULL
 *     and marked (f->gc.cur: no other GC picks it, unless a writer's
 *     inline GC finds nothing else) and is finished before the thread
 *     sleeps; host writes in between may supersede more of its pages.  Emptied victims wait for one
 *     erase round until gc.batch of them (the victims per sync the inline
 *     path learnt from what a sync costs: 1 on tmpfs, up to 16 on a disk)
 *     or free + pending reach hi: freed blocks come back promptly
 *     where a sync is cheap, and one sync serves several where it is not.
 *   - when no victim gains anything the thread sleeps until a block's
 *     worth of pages (ppb) has been written since (retry_seq); while a
 *     victim has no valid page and syncs are cheap (gc.batch 1) it
 *     sleeps too, and is not woken: the writer at the reserve erases it
 *     inline for less (bggc_inline_cheaper), unless the writers stay
 *     quiet for BGGC_QUIET_NS.
 *   - a checkpoint a step needs first (sequence room, -EAGAIN) is written
 *     by the thread, and so is one that came due (ck.due; writers take it
 *     only when out of sequence room or two intervals behind), its first
 *     sync with f->lock released; so are the syncs of its erase rounds
 *     (GC-SIDE SYNC, ftl_gc.c).
 *   - an error of the thread is remembered (err), counted
 *     (gc_bg_errors) and returned by the next host write; the thread does
 *     nothing more until a writer took it.  A worn-out engine (EROFS) ends
 *     the thread; writers collect inline from then on, as they must.
 *   - ftl_close and ftl_abandon stop and join the thread before the final
 *     checkpoint or the teardown: nothing is written after either.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "ftl-int.h"

/* Pause between two steps, lock released (see bggc_main). */
#define BGGC_PAUSE_NS 50000L
/* Writers that wrote nothing for this long leave an empty victim to the
 * thread (bggc_inline_cheaper). */
#define BGGC_QUIET_NS 50000000L
/* The thread's stack: GC and checkpoint frames need a few KiB. */
#define BGGC_STACK    (512u << 10)

/* Watermarks for this geometry (see above); gc.reserve is set. */
void ftl_bggc_marks(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;
	uint32_t spare = g->data_blocks - (g->nlpn + g->ppb - 1) / g->ppb;
	uint32_t extra = spare / 16, cap;

	if (extra < 2)
		extra = 2;
	if (extra > 32)
		extra = 32;
	f->bggc.hi = f->gc.reserve + extra;
	cap = spare > FTL_NSTREAMS + 1 ? spare - FTL_NSTREAMS - 1 : 0;
	if (f->bggc.hi > cap)
		f->bggc.hi = cap;
	if (f->bggc.hi < f->gc.reserve + 1)
		f->bggc.hi = f->gc.reserve + 1;
}

/* Syncs learnt nearly free (FTL_SYNC_FREE_MS: tmpfs, memory): a writer's own
 * GC costs less than waking the thread and waiting for its steps.  Not
 * gc.batch 1 alone (syncs under 0.5 ms): an ext4 file on a fast disk
 * syncs in 0.3-0.5 ms, and its writers then collected and synced
 * themselves (bench-engine latency 2026-12-06: ~250 writer GC runs a
 * round, p99 1.2 ms). */
static bool syncs_cheap(const struct ftl *f)
{
	return f->gc.batch <= 1 && !f->o.gc_batch && f->gc.sync_ms < FTL_SYNC_FREE_MS;
}

/* Syncs learnt nearly free (syncs_cheap) and a victim with no valid page: a
 * writer that reaches the reserve empties it inline (no copy, one cheap
 * sync: ftl_bggc_throttle, ftl_gc_free_space) for less than the thread
 * costs, so the thread leaves it to the writers while they write
 * (@quiet: they wrote nothing for BGGC_QUIET_NS, the thread takes it).
 * A sequential overwrite kept the thread stepping (a pause per step, a
 * drain of the writer's run, the lock: 2.9-3.9 context switches per 1M
 * write on /dev/shm, and as many preemptions of the writer; bench-engine
 * ctxsw). */
static bool bggc_inline_cheaper(const struct ftl *f, bool quiet)
{
	return !quiet && syncs_cheap(f) && !f->idx.lost && f->idx.vh[0].n;
}

/* Nothing to do: an error not reported yet, or enough free blocks (or
 * nothing gained lately, or nothing the writers do cheaper: @quiet, see
 * above) and no victim half evacuated. */
static bool bggc_idle(const struct ftl *f, bool quiet)
{
	return f->bggc.err || (f->gc.cur == FTL_NONE && !f->ck.due &&
			     (f->idx.nfree >= f->bggc.hi || f->log.seq < f->bggc.retry_seq ||
			      bggc_inline_cheaper(f, quiet)));
}

/* Wait on @cv (f->lock held), @ns at most: ETIMEDOUT, else 0. */
static int cv_wait_ns(struct ftl *f, pthread_cond_t *cv, long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ns;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ftl_cond_timedwait(cv, &f->lock, &ts);
}

/* The thread can make room for a writer: running, no error, not asleep
 * for want of a victim. */
static bool bggc_helps(const struct ftl *f)
{
	return f->bggc.running && !f->bggc.stop && !f->bb.worn_out &&
	       !bggc_idle(f, false);
}

/* A checkpoint that came due, written by the thread: the sync before it
 * with f->lock released (ftl_gc.c, GC-SIDE SYNC), so the checkpoint's own
 * first sync under the lock finds little left to flush. */
static int bggc_ckpt(struct ftl *f)
{
	int r = ftl_gc_sync_unlocked(f);

	if (!r && f->ck.due)            /* a writer may have written it */
		r = ftl_ckpt_write(f, false);
	return r;
}

static long pace_ns(const struct ftl *f, uint32_t pages);

static void *bggc_main(void *arg)
{
	struct ftl *f = arg;
	uint64_t quiet_seq = 0;         /* log.seq when the writers were
	                                   found quiet (quiet) */
	bool quiet = false;

	ftl_lock(&f->lock);
	while (!f->bggc.stop && !f->bb.worn_out) {
		bool hurry;
		int r;

		if (quiet && f->log.seq != quiet_seq)
			quiet = false;          /* they write again */
		if (bggc_idle(f, quiet)) {
			uint64_t seq = f->log.seq;

			f->bggc.busy = false;
			if (bggc_idle(f, true)) {
				ftl_cond_wait(&f->bggc.cv, &f->lock);
				continue;
			}
			/* idle for the writers' sake only: theirs unless
			 * they stay quiet */
			f->bggc.timed = true;
			r = cv_wait_ns(f, &f->bggc.cv, BGGC_QUIET_NS);
			f->bggc.timed = false;
			if (r == ETIMEDOUT && f->log.seq == seq) {
				quiet = true;
				quiet_seq = seq;
			}
			continue;
		}
		f->bggc.busy = true;
		f->bggc.step_ms = ftl_now_ms();
		r = f->ck.due ? bggc_ckpt(f) : ftl_gc_bg_step(f, f->bggc.hi);
		if (r == FTL_GC_WL_DUE)         /* after an erase round */
			r = ftl_wl_static(f);
		if (r == -EAGAIN)               /* sequence room: checkpoint */
			r = ftl_ckpt_write(f, false);
		if (r == 1 || r == -ENOSPC) {
			/* nothing to gain now: wait for more overwrites */
			f->bggc.retry_seq = f->log.seq + f->g.ppb;
		} else if (r) {
			f->bggc.err = r;
			CADD(f, m.gc_bg_errors, 1);
			ftl_gc_bg_drop(f);
		}
		f->bggc.step_ms = ftl_now_ms();
		pthread_cond_broadcast(&f->bggc.room); /* throttled writers */
		/* let writers waiting on the lock in: a writer woken by the
		 * unlock needs a moment to run, and a mutex is not fair (no
		 * pause while writers wait on room instead, or are paced:
		 * they need the next step sooner, and a pause of a loaded
		 * host is a wake-up behind the other runnable threads) */
		hurry = f->bggc.waiters > 0 || pace_ns(f, 1) > 0;
		ftl_unlock(&f->lock);
		if (f->bggc.step_hook)            /* tests: lock released */
			f->bggc.step_hook(f, f->bggc.step_ctx);
		if (!hurry)
			nanosleep(&(struct timespec){ 0, BGGC_PAUSE_NS }, NULL);
		ftl_lock(&f->lock);
	}
	ftl_gc_bg_drop(f);              /* a victim left half evacuated */
	f->bggc.busy = false;
	pthread_cond_broadcast(&f->bggc.room);
	ftl_unlock(&f->lock);
	return NULL;
}

/* Start the thread of a writable engine (before it is handed out), with
 * every signal blocked: the process's signals go to its own threads. */
int ftl_bggc_start(struct ftl *f)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int r;

	if (f->readonly || f->bggc.running)
		return 0;
	f->bggc.stop = false;
	r = pthread_attr_init(&attr);
	if (r)
		return -r;
	/* serve locks every mapping (mlockall): not a default 8 MiB stack */
	r = pthread_attr_setstacksize(&attr, BGGC_STACK);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!r)
		r = pthread_create(&f->bggc.thread, &attr, bggc_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r)
		return -r;
	f->bggc.running = true;
	return 0;
}

/* Stop and join the thread (no host call may run): it finishes its step,
 * then writes nothing more.  Idempotent. */
void ftl_bggc_stop(struct ftl *f)
{
	FTL_ASSERT_NOT_HELD(&f->lock);
	if (!f->bggc.running)
		return;
	ftl_lock(&f->lock);
	f->bggc.stop = true;
	pthread_cond_signal(&f->bggc.cv);
	ftl_unlock(&f->lock);
	pthread_join(f->bggc.thread, NULL);
	f->bggc.running = false;
}

int ftl_bggc_poke(struct ftl *f)
{
	int r = f->bggc.err;

	FTL_ASSERT_HELD(&f->lock);
	if (r) {
		f->bggc.err = 0;
		return r;
	}
	/* a thread asleep for want of work (not the writers' sake: timed)
	 * is woken for any, also a victim the writers would take, which it
	 * then waits on with a timeout */
	if (f->bggc.running && !f->bggc.busy &&
	    !bggc_idle(f, !f->bggc.timed))
		pthread_cond_signal(&f->bggc.cv);
	return 0;
}


/*
 * PACING (f2fs's balance_fs, RocksDB's delayed writes).  On a disk file
 * the thread frees blocks in bursts: a batch of victims, then one sync of
 * the loaded disk (tens of ms, more under writeback) that frees nothing
 * until it ends.  Unpaced, a writer ran through the free blocks between
 * hi and the reserve at page-cache speed and then waited out a whole sync
 * at the reserve: p50 8 us, p99.9 30-110 ms, max 0.1-0.5 s
 * (bench-engine latency; 1.3 % of the writes waited at the reserve, 16 ms
 * each on average, the writes' total time nearly all theirs).  Paced,
 * each host write of @pages below hi waits
 *     max * pages * debt / span   (at most PACE_TURN_NS a call)
 * with f->lock released, max = half the sync learnt (gc.sync_ms), at
 * least PACE_MAX_MIN_NS and at most PACE_MAX_NS (2 ms until 2026-12-06:
 * on a fast disk, 0.2-0.5 ms a sync, the writers then settled with hi
 * nearly reached, the thread idled while they wrote a block unpaced,
 * then paced them up to 2 ms a page: p99 1.2 ms, 10-15 % less
 * throughput), span = (hi - reserve) blocks of pages, debt =
 * span - the pages the host may still take before the reserve (free
 * blocks above it, the room left in the host frontier's block): nothing
 * while the thread keeps up, more the further it falls behind, so the
 * writers settle where their pace meets the thread's and a sync is
 * spread over many short delays instead of one writer's whole wait.
 * Only with syncs that are not nearly free (syncs_cheap) and a thread
 * that can help (bggc_helps); the GC debt itself is the only input: a
 * thread that is not behind costs nothing.  Each paced write sleeps
 * until its own slot: the writers' slots (bggc.pace_slot, one sequence
 * for the engine, on CLOCK_MONOTONIC) follow one another by the delays,
 * and a writer sleeps to its slot with clock_nanosleep(TIMER_ABSTIME),
 * so a wake-up that comes late is taken from the next sleep instead of
 * added to the writers' pace (a slot already past is credit, at most
 * PACE_CREDIT_NS, whose writes do not sleep).  Until 2026-12-06 a writer
 * owed its delays and slept once they reached 1 ms: most writes took
 * 10 us and every ~5th a few ms (p99 3 ms; bench-engine latency).
 */
#define PACE_MAX_MIN_NS 500000L
#define PACE_MAX_NS    2000000L
#define PACE_TURN_NS   20000000L
#define PACE_CREDIT_NS 2000000L

/* The delay for @pages host pages now (f->lock held), ns. */
static long pace_ns(const struct ftl *f, uint32_t pages)
{
	const struct ftl_stream *h = &f->log.st[STREAM_HOST];
	uint64_t span = (uint64_t)(f->bggc.hi - f->gc.reserve) * f->g.ppb;
	uint64_t room = 0, ns, max;

	if (syncs_cheap(f) || f->idx.nfree >= f->bggc.hi || !bggc_helps(f))
		return 0;
	if (f->idx.nfree > f->gc.reserve)
		room = (uint64_t)(f->idx.nfree - f->gc.reserve) * f->g.ppb;
	if (h->blk != FTL_NONE && h->wp < f->g.ppb)
		room += f->g.ppb - h->wp;
	if (room >= span)
		return 0;
	max = (uint64_t)(f->gc.sync_ms * 1e6 / 2);
	max = max < PACE_MAX_MIN_NS ? PACE_MAX_MIN_NS :
	      max > PACE_MAX_NS ? PACE_MAX_NS : max;
	ns = max * (span - room) / span * (pages ? pages : 1);
	return ns < PACE_TURN_NS ? (long)ns : PACE_TURN_NS;
}

bool ftl_bggc_pacing(const struct ftl *f, uint32_t pages)
{
	FTL_ASSERT_HELD(&f->lock);
	return pace_ns(f, pages) != 0;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ftl_bggc_pace(struct ftl *f, uint32_t pages)
{
	struct timespec ts;
	int64_t now;
	long ns;

	FTL_ASSERT_HELD(&f->lock);
	ns = pace_ns(f, pages);
	if (!ns)
		return 0;
	CADD(f, m.gc_paced, 1);
	now = mono_ns();
	if (f->bggc.pace_slot < now - PACE_CREDIT_NS)
		f->bggc.pace_slot = now - PACE_CREDIT_NS;
	f->bggc.pace_slot += ns;
	if (f->bggc.pace_slot <= now)
		return 0;               /* credit: an earlier sleep ran late */
	ts.tv_sec = f->bggc.pace_slot / 1000000000;
	ts.tv_nsec = f->bggc.pace_slot % 1000000000;
	if (!f->bggc.busy)
		pthread_cond_signal(&f->bggc.cv);
	ftl_unlock(&f->lock);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	ftl_lock(&f->lock);
	return 1;
}

/*
 * Throttle (f->lock held, a writer about to open a host block), when the
 * thread's syncs were not learnt nearly free (syncs_cheap: a disk file): at
 * the reserve the writer waits for the thread to make room, as long as
 * the thread can (bggc_helps); above it the pacing has done its part.  A
 * writer never collects, syncs, erases or checkpoints while the thread
 * makes room: those stay on the thread's side (GC-SIDE SYNC, ftl_gc.c),
 * however long its sync takes (a writer's own sync would wait behind it),
 * unless the thread is stuck outside its sync: it began and ended no step
 * for STUCK_MS (a test's hook holding it; a host that did not run it for
 * that long).  Until 2026-12-06 a writer collected itself after WAIT_NS
 * (50 ms) without a step: ~50 fdatasyncs a round of bench-engine latency
 * on the writer's path, each a write of tens of ms.
 * 0: room, go on; 1: at the reserve and no thread to wait for (collect
 * inline); 2: f->lock was let go: decide again.
 */
#define WAIT_NS     50000000L
#define STUCK_MS    1000.0

/* Wait for the thread's next step, @ns at most: ETIMEDOUT, else 0. */
static int room_wait(struct ftl *f, long ns)
{
	int r;

	if (!f->bggc.busy) {            /* asleep, woken now: not stuck */
		pthread_cond_signal(&f->bggc.cv);
		f->bggc.step_ms = ftl_now_ms();
	}
	f->bggc.waiters++;
	r = cv_wait_ns(f, &f->bggc.room, ns);
	f->bggc.waiters--;
	return r;
}

/* The thread began or ended no step for STUCK_MS, and is not in its
 * sync (where a writer's own sync would only wait behind it). */
static bool bggc_stuck(const struct ftl *f)
{
	return !f->gc.syncing && ftl_now_ms() - f->bggc.step_ms >= STUCK_MS;
}

int ftl_bggc_throttle(struct ftl *f, unsigned *waits)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	if (syncs_cheap(f) || f->idx.nfree > f->gc.reserve)
		return f->idx.nfree <= f->gc.reserve;
	if (!bggc_helps(f))
		return 1;
	CADD(f, m.gc_throttled, 1);
	r = room_wait(f, WAIT_NS);
	/* a wait can time out after the thread made room: it held f->lock
	 * past the deadline (a step under load).  Decide again then: a
	 * writer that collected on a device with room found nothing to
	 * collect and failed with ENOSPC (make compare --aged, 1 run in 6
	 * under load: "critical space allocation error" on loop0) */
	if (r == ETIMEDOUT && f->idx.nfree <= f->gc.reserve && bggc_stuck(f))
		return 1;
	++*waits;
	return 2;
}

int ftl_bggc_ckpt_wait(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	if (!f->bggc.running || f->bggc.stop || f->bggc.err || f->bb.worn_out ||
	    bggc_stuck(f))
		return 1;
	room_wait(f, WAIT_NS);
	return 0;
}
