/* SPDX-License-Identifier: MIT */
/*
 * A zoned image over ublk (UBLK_F_ZONED, Linux 6.6+; it needs
 * UBLK_F_USER_COPY): the request data moves by pread/pwrite on /dev/ublkcN
 * at the tag's position, through the tag's buffer; the zone operations
 * and REPORT_ZONES go to the zone layer (zoned.h), a zone append answers
 * with the sector it wrote (the commit's zone_append_lba).  docs/ublk.md
 * ("Zoned images").
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ublk-int.h"
#include "zoned.h"

#ifdef UBLK_F_ZONED
#include <linux/blkzoned.h>

/* Move @len bytes between @buf and the request (@in: request -> @buf). */
static int uz_copy(struct ublk_queue *q, unsigned tag, void *buf, size_t len,
		   bool in)
{
	return ublk_q_ucopy(q, tag, buf, len, in, 0);
}

/* REPORT_ZONES: up to nr_zones from start_sector, as struct blk_zone. */
static int uz_report(struct ublk_queue *q, unsigned tag, void *buf,
		     const struct ublksrv_io_desc *iod)
{
	uint32_t max = q->dev->buf_size / sizeof(struct blk_zone), n;
	struct zn_zone zz[64];
	struct blk_zone *bz = buf;
	uint32_t want = iod->nr_zones < max ? iod->nr_zones : max, got = 0;
	uint64_t sect = iod->start_sector;
	int r;

	memset(buf, 0, (size_t)want * sizeof(*bz));
	while (got < want) {
		n = want - got < 64 ? want - got : 64;
		r = zn_report(q->dev->zn, sect, zz, n);
		if (r <= 0)
			break;
		for (int i = 0; i < r; i++, got++) {
			bz[got].start = zz[i].start;
			bz[got].len = zz[i].len;
			bz[got].capacity = zz[i].capacity;
			bz[got].wp = zz[i].wp;
			bz[got].type = BLK_ZONE_TYPE_SEQWRITE_REQ;
			bz[got].cond = zz[i].cond;
		}
		sect = zz[r - 1].start + zz[r - 1].len;
	}
	r = uz_copy(q, tag, buf, (size_t)got * sizeof(*bz), false);
	return r ? r : (int)(got * sizeof(*bz));
}

int ublk_zoned_handle(struct ublk_queue *q, unsigned tag, void *buf,
		      uint64_t *lba)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	struct zn *z = q->dev->zn;
	/* UBLK_IO_F_* are bits of op_flags itself (not of ublksrv_get_flags) */
	unsigned op = ublksrv_get_op(iod), flags = iod->op_flags;
	uint64_t len = (uint64_t)iod->nr_sectors * 512;
	unsigned fua = (flags & UBLK_IO_F_FUA) ? ZN_FUA : 0;
	int r;

	*lba = 0;
	switch (op) {
	case UBLK_IO_OP_READ:
		if (len > q->dev->buf_size)
			return -EINVAL;
		r = zn_read(z, iod->start_sector, iod->nr_sectors, buf);
		if (!r)
			r = uz_copy(q, tag, buf, (size_t)len, false);
		return r ? r : (int)len;
	case UBLK_IO_OP_WRITE:
	case UBLK_IO_OP_ZONE_APPEND:
		if (len > q->dev->buf_size)
			return -EINVAL;
		r = uz_copy(q, tag, buf, (size_t)len, true);
		if (r)
			return r;
		if (op == UBLK_IO_OP_WRITE)
			r = zn_write(z, iod->start_sector, iod->nr_sectors, buf,
				     fua);
		else
			r = zn_append(z, iod->start_sector, iod->nr_sectors, buf,
				      fua, lba);
		return r ? r : (int)len;
	case UBLK_IO_OP_FLUSH:
		return zn_flush(z);
	case UBLK_IO_OP_ZONE_OPEN:
		return zn_mgmt(z, ZN_OP_OPEN, iod->start_sector, false);
	case UBLK_IO_OP_ZONE_CLOSE:
		return zn_mgmt(z, ZN_OP_CLOSE, iod->start_sector, false);
	case UBLK_IO_OP_ZONE_FINISH:
		return zn_mgmt(z, ZN_OP_FINISH, iod->start_sector, false);
	case UBLK_IO_OP_ZONE_RESET:
		return zn_mgmt(z, ZN_OP_RESET, iod->start_sector, false);
	case UBLK_IO_OP_ZONE_RESET_ALL:
		return zn_mgmt(z, ZN_OP_RESET, 0, true);
	case UBLK_IO_OP_REPORT_ZONES:
		return uz_report(q, tag, buf, iod);
	default:                /* discard, write-zeroes: not on zones */
		return -EOPNOTSUPP;
	}
}

void ublk_zoned_params(struct ublk_dev *d, struct ublk_params *p)
{
	const struct zn_geom *g = zn_geom(d->zn);
	uint32_t zsect = (uint32_t)zn_zone_sectors(d->zn);
	unsigned blk_shift = 12;

	for (uint32_t b = g->ppb; b > 1; b >>= 1)
		blk_shift++;
	memset(p, 0, sizeof(*p));
	p->types = UBLK_PARAM_TYPE_BASIC | UBLK_PARAM_TYPE_ZONED;
	p->basic.attrs = UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA;
	if (d->read_only)
		p->basic.attrs |= UBLK_ATTR_READ_ONLY;
	p->basic.logical_bs_shift = 12;        /* the page: ZN_LBS */
	p->basic.physical_bs_shift = 12;
	p->basic.io_min_shift = 12;
	p->basic.io_opt_shift = (uint8_t)blk_shift;   /* an erase block */
	p->basic.max_sectors = d->buf_size >> 9;
	p->basic.chunk_sectors = zsect;        /* the zone */
	p->basic.dev_sectors = zn_sectors(d->zn);
	p->zoned.max_open_zones = g->max_open;
	p->zoned.max_active_zones = g->max_active;
	p->zoned.max_zone_append_sectors = p->basic.max_sectors < zsect ?
					   p->basic.max_sectors : zsect;
}

uint64_t ublk_zoned_flags(void)
{
	return UBLK_F_ZONED | UBLK_F_USER_COPY;
}

#else   /* a uapi header without zoned ublk (UBLK_UAPI=host on Debian 12) */

int ublk_zoned_handle(struct ublk_queue *q, unsigned tag, void *buf,
		      uint64_t *lba)
{
	(void)q; (void)tag; (void)buf;
	*lba = 0;
	return -EOPNOTSUPP;
}

void ublk_zoned_params(struct ublk_dev *d, struct ublk_params *p)
{
	(void)d;
	memset(p, 0, sizeof(*p));
}

uint64_t ublk_zoned_flags(void)
{
	return 0;
}
#endif
