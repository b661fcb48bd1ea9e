/* SPDX-License-Identifier: MIT */
/*
 * ublk control commands: IORING_OP_URING_CMD on /dev/ublk-control through an
 * io_uring with 128-byte SQEs (the command header lives in the SQE).
 *
 * Two opcode sets exist: Linux 6.1 only knows the legacy numbers
 * (UBLK_CMD_ADD_DEV = 0x04 ...); newer kernels add ioctl-encoded ones
 * (_IOWR('u', 0x04, struct ublksrv_ctrl_cmd) ...) and may drop the legacy
 * set.  GET_FEATURES (ioctl-encoded, newer kernels) decides: if it answers,
 * we speak ioctl encoding and take its feature mask; if not (6.1 answers
 * -ENODEV or -EOPNOTSUPP) we speak legacy opcodes and assume 6.1's flags.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ublk-int.h"

#define UBLK_CTRL_DEV "/dev/ublk-control"

/* The build takes <linux/ublk_cmd.h> from kernel 7.3's linux-libc-dev
 * (ublk-server/module.mk); `make UBLK_UAPI=host` is the explicit way to
 * build with an older one. */
#if !defined(OCTANT_UBLK_UAPI_HOST) && !defined(UBLK_F_IO_DESC_SIZE)
#error "<linux/ublk_cmd.h> is older than kernel 7.3's: build through make (it fetches it into BUILD/uapi) or with make UBLK_UAPI=host"
#endif

#ifdef UBLK_U_CMD_UPDATE_SIZE
_Static_assert(UBLK_IOC_RW(UBLK_CMD_UPDATE_SIZE) == UBLK_U_CMD_UPDATE_SIZE,
	       "UBLK_CMD_UPDATE_SIZE");
#endif
#ifdef UBLK_U_CMD_QUIESCE_DEV
_Static_assert(UBLK_IOC_RW(UBLK_CMD_QUIESCE_DEV) == UBLK_U_CMD_QUIESCE_DEV,
	       "UBLK_CMD_QUIESCE_DEV");
#endif

#define UBLK_FBIT(bit) (1ULL << (bit))
/* The table's bits are the header's, where the header names them (every
 * row with 7.3's header). */
#ifdef UBLK_F_IO_DESC_SIZE
#define X(name, bit, since, want) \
	_Static_assert(UBLK_F_##name == UBLK_FBIT(bit), "UBLK_F_" #name);
UBLK_FEATURES(X)
#undef X
#endif

/* What ADD_DEV asks for when offered; what Linux 6.1, which has no
 * GET_FEATURES, is assumed to offer. */
#define X(name, bit, since, want) | ((want) ? UBLK_FBIT(bit) : 0)
static const uint64_t ctrl_wanted = 0 UBLK_FEATURES(X);
#undef X
#define X(name, bit, since, want) | ((since) <= 601 ? UBLK_FBIT(bit) : 0)
static const uint64_t ctrl_assumed_6_1 = 0 UBLK_FEATURES(X);
#undef X

const char *ublk_feature_name(unsigned bit)
{
	switch (bit) {
#define X(name, b, since, want) case b: return #name;
	UBLK_FEATURES(X)
#undef X
	}
	return NULL;
}

uint64_t ublk_ctrl_add_flags(const struct ublk_ctrl *c)
{
	const char *zc = getenv("OCTANT_UBLK_ZC");
	const char *dm = getenv("OCTANT_UBLK_DAEMONS");
	const char *uc = getenv("OCTANT_UBLK_ZC_UCOPY");
	uint64_t f = ctrl_wanted & c->features;

	/* the A/B switches of the I/O path (docs/ublk.md): zero copy off */
	if ((zc && !strcmp(zc, "0")) || (dm && !strcmp(dm, "queue")))
		f &= ~UBLK_FEAT(AUTO_BUF_REG);
#ifdef UBLK_QID_OFF     /* ublk_q_ucopy is built */
	/* zero copy's short requests move by user copy (ublk-daemon.c),
	 * unless OCTANT_UBLK_ZC_UCOPY=0 (the A/B switch) */
	if ((f & UBLK_FEAT(AUTO_BUF_REG)) &&
	    (c->features & UBLK_FEAT(USER_COPY)) && !(uc && !strcmp(uc, "0")))
		f |= UBLK_FEAT(USER_COPY);
#else
	(void)uc;
#endif
	return f;
}

static uint64_t ctrl_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One command: @nr is the command number (legacy opcode), @rw selects the
 * _IOWR encoding (else _IOR); @buf (@len bytes, in and out) goes through
 * c->buf.  Waits at most @timeout_ms (0: forever); a command that timed
 * out is still in the kernel, so the ring is then marked lost (and the
 * caller must leak @c, whose buffer the kernel may still write). */
static int ctrl_cmd(struct ublk_ctrl *c, unsigned nr, bool rw, uint32_t dev_id,
		    void *buf, uint16_t len, uint64_t data0, unsigned timeout_ms)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct ublksrv_ctrl_cmd *cmd;
	uint64_t deadline = timeout_ms ? ctrl_now_ms() + timeout_ms : 0;
	uint64_t seq;
	int ret;

	if (!c->ring_ok || c->lost)
		return -EIO;
	sqe = io_uring_get_sqe(&c->ring);
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));          /* a 128-byte SQE */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = c->ioctl_encode ?
		(rw ? UBLK_IOC_RW(nr) : UBLK_IOC_R(nr)) : nr;
	seq = ++c->seq;
	sqe->user_data = seq;
	cmd = (struct ublksrv_ctrl_cmd *)sqe->cmd;
	cmd->dev_id = dev_id;
	cmd->queue_id = (uint16_t)-1;
	if (len > sizeof(c->buf))
		return -EINVAL;
	if (buf)
		memcpy(&c->buf, buf, len);
	cmd->len = len;
	cmd->addr = buf ? (uint64_t)(uintptr_t)&c->buf : 0;
	cmd->data[0] = data0;
	ret = io_uring_submit(&c->ring);
	if (ret < 0)
		return ret;
	for (;;) {
		if (deadline) {
			uint64_t now = ctrl_now_ms();
			uint64_t left = now < deadline ? deadline - now : 0;
			struct __kernel_timespec ts = {
				.tv_sec = (long long)(left / 1000),
				.tv_nsec = (long long)(left % 1000) * 1000000,
			};
			if (!left) {
				c->lost = true;
				return -ETIMEDOUT;
			}
			ret = io_uring_wait_cqe_timeout(&c->ring, &cqe, &ts);
		} else {
			ret = io_uring_wait_cqe(&c->ring, &cqe);
		}
		if (ret == -EINTR || ret == -ETIME)
			continue;
		if (ret < 0)
			return ret;
		if (cqe->user_data != seq) {       /* a late answer: drop it */
			io_uring_cqe_seen(&c->ring, cqe);
			continue;
		}
		ret = cqe->res;
		io_uring_cqe_seen(&c->ring, cqe);
		if (ret >= 0 && buf)
			memcpy(buf, &c->buf, len);
		return ret;
	}
}

int ublk_ctrl_open(struct ublk_ctrl *c)
{
	uint64_t features = 0;
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = open(UBLK_CTRL_DEV, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	ret = io_uring_queue_init(4, &c->ring, IORING_SETUP_SQE128);
	if (ret < 0)
		goto err;
	c->ring_ok = true;

	c->ioctl_encode = true;
	ret = ctrl_cmd(c, UBLK_CMD_GET_FEATURES, false, UINT32_MAX, &features,
		       sizeof(features), 0, 5000);
	if (ret == -ETIMEDOUT)
		goto err;
	if (ret == 0) {
		c->have_get_features = true;
		c->features = features;
	} else {
		c->ioctl_encode = false;      /* Linux 6.1: legacy opcodes only */
		c->features = ctrl_assumed_6_1;
	}
	return 0;
err:
	ublk_ctrl_close(c);
	return ret;
}

void ublk_ctrl_close(struct ublk_ctrl *c)
{
	if (c->ring_ok)
		io_uring_queue_exit(&c->ring);
	c->ring_ok = false;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int ublk_ctrl_add_dev(struct ublk_ctrl *c, struct ublksrv_ctrl_dev_info *info,
		      unsigned timeout_ms)
{
	return ctrl_cmd(c, UBLK_CMD_ADD_DEV, true, info->dev_id, info,
			sizeof(*info), 0, timeout_ms);
}

int ublk_ctrl_del_dev(struct ublk_ctrl *c, uint32_t id, unsigned timeout_ms)
{
	return ctrl_cmd(c, UBLK_CMD_DEL_DEV, true, id, NULL, 0, 0, timeout_ms);
}

int ublk_ctrl_get_info(struct ublk_ctrl *c, uint32_t id,
		       struct ublksrv_ctrl_dev_info *info)
{
	memset(info, 0, sizeof(*info));
	return ctrl_cmd(c, UBLK_CMD_GET_DEV_INFO, false, id, info,
			sizeof(*info), 0, 10000);
}

int ublk_ctrl_set_params(struct ublk_ctrl *c, uint32_t id,
			 struct ublk_params *p)
{
	p->len = sizeof(*p);
	return ctrl_cmd(c, UBLK_CMD_SET_PARAMS, true, id, p, sizeof(*p), 0,
			10000);
}

int ublk_ctrl_get_params(struct ublk_ctrl *c, uint32_t id,
			 struct ublk_params *p)
{
	memset(p, 0, sizeof(*p));
	p->len = sizeof(*p);
	p->types = UBLK_PARAM_TYPE_BASIC | UBLK_PARAM_TYPE_DISCARD;
	return ctrl_cmd(c, UBLK_CMD_GET_PARAMS, false, id, p, sizeof(*p), 0,
			10000);
}

int ublk_ctrl_start_dev(struct ublk_ctrl *c, uint32_t id, int pid,
			unsigned timeout_ms)
{
	return ctrl_cmd(c, UBLK_CMD_START_DEV, true, id, NULL, 0,
			(uint64_t)pid, timeout_ms);
}

int ublk_ctrl_stop_dev(struct ublk_ctrl *c, uint32_t id, unsigned timeout_ms)
{
	return ctrl_cmd(c, UBLK_CMD_STOP_DEV, true, id, NULL, 0, 0, timeout_ms);
}

int ublk_ctrl_start_recovery(struct ublk_ctrl *c, uint32_t id)
{
	return ctrl_cmd(c, UBLK_CMD_START_USER_RECOVERY, true, id, NULL, 0, 0,
			10000);
}

int ublk_ctrl_end_recovery(struct ublk_ctrl *c, uint32_t id, int pid,
			   unsigned timeout_ms)
{
	return ctrl_cmd(c, UBLK_CMD_END_USER_RECOVERY, true, id, NULL, 0,
			(uint64_t)pid, timeout_ms);
}

int ublk_ctrl_update_size(struct ublk_ctrl *c, uint32_t id, uint64_t sectors)
{
	return ctrl_cmd(c, UBLK_CMD_UPDATE_SIZE, true, id, NULL, 0, sectors,
			10000);
}

int ublk_ctrl_quiesce_dev(struct ublk_ctrl *c, uint32_t id,
			  unsigned timeout_ms)
{
	/* data[0]: the driver's wait in ms (0 would be forever); ours is a
	 * little longer, so its -EBUSY arrives before our timeout */
	return ctrl_cmd(c, UBLK_CMD_QUIESCE_DEV, true, id, NULL, 0,
			timeout_ms ? timeout_ms : 1, timeout_ms + 5000);
}
