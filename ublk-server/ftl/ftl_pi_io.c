/* SPDX-License-Identifier: MIT */
/*
 * Reads and writes with protection information (ftl.h: ftl_write_pi,
 * ftl_read_pi): the kernel's tuples checked before a write, tuples built for a
 * read, and a damaged page served sector by sector from the guards stored at
 * program time, so the host's verifier names exactly the bad sectors.  Above
 * ftl_read.c / ftl_write.c (moved unchanged from ftl_pi.c, which ftl_append.c
 * calls below them: the two made a circle of files).
 */
#include <errno.h>
#include <string.h>

#include "ftl-int.h"

int ftl_write_pi(struct ftl *f, const void *buf, const void *pi,
		 uint64_t off, size_t len, unsigned flags)
{
	if (!f->g.pi)
		return -EOPNOTSUPP;
	if (off % FTL_SECTOR || len % FTL_SECTOR)
		return -EINVAL;
	if (ftl_pi_check(buf, pi, off / FTL_SECTOR, len / FTL_SECTOR) >= 0)
		return -EILSEQ;
	return ftl_write(f, buf, off, len, flags);
}

/*
 * Sectors [a, b) (bytes inside the page) of logical page @lpn, whose read
 * failed, into @d with their tuples into @pi from the stored guards; the
 * first is sector @sector.  -EIO when the page's records do not check out.
 * f->lock and io_rw (read) held: no writer moves the page meanwhile.
 */
static int pi_page(struct ftl *f, uint32_t lpn, uint32_t a, uint32_t b,
		   uint8_t *d, uint8_t *pi, uint64_t sector)
{
	static _Thread_local uint8_t page[FTL_MAX_PAGE];
	uint16_t guard[FTL_MAX_PAGE / FTL_SECTOR];
	uint8_t oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;
	uint32_t ppn = ftl_map_get(f, lpn), cw = nand_fault_cw(f->nand);
	struct nand_ecc e = { 0 };
	int r;

	if (ppn == FTL_UNMAPPED || ppn == FTL_DAMAGED)
		return -EIO;
	r = nand_read_ecc(f->nand, ppn, 0, page, f->g.ps, &e);
	if (r && r != -EBADMSG)
		return r;
	if (nand_read_oob(f->nand, ppn, oob) || !ftl_oob_at(&f->g, oob, ppn) ||
	    o->kind != FTL_OOB_DATA || o->lpn != lpn ||
	    !ftl_pi_guards(&f->g, oob, guard))
		return -EIO;
	for (uint32_t s = a / FTL_SECTOR, i = 0; s < b / FTL_SECTOR; s++, i++) {
		const uint8_t *sd = page + (size_t)s * FTL_SECTOR;
		uint16_t gd = guard[s];
		bool bad = r == -EBADMSG && cw &&
			   (e.bad_cw >> (s * FTL_SECTOR / cw) & 1);

		if (bad && ftl_pi_crc16(sd, FTL_SECTOR) == gd)
			gd = (uint16_t)~gd;
		ftl_pi_tuple(pi + (size_t)i * FTL_PI_TUPLE, gd, sector + i);
	}
	memcpy(d, page + a, b - a);
	return 0;
}

int ftl_read_pi(struct ftl *f, void *buf, void *pi, uint64_t off, size_t len)
{
	uint64_t ps = f->g.ps, mo, end;
	uint8_t *dst = buf, *tp = pi;
	int r;

	if (!f->g.pi)
		return -EOPNOTSUPP;
	r = ftl_read(f, buf, off, len);
	if (!r) {
		/* every page passed its CRC: its stored guards are those of
		 * these very bytes (computed from them at program time) */
		ftl_pi_generate(buf, pi, off / FTL_SECTOR, len / FTL_SECTOR);
		return 0;
	}
	if (r != -EIO)
		return r;
	/* page by page: the damaged ones from their stored guards */
	mo = off + f->g.shift;
	end = mo + len;
	for (uint64_t p = mo / ps; p <= (end - 1) / ps; p++) {
		uint64_t lo = p * ps, a = mo > lo ? mo - lo : 0;
		uint64_t b = end < lo + ps ? end - lo : ps;
		uint64_t at = lo + a - mo;      /* bytes into the request */
		uint64_t sector = (off + at) / FTL_SECTOR;

		r = ftl_read(f, dst + at, off + at, (size_t)(b - a));
		if (!r) {
			ftl_pi_generate(dst + at, tp + at / FTL_SECTOR *
					FTL_PI_TUPLE, sector, (b - a) / FTL_SECTOR);
			continue;
		}
		if (r != -EIO)
			return r;
		ftl_lock(&f->lock);
		ftl_rdlock(&f->io_rw);
		r = pi_page(f, (uint32_t)p, (uint32_t)a, (uint32_t)b, dst + at,
			    tp + at / FTL_SECTOR * FTL_PI_TUPLE, sector);
		ftl_rwunlock(&f->io_rw);
		ftl_unlock(&f->lock);
		if (r)
			return r;
	}
	return 0;
}
