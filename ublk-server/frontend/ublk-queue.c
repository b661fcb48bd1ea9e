/* SPDX-License-Identifier: MIT */
/*
 * ublk queues: one ring thread, one io_uring and UBLK_Q_WORKERS engine
 * workers per hardware queue.  The ring thread queues a FETCH_REQ for every
 * tag (each with its own I/O buffer, no zero copy), then loops: a completed
 * fetch means the driver put request @tag in the mmap'ed descriptor array.
 * A READ the ring thread serves itself (ftl_read is lock-free and costs one
 * backing pread per run of pages: a hand-off would cost more than it
 * saves), and a plain WRITE (no FUA) when the engine can serve it without
 * waiting (ftl_write_try: a few whole pages, the locks free at once, room
 * in the open block, no GC, checkpoint or sync due: one backing pwrite,
 * like a read's pread); every other request (a write ftl_write_try turned
 * back with -EAGAIN, flush, discard, write-zeroes, which may wait for the
 * engine's lock, GC or an fsync) it hands to the workers, which run it on
 * the engine and post the answer.  Either way the ring
 * thread answers with COMMIT_AND_FETCH_REQ carrying the result.  Only the
 * ring thread touches the ring (the driver binds the queue to the task that
 * fetched); the workers wake it through an eventfd whose read is queued on
 * the ring, so one wait covers both new requests and finished ones, and a
 * slow backing write never keeps the ring from taking requests or
 * committing the answers of others (as ublksrv's loop target submits its
 * backing I/O through the ring).
 *
 * Ordering: every request is answered (committed) only after the engine
 * call that serves it returned, in the ring thread or a worker.  The block
 * layer sends a FLUSH only for writes it saw completed, i.e. answered:
 * each was on the engine (on its map, in its log) before its answer was
 * queued, hence before the FLUSH was even issued, so ftl_flush, run later
 * by a worker, covers it whoever served it (ftl.h: ftl_flush covers every
 * write that completed before it; ftl_write_try's serve is ftl_write's).
 * This holds for writes of other queues alike.  A write still running in
 * a worker, or turned back by ftl_write_try and queued after the FLUSH,
 * was not answered: the FLUSH owes it nothing, as the block layer orders
 * no requests in flight together.  The same for a FUA write: never served
 * inline, ftl_write syncs before its answer.
 * Serving reads inline cannot reorder anything the block layer relies on: a
 * read changes nothing on the engine, so no FLUSH, FUA or later write
 * depends on it, and the block layer never keeps a read and an overlapping
 * write in flight together expecting an order between them (their result is
 * undefined unless one completed before the other was issued, and a write
 * answered before the read arrived is already on the engine's map, which
 * ftl_read sees).  A fetch answered
 * UBLK_IO_RES_ABORT retires its tag (the device was stopped); the thread
 * ends once every tag is retired and the workers hold none.
 *
 * The threads are IO flushers (PR_SET_IO_FLUSHER: their allocations never
 * recurse into block I/O, which could wait on this very device) and block
 * every signal, so SIGTERM reaches the serve layer's thread.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ublk-int.h"

static size_t q_page(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

static size_t q_round(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static int q_prep(struct ublk_queue *q, unsigned nr, unsigned tag, int result)
{
	int ret = ublk_q_prep(q, &q->ring, nr, tag, result);

	if (!ret)
		q->inflight++;
	return ret;
}

/* user_data of the eventfd read; tags are below UBLK_MAX_QUEUE_DEPTH */
#define Q_EVENT_DATA UINT64_MAX

/* A worker: take a tag, run it on the engine, post the answer; wake the
 * ring thread unless an earlier answer already did since its last look. */
static void *q_worker(void *arg)
{
	struct ublk_queue *q = arg;
	uint64_t one = 1;

	ublk_q_thread_setup("ublk-w%u", q->id, 0);
	pthread_mutex_lock(&q->wlock);
	for (;;) {
		unsigned tag;
		bool kick;
		int res;

		while (!q->todo_n && !q->wstop)
			pthread_cond_wait(&q->wcond, &q->wlock);
		if (!q->todo_n)
			break;
		tag = q->todo[q->todo_head];
		q->todo_head = (q->todo_head + 1) % q->depth;
		q->todo_n--;
		pthread_mutex_unlock(&q->wlock);

		res = ublk_q_handle(q, tag, ublk_q_buf(q, tag));

		pthread_mutex_lock(&q->wlock);
		q->done[q->done_n].tag = tag;
		q->done[q->done_n].res = res;
		q->done_n++;
		kick = !q->kicked;
		q->kicked = true;
		if (kick) {
			pthread_mutex_unlock(&q->wlock);
			if (write(q->efd, &one, sizeof(one)) < 0) {
				/* cannot fail for a counter far from overflow */
			}
			pthread_mutex_lock(&q->wlock);
		}
	}
	pthread_mutex_unlock(&q->wlock);
	return NULL;
}

/* Stop and join the workers (they finish the tags they hold), free their
 * queues and the eventfd. */
static void q_workers_stop(struct ublk_queue *q)
{
	unsigned i;

	if (q->wlock_ok) {
		pthread_mutex_lock(&q->wlock);
		q->wstop = true;
		pthread_cond_broadcast(&q->wcond);
		pthread_mutex_unlock(&q->wlock);
	}
	for (i = 0; i < q->nworkers; i++)
		pthread_join(q->workers[i], NULL);
	q->nworkers = 0;
	if (q->wlock_ok) {
		pthread_mutex_destroy(&q->wlock);
		pthread_cond_destroy(&q->wcond);
	}
	q->wlock_ok = false;
	if (q->efd >= 0)
		close(q->efd);
	q->efd = -1;
	free(q->todo);
	free(q->done);
	free(q->done_spare);
	free(q->inl);
	q->inl = NULL;
	q->todo = NULL;
	q->done = q->done_spare = NULL;
}

static int q_workers_start(struct ublk_queue *q)
{
	unsigned i;
	int ret;

	q->efd = eventfd(0, EFD_CLOEXEC);
	if (q->efd < 0)
		return -errno;
	q->todo = calloc(q->depth, sizeof(*q->todo));
	q->done = calloc(q->depth, sizeof(*q->done));
	q->done_spare = calloc(q->depth, sizeof(*q->done_spare));
	q->inl = calloc(q->depth, sizeof(*q->inl));
	if (!q->todo || !q->done || !q->done_spare || !q->inl)
		return -ENOMEM;
	ret = pthread_mutex_init(&q->wlock, NULL);
	if (ret)
		return -ret;
	ret = pthread_cond_init(&q->wcond, NULL);
	if (ret) {
		pthread_mutex_destroy(&q->wlock);
		return -ret;
	}
	q->wlock_ok = true;
	for (i = 0; i < UBLK_Q_WORKERS; i++) {
		ret = pthread_create(&q->workers[i], NULL, q_worker, q);
		if (ret)
			return -ret;
		q->nworkers++;
	}
	return 0;
}

/* Queue the read of the eventfd that wakes the ring thread for answers. */
static int q_arm_event(struct ublk_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
		if (!sqe)
			return -EBUSY;
	}
	io_uring_prep_read(sqe, q->efd, &q->efd_val, sizeof(q->efd_val), 0);
	sqe->user_data = Q_EVENT_DATA;
	q->efd_armed = true;
	return 0;
}

/* Queue @tag for the workers (q->wlock held); q_wake once a batch is. */
static void q_hand(struct ublk_queue *q, unsigned tag)
{
	q->busy++;
	q->todo[(q->todo_head + q->todo_n) % q->depth] = tag;
	q->todo_n++;
}

static void q_wake(struct ublk_queue *q, unsigned nnew)
{
	if (nnew > 1)
		pthread_cond_broadcast(&q->wcond);
	else if (nnew)
		pthread_cond_signal(&q->wcond);
}

/* Commit every answer the workers posted. */
static int q_harvest(struct ublk_queue *q)
{
	struct ublk_answer *a;
	unsigned i, n;
	int ret, err = 0;

	pthread_mutex_lock(&q->wlock);
	a = q->done;
	n = q->done_n;
	q->done = q->done_spare;
	q->done_spare = a;
	q->done_n = 0;
	q->kicked = false;
	pthread_mutex_unlock(&q->wlock);
	for (i = 0; i < n; i++) {
		q->busy--;
		ret = q_prep(q, UBLK_IO_COMMIT_AND_FETCH_REQ, a[i].tag, a[i].res);
		if (ret && !err)
			err = ret;
	}
	return err;
}

static void q_loop(struct ublk_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned head, n, nnew, ninl, i;
	int ret, err = 0;

	/* Draining (QUIESCE_DEV: a live upgrade) ends once the workers hold
	 * nothing: the fetches the last commits re-armed are never answered
	 * (the driver requeues new requests), the ring's exit cancels them. */
	while ((q->inflight > 0 && !q->draining) || q->busy > 0) {
		if (q->busy > 0 && !q->efd_armed) {
			ret = q_arm_event(q);
			if (ret) {
				err = ret;
				break;
			}
		}
		ret = io_uring_submit_and_wait(&q->ring, 1);
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			err = ret;
			break;
		}
		n = nnew = ninl = 0;
		pthread_mutex_lock(&q->wlock);
		io_uring_for_each_cqe(&q->ring, head, cqe) {
			unsigned tag = (unsigned)cqe->user_data;
			int res = cqe->res;

			n++;
			if (cqe->user_data == Q_EVENT_DATA) {
				q->efd_armed = false;
				if (res < 0 && res != -EINTR && res != -EAGAIN &&
				    !err)
					err = res;
				continue;
			}
			q->inflight--;
			if (res == UBLK_IO_RES_OK && tag < q->depth) {
				q->ios++;
				if (ublksrv_get_op(&q->iods[tag]) ==
				    UBLK_IO_OP_READ ||
				    ublk_q_write_plain(q, tag)) {
					q->inl[ninl++] = tag;
					continue;
				}
				q_hand(q, tag);
				nnew++;
			} else if (res == UBLK_IO_RES_ABORT) {
				q->draining |= __atomic_load_n(&q->dev->quiescing,
							       __ATOMIC_ACQUIRE);
			} else if (!err) {
				fprintf(stderr, "ublk-flash: ublk queue %u tag %u: "
					"%s\n", q->id, tag, strerror(-res));
				err = res < 0 ? res : -EIO;
			}
		}
		q_wake(q, nnew);
		pthread_mutex_unlock(&q->wlock);
		io_uring_cq_advance(&q->ring, n);
		/* Reads and the writes that cannot wait inline, while the
		 * workers run what was handed over; their answers go out
		 * with this batch's commits.  A write that could wait goes to
		 * the workers after all. */
		nnew = 0;
		for (i = 0; i < ninl; i++) {
			unsigned tag = q->inl[i];
			void *buf = ublk_q_buf(q, tag);
			int res;

			if (ublksrv_get_op(&q->iods[tag]) == UBLK_IO_OP_READ) {
				res = ublk_q_handle(q, tag, buf);
			} else {
				res = ublk_q_try_write(q, tag, buf);
				if (res == -EAGAIN) {
					q->inl[nnew++] = tag;
					continue;
				}
			}
			ret = q_prep(q, UBLK_IO_COMMIT_AND_FETCH_REQ, tag, res);
			if (ret && !err)
				err = ret;
		}
		if (nnew) {
			pthread_mutex_lock(&q->wlock);
			for (i = 0; i < nnew; i++)
				q_hand(q, q->inl[i]);
			q_wake(q, nnew);
			pthread_mutex_unlock(&q->wlock);
		}
		ret = q_harvest(q);
		if (ret && !err)
			err = ret;
		if (err)
			break;
	}
	if (q->draining && !err)   /* the last answers reach the driver */
		io_uring_submit(&q->ring);
	q_workers_stop(q);
	ublk_q_set_state(q, err ? UBLK_Q_FAILED : UBLK_Q_DONE, err);
}

static void *q_thread(void *arg)
{
	struct ublk_queue *q = arg;
	bool go;
	int ret;

	if (q->ndaemons)
		return ublk_daemons_run(q);
	ublk_q_thread_setup("ublk-q%u", q->id, 0);

	/* The ring belongs to this thread: the driver binds the queue to the
	 * task that fetched, and completes commands in that task. */
	/* COOP_TASKRUN: completions are run when we enter the kernel anyway
	 * (we always wait there), so the driver need not interrupt us. */
	ret = io_uring_queue_init(q->depth, &q->ring, IORING_SETUP_COOP_TASKRUN);
	if (ret == -EINVAL)
		ret = io_uring_queue_init(q->depth, &q->ring, 0);
	if (ret < 0)
		goto fail;
	q->ring_ok = true;
	ret = q_workers_start(q);
	if (ret)
		goto fail;
	/* Armed: nothing can fail for want of resources any more.  Fetch
	 * once the driver is ready for it (ublk_q_fetch), or end. */
	ublk_q_set_state(q, UBLK_Q_ARMED, 0);
	pthread_mutex_lock(&q->dev->lock);
	while (!q->dev->go && !q->dev->quit)
		pthread_cond_wait(&q->dev->cond, &q->dev->lock);
	go = q->dev->go && !q->dev->quit;
	pthread_mutex_unlock(&q->dev->lock);
	if (!go) {
		q_workers_stop(q);
		io_uring_queue_exit(&q->ring);
		q->ring_ok = false;
		ublk_q_set_state(q, UBLK_Q_DONE, 0);
		return NULL;
	}
	ret = ublk_q_fetch_tags(q, &q->ring, 0, 1);
	if (ret > 0) {
		q->inflight += (unsigned)ret;
		ret = 0;
	}
	if (ret)
		goto fail;
	ublk_q_set_state(q, UBLK_Q_READY, 0);
	q_loop(q);
	io_uring_queue_exit(&q->ring);
	q->ring_ok = false;
	return NULL;
fail:
	q_workers_stop(q);
	if (q->ring_ok)
		io_uring_queue_exit(&q->ring);
	q->ring_ok = false;
	ublk_q_set_state(q, UBLK_Q_FAILED, ret);
	return NULL;
}

int ublk_q_prepare(struct ublk_dev *d, unsigned i)
{
	struct ublk_queue *q = &d->q[i];
	size_t page = q_page();
	void *p;
	int ret;

	q->dev = d;
	q->id = i;
	q->depth = d->info.queue_depth;
	q->efd = -1;
	q->zc_fd = -1;
	q->iods_len = q_round(q->depth * sizeof(struct ublksrv_io_desc), page);
	ret = ublk_daemons_setup(d, q);   /* the mode and the buffers */
	if (ret)
		return ret;
	if (!q->bufs) {
		ret = posix_memalign(&p, page, (size_t)q->depth * d->buf_size);
		if (ret)
			return -ret;
		q->bufs = p;
	}
	if (d->zn) {
		q->zlba = calloc(q->depth, sizeof(*q->zlba));
		if (!q->zlba)
			return -ENOMEM;
	}
	ret = pthread_create(&q->thread, NULL, q_thread, q);
	if (ret)
		return -ret;
	q->thread_ok = true;

	pthread_mutex_lock(&d->lock);
	while (q->state == UBLK_Q_NEW)
		pthread_cond_wait(&d->cond, &d->lock);
	ret = q->state == UBLK_Q_FAILED ? (q->err ? q->err : -EIO) : 0;
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int ublk_q_map(struct ublk_dev *d, unsigned i)
{
	struct ublk_queue *q = &d->q[i];
	size_t max_sz = q_round(UBLK_MAX_QUEUE_DEPTH *
				sizeof(struct ublksrv_io_desc), q_page());
	void *p = mmap(NULL, q->iods_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
		       d->cdev_fd, (off_t)(UBLKSRV_CMD_BUF_OFFSET + i * max_sz));

	if (p == MAP_FAILED)
		return -errno;
	q->iods = p;
	return 0;
}

int ublk_q_fetch(struct ublk_dev *d, bool go)
{
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	if (go)
		d->go = true;
	else
		d->quit = true;
	pthread_cond_broadcast(&d->cond);
	for (unsigned i = 0; d->q && i < d->info.nr_hw_queues; i++) {
		struct ublk_queue *q = &d->q[i];

		while (q->thread_ok && (q->state == UBLK_Q_ARMED ||
					q->state == UBLK_Q_NEW))
			pthread_cond_wait(&d->cond, &d->lock);
		if (q->state == UBLK_Q_FAILED && !ret)
			ret = q->err ? q->err : -EIO;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

void ublk_q_join(struct ublk_dev *d, unsigned i)
{
	struct ublk_queue *q = &d->q[i];

	if (q->thread_ok)
		pthread_join(q->thread, NULL);
	q->thread_ok = false;
	if (q->iods)
		munmap(q->iods, q->iods_len);
	q->iods = NULL;
	if (q->zc_fd < 0)
		free(q->bufs);
	ublk_daemons_free(q);
	q->bufs = NULL;
	free(q->zlba);
	q->zlba = NULL;
}
