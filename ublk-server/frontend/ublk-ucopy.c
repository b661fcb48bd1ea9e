/* SPDX-License-Identifier: MIT */
/*
 * User copy: a request's data (or, with @flag UBLKSRV_IO_INTEGRITY_FLAG, its
 * protection information) moved between the server's buffer and the kernel's
 * request pages by pread/pwrite on the char device at the tag's offset.  Below
 * ublk-io.c, ublk-zoned.c and ublk-integrity.c, which all use it (moved
 * unchanged from ublk-io.c: there ublk-io and ublk-integrity called each other).
 */
#include <errno.h>
#include <unistd.h>

#include "ublk-int.h"

int ublk_q_ucopy(struct ublk_queue *q, unsigned tag, void *buf, size_t len,
		 bool in, uint64_t flag)
{
#ifdef UBLK_QID_OFF
	uint64_t pos = UBLKSRV_IO_BUF_OFFSET + ((uint64_t)q->id << UBLK_QID_OFF) +
		       ((uint64_t)tag << UBLK_TAG_OFF);
	size_t done = 0;

	while (done < len) {
		ssize_t n = in ?
			pread(q->dev->cdev_fd, (char *)buf + done, len - done,
			      (off_t)((pos + done) | flag)) :
			pwrite(q->dev->cdev_fd, (const char *)buf + done,
			       len - done, (off_t)((pos + done) | flag));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
#else   /* a uapi header without user copy */
	(void)q; (void)tag; (void)buf; (void)len; (void)in; (void)flag;
	return -EOPNOTSUPP;
#endif
}
