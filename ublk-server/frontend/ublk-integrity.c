/* SPDX-License-Identifier: MIT */
/*
 * An image made with create --integrity t10dif over ublk (UBLK_F_INTEGRITY,
 * Linux 7.0+; it needs UBLK_F_USER_COPY): the device has T10-DIF type 1
 * protection information, 8 bytes per 512-byte sector (CRC16 guard, ref
 * tag checked), and the kernel's integrity layer generates it on writes
 * and verifies it on reads.  A request's data and its tuples move by
 * pread/pwrite on /dev/ublkcN at the tag's position, the tuples with
 * UBLKSRV_IO_INTEGRITY_FLAG set.  A write's tuples are checked (-EILSEQ:
 * the kernel's BLK_STS_PROTECTION); a read hands out the stored guards,
 * so a sector damaged on the medium fails the kernel's check, exactly that
 * sector (ftl_read_pi).  A request without tuples (the integrity layer
 * told not to generate or verify) goes the plain path: a damaged page is
 * EIO then.  docs/ublk.md ("Protection information").
 */
#include <errno.h>
#include <string.h>

#include "ublk-int.h"

#ifdef UBLK_F_INTEGRITY
#include <linux/fs.h>

#ifndef LBMD_PI_CAP_INTEGRITY       /* <linux/fs.h> older than the uapi */
#define LBMD_PI_CAP_INTEGRITY     (1 << 0)
#define LBMD_PI_CAP_REFTAG        (1 << 1)
#define LBMD_PI_CSUM_CRC16_T10DIF 2
#endif

/* The tuples of one request of at most max_io_buf_bytes (512 KiB). */
#define UPI_MAX ((512u << 10) / FTL_SECTOR * FTL_PI_TUPLE)

int ublk_pi_rw(struct ublk_queue *q, unsigned tag, void *buf)
{
	static _Thread_local uint8_t pi[UPI_MAX];
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	struct ftl_set *f = q->dev->set;
	/* the UBLK_IO_F_* bits are bits of op_flags itself (not of
	 * ublksrv_get_flags(), which shifts them away) */
	unsigned op = ublksrv_get_op(iod), flags = iod->op_flags;
	uint64_t off = iod->start_sector * FTL_SECTOR;
	uint64_t len = (uint64_t)iod->nr_sectors * FTL_SECTOR;
	size_t plen = (size_t)iod->nr_sectors * FTL_PI_TUPLE;
	bool has = flags & UBLK_IO_F_INTEGRITY;
	int r;

	if (len > q->dev->buf_size || plen > sizeof(pi))
		return -EINVAL;
	if (op == UBLK_IO_OP_READ) {
		r = has ? ftl_set_read_pi(f, buf, pi, off, (size_t)len) :
			  ftl_set_read(f, buf, off, (size_t)len);
		if (!r)
			r = ublk_q_ucopy(q, tag, buf, (size_t)len, false, 0);
		if (!r && has)
			r = ublk_q_ucopy(q, tag, pi, plen, false,
					 UBLKSRV_IO_INTEGRITY_FLAG);
		return r ? r : (int)len;
	}
	r = ublk_q_ucopy(q, tag, buf, (size_t)len, true, 0);
	if (!r && has)
		r = ublk_q_ucopy(q, tag, pi, plen, true,
				 UBLKSRV_IO_INTEGRITY_FLAG);
	if (!r) {
		unsigned fua = (flags & UBLK_IO_F_FUA) ? FTL_FUA : 0;

		r = has ? ftl_set_write_pi(f, buf, pi, off, (size_t)len, fua) :
			  ftl_set_write(f, buf, off, (size_t)len, fua);
	}
	return r < 0 ? r : (int)len;
}

void ublk_pi_params(struct ublk_params *p)
{
	p->types |= UBLK_PARAM_TYPE_INTEGRITY;
	p->integrity.flags = LBMD_PI_CAP_INTEGRITY | LBMD_PI_CAP_REFTAG;
	p->integrity.csum_type = LBMD_PI_CSUM_CRC16_T10DIF;
	p->integrity.metadata_size = FTL_PI_TUPLE;
	p->integrity.pi_offset = 0;
	p->integrity.interval_exp = 9;        /* a tuple per 512 bytes */
	p->integrity.tag_size = 0;            /* no app tag storage */
	p->integrity.max_integrity_segments = 0;
}

uint64_t ublk_pi_flags(void)
{
	return UBLK_F_INTEGRITY | UBLK_F_USER_COPY;
}

#else   /* a uapi header without integrity (UBLK_UAPI=host on Debian 12) */

int ublk_pi_rw(struct ublk_queue *q, unsigned tag, void *buf)
{
	(void)q; (void)tag; (void)buf;
	return -EOPNOTSUPP;
}

void ublk_pi_params(struct ublk_params *p)
{
	(void)p;
}

uint64_t ublk_pi_flags(void)
{
	return 0;
}
#endif
