/* SPDX-License-Identifier: MIT */
/* Emulated NAND flash: the rules, counters, the fault hook and model, bad
 * blocks, failed programs undone (see nand.h; the other nand_*.c files
 * in nand-int.h). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "nand-int.h"

/* Create a nand over @b with geometry @g (see nand.h). */
int nand_create(struct nand_backing *b, const struct nand_geom *g,
		struct nand **out)
{
	struct nand *n;
	int i;

	if (!g->page_size || !g->ppb || !g->nblocks || g->oob_size < 16)
		return -EINVAL;
	if (g->oob_stamp && !nand_stamp_geom_ok(g))
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->g = *g;
	n->b = b;
	n->wp = calloc(g->nblocks, sizeof(*n->wp));
	n->ec = calloc(g->nblocks, sizeof(*n->ec));
	n->bad = calloc(g->nblocks, 1);
	n->zeroed = calloc(g->nblocks, 1);
	if (!n->wp || !n->ec || !n->bad || !n->zeroed)
		goto err;
	if (g->oob_stamp) {
		n->gcur = calloc(g->nblocks, sizeof(*n->gcur));
		n->gmax = calloc(g->nblocks, sizeof(*n->gmax));
		if (!n->gcur || !n->gmax)
			goto err;
	}
	for (uint32_t i2 = 0; i2 < g->nblocks; i2++)
		n->wp[i2] = g->ppb;
	n->stride = g->page_size + (g->oob_inline ? g->oob_size : 0);
	if (b->ops->view && b->ops->resident && b->ops->view(b, 0, 1)) {
		n->mapped = calloc(g->nblocks, sizeof(*n->mapped));
		n->wtried = calloc(g->nblocks, 1);
		if (!n->mapped || !n->wtried)
			goto err;
	}
	n->wgen = 1;                    /* no window yet */
	if (g->oob_inline) {
		n->pbuf = malloc((size_t)g->page_size + g->oob_size);
		if (!n->pbuf)
			goto err;
	}
	for (i = 0; i < NAND_OOB_SLOTS; i++) {
		n->slot[i].blk = -1;
		n->slot[i].buf = malloc((size_t)g->ppb * g->oob_size);
		if (!n->slot[i].buf)
			goto err;
	}
	*out = n;
	return 0;
err:
	n->b = NULL;
	nand_destroy(n);
	return -ENOMEM;
}

/* Free @n and its backing (without syncing). */
void nand_destroy(struct nand *n)
{
	if (!n)
		return;
	for (int i = 0; i < NAND_OOB_SLOTS; i++)
		free(n->slot[i].buf);
	free(n->wp);
	free(n->ec);
	free(n->bad);
	free(n->zeroed);
	free(n->mapped);
	free(n->wtried);
	free(n->gcur);
	free(n->gmax);
	free(n->pbuf);
	nand_fm_destroy(n->fm);
	if (n->b && n->b->ops->destroy)
		n->b->ops->destroy(n->b);
	free(n);
}

/* Hand the backing back to the caller (see nand.h). */
struct nand_backing *nand_detach(struct nand *n)
{
	struct nand_backing *b = n->b;

	n->b = NULL;
	return b;
}

/* The geometry @n was created with. */
const struct nand_geom *nand_geom(const struct nand *n)
{
	return &n->g;
}

/* The backing under @n. */
struct nand_backing *nand_backing(struct nand *n)
{
	return n->b;
}

static int fault(struct nand *n, enum nand_op op, uint64_t page, void *buf,
		 size_t len)
{
	int r;

	if (!n->fault)
		return 0;
	r = n->fault(n->fault_ctx, op, page, buf, len);
	if (r)
		CNT_ADD(n, faults);
	return r;
}

/* Read part of a page (see nand.h). */
int nand_read(struct nand *n, uint64_t ppn, uint32_t off, void *buf,
	      uint32_t len)
{
	return nand_read_ecc(n, ppn, off, buf, len, NULL);
}

/* The stored bytes of a whole page, past the fault model (see nand.h). */
int nand_read_raw(struct nand *n, uint64_t ppn, void *buf)
{
	uint32_t blk = (uint32_t)(ppn / n->g.ppb), pg = (uint32_t)(ppn % n->g.ppb);

	if (blk >= n->g.nblocks)
		return -EINVAL;
	CNT_ADD(n, reads);
	if (pg >= __atomic_load_n(&n->wp[blk], __ATOMIC_ACQUIRE)) {
		memset(buf, 0xff, n->g.page_size);
		return 0;
	}
	return bk_pread(n, buf, n->g.page_size, data_at(n, ppn));
}

/* Read part of a page through the ECC (see nand.h). */
int nand_read_ecc(struct nand *n, uint64_t ppn, uint32_t off, void *buf,
		  uint32_t len, struct nand_ecc *e)
{
	struct nand_ecc tmp;
	uint32_t blk = (uint32_t)(ppn / n->g.ppb), pg = (uint32_t)(ppn % n->g.ppb);
	int r;

	if (blk >= n->g.nblocks || (uint64_t)off + len > n->g.page_size)
		return -EINVAL;
	if (!e)
		e = &tmp;
	memset(e, 0, sizeof(*e));
	CNT_ADD(n, reads);
	if (pg >= __atomic_load_n(&n->wp[blk], __ATOMIC_ACQUIRE)) {
		memset(buf, 0xff, len);
		return 0;
	}
	r = bk_pread(n, buf, len, data_at(n, ppn) + off);
	if (r)
		return r;
	if (fault(n, NAND_OP_READ, ppn, buf, len) < 0)
		return -EIO;
	if (!n->fm || !len || blk < n->fm_first)
		return 0;
	r = nand_fm_read(n->fm, ppn, n->ec[blk], off, buf, len, e);
	if (e->corrected)
		__atomic_fetch_add(&n->c.ecc_corrected_bits, e->corrected,
				   __ATOMIC_RELAXED);
	if (e->bad_cw)
		__atomic_fetch_add(&n->c.ecc_uncorrectable,
				   (uint64_t)__builtin_popcountll(e->bad_cw),
				   __ATOMIC_RELAXED);
	return r;
}

/* The end of a run read: the OOB as the erase stamps make it, pages past
 * the write pointer 0xff, the fault hook's verdict per page (@d NULL: the
 * data was not read, nand_read_run_view: every page programmed, no hook). */
static int run_tail(struct nand *n, uint64_t ppn, uint32_t count, uint8_t *d,
		    uint8_t *o, int *res)
{
	uint32_t ps = n->g.page_size, os = n->g.oob_size;
	int r;

	for (uint32_t i = 0; n->g.oob_stamp && i < count;) {
		uint32_t blk = (uint32_t)((ppn + i) / n->g.ppb);
		uint32_t pg = (uint32_t)((ppn + i) % n->g.ppb);
		uint32_t c = n->g.ppb - pg < count - i ? n->g.ppb - pg : count - i;

		r = nand_stamp_view_pages(n, blk, pg, c, o + (size_t)i * os);
		if (r)
			return r;
		i += c;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint64_t p = ppn + i;
		uint32_t blk = (uint32_t)(p / n->g.ppb);

		res[i] = 0;
		if (!d)
			continue;
		if (p % n->g.ppb >= __atomic_load_n(&n->wp[blk], __ATOMIC_ACQUIRE))
			memset(d + (size_t)i * ps, 0xff, ps);
		else if (fault(n, NAND_OP_READ, p, d + (size_t)i * ps, ps) < 0)
			res[i] = -EIO;
	}
	return 0;
}

/* Read a run of whole pages with their OOB (see nand.h). */
int nand_read_run(struct nand *n, uint64_t ppn, uint32_t count, void *buf,
		  void *oob, int *res)
{
	uint32_t ps = n->g.page_size, os = n->g.oob_size;
	uint64_t end = ppn + count;
	uint8_t *d = buf, *o = oob;
	int r;

	if (!count || end > (uint64_t)n->g.nblocks * n->g.ppb ||
	    end < ppn)
		return -EINVAL;
	if (n->fm && (end - 1) / n->g.ppb >= n->fm_first)
		return -EOPNOTSUPP;     /* pages go through the ECC model */
	__atomic_fetch_add(&n->c.reads, count, __ATOMIC_RELAXED);
	if (nand_run_view(n, ppn, count, d, o)) {
		r = 0;
	} else if (n->g.oob_inline) {
		struct iovec iov[NAND_IOV_MAX];

		r = 0;
		for (uint32_t i = 0; i < count && !r;) {
			uint32_t c = count - i < NAND_IOV_MAX / 2 ? count - i
								   : NAND_IOV_MAX / 2;

			for (uint32_t k = 0; k < c; k++) {
				iov[2 * k].iov_base = d + (size_t)(i + k) * ps;
				iov[2 * k].iov_len = ps;
				iov[2 * k + 1].iov_base = o + (size_t)(i + k) * os;
				iov[2 * k + 1].iov_len = os;
			}
			r = bk_rw_vec(n, false, iov, 2 * (int)c, data_at(n, ppn + i));
			i += c;
		}
	} else {
		r = bk_pread(n, d, (size_t)count * ps, data_at(n, ppn));
		if (!r)
			r = bk_pread(n, o, (size_t)count * os, oob_at(n, ppn));
	}
	if (r)
		return r;
	return run_tail(n, ppn, count, d, o, res);
}

/* Read a run's OOB and point at its data in the mapping (see nand.h). */
int nand_read_run_view(struct nand *n, uint64_t ppn, uint32_t count,
		       const void **pages, void *oob, int *res)
{
	uint64_t end = ppn + count;

	if (!count || end > (uint64_t)n->g.nblocks * n->g.ppb || end < ppn)
		return -EINVAL;
	if (n->fault || (n->fm && (end - 1) / n->g.ppb >= n->fm_first) ||
	    !nand_run_viewp(n, ppn, count, pages, oob))
		return -EOPNOTSUPP;     /* a read may differ: read it */
	__atomic_fetch_add(&n->c.reads, count, __ATOMIC_RELAXED);
	return run_tail(n, ppn, count, NULL, oob, res);
}

/* Has a failed program that could not be undone failed the nand? */
bool nand_failed(const struct nand *n)
{
	return __atomic_load_n(&n->failed, __ATOMIC_ACQUIRE);
}

/*
 * A program that failed with an error of the backing (@err; not a status
 * FAIL of the medium) may still have left pages whole: a pwritev cut
 * short after a prefix of complete slots (a full tmpfs: ENOSPC), a copy
 * into the mapping cut by a SIGBUS and a pwrite that failed after it, an
 * NBD request that failed after the server wrote part of it, the OOB write
 * of a separate-layout program (data written, OOB in part).  Such a page
 * holds a valid OOB record, numbered past everything flushed: roll-forward
 * after a crash would take it in place of data the host still reads (the
 * map never moved; the host was told the write failed).  So each page of
 * the failed write [ppn, ppn + count) gets its OOB put back to what it
 * held erased -- zeroes; page 0 of a block of generation @gen > 0 (erase
 * stamps): that erase stamp -- and the backing is synced, before the
 * error goes up.  @oob: the records the program wrote (the stamps are
 * added here), to tell them when a restore write fails.
 *
 * The ordering argument: the restore is written after the failed write,
 * to the same byte store (the page cache, which survives a killed
 * server), so whatever reads the store after it -- recovery after a kill
 * -- finds the restored OOB, never the record; the sync then makes both
 * durable before the caller (and the host) hears of the failure, so no
 * crash after that instant can bring the record back.  (A power cut
 * before it is a cut during the write: the host never saw it fail, and a
 * write in flight may land, as any.)  A restore write that fails is
 * checked by reading the OOB back: bytes that are not the record written
 * cannot pass for it (a tmpfs hole the program could not fill reads
 * zeroes, a torn record fails its CRC or its stamp), and an OOB past the
 * end of a store truncated underneath (-ENXIO) is gone.  Otherwise -- the
 * read fails too or finds the record, or the sync fails -- the record may
 * be there and durable: the nand is failed (n->failed, logged once) and
 * writes nothing more (programs, erases and syncs fail with -EIO), so no
 * flush succeeds after data the host was told did not land.  Runs
 * outside the caller's lock like the program it undoes (inline layout:
 * no shared buffer touched).  Returns @err.
 */
static int prog_undo(struct nand *n, uint64_t ppn, uint32_t count,
		     const uint8_t *oob, uint32_t gen, int err)
{
	const struct nand_backing_ops *ops = n->b->ops;
	uint32_t os = n->g.oob_size;
	uint8_t blank[NAND_OOB_MAX], want[NAND_OOB_MAX], got[NAND_OOB_MAX];
	const char *why = os > NAND_OOB_MAX ? "OOB too large to undo" : NULL;
	int r = 0;

	for (uint32_t i = 0; !why && i < count; i++) {
		uint64_t p = ppn + i, at = oob_at(n, p);

		memset(blank, 0, os);
		if (n->g.oob_stamp && !(p % n->g.ppb) && gen)
			nand_stamp_put(n, blank, p, STAMP_ERASE, gen);
		CNT_ADD(n, backing_writes);
		if (!ops->pwrite(n->b, blank, os, at))
			continue;
		memcpy(want, oob + (size_t)i * os, os);
		if (n->g.oob_stamp)
			nand_stamp_put(n, want, p, STAMP_PROG, gen);
		CNT_ADD(n, backing_reads);
		r = ops->pread(n->b, got, os, at);
		if (r != -ENXIO && (r || !memcmp(got, want, os)))
			why = "they could not be overwritten";
	}
	hole_stale(n);
	if (!why) {     /* -ENXIO: synced, what is gone is gone */
		CNT_ADD(n, backing_writes);
		r = ops->sync(n->b);
		if (r && r != -ENXIO)
			why = "the sync after undoing them failed";
	}
	if (why && !__atomic_exchange_n(&n->failed, true, __ATOMIC_ACQ_REL))
		fprintf(stderr, "ublk-flash: a failed program (%s) may have "
			"left flash pages %llu..%llu readable and %s (%s): the "
			"flash is failed, every later write and flush fails "
			"(EIO)\n", strerror(-err), (unsigned long long)ppn,
			(unsigned long long)(ppn + count - 1), why,
			strerror(r < 0 ? -r : EIO));
	return err;
}

/* Program one page (see nand.h). */
int nand_program(struct nand *n, uint64_t ppn, const void *data,
		 const void *oob)
{
	uint32_t blk = (uint32_t)(ppn / n->g.ppb), pg = (uint32_t)(ppn % n->g.ppb);
	struct oob_slot *s;
	int r;

	if (blk >= n->g.nblocks)
		return -EINVAL;
	if (pg < n->wp[blk]) {
		CNT_ADD(n, violations);
		return -EIO;
	}
	if (nand_failed(n))
		return -EIO;
	zeroed_clear(n, blk);
	r = fault(n, NAND_OP_PROGRAM, ppn, (void *)data, n->g.page_size);
	if (r < 0)
		return r;
	if (n->bad[blk] || (n->fm && blk >= n->fm_first &&
			    nand_fm_program_fails(n->fm, ppn))) {
		/* status FAIL: the page is used up, nothing readable in it
		 * (its OOB stays erased), the block should be retired */
		__atomic_store_n(&n->wp[blk], pg + 1, __ATOMIC_RELEASE);
		CNT_ADD(n, program_fails);
		return -NAND_EFAIL;
	}
	if (n->g.oob_inline) {
		/* data and OOB in one write: a killed server (whose page
		 * cache survives) keeps both or, torn by a power cut, the
		 * data CRC in the OOB tells */
		uint32_t gen = 0;

		if (n->g.oob_stamp) {
			r = nand_cur_gen(n, blk, &gen);
			if (r)
				return r;
		}
		if (!nand_run_wview(n, ppn, 1, data, NULL, oob, gen)) {
			r = nand_copy_in(n, n->pbuf, data, n->g.page_size);
			if (r)
				return r;       /* nothing written */
			memcpy(n->pbuf + n->g.page_size, oob, n->g.oob_size);
			if (n->g.oob_stamp)
				nand_stamp_put(n, n->pbuf + n->g.page_size,
					       ppn, STAMP_PROG, gen);
			r = bk_pwrite(n, n->pbuf,
				      (size_t)n->g.page_size + n->g.oob_size,
				      data_at(n, ppn));
			if (r)
				return prog_undo(n, ppn, 1, oob, gen, r);
		}
		hole_stale(n);      /* the hole window is stale */
		__atomic_store_n(&n->wp[blk], pg + 1, __ATOMIC_RELEASE);
		CNT_ADD(n, programs);
		return 0;
	}
	s = nand_slot_get(n, blk, &r);
	if (!s)
		return r;
	r = bk_pwrite(n, data, n->g.page_size, data_at(n, ppn));
	if (r)
		return prog_undo(n, ppn, 1, oob, 0, r);
	memcpy(s->buf + (size_t)pg * n->g.oob_size, oob, n->g.oob_size);
	if (s->lo >= s->hi)
		s->lo = pg;
	s->hi = pg + 1;
	s->used = ++n->stamp;
	/* Write the OOB through before the program completes: data and OOB
	 * then sit together in the backing's cache, so a killed server (whose
	 * page cache survives) never loses a page roll-forward must find.
	 * If that fails, the record must not reach the backing later with
	 * the next writeback of this slot: blank it here, undo it there. */
	r = nand_slot_writeback(n, s);
	if (r) {
		memset(s->buf + (size_t)pg * n->g.oob_size, 0, n->g.oob_size);
		return prog_undo(n, ppn, 1, oob, 0, r);
	}
	__atomic_store_n(&n->wp[blk], pg + 1, __ATOMIC_RELEASE);
	CNT_ADD(n, programs);
	if (pg + 1 == n->g.ppb)         /* block full: release its slot */
		s->blk = -1;
	return 0;
}

/* Does nand_program_run write runs with one vectored call (see nand.h)? */
bool nand_program_run_unlocked(const struct nand *n)
{
	return n->g.oob_inline && n->b->ops->pwritev && !n->fault && !n->fm;
}

/* Page @i of a run: @pages[i], or page @i of @data (contiguous). */
static const uint8_t *run_page(const uint8_t *data, const void *const *pages,
			       uint32_t i, uint32_t ps)
{
	return pages ? pages[i] : data + (size_t)i * ps;
}

/* The run of nand_program_run / nand_program_runv: page i's data from
 * run_page(@data, @pages, i). */
static int program_run(struct nand *n, uint64_t ppn, uint32_t count,
		       const uint8_t *d, const void *const *pages,
		       const void *oob, uint32_t *done)
{
	uint32_t blk = (uint32_t)(ppn / n->g.ppb), pg = (uint32_t)(ppn % n->g.ppb);
	uint32_t ps = n->g.page_size, os = n->g.oob_size;
	const uint8_t *o = oob;
	struct iovec iov[NAND_IOV_MAX];
	/* oob_stamp: each page's OOB as its record, then its stamp */
	uint8_t tails[NAND_IOV_MAX / 3][NAND_STAMP_SIZE];
	uint32_t per = n->g.oob_stamp ? NAND_IOV_MAX / 3 : NAND_IOV_MAX / 2;
	uint32_t gen = 0;
	int r = 0;

	*done = 0;
	if (!count || blk >= n->g.nblocks || count > n->g.ppb - pg)
		return -EINVAL;
	if (pg < __atomic_load_n(&n->wp[blk], __ATOMIC_ACQUIRE)) {
		CNT_ADD(n, violations);
		return -EIO;
	}
	if (nand_failed(n))
		return -EIO;
	zeroed_clear(n, blk);
	if (!nand_program_run_unlocked(n) || n->bad[blk]) {
		/* page by page: the fault seam and the fault model judge
		 * each program, the separate layout writes data and OOB
		 * apart; the first failure ends the run */
		for (uint32_t i = 0; i < count && !r; i++) {
			r = nand_program(n, ppn + i, run_page(d, pages, i, ps),
					 o + (size_t)i * os);
			if (!r)
				*done = i + 1;
		}
		return r;
	}
	/* inline: data and OOB of every page in one vectored write (one per
	 * NAND_IOV_MAX / 2 pages); a killed server keeps all of it, a power
	 * cut may tear it, and each page's data CRC in its OOB tells */
	if (n->g.oob_stamp) {
		r = nand_cur_gen(n, blk, &gen);
		if (r)
			return r;
	}
	for (uint32_t i = 0; i < count && !r;) {
		uint32_t c = count - i < per ? count - i : per;
		int v = 0;

		if (nand_run_wview(n, ppn + i, c,
				   pages ? NULL : d + (size_t)i * ps,
				   pages ? pages + i : NULL,
				   o + (size_t)i * os, gen)) {
			hole_stale(n);
			i += c;
			__atomic_store_n(&n->wp[blk], pg + i, __ATOMIC_RELEASE);
			__atomic_fetch_add(&n->c.programs, c, __ATOMIC_RELAXED);
			*done = i;
			continue;
		}
		for (uint32_t k = 0; k < c; k++) {
			iov[v].iov_base = (void *)run_page(d, pages, i + k, ps);
			iov[v++].iov_len = ps;
			iov[v].iov_base = (void *)(o + (size_t)(i + k) * os);
			iov[v++].iov_len = os;
			if (!n->g.oob_stamp)
				continue;
			/* the caller's record, then the nand's stamp */
			iov[v - 1].iov_len = os - NAND_STAMP_SIZE;
			nand_stamp_fill(tails[k], ppn + i + k, STAMP_PROG, gen);
			iov[v].iov_base = tails[k];
			iov[v++].iov_len = NAND_STAMP_SIZE;
		}
		r = bk_rw_vec(n, true, iov, v, data_at(n, ppn + i));
		hole_stale(n);      /* the hole window is stale */
		if (r)
			return prog_undo(n, ppn + i, c, o + (size_t)i * os, gen,
					 r);
		i += c;
		__atomic_store_n(&n->wp[blk], pg + i, __ATOMIC_RELEASE);
		__atomic_fetch_add(&n->c.programs, c, __ATOMIC_RELAXED);
		*done = i;
	}
	return r;
}

/* Program a run of pages of one block (see nand.h). */
int nand_program_run(struct nand *n, uint64_t ppn, uint32_t count,
		     const void *data, const void *oob, uint32_t *done)
{
	return program_run(n, ppn, count, data, NULL, oob, done);
}

/* The same from one pointer per page (see nand.h). */
int nand_program_runv(struct nand *n, uint64_t ppn, uint32_t count,
		      const void *const *pages, const void *oob,
		      uint32_t *done)
{
	return program_run(n, ppn, count, NULL, pages, oob, done);
}

/* Write zeroes over [off, off+len): one vectored write where possible. */
static int nand_zero(struct nand *n, uint64_t off, uint64_t len)
{
	static uint8_t zero[65536];     /* never written */
	struct iovec iov[64];
	int r = 0;

	while (len && !r) {
		int c = 0;
		uint64_t at = off;

		for (; c < 64 && len; c++) {
			size_t l = len < sizeof(zero) ? (size_t)len : sizeof(zero);

			iov[c].iov_base = (void *)zero;
			iov[c].iov_len = l;
			off += l;
			len -= l;
		}
		r = bk_rw_vec(n, true, iov, c, at);
	}
	return r;
}

/*
 * oob_stamp: erase by one erase stamp in page 0's OOB slot, its generation
 * above every stamp in the block and above the erase count (see the top):
 * *ec becomes it.  A block that is a hole of the backing holds no stamp:
 * it stays as it is (generation 0).
 */
static int erase_stamp(struct nand *n, uint32_t blk, uint32_t *ec)
{
	uint64_t first = (uint64_t)blk * n->g.ppb;
	uint64_t mx = __atomic_load_n(&n->gmax[blk], __ATOMIC_ACQUIRE);
	uint32_t os = n->g.oob_size, gen;
	uint8_t st[512];
	int r;

	if (!(mx & GEN_KNOWN) &&
	    nand_slots_hole(n, data_at(n, first),
			    (uint64_t)n->g.ppb * n->stride)) {
		nand_gen_set(n, blk, 0);
		++*ec;
		return 0;
	}
	if (!(mx & GEN_KNOWN)) {        /* read every stamp of the block once */
		uint8_t *buf = malloc((size_t)n->g.ppb * os);

		if (!buf)
			return -ENOMEM;
		r = nand_block_oob_inline(n, blk, buf);
		if (!r)
			r = nand_stamp_view_pages(n, blk, 0, n->g.ppb, buf);
		free(buf);
		if (r)
			return r;
		mx = __atomic_load_n(&n->gmax[blk], __ATOMIC_ACQUIRE);
	}
	r = nand_cur_gen(n, blk, &gen);
	if (r)
		return r;
	if (gen < (uint32_t)mx)
		gen = (uint32_t)mx;
	if (gen < *ec)
		gen = *ec;
	if (gen >= NAND_EC_MAX)
		return -NAND_EFAIL;     /* worn out (see NAND_EC_MAX) */
	gen++;
	memset(st, 0, os);
	nand_stamp_put(n, st, first, STAMP_ERASE, gen);
	r = bk_pwrite(n, st, os, oob_at(n, first));
	hole_stale(n);
	if (r)
		return r;
	nand_gen_set(n, blk, gen);
	*ec = gen;
	return 0;
}

/* Erase block @blk (see nand.h). */
int nand_erase(struct nand *n, uint32_t blk)
{
	uint64_t bytes = (uint64_t)n->g.ppb * n->g.page_size;
	uint64_t oobb = (uint64_t)n->g.ppb * n->g.oob_size;
	struct oob_slot *s;
	int r;

	if (blk >= n->g.nblocks)
		return -EINVAL;
	if (nand_failed(n))
		return -EIO;
	zeroed_clear(n, blk);
	if (n->wtried)          /* a new cycle: programs may prove it again */
		__atomic_store_n(&n->wtried[blk], 0, __ATOMIC_RELEASE);
	r = fault(n, NAND_OP_ERASE, blk, NULL, 0);
	if (r < 0)
		return r;
	if (n->bad[blk] || n->ec[blk] >= NAND_EC_MAX ||
	    (n->fm && blk >= n->fm_first && nand_fm_erase_fails(n->fm, blk))) {
		if (n->ec[blk] < NAND_EC_MAX)
			n->ec[blk]++;   /* it was tried: the cells wore */
		CNT_ADD(n, erase_fails);
		return -NAND_EFAIL;
	}
	if (n->fm)
		nand_fm_erased(n->fm, blk);
	s = nand_slot_find(n, blk);
	if (s)
		s->blk = -1;            /* its buffered OOB is void now */
	n->hole_at = 0;
	hole_stale(n);
	if (n->g.oob_stamp) {
		uint32_t ec = n->ec[blk];

		r = erase_stamp(n, blk, &ec);
		if (r == -NAND_EFAIL)   /* a stamp at the ceiling: worn out */
			CNT_ADD(n, erase_fails);
		if (r)
			return r;
		__atomic_store_n(&n->wp[blk], 0, __ATOMIC_RELEASE);
		__atomic_store_n(&n->zeroed[blk], 1, __ATOMIC_RELEASE);
		n->ec[blk] = ec;
		CNT_ADD(n, erases);
		return 0;
	}
	/* Erased = OOB records gone: write zeroes over them (cheaper than
	 * punching holes, which frees and reallocates the file's pages); the
	 * data bytes stay but read back as 0xff (write pointer 0).  Inline,
	 * the OOB bytes are spread over the block: zero the whole block. */
	if (n->g.oob_inline) {
		uint64_t at = data_at(n, (uint64_t)blk * n->g.ppb);
		uint64_t len = (uint64_t)n->g.ppb * n->stride;

		/* a hole (never written: a fresh sparse image) reads as
		 * zeroes already: keep it sparse */
		hole_stale(n);
		r = nand_slots_hole(n, at, len) ? 0 : nand_zero(n, at, len);
		hole_stale(n);
	}
	else
		r = nand_zero(n, n->g.oob_off + blk * oobb, oobb);
	if (r)
		return r;
	(void)bytes;
	__atomic_store_n(&n->wp[blk], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&n->zeroed[blk], 1, __ATOMIC_RELEASE);
	n->ec[blk]++;
	CNT_ADD(n, erases);
	return 0;
}

/* Write out buffered OOB and flush the backing (see nand.h). */
int nand_sync_begin(struct nand *n)
{
	int r;

	if (nand_failed(n))
		return -EIO;
	for (int i = 0; i < NAND_OOB_SLOTS; i++) {
		r = nand_slot_writeback(n, &n->slot[i]);
		if (r)
			return r;
	}
	return 0;
}

int nand_sync_backing(struct nand *n)
{
	if (nand_failed(n))
		return -EIO;
	CNT_ADD(n, syncs);
	CNT_ADD(n, backing_writes);
	return bk_wrote(n, bk_err(n->b->ops->sync(n->b)));
}

int nand_sync(struct nand *n)
{
	int r = nand_sync_begin(n);

	return r ? r : nand_sync_backing(n);
}

/* Set block @blk's write pointer and erase count (at most NAND_EC_MAX:
 * callers check what they read from the medium; none can get past). */
void nand_set_block(struct nand *n, uint32_t blk, uint32_t wp, uint32_t ec)
{
	if (blk >= n->g.nblocks)
		return;
	zeroed_clear(n, blk);
	__atomic_store_n(&n->wp[blk], wp > n->g.ppb ? n->g.ppb : wp,
			 __ATOMIC_RELEASE);
	n->ec[blk] = ec < NAND_EC_MAX ? ec : NAND_EC_MAX;
}

/* Pages programmed in block @blk since its erase. */
uint32_t nand_block_wp(const struct nand *n, uint32_t blk)
{
	return blk < n->g.nblocks ? __atomic_load_n(&n->wp[blk], __ATOMIC_ACQUIRE) : 0;
}

/* Erase count of block @blk. */
uint32_t nand_block_ec(const struct nand *n, uint32_t blk)
{
	return blk < n->g.nblocks ? n->ec[blk] : 0;
}

/* Install (or with NULL remove) the fault-injection hook. */
void nand_set_fault(struct nand *n, nand_fault_fn fn, void *ctx)
{
	n->fault = fn;
	n->fault_ctx = ctx;
}

/* Snapshot of the operation counters. */
void nand_counters_get(const struct nand *n, struct nand_counters *c)
{
	c->reads = __atomic_load_n(&n->c.reads, __ATOMIC_RELAXED);
	c->programs = __atomic_load_n(&n->c.programs, __ATOMIC_RELAXED);
	c->erases = __atomic_load_n(&n->c.erases, __ATOMIC_RELAXED);
	c->violations = __atomic_load_n(&n->c.violations, __ATOMIC_RELAXED);
	c->faults = __atomic_load_n(&n->c.faults, __ATOMIC_RELAXED);
	c->syncs = __atomic_load_n(&n->c.syncs, __ATOMIC_RELAXED);
	c->program_fails = __atomic_load_n(&n->c.program_fails, __ATOMIC_RELAXED);
	c->erase_fails = __atomic_load_n(&n->c.erase_fails, __ATOMIC_RELAXED);
	c->ecc_corrected_bits = __atomic_load_n(&n->c.ecc_corrected_bits,
						__ATOMIC_RELAXED);
	c->ecc_uncorrectable = __atomic_load_n(&n->c.ecc_uncorrectable,
					       __ATOMIC_RELAXED);
	c->backing_reads = __atomic_load_n(&n->c.backing_reads, __ATOMIC_RELAXED);
	c->backing_writes = __atomic_load_n(&n->c.backing_writes,
					    __ATOMIC_RELAXED);
	c->read_bytes = __atomic_load_n(&n->c.read_bytes, __ATOMIC_RELAXED);
	c->store_full = __atomic_load_n(&n->c.store_full, __ATOMIC_RELAXED);
}

/* Install or remove the fault model (see nand.h). */
int nand_set_fault_model(struct nand *n, const struct nand_fault_spec *s,
			 uint32_t first)
{
	struct nand_fm *m = NULL;
	int r;

	if (s) {
		r = nand_fm_create(s, &n->g, &m);
		if (r)
			return r;
	}
	nand_fm_destroy(n->fm);
	n->fm = m;
	n->fm_first = first;
	return 0;
}

uint32_t nand_fault_ecc(const struct nand *n)
{
	return n->fm ? nand_fm_ecc(n->fm) : 0;
}

uint32_t nand_fault_cw(const struct nand *n)
{
	return n->fm ? nand_fm_cw(n->fm) : 0;
}

/* Persistent bit errors in one codeword (see nand.h). */
int nand_fault_inject_bits(struct nand *n, uint64_t ppn, uint32_t cw,
			   uint32_t bits)
{
	if (!n->fm || ppn >= (uint64_t)n->g.nblocks * n->g.ppb)
		return -EINVAL;
	return nand_fm_inject(n->fm, ppn, cw, bits);
}

void nand_mark_bad(struct nand *n, uint32_t blk, bool bad)
{
	if (blk < n->g.nblocks)
		n->bad[blk] = bad;
}

bool nand_is_bad(const struct nand *n, uint32_t blk)
{
	return blk < n->g.nblocks && n->bad[blk];
}

