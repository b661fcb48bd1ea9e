/* SPDX-License-Identifier: MIT */
/*
 * ublk queues: one ring thread, one io_uring and UBLK_Q_WORKERS engine
 * workers per hardware queue.  The ring thread queues a FETCH_REQ for every
 * tag (each with its own I/O buffer, no zero copy), then loops: a completed
 * fetch means the driver put request @tag in the mmap'ed descriptor array.
 * A READ the ring thread serves itself (ftl_read is lock-free and costs one
 * backing pread per run of pages: a hand-off would cost more than it
 * saves); every other request (write, flush, discard, write-zeroes, which
 * may wait for the engine's lock, GC or an fsync) it hands to the workers,
 * which run it on the engine and post the answer.  Either way the ring
 * thread answers with COMMIT_AND_FETCH_REQ carrying the result.  Only the
 * ring thread touches the ring (the driver binds the queue to the task that
 * fetched); the workers wake it through an eventfd whose read is queued on
 * the ring, so one wait covers both new requests and finished ones, and a
 * slow backing write never keeps the ring from taking requests or
 * committing the answers of others (as ublksrv's loop target submits its
 * backing I/O through the ring).
 *
 * Ordering: the workers take the non-read requests in order of arrival, so
 * a FLUSH runs after every write this queue answered before the FLUSH was
 * issued (the block layer only sends a FLUSH for writes it saw completed;
 * those of other queues were answered, hence on the engine, before it).  A
 * write still running in the other worker was not answered: the FLUSH owes
 * it nothing, as the block layer orders no requests in flight together.
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
#include <sys/prctl.h>
#include <unistd.h>

#include "ublk-int.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

static size_t q_page(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

static size_t q_round(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static void *q_buf(const struct ublk_queue *q, unsigned tag)
{
	return q->bufs + (size_t)tag * q->dev->buf_size;
}

/* Queue a FETCH_REQ or COMMIT_AND_FETCH_REQ (@nr) for @tag. */
static int q_prep(struct ublk_queue *q, unsigned nr, unsigned tag, int result)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
	struct ublksrv_io_cmd *cmd;

	if (!sqe) {
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
		if (!sqe)
			return -EBUSY;
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->dev->cdev_fd;
	sqe->cmd_op = q->dev->io_ioctl ? UBLK_IOC_IO(nr) : nr;
	sqe->user_data = tag;
	cmd = (struct ublksrv_io_cmd *)sqe->cmd;
	cmd->q_id = (uint16_t)q->id;
	cmd->tag = (uint16_t)tag;
	cmd->result = result;
	cmd->addr = (uint64_t)(uintptr_t)q_buf(q, tag);
	q->inflight++;
	return 0;
}

/* Run request @tag on the engine; bytes done or -errno. */
static int q_handle(struct ublk_queue *q, unsigned tag)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	struct ftl *f = q->dev->ftl;
	unsigned op = ublksrv_get_op(iod), flags = ublksrv_get_flags(iod);
	uint64_t off = iod->start_sector * FTL_SECTOR;
	uint64_t len = (uint64_t)iod->nr_sectors * FTL_SECTOR;
	int r;

	switch (op) {
	case UBLK_IO_OP_READ:
	case UBLK_IO_OP_WRITE:
		if (len > q->dev->buf_size)
			return -EINVAL;
		if (op == UBLK_IO_OP_READ)
			r = ftl_read(f, q_buf(q, tag), off, (size_t)len);
		else
			r = ftl_write(f, q_buf(q, tag), off, (size_t)len,
				      (flags & UBLK_IO_F_FUA) ? FTL_FUA : 0);
		return r < 0 ? r : (int)len;
	case UBLK_IO_OP_FLUSH:
		return ftl_flush(f);
	case UBLK_IO_OP_DISCARD:
		return ftl_discard(f, off, len);
	case UBLK_IO_OP_WRITE_ZEROES:
		return ftl_write_zeroes(f, off, len);
	default:
		return -EOPNOTSUPP;
	}
}

static void q_set_state(struct ublk_queue *q, enum ublk_q_state st, int err)
{
	struct ublk_dev *d = q->dev;
	uint64_t one = 1;

	pthread_mutex_lock(&d->lock);
	q->state = st;
	if (err && !q->err)
		q->err = err;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	if ((st == UBLK_Q_DONE || st == UBLK_Q_FAILED) && d->event_fd >= 0 &&
	    write(d->event_fd, &one, sizeof(one)) < 0) {
		/* the eventfd only wakes run(); nothing to do */
	}
}

/* Submit every fetch; an error the driver reports at once fails the queue. */
static int q_fetch_all(struct ublk_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned tag;
	int ret;

	for (tag = 0; tag < q->depth; tag++) {
		ret = q_prep(q, UBLK_IO_FETCH_REQ, tag, 0);
		if (ret)
			return ret;
	}
	ret = io_uring_submit(&q->ring);
	if (ret < 0)
		return ret;
	/* FETCH_REQ is handled inline at submit: failures are already here. */
	if (io_uring_peek_cqe(&q->ring, &cqe) == 0 && cqe->res < 0)
		return cqe->res;
	return 0;
}

/* user_data of the eventfd read; tags are below UBLK_MAX_QUEUE_DEPTH */
#define Q_EVENT_DATA UINT64_MAX

static void q_thread_setup(const char *fmt, unsigned id)
{
	sigset_t all;
	char name[16];

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	(void)prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0);
	snprintf(name, sizeof(name), fmt, id);
	pthread_setname_np(pthread_self(), name);
}

/* A worker: take a tag, run it on the engine, post the answer; wake the
 * ring thread unless an earlier answer already did since its last look. */
static void *q_worker(void *arg)
{
	struct ublk_queue *q = arg;
	uint64_t one = 1;

	q_thread_setup("ublk-w%u", q->id);
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

		res = q_handle(q, tag);

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
	free(q->reads);
	q->reads = NULL;
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
	q->reads = calloc(q->depth, sizeof(*q->reads));
	if (!q->todo || !q->done || !q->done_spare || !q->reads)
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
	unsigned head, n, nnew, nread, i;
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
		n = nnew = nread = 0;
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
				    UBLK_IO_OP_READ) {
					q->reads[nread++] = tag;
					continue;
				}
				q->busy++;
				q->todo[(q->todo_head + q->todo_n) % q->depth] = tag;
				q->todo_n++;
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
		if (nnew > 1)
			pthread_cond_broadcast(&q->wcond);
		else if (nnew)
			pthread_cond_signal(&q->wcond);
		pthread_mutex_unlock(&q->wlock);
		io_uring_cq_advance(&q->ring, n);
		/* Reads inline, while the workers run what was handed over;
		 * their answers go out with this batch's commits. */
		for (i = 0; i < nread; i++) {
			unsigned tag = q->reads[i];

			ret = q_prep(q, UBLK_IO_COMMIT_AND_FETCH_REQ, tag,
				     q_handle(q, tag));
			if (ret && !err)
				err = ret;
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
	q_set_state(q, err ? UBLK_Q_FAILED : UBLK_Q_DONE, err);
}

static void *q_thread(void *arg)
{
	struct ublk_queue *q = arg;
	bool go;
	int ret;

	q_thread_setup("ublk-q%u", q->id);
	q->efd = -1;

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
	q_set_state(q, UBLK_Q_ARMED, 0);
	pthread_mutex_lock(&q->dev->lock);
	while (!q->dev->go && !q->dev->quit)
		pthread_cond_wait(&q->dev->cond, &q->dev->lock);
	go = q->dev->go && !q->dev->quit;
	pthread_mutex_unlock(&q->dev->lock);
	if (!go) {
		q_workers_stop(q);
		io_uring_queue_exit(&q->ring);
		q->ring_ok = false;
		q_set_state(q, UBLK_Q_DONE, 0);
		return NULL;
	}
	ret = q_fetch_all(q);
	if (ret)
		goto fail;
	q_set_state(q, UBLK_Q_READY, 0);
	q_loop(q);
	io_uring_queue_exit(&q->ring);
	q->ring_ok = false;
	return NULL;
fail:
	q_workers_stop(q);
	if (q->ring_ok)
		io_uring_queue_exit(&q->ring);
	q->ring_ok = false;
	q_set_state(q, UBLK_Q_FAILED, ret);
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
	q->iods_len = q_round(q->depth * sizeof(struct ublksrv_io_desc), page);
	ret = posix_memalign(&p, page, (size_t)q->depth * d->buf_size);
	if (ret)
		return -ret;
	q->bufs = p;
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
	free(q->bufs);
	q->bufs = NULL;
}
