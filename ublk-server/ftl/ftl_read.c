/* SPDX-License-Identifier: MIT */
/* The read path: lock-free map lookups, each page checked against its OOB. */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

/* per-thread page buffer for partial reads (no allocation per I/O) */
static _Thread_local uint8_t rbuf[FTL_MAX_PAGE];

/* per-thread OOB bytes of one run of pages (FTL_RUN_OOB / oob_size pages) */
#define FTL_RUN_MAX 256u
#define FTL_RUN_OOB 65536u
static _Thread_local uint8_t runoob[FTL_RUN_OOB];

/*
 * Read [a, b) of logical page @lpn from flash page @ppn into @dst and check
 * the page against its OOB record: a DATA record for @lpn whose data CRC
 * matches the whole page.  Anything else (an erased page, a page of
 * another logical page, bits the ECC did not catch) is -EILSEQ: never
 * served as good data (-EBADMSG: a codeword the ECC cannot correct).
 * The page is read whole with its OOB (one nand run); with an ECC model
 * only the part asked for goes through the ECC, and a part is checked
 * against the page's stored bytes (nand_read_raw): the model's errors and
 * counts stay with the sectors asked for.
 */
static int read_checked(struct ftl *f, uint32_t lpn, uint32_t ppn,
			uint32_t a, uint32_t b, uint8_t *dst)
{
	uint8_t oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;
	uint32_t ps = f->g.ps;
	const uint8_t *page = dst;
	int r, res;

	/* the whole page and its OOB in one nand run, when no ECC model
	 * is in the way (a part: into rbuf, then copied) */
	page = a || b != ps ? rbuf : dst;
	r = nand_read_run(f->nand, ppn, 1, (void *)page, oob, &res);
	if (r != -EOPNOTSUPP) {
		if (!r)
			r = res;
		if (r)
			return r;
		if (!ftl_oob_at(&f->g, oob, ppn) || o->kind != FTL_OOB_DATA ||
		    o->lpn != lpn || oct_crc32c(0, page, ps) != o->data_crc)
			return -EILSEQ;
		if (page != dst)
			memcpy(dst, rbuf + a, b - a);
		return 0;
	}
	page = dst;
	r = ftl_read_page(f, lpn, ppn, a, dst, b - a);
	if (r)
		return r;
	r = nand_read_oob(f->nand, ppn, oob);
	if (r)
		return r;
	if (!ftl_oob_at(&f->g, oob, ppn) || o->kind != FTL_OOB_DATA ||
	    o->lpn != lpn)
		return -EILSEQ;
	if (a || b != ps) {
		/* the stored page, past the ECC model: its read errors and
		 * counters belong to the sectors asked for only */
		r = nand_read_raw(f->nand, ppn, rbuf);
		if (r)
			return r;
		page = rbuf;
	}
	return oct_crc32c(0, page, ps) == o->data_crc ? 0 : -EILSEQ;
}

/* Read [a, b) of logical page @lpn as the map says now. */
static int read_lpn(struct ftl *f, uint32_t lpn, uint32_t a, uint32_t b,
		    uint8_t *d)
{
	uint32_t ppn = ftl_map_get(f, lpn);

	if (ppn == FTL_UNMAPPED) {
		memset(d, 0, b - a);
		return 0;
	}
	if (ppn == FTL_DAMAGED)
		return -EIO;    /* flushed data lost to media damage */
	return read_checked(f, lpn, ppn, a, b, d);
}

/*
 * read_lpn(); a page that does not match its OOB record is looked at again
 * with writers held off: a writer may have remapped it, or be moving OOB
 * records between the nand's cache and the medium (their lock order:
 * f->lock, then io_rw).  Still -EILSEQ: counted in read_crc_errors.
 * io_rw held for reading on entry and on return.
 */
static int read_settled(struct ftl *f, uint32_t lpn, uint32_t a, uint32_t b,
			uint8_t *d)
{
	int r = read_lpn(f, lpn, a, b, d);

	FTL_ASSERT_NOT_HELD(&f->lock);
	if (r != -EILSEQ)
		return r;
	ftl_rwunlock(&f->io_rw);
	ftl_lock(&f->lock);
	ftl_rdlock(&f->io_rw);
	r = read_lpn(f, lpn, a, b, d);
	ftl_unlock(&f->lock);
	if (r == -EILSEQ)
		CADD(f, m.read_crc_errors, 1);
	return r;
}

int ftl_read_whole(struct ftl *f, uint32_t lpn, uint8_t *buf)
{
	int r;

	FTL_ASSERT_NOT_HELD(&f->lock);
	ftl_rdlock(&f->io_rw);
	r = read_settled(f, lpn, 0, f->g.ps, buf);
	ftl_rwunlock(&f->io_rw);
	return r == -EBADMSG || r == -EILSEQ ? -EIO : r;
}

/*
 * Whole logical pages [p, p + *cnt) mapped to consecutive flash pages, at
 * most FTL_RUN_MAX (and as many OOB records as runoob holds): *cnt is set
 * to the run's length (1 when @p starts none) and its first flash page
 * returned (FTL_UNMAPPED: no run).
 */
static uint32_t run_at(struct ftl *f, uint64_t p, uint64_t last,
		       uint32_t *cnt)
{
	uint32_t ppn = ftl_map_get(f, (uint32_t)p), n = 1;
	uint32_t max = FTL_RUN_OOB / f->g.oob;

	if (max > FTL_RUN_MAX)
		max = FTL_RUN_MAX;
	*cnt = 1;
	if (ppn == FTL_UNMAPPED || ppn == FTL_DAMAGED)
		return FTL_UNMAPPED;
	while (p + n <= last && n < max &&
	       ftl_map_get(f, (uint32_t)(p + n)) == ppn + n)
		n++;
	*cnt = n;
	return ppn;
}

/*
 * Read whole logical pages [p, p + cnt) from flash pages [ppn, ppn + cnt)
 * into @d with one nand run, each page checked against its OOB record
 * as read_checked() does.  Returns the number of leading pages read and
 * checked (the caller reads the rest one by one, with the retry and the
 * error accounting of the page path), or a negative error.
 */
static long read_run(struct ftl *f, uint64_t p, uint32_t ppn, uint32_t cnt,
		     uint8_t *d)
{
	uint32_t ps = f->g.ps, os = f->g.oob;
	int res[FTL_RUN_MAX];
	int r;

	r = nand_read_run(f->nand, ppn, cnt, d, runoob, res);
	if (r == -EOPNOTSUPP)
		return 0;
	if (r)
		return r;
	for (uint32_t i = 0; i < cnt; i++) {
		const struct ftl_oob *o = (const void *)(runoob + (size_t)i * os);

		if (res[i])
			return res[i];
		if (!ftl_oob_at(&f->g, o, ppn + i) ||
		    o->kind != FTL_OOB_DATA || o->lpn != p + i ||
		    oct_crc32c(0, d + (size_t)i * ps, ps) != o->data_crc)
			return i;       /* this one goes the page path */
	}
	return cnt;
}

/*
 * Read @len bytes at logical byte @off.  Unmapped pages read as zeroes,
 * pages recovery found damaged fail with EIO, and so does a page that does
 * not match its OOB record (counted as read_crc_errors); an EIO counts as
 * a media error, a read that succeeds as a host read command.
 * Erases wait for readers (io_rw), so a looked-up page stays valid while
 * it is read.  Only the codewords the request covers decide ECC failures,
 * so a read fails (-EIO) exactly when it covers a sector the ECC cannot
 * correct.
 */
int ftl_read(struct ftl *f, void *buf, uint64_t off, size_t len)
{
	uint64_t mo, end, ps = f->g.ps;
	uint8_t *dst = buf;
	int r = 0;

	if (off % FTL_SECTOR || len % FTL_SECTOR || off > f->g.size ||
	    len > f->g.size - off)
		return -EINVAL;
	if (!len)
		return 0;
	mo = off + f->g.shift;
	end = mo + len;
	ftl_rdlock(&f->io_rw);
	for (uint64_t p = mo / ps; p <= (end - 1) / ps && !r; p++) {
		uint64_t lo = p * ps, a = mo > lo ? mo - lo : 0;
		uint64_t b = end < lo + ps ? end - lo : ps;
		uint8_t *d = dst + (lo + a - mo);
		uint64_t last = end / ps - 1;   /* the last whole page */
		uint32_t cnt, ppn;

		if (!a && b == ps && (ppn = run_at(f, p, last, &cnt)) !=
		    FTL_UNMAPPED && cnt > 1) {
			long k = read_run(f, p, ppn, cnt, d);

			if (k < 0) {
				r = (int)k;
				break;
			}
			p += (uint64_t)k;       /* pages read and checked */
			if ((uint32_t)k == cnt) {
				p--;
				continue;
			}
			lo = p * ps;
			d = dst + (lo - mo);
		}
		r = read_settled(f, (uint32_t)p, (uint32_t)a, (uint32_t)b, d);
	}
	ftl_rwunlock(&f->io_rw);
	if (r == -EBADMSG || r == -EILSEQ)
		r = -EIO;
	if (!r) {
		CADD(f, m.host_read_sectors, len / FTL_SECTOR);
		CADD(f, m.host_read_commands, 1);
	} else if (r == -EIO) {
		CADD(f, m.media_errors, 1);
	}
	return r;
}
