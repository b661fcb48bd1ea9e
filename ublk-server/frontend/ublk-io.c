/* SPDX-License-Identifier: MIT */
/*
 * One request of a ublk queue, whoever serves it (the ring thread and its
 * workers, ublk-queue.c, or the per-I/O daemons, ublk-daemon.c): the tag's
 * buffer, the FETCH / COMMIT_AND_FETCH command that carries it, the request
 * run on the engine (or the zone layer), a queue's state change, and the
 * setup every serving thread makes (signals blocked, IO flusher, a name).
 * Below both servers, so neither calls into the other's file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "ublk-int.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

void *ublk_q_buf(const struct ublk_queue *q, unsigned tag)
{
	return q->bufs + (size_t)tag * q->dev->buf_size;
}

/* Queue a FETCH_REQ or COMMIT_AND_FETCH_REQ (@nr) for @tag on @ring.  The
 * tag's buffer goes in the command; with zero copy nothing does (the
 * driver would refuse it) and the SQE's addr carries the index at which
 * the driver registers the request's pages in @ring (struct
 * ublk_auto_buf_reg: the index in the low 16 bits, no flags), the tag. */
int ublk_q_prep(struct ublk_queue *q, struct io_uring *ring, unsigned nr,
		unsigned tag, int result)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct ublksrv_io_cmd *cmd;

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
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
	if (q->zc)
		sqe->addr = (uint16_t)tag;
	else    /* zoned, integrity (user copy): no buffer address; a zone
		 * append's commit carries the sector it wrote */
		cmd->addr = q->zlba ? q->zlba[tag] : q->dev->pi ? 0 :
			    (uint64_t)(uintptr_t)ublk_q_buf(q, tag);
	return 0;
}

/* Request @iod on engine @f. */
static int ublk_q_engine(struct ublk_queue *q, struct ftl_set *f,
			 const struct ublksrv_io_desc *iod, void *buf)
{
	/* UBLK_IO_F_* are bits of op_flags itself: ublksrv_get_flags()
	 * (op_flags >> 8) has them shifted away */
	unsigned op = ublksrv_get_op(iod), flags = iod->op_flags;
	uint64_t off = iod->start_sector * FTL_SECTOR;
	uint64_t len = (uint64_t)iod->nr_sectors * FTL_SECTOR;
	int r;

	switch (op) {
	case UBLK_IO_OP_READ:
	case UBLK_IO_OP_WRITE:
		if (len > q->dev->buf_size)
			return -EINVAL;
		if (op == UBLK_IO_OP_READ)
			r = ftl_set_read(f, buf, off, (size_t)len);
		else
			r = ftl_set_write(f, buf, off, (size_t)len,
				      (flags & UBLK_IO_F_FUA) ? FTL_FUA : 0);
		return r < 0 ? r : (int)len;
	case UBLK_IO_OP_FLUSH:
		return ftl_set_flush(f);
	case UBLK_IO_OP_DISCARD:
		return ftl_set_discard(f, off, len);
	case UBLK_IO_OP_WRITE_ZEROES:
		return ftl_set_write_zeroes(f, off, len);
	default:
		return -EOPNOTSUPP;
	}
}

int ublk_q_handle(struct ublk_queue *q, unsigned tag, void *buf)
{
	struct ublk_dev *d = q->dev;
	struct timespec ts = { 0, 1000000L };
	struct ftl_set *f;
	unsigned op;
	int r;

	if (d->zn)
		return ublk_zoned_handle(q, tag, buf, &q->zlba[tag]);
	/* held (an online resize swaps the engine): wait outside it; the
	 * count is the queue's, not the device's (13.5 against 16.5-21 ns
	 * CPU per request with two queues on the host: no shared line) */
	for (;;) {
		__atomic_add_fetch(&q->inside, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&d->held, __ATOMIC_SEQ_CST))
			break;
		__atomic_sub_fetch(&q->inside, 1, __ATOMIC_SEQ_CST);
		nanosleep(&ts, NULL);
	}
	f = __atomic_load_n(&d->set, __ATOMIC_SEQ_CST);
	op = ublksrv_get_op(&q->iods[tag]);
	if (!f)
		r = -EIO;
	else if (d->pi && (op == UBLK_IO_OP_READ || op == UBLK_IO_OP_WRITE))
		r = ublk_pi_rw(q, tag, buf);   /* ublk-integrity.c */
	else
		r = ublk_q_engine(q, f, &q->iods[tag], buf);
	__atomic_sub_fetch(&q->inside, 1, __ATOMIC_SEQ_CST);
	return r;
}

bool ublk_q_write_plain(const struct ublk_queue *q, unsigned tag)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];

	return ublksrv_get_op(iod) == UBLK_IO_OP_WRITE &&
	       !(iod->op_flags & UBLK_IO_F_FUA) && !q->dev->zn && !q->dev->pi;
}

int ublk_q_try_write(struct ublk_queue *q, unsigned tag, void *buf)
{
	struct ublk_dev *d = q->dev;
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	uint64_t len = (uint64_t)iod->nr_sectors * FTL_SECTOR;
	struct ftl_set *f;
	int r = -EAGAIN;

	if (!ublk_q_write_plain(q, tag) || len > d->buf_size)
		return -EAGAIN;
	/* never waits for an online resize: counted inside, then held? out
	 * again, to the workers (ublk_q_handle waits there) */
	__atomic_add_fetch(&q->inside, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&d->held, __ATOMIC_SEQ_CST)) {
		f = __atomic_load_n(&d->set, __ATOMIC_SEQ_CST);
		if (f)
			r = ftl_set_write_try(f, buf, iod->start_sector * FTL_SECTOR,
					  (size_t)len, 0);
	}
	__atomic_sub_fetch(&q->inside, 1, __ATOMIC_SEQ_CST);
	return r < 0 ? r : (int)len;
}

/* A FAILED queue stays FAILED (daemons end one after the other). */
void ublk_q_set_state(struct ublk_queue *q, enum ublk_q_state st, int err)
{
	struct ublk_dev *d = q->dev;
	uint64_t one = 1;

	pthread_mutex_lock(&d->lock);
	if (q->state != UBLK_Q_FAILED)
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

int ublk_q_fetch_tags(struct ublk_queue *q, struct io_uring *ring,
		      unsigned first, unsigned step)
{
	struct io_uring_cqe *cqe;
	int ret, n = 0;

	for (unsigned tag = first; tag < q->depth; tag += step, n++) {
		ret = ublk_q_prep(q, ring, UBLK_IO_FETCH_REQ, tag, 0);
		if (ret)
			return ret;
	}
	ret = io_uring_submit(ring);
	if (ret < 0)
		return ret;
	/* FETCH_REQ is handled inline at submit: failures are already here. */
	if (io_uring_peek_cqe(ring, &cqe) == 0 && cqe->res < 0)
		return cqe->res;
	return n;
}

void ublk_q_thread_setup(const char *fmt, unsigned a, unsigned b)
{
	sigset_t all;
	char name[16];

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	(void)prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0);
	snprintf(name, sizeof(name), fmt, a, b);
	pthread_setname_np(pthread_self(), name);
}
