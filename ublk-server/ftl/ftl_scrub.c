/* SPDX-License-Identifier: MIT */
/*
 * Reading pages through the ECC: re-reads after an uncorrectable result
 * (read retry), and scrubbing: a page read with many corrected bits is
 * queued and rewritten elsewhere (from ftl_balance) before its errors grow
 * past what the ECC corrects.
 */
#include <errno.h>

#include "ftl-int.h"

static void scrub_queue(struct ftl *f, uint32_t lpn, uint32_t ppn)
{
	pthread_mutex_lock(&f->scrub_lock);
	for (uint32_t i = 0; i < f->nscrub; i++)
		if (f->scrub_ppn[i] == ppn)
			goto out;
	if (f->nscrub < FTL_SCRUB_Q) {
		f->scrub_lpn[f->nscrub] = lpn;
		f->scrub_ppn[f->nscrub] = ppn;
		/* atomic: ftl_scrub_run peeks at it without the lock */
		__atomic_store_n(&f->nscrub, f->nscrub + 1, __ATOMIC_RELAXED);
	}
out:
	pthread_mutex_unlock(&f->scrub_lock);
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
	if (!r && f->scrub_bits && e.max_corrected >= f->scrub_bits &&
	    lpn != FTL_UNMAPPED)
		scrub_queue(f, lpn, ppn);
	return r;
}

/* Rewrite the queued pages still mapped where they were read (f->lock),
 * each with its data CRC carried from its OOB record, as GC copies are
 * (ftl_gc.c, evac_run): data that fails it stays detectable. */
int ftl_scrub_run(struct ftl *f)
{
	uint32_t lpn[FTL_SCRUB_Q], ppn[FTL_SCRUB_Q], n;
	uint8_t oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;
	int r = 0;

	/* before every host page: an empty queue costs no lock (a page a
	 * reader queues meanwhile waits for the next call) */
	if (!__atomic_load_n(&f->nscrub, __ATOMIC_RELAXED))
		return 0;
	/* at most one block's worth per call (ftl_balance's budget) */
	pthread_mutex_lock(&f->scrub_lock);
	n = f->nscrub < f->g.ppb ? f->nscrub : f->g.ppb;
	for (uint32_t i = 0; i < n; i++) {
		lpn[i] = f->scrub_lpn[f->nscrub - 1 - i];
		ppn[i] = f->scrub_ppn[f->nscrub - 1 - i];
	}
	__atomic_store_n(&f->nscrub, f->nscrub - n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&f->scrub_lock);
	for (uint32_t i = 0; i < n && !r; i++) {
		if (ftl_map_get(f, lpn[i]) != ppn[i])
			continue;       /* rewritten or moved meanwhile */
		if (!ftl_seq_room(f, FTL_PROG_RETRIES + 1))
			break;          /* the next read queues it again */
		r = nand_read_oob(f->nand, ppn[i], oob);
		if (r)
			break;
		if (!ftl_oob_ok(o) || o->kind != FTL_OOB_DATA ||
		    o->lpn != lpn[i])
			continue;       /* reads of it fail (EIO) */
		r = ftl_read_page(f, FTL_UNMAPPED, ppn[i], 0, f->gcbuf, f->g.ps);
		if (r == -EBADMSG) {
			r = 0;          /* too late: reads of it fail */
			continue;
		}
		if (!r)
			r = ftl_gc_prog(f, lpn[i], f->gcbuf, o->data_crc);
		if (!r)
			CADD(f, m.scrubbed_pages, 1);
	}
	return r;
}
