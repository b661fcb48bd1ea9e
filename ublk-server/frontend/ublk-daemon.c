/* SPDX-License-Identifier: MIT */
/*
 * Per-I/O daemons (the driver's UBLK_F_PER_IO_DAEMON, Linux 6.16 and later;
 * 7.3 grants it to every device): a queue is served by n daemons, each one
 * thread with its own io_uring that fetches the tags idx, idx + n, ... (the
 * driver binds each tag to the task that fetched it), runs every request
 * it gets on the engine and commits it itself.  No hand-off between
 * threads (the ring thread + workers of ublk-queue.c cost a futex wake and
 * an eventfd write per write request), and up to n requests of one queue
 * run on the engine at once, reads included (one fio job sends everything
 * to one queue).  Where the driver lacks it (6.1, 6.12) the queue keeps its
 * ring thread and workers (ublk-queue.c).
 *
 * Order: every request is answered after the engine call that serves it
 * returned, so a FLUSH the block layer sends after a write's answer finds
 * that write on the engine, whichever daemon ran it; requests in flight
 * together are unordered (the engine's range locks keep each whole), as in
 * ublk-queue.c.
 *
 * Zero copy (UBLK_F_AUTO_BUF_REG, 6.16 and later): the driver no longer
 * copies between the request's pages and the tag's buffer with
 * copy_to_user / copy_from_user; it registers the request's pages as a
 * buffer of the daemon's io_uring (index = tag) before it hands the request
 * over, and unregisters them at the commit.  The tag buffers are a memfd,
 * mapped; the daemon moves a write's data from the request into its tag's
 * part of the memfd with one io_uring WRITE_FIXED, and a read's data the
 * other way with READ_FIXED: a copy between kernel pages (the kernel's
 * memcpy), which under QEMU's TCG costs a fraction of the driver's
 * `rep movsb` copy to or from user space (docs/ublk.md).  The engine still
 * computes every page's CRC32C over the bytes it stores and checks it on
 * every read, over the tag buffer as before: the buffer is the server's
 * own (the memfd is never shared), written by the kernel before the copy's
 * completion and by nothing else until the commit.  Flush, discard and
 * write-zeroes carry no data and are served as in copy mode.
 *
 * Short requests by user copy (UBLK_F_USER_COPY granted beside
 * AUTO_BUF_REG: 7.3 asks for both, ublk_ctrl_add_flags): io_uring cannot
 * write a memfd (tmpfs) without blocking (shmem has no FMODE_NOWAIT), so
 * every WRITE_FIXED (and READ_FIXED) of it is punted to an io-wq worker,
 * a context switch or two per request, which for a 4 KiB write costs more
 * than the copy it saves (docs/ublk.md).  A request of at most
 * UBLK_ZC_UCOPY_MAX bytes therefore moves by pread (a write's data into
 * the tag's buffer) or pwrite (a read's out of it) on /dev/ublkcN at the
 * request's user-copy position, synchronously in the daemon, which owns
 * the tag (the driver then takes no reference); larger ones keep the
 * io_uring copies.  The engine sees the same tag buffer either way.
 *
 * Threads: the queue's thread (ublk-queue.c) is daemon 0; it starts the
 * others and joins them at the end.  Every daemon blocks every signal and
 * is an IO flusher, as the ring thread is.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ublk-int.h"

/* Daemons per queue by default: one.  Two let two requests of one queue
 * run on the engine at once, but a queue's daemons then take turns on the
 * engine's lock for every short write: in a 7.3 guest, per fresh 4 KiB
 * write, 110-180 us of the daemons' CPU waiting on f->lock (futex sleeps
 * and wake-ups) with two, 5-10 us with one; fresh 4K randwrite 1.11-1.72x
 * of two, 4K randread 0.91-1.36x, 1M read 0.58-1.19x (its page CRCs no
 * longer on two CPUs at once), four boots (docs/ublk.md, "One daemon per
 * queue").  OCTANT_UBLK_DAEMONS=N sets N. */
#define UBLK_Q_DAEMONS 1u
#define UBLK_Q_DAEMONS_MAX 16u

/* user_data: the tag, and this bit for a copy (READ_FIXED / WRITE_FIXED) */
#define D_COPY (1ULL << 32)

/* Requests up to this many bytes move by user copy where the device has
 * it (q->zc_ucopy): 4 KiB writes measured under docs/ublk.md ("Short
 * zero-copy requests by user copy"); sizes between it and 1 MiB were not. */
#define UBLK_ZC_UCOPY_MAX (16u * 1024)

/* OCTANT_UBLK_DAEMONS: "queue" (the ring thread and its workers), a count
 * of daemons per queue (1..UBLK_Q_DAEMONS_MAX), or unset (the default).
 * *n = 0 for "queue"; -1 unset or not understood (said once). */
static int d_env_count(void)
{
	static int warned;
	const char *e = getenv("OCTANT_UBLK_DAEMONS");
	char *end;
	long v;

	if (!e || !*e)
		return -1;
	if (!strcmp(e, "queue"))
		return 0;
	v = strtol(e, &end, 10);
	if (*end || v < 1 || v > (long)UBLK_Q_DAEMONS_MAX) {
		if (!warned++)
			fprintf(stderr, "ublk-flash: OCTANT_UBLK_DAEMONS=%s: not "
				"\"queue\" nor 1..%u; ignored\n", e,
				UBLK_Q_DAEMONS_MAX);
		return -1;
	}
	return (int)v;
}

int ublk_daemons_setup(struct ublk_dev *d, struct ublk_queue *q)
{
	uint64_t flags = d->info.flags;
	int n = d_env_count();
	size_t len = (size_t)q->depth * d->buf_size;
	char name[32];
	void *p;

	/* A device with zero copy speaks only that protocol, whoever asked
	 * for it (--recover of another server's device): daemons then, one
	 * per queue at least.  Without per-I/O daemons one daemon fetches
	 * every tag, as a ring thread does. */
	q->zc = flags & UBLK_FEAT(AUTO_BUF_REG);
	q->zc_ucopy = q->zc && (flags & UBLK_FEAT(USER_COPY));
	if (n < 0)
		n = UBLK_Q_DAEMONS;
	if (!(flags & UBLK_FEAT(PER_IO_DAEMON)))
		n = q->zc ? 1 : 0;
	if (q->zc && !n)
		n = 1;
	if ((unsigned)n > q->depth)
		n = (int)q->depth;
	q->ndaemons = (unsigned)n;
	if (n) {
		q->daemons = calloc((size_t)n, sizeof(*q->daemons));
		if (!q->daemons)
			return -ENOMEM;
	}
	if (!q->zc)
		return 0;
	snprintf(name, sizeof(name), "ublk-flash-zc-q%u", q->id);
	q->zc_fd = memfd_create(name, MFD_CLOEXEC);
	if (q->zc_fd < 0)
		return -errno;
	if (ftruncate(q->zc_fd, (off_t)len) < 0)
		return -errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		 q->zc_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	q->bufs = p;
	return 0;
}

void ublk_daemons_free(struct ublk_queue *q)
{
	if (q->zc_fd >= 0) {
		if (q->bufs)
			munmap(q->bufs, (size_t)q->depth * q->dev->buf_size);
		q->bufs = NULL;
		close(q->zc_fd);
	}
	q->zc_fd = -1;
	free(q->daemons);
	q->daemons = NULL;
}

/* Answer @tag with @res: COMMIT_AND_FETCH_REQ. */
static int d_commit(struct ublk_daemon *dm, unsigned tag, int res)
{
	int ret = ublk_q_prep(dm->q, &dm->ring, UBLK_IO_COMMIT_AND_FETCH_REQ,
			      tag, res);

	if (!ret)
		dm->inflight++;
	return ret;
}

/* Queue the copy of request @tag's @len bytes between its registered
 * pages and its part of the memfd: READ_FIXED fills the request (@out),
 * WRITE_FIXED reads it. */
static int d_copy(struct ublk_daemon *dm, unsigned tag, unsigned len, bool out)
{
	struct ublk_queue *q = dm->q;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&dm->ring);
	uint64_t off = (uint64_t)tag * q->dev->buf_size;

	if (!sqe) {
		io_uring_submit(&dm->ring);
		sqe = io_uring_get_sqe(&dm->ring);
		if (!sqe)
			return -EBUSY;
	}
	/* the buffer's address is the offset in the request: 0 */
	if (out)
		io_uring_prep_read_fixed(sqe, q->zc_fd, NULL, len, off, (int)tag);
	else
		io_uring_prep_write_fixed(sqe, q->zc_fd, NULL, len, off, (int)tag);
	sqe->user_data = D_COPY | tag;
	dm->inflight++;
	dm->copies++;
	return 0;
}

static unsigned d_len(const struct ublk_queue *q, unsigned tag)
{
	return q->iods[tag].nr_sectors * FTL_SECTOR;
}

/* Move @len bytes of request @tag by user copy (@in: the request's data
 * into its tag buffer): 0, or -EIO said once per call. */
static int d_ucopy(struct ublk_queue *q, unsigned tag, unsigned len, bool in)
{
	int r = ublk_q_ucopy(q, tag, ublk_q_buf(q, tag), len, in, 0);

	if (r)
		fprintf(stderr, "ublk-flash: ublk queue %u tag %u: user copy "
			"of a %s: %s\n", q->id, tag, in ? "write" : "read",
			strerror(-r));
	return r ? -EIO : 0;
}

/* Request @tag arrived: serve it, or start its copy in (a zero-copy
 * write) or out (a zero-copy read, once the engine filled the buffer);
 * a short one's copy is a user copy, done here. */
static int d_start(struct ublk_daemon *dm, unsigned tag)
{
	struct ublk_queue *q = dm->q;
	unsigned op = ublksrv_get_op(&q->iods[tag]), len = d_len(q, tag);
	bool ucopy = q->zc_ucopy && len <= UBLK_ZC_UCOPY_MAX;
	int res;

	if (q->zc && len > q->dev->buf_size &&
	    (op == UBLK_IO_OP_READ || op == UBLK_IO_OP_WRITE))
		return d_commit(dm, tag, -EINVAL);
	if (q->zc && op == UBLK_IO_OP_WRITE && !ucopy)
		return d_copy(dm, tag, len, false);
	if (q->zc && op == UBLK_IO_OP_WRITE) {
		res = d_ucopy(q, tag, len, true);
		if (res)
			return d_commit(dm, tag, res);
	}
	res = ublk_q_handle(q, tag, ublk_q_buf(q, tag));
	if (q->zc && op == UBLK_IO_OP_READ && res > 0 && !ucopy)
		return d_copy(dm, tag, (unsigned)res, true);
	if (q->zc && op == UBLK_IO_OP_READ && res > 0 &&
	    d_ucopy(q, tag, (unsigned)res, false))
		res = -EIO;
	return d_commit(dm, tag, res);
}

/* The copy of request @tag ended with @res: answer a read, serve a write. */
static int d_copied(struct ublk_daemon *dm, unsigned tag, int res)
{
	struct ublk_queue *q = dm->q;
	unsigned len = d_len(q, tag);

	if (res != (int)len) {
		fprintf(stderr, "ublk-flash: ublk queue %u tag %u: zero-copy "
			"%s: %s\n", q->id, tag,
			ublksrv_get_op(&q->iods[tag]) == UBLK_IO_OP_READ ?
			"read" : "write",
			res < 0 ? strerror(-res) : "short copy");
		return d_commit(dm, tag, -EIO);
	}
	if (ublksrv_get_op(&q->iods[tag]) == UBLK_IO_OP_READ)
		return d_commit(dm, tag, res);
	return d_commit(dm, tag, ublk_q_handle(q, tag, ublk_q_buf(q, tag)));
}

static int d_fetch_all(struct ublk_daemon *dm)
{
	int n = ublk_q_fetch_tags(dm->q, &dm->ring, dm->idx, dm->q->ndaemons);

	if (n < 0)
		return n;
	dm->inflight += (unsigned)n;
	return 0;
}

/* Serve until every tag is retired (a fetch answered UBLK_IO_RES_ABORT:
 * the device was stopped) and no copy is left: 0, or -errno.  Draining
 * (QUIESCE_DEV: a live upgrade, ublk.c) ends once no copy is left: the
 * fetches the last commits re-armed are never answered (the driver
 * requeues new requests), the ring's exit cancels them; every request
 * this daemon got was answered (served inline, or after its copy). */
static int d_loop(struct ublk_daemon *dm)
{
	struct ublk_queue *q = dm->q;
	struct io_uring_cqe *cqe;
	unsigned head, n;
	int ret, err = 0;

	while (((dm->inflight > 0 && !dm->draining) || dm->copies > 0) && !err) {
		ret = io_uring_submit_and_wait(&dm->ring, 1);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		n = 0;
		io_uring_for_each_cqe(&dm->ring, head, cqe) {
			unsigned tag = (unsigned)(cqe->user_data & 0xffff);
			int res = cqe->res;

			n++;
			dm->inflight--;
			if (tag >= q->depth) {
				ret = -EIO;
			} else if (cqe->user_data & D_COPY) {
				dm->copies--;
				ret = d_copied(dm, tag, res);
			} else if (res == UBLK_IO_RES_OK) {
				ret = d_start(dm, tag);
			} else if (res == UBLK_IO_RES_ABORT) {
				ret = 0;        /* retired, or quiesced */
				dm->draining |= __atomic_load_n(&q->dev->quiescing,
								__ATOMIC_ACQUIRE);
			} else {
				fprintf(stderr, "ublk-flash: ublk queue %u tag %u: "
					"%s\n", q->id, tag, strerror(-res));
				ret = res < 0 ? res : -EIO;
			}
			if (ret && !err)
				err = ret;
		}
		io_uring_cq_advance(&dm->ring, n);
	}
	if (dm->draining && !err)   /* the last answers reach the driver */
		io_uring_submit(&dm->ring);
	return err;
}

/* Record daemon @dm's progress under q->wlock and wake daemon 0. */
static void d_report(struct ublk_daemon *dm, bool *what, int err)
{
	struct ublk_queue *q = dm->q;

	pthread_mutex_lock(&q->wlock);
	if (what)
		*what = true;
	if (err && !dm->err)
		dm->err = err;
	pthread_cond_broadcast(&q->wcond);
	pthread_mutex_unlock(&q->wlock);
}

/* Wait until every daemon has @off (a field offset: armed or fetched)
 * set, or failed or ended: 0, or the first failure. */
static int d_wait_all(struct ublk_queue *q, size_t off)
{
	int err = 0;

	pthread_mutex_lock(&q->wlock);
	for (unsigned i = 0; i < q->ndaemons; i++) {
		struct ublk_daemon *dm = &q->daemons[i];
		bool *flag = (bool *)((char *)dm + off);

		while (!*flag && !dm->err && !dm->ended)
			pthread_cond_wait(&q->wcond, &q->wlock);
		if (!err && (dm->err || !*flag))
			err = dm->err ? dm->err : -EIO;
	}
	pthread_mutex_unlock(&q->wlock);
	return err;
}

/* Daemon @dm's ring (and, with zero copy, its sparse table for the
 * requests' pages), reported as armed: 0 or -errno. */
static int d_arm(struct ublk_daemon *dm)
{
	struct ublk_queue *q = dm->q;
	int ret;

	/* COOP_TASKRUN: completions are run when we enter the kernel anyway
	 * (we always wait there), so the driver need not interrupt us. */
	ret = io_uring_queue_init(q->depth, &dm->ring, IORING_SETUP_COOP_TASKRUN);
	if (ret == -EINVAL)
		ret = io_uring_queue_init(q->depth, &dm->ring, 0);
	dm->ring_ok = ret == 0;
	if (!ret && q->zc)
		ret = io_uring_register_buffers_sparse(&dm->ring, q->depth);
	d_report(dm, &dm->armed, ret);
	return ret;
}

static void d_unarm(struct ublk_daemon *dm)
{
	if (dm->ring_ok)
		io_uring_queue_exit(&dm->ring);
	dm->ring_ok = false;
}

/* Daemons 1..: armed, then fetch once daemon 0 says so, serve, end.  A
 * daemon that fails fails the queue at once, so that run() notices. */
static void *d_thread(void *arg)
{
	struct ublk_daemon *dm = arg;
	struct ublk_queue *q = dm->q;
	bool go;
	int ret;

	ublk_q_thread_setup("ublk-q%ud%u", q->id, dm->idx);
	ret = d_arm(dm);
	if (!ret) {
		pthread_mutex_lock(&q->wlock);
		while (!q->dgo && !q->dquit)
			pthread_cond_wait(&q->wcond, &q->wlock);
		go = q->dgo && !q->dquit;
		pthread_mutex_unlock(&q->wlock);
		if (go) {
			ret = d_fetch_all(dm);
			d_report(dm, &dm->fetched, ret);
			if (!ret)
				ret = d_loop(dm);
			if (ret)
				ublk_q_set_state(q, UBLK_Q_FAILED, ret);
		}
	}
	d_unarm(dm);
	d_report(dm, &dm->ended, ret);
	return NULL;
}

/* Let the daemons fetch (@go) or end. */
static void d_release(struct ublk_queue *q, bool go)
{
	pthread_mutex_lock(&q->wlock);
	if (go)
		q->dgo = true;
	else
		q->dquit = true;
	pthread_cond_broadcast(&q->wcond);
	pthread_mutex_unlock(&q->wlock);
}

/* The queue's thread: daemon 0.  It starts the others, sets the queue's
 * state for all (ARMED once every ring is up, READY once every tag was
 * fetched), serves its own tags, and at the end joins the others. */
void *ublk_daemons_run(struct ublk_queue *q)
{
	struct ublk_dev *d = q->dev;
	struct ublk_daemon *d0 = &q->daemons[0];
	bool go = false;
	int ret;

	ublk_q_thread_setup("ublk-q%ud%u", q->id, 0);
	ret = -pthread_mutex_init(&q->wlock, NULL);
	if (!ret) {
		ret = -pthread_cond_init(&q->wcond, NULL);
		if (ret)
			pthread_mutex_destroy(&q->wlock);
	}
	if (ret) {
		ublk_q_set_state(q, UBLK_Q_FAILED, ret);
		return NULL;
	}
	for (unsigned i = 0; i < q->ndaemons; i++) {
		q->daemons[i].q = q;
		q->daemons[i].idx = i;
	}
	for (unsigned i = 1; i < q->ndaemons && !ret; i++) {
		ret = -pthread_create(&q->daemons[i].thread, NULL, d_thread,
				      &q->daemons[i]);
		q->daemons[i].thread_ok = !ret;
	}
	if (!ret)
		ret = d_arm(d0);
	if (!ret)
		ret = d_wait_all(q, offsetof(struct ublk_daemon, armed));
	if (!ret) {
		/* Armed: nothing can fail for want of resources any more.
		 * Fetch once the driver is ready for it (ublk_q_fetch), or
		 * end. */
		ublk_q_set_state(q, UBLK_Q_ARMED, 0);
		pthread_mutex_lock(&d->lock);
		while (!d->go && !d->quit)
			pthread_cond_wait(&d->cond, &d->lock);
		go = d->go && !d->quit;
		pthread_mutex_unlock(&d->lock);
	}
	d_release(q, go);
	if (go) {
		int all;

		ret = d_fetch_all(d0);
		d_report(d0, &d0->fetched, ret);
		all = ret ? ret : d_wait_all(q, offsetof(struct ublk_daemon,
							 fetched));
		ublk_q_set_state(q, all ? UBLK_Q_FAILED : UBLK_Q_READY, all);
		if (!ret)
			ret = d_loop(d0);
	}
	d_unarm(d0);
	for (unsigned i = 1; i < q->ndaemons; i++)
		if (q->daemons[i].thread_ok)
			pthread_join(q->daemons[i].thread, NULL);
	for (unsigned i = 1; i < q->ndaemons && !ret; i++)
		ret = q->daemons[i].err;
	pthread_cond_destroy(&q->wcond);
	pthread_mutex_destroy(&q->wlock);
	q->wlock_ok = false;
	ublk_q_set_state(q, ret ? UBLK_Q_FAILED : UBLK_Q_DONE, ret);
	return NULL;
}
