/* SPDX-License-Identifier: MIT */
/* The read path: lock-free map lookups, one pread per page touched. */
#include <errno.h>
#include <string.h>

#include "ftl-int.h"

/*
 * Read @len bytes at logical byte @off.  Unmapped pages read as zeroes,
 * pages recovery found damaged fail with EIO.
 * Erases wait for readers (io_rw), so a looked-up page stays valid while
 * it is read.  Only the codewords the request covers are read, so a read
 * fails (-EIO) exactly when it covers a sector the ECC cannot correct.
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
	pthread_rwlock_rdlock(&f->io_rw);
	for (uint64_t p = mo / ps; p <= (end - 1) / ps && !r; p++) {
		uint64_t lo = p * ps, a = mo > lo ? mo - lo : 0;
		uint64_t b = end < lo + ps ? end - lo : ps;
		uint32_t ppn = ftl_map_get(f, (uint32_t)p);

		if (ppn == FTL_UNMAPPED)
			memset(dst + (lo + a - mo), 0, b - a);
		else if (ppn == FTL_DAMAGED)
			r = -EIO;       /* flushed data lost to media damage */
		else
			r = ftl_read_page(f, (uint32_t)p, ppn, (uint32_t)a,
					  dst + (lo + a - mo),
					  (uint32_t)(b - a));
	}
	pthread_rwlock_unlock(&f->io_rw);
	if (!r)
		CADD(f, m.host_read_sectors, len / FTL_SECTOR);
	return r == -EBADMSG ? -EIO : r;
}
