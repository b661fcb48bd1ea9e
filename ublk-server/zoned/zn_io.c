/* SPDX-License-Identifier: MIT */
/* Zoned reads, writes and zone appends (zoned.h). */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "zn-int.h"

/* Split @sect into zone and page; -EINVAL off a page or past the disk. */
static int locate(const struct zn *z, uint64_t sect, uint32_t nsect,
		  uint32_t *zone, uint32_t *zpage)
{
	uint64_t zsect = (uint64_t)z->zpages * ZN_SPP;

	if (sect % ZN_SPP || nsect % ZN_SPP || !nsect ||
	    sect + nsect > zsect * z->g.nzones || sect + nsect < sect)
		return -EINVAL;
	*zone = (uint32_t)(sect / zsect);
	*zpage = (uint32_t)(sect % zsect / ZN_SPP);
	return 0;
}

/* Read page @zpage of zone @i (below its prog) into @buf and check it. */
static int read_page(struct zn *z, uint32_t i, uint32_t zpage, uint8_t *buf)
{
	uint64_t ppn = zn_ppn(z, i, zpage);
	uint8_t *oob = z->obuf;
	struct zn_oob o;
	int r;

	r = nand_read_ecc(z->nand, ppn, 0, buf, z->g.page_size, NULL);
	if (!r)
		r = nand_read_oob(z->nand, ppn, oob);
	if (r) {
		z->c.crc_errors++;
		return -EIO;
	}
	memcpy(&o, oob, sizeof(o));
	if (!zn_oob_ok(oob, i, zpage, 0) ||
	    o.data_crc != oct_crc32c(0, buf, z->g.page_size)) {
		z->c.crc_errors++;
		return -EIO;
	}
	if (o.kind == ZN_OOB_FINISH)
		memset(buf, 0, z->g.page_size);
	return 0;
}

int zn_read(struct zn *z, uint64_t sect, uint32_t nsect, void *buf)
{
	uint32_t i, pg, n = nsect / ZN_SPP;
	uint8_t *p = buf;
	int r;

	r = locate(z, sect, nsect, &i, &pg);
	if (r)
		return r;
	pthread_mutex_lock(&z->lock);
	for (uint32_t k = 0; k < n && !r; k++, p += z->g.page_size) {
		if (pg == z->zpages) {          /* into the next zone */
			i++;
			pg = 0;
		}
		if (z->zs[i].cond == ZN_COND_OFFLINE)
			r = -EIO;
		else if (pg >= z->zs[i].prog)
			memset(p, 0, z->g.page_size);
		else
			r = read_page(z, i, pg, p);
		pg++;
	}
	if (!r)
		z->c.host_reads += n;
	pthread_mutex_unlock(&z->lock);
	return r;
}

/* Program @n pages of @data at zone @i's write pointer (room checked). */
static int program(struct zn *z, uint32_t i, uint32_t n, const uint8_t *data)
{
	struct zn_state *s = &z->zs[i];
	uint32_t os = nand_geom(z->nand)->oob_size, ppb = z->g.ppb;
	int r = 0;

	while (n && !r) {
		uint32_t blk = zn_block(z, i, s->wp);
		uint32_t run = ppb - s->wp % ppb, done = 0;
		uint32_t ec = nand_block_ec(z->nand, blk);

		if (run > n)
			run = n;
		memset(z->obuf, 0, (size_t)run * os);
		for (uint32_t k = 0; k < run; k++)
			zn_oob_fill((struct zn_oob *)(z->obuf + (size_t)k * os),
				    ZN_OOB_DATA, i, s->wp + k,
				    data + (size_t)k * z->g.page_size,
				    z->g.page_size, ec);
		r = nand_program_run(z->nand, zn_ppn(z, i, s->wp), run, data,
				     z->obuf, &done);
		if (r == -NAND_EFAIL)
			done++;              /* that page is used up */
		s->wp += done;
		s->prog = s->wp;
		z->c.host_writes += done;
		data += (size_t)done * z->g.page_size;
		n -= done < n ? done : n;
	}
	if (r == -NAND_EFAIL) {      /* a worn medium: no more writes here */
		z->c.media_failures++;
		zn_set_cond(z, i, ZN_COND_READONLY);
	}
	return r ? -EIO : 0;
}

/* Write at zone @i's page @pg under the lock: the zone rules, then the
 * pages; *@at the sector written. */
static int write_locked(struct zn *z, uint32_t i, uint32_t pg, uint32_t n,
			const void *buf, unsigned flags)
{
	struct zn_state *s = &z->zs[i];
	int r;

	if (z->readonly)
		return -EROFS;
	if (s->cond == ZN_COND_FULL || s->cond == ZN_COND_READONLY ||
	    s->cond == ZN_COND_OFFLINE || pg + n > z->zpages)
		return -EIO;
	if (pg != s->wp) {
		z->c.wp_violations++;
		return -EIO;
	}
	if (s->cond != ZN_COND_IMP_OPEN && s->cond != ZN_COND_EXP_OPEN) {
		r = zn_open_room(z, i);
		if (r)
			return r;
		zn_set_cond(z, i, ZN_COND_IMP_OPEN);
	}
	r = program(z, i, n, buf);
	if (s->cond == ZN_COND_READONLY)
		return r;
	if (s->wp == z->zpages)
		zn_set_cond(z, i, ZN_COND_FULL);
	else if (!s->wp && s->cond == ZN_COND_IMP_OPEN)
		zn_set_cond(z, i, ZN_COND_EMPTY);  /* nothing went in */
	if (!r && (flags & ZN_FUA))
		r = nand_sync(z->nand);
	return r;
}

int zn_write(struct zn *z, uint64_t sect, uint32_t nsect, const void *buf,
	     unsigned flags)
{
	uint32_t i, pg;
	int r;

	r = locate(z, sect, nsect, &i, &pg);
	if (r)
		return r;
	pthread_mutex_lock(&z->lock);
	r = write_locked(z, i, pg, nsect / ZN_SPP, buf, flags);
	pthread_mutex_unlock(&z->lock);
	return r;
}

int zn_append(struct zn *z, uint64_t zone, uint32_t nsect, const void *buf,
	      unsigned flags, uint64_t *at)
{
	uint32_t i, pg;
	int r;

	r = locate(z, zone, nsect, &i, &pg);
	if (r || pg)
		return r ? r : -EINVAL;
	pthread_mutex_lock(&z->lock);
	pg = z->zs[i].wp;
	r = write_locked(z, i, pg, nsect / ZN_SPP, buf, flags);
	if (!r) {
		z->c.appends++;
		*at = zone + (uint64_t)pg * ZN_SPP;
	}
	pthread_mutex_unlock(&z->lock);
	return r;
}

int zn_flush(struct zn *z)
{
	int r = 0;

	if (z->readonly)
		return 0;
	pthread_mutex_lock(&z->lock);
	r = nand_sync(z->nand);
	pthread_mutex_unlock(&z->lock);
	return r;
}
