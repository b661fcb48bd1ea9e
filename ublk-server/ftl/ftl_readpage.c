/* SPDX-License-Identifier: MIT */
/*
 * Reading a flash page through the ECC, the page reader GC, scrub and the
 * host read path use: re-reads after an uncorrectable result (read retry),
 * and the scrub queue: a page read with many corrected bits is queued, to
 * be rewritten elsewhere (ftl_scrub_run, ftl_maint.c) before its errors
 * grow past what the ECC corrects.
 */
#include <errno.h>

#include "ftl-int.h"

static void scrub_queue(struct ftl *f, uint32_t lpn, uint32_t ppn)
{
	ftl_lock(&f->scrub.lock);
	for (uint32_t i = 0; i < f->scrub.n; i++)
		if (f->scrub.ppn[i] == ppn)
			goto out;
	if (f->scrub.n < FTL_SCRUB_Q) {
		f->scrub.lpn[f->scrub.n] = lpn;
		f->scrub.ppn[f->scrub.n] = ppn;
		/* atomic: ftl_scrub_take peeks at it without the lock */
		__atomic_store_n(&f->scrub.n, f->scrub.n + 1, __ATOMIC_RELAXED);
	}
out:
	ftl_unlock(&f->scrub.lock);
}

/*
 * Read [off, off+len) of flash page @ppn, which holds logical page @lpn
 * (FTL_UNMAPPED: do not queue a scrub).  -EBADMSG when the ECC cannot
 * correct it after FTL_READ_RETRIES re-reads.
 */
int ftl_read_page(struct ftl *f, uint32_t lpn, uint32_t ppn, uint32_t off,
		  void *buf, uint32_t len)
{
	struct nand_ecc e;
	int r;

	for (unsigned t = 0;; t++) {
		r = nand_read_ecc(f->nand, ppn, off, buf, len, &e);
		if (r != -EBADMSG || t >= FTL_READ_RETRIES)
			break;
		CADD(f, m.read_retries, 1);
	}
	if (!r && f->scrub.bits && e.max_corrected >= f->scrub.bits &&
	    lpn != FTL_UNMAPPED)
		scrub_queue(f, lpn, ppn);
	return r;
}

/* Take the newest queued pages, at most @max, into @lpn / @ppn: how many.
 * An empty queue costs no lock (a page a reader queues meanwhile waits for
 * the next call). */
uint32_t ftl_scrub_take(struct ftl *f, uint32_t *lpn, uint32_t *ppn,
			uint32_t max)
{
	uint32_t n;

	if (!__atomic_load_n(&f->scrub.n, __ATOMIC_RELAXED))
		return 0;
	ftl_lock(&f->scrub.lock);
	n = f->scrub.n < max ? f->scrub.n : max;
	for (uint32_t i = 0; i < n; i++) {
		lpn[i] = f->scrub.lpn[f->scrub.n - 1 - i];
		ppn[i] = f->scrub.ppn[f->scrub.n - 1 - i];
	}
	__atomic_store_n(&f->scrub.n, f->scrub.n - n, __ATOMIC_RELAXED);
	ftl_unlock(&f->scrub.lock);
	return n;
}
