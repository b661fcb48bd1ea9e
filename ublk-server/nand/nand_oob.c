/* SPDX-License-Identifier: MIT */
/*
 * OOB reads (nand_read_oob, nand_read_block_oob), and the OOB slot cache
 * of the separate layout: a block's OOB bytes buffered in one of
 * NAND_OOB_SLOTS slots while it is programmed, written through by every
 * program (nand.c) and read from the buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nand-int.h"

struct oob_slot *nand_slot_find(struct nand *n, uint32_t blk)
{
	for (int i = 0; i < NAND_OOB_SLOTS; i++)
		if (n->slot[i].blk == (int64_t)blk)
			return &n->slot[i];
	return NULL;
}

int nand_slot_writeback(struct nand *n, struct oob_slot *s)
{
	uint64_t first;
	int r;

	if (s->blk < 0 || s->lo >= s->hi)
		return 0;
	n->hole_at = 0;                 /* the hole window is stale now */
	first = (uint64_t)s->blk * n->g.ppb + s->lo;
	r = bk_pwrite(n, s->buf + (size_t)s->lo * n->g.oob_size,
		      (size_t)(s->hi - s->lo) * n->g.oob_size,
		      n->g.oob_off + first * n->g.oob_size);
	if (!r)
		s->lo = s->hi = 0;
	return r;
}

/* Read the raw OOB of one page, from the buffer if it is there. */
int nand_read_oob(struct nand *n, uint64_t ppn, void *oob)
{
	uint32_t blk = (uint32_t)(ppn / n->g.ppb);
	struct oob_slot *s;

	if (blk >= n->g.nblocks)
		return -EINVAL;
	if (n->g.oob_stamp) {
		int r = bk_pread(n, oob, n->g.oob_size, oob_at(n, ppn));

		return r ? r : nand_stamp_view_pages(n, blk,
						     (uint32_t)(ppn % n->g.ppb),
						     1, oob);
	}
	s = nand_slot_find(n, blk);
	if (s) {
		memcpy(oob, s->buf + (ppn % n->g.ppb) * n->g.oob_size,
		       n->g.oob_size);
		return 0;
	}
	return bk_pread(n, oob, n->g.oob_size, oob_at(n, ppn));
}

/* Inline layout: the OOB bytes of a block's pages, the data read past into
 * one scratch page (one preadv per NAND_IOV_MAX / 2 pages). */
int nand_block_oob_inline(struct nand *n, uint32_t blk, uint8_t *buf)
{
	uint32_t ps = n->g.page_size, os = n->g.oob_size, ppb = n->g.ppb;
	uint64_t first = (uint64_t)blk * ppb;
	struct iovec iov[NAND_IOV_MAX];
	uint8_t *scratch;
	int r = 0;

	if (!n->b->ops->preadv) {       /* one pread per page's OOB */
		for (uint32_t i = 0; i < ppb && !r; i++)
			r = bk_pread(n, buf + (size_t)i * os, os,
				     oob_at(n, first + i));
		return r;
	}
	scratch = malloc(ps);
	if (!scratch)
		return -ENOMEM;
	for (uint32_t i = 0; i < ppb && !r;) {
		uint32_t c = ppb - i < NAND_IOV_MAX / 2 ? ppb - i : NAND_IOV_MAX / 2;

		for (uint32_t k = 0; k < c; k++) {
			/* page i+k's OOB; the data before it (none for k=0) */
			if (k) {
				iov[2 * k - 1].iov_base = scratch;
				iov[2 * k - 1].iov_len = ps;
			}
			iov[2 * k].iov_base = buf + (size_t)(i + k) * os;
			iov[2 * k].iov_len = os;
		}
		r = bk_rw_vec(n, false, iov, 2 * (int)c - 1, oob_at(n, first + i));
		i += c;
	}
	free(scratch);
	return r;
}

/* Read the raw OOB of every page of block @blk into @buf (ppb * oob_size). */
int nand_read_block_oob(struct nand *n, uint32_t blk, void *buf)
{
	size_t len = (size_t)n->g.ppb * n->g.oob_size;
	struct oob_slot *s;

	if (blk >= n->g.nblocks)
		return -EINVAL;
	if (n->g.oob_stamp) {
		int r = nand_block_oob_inline(n, blk, buf);

		return r ? r : nand_stamp_view_pages(n, blk, 0, n->g.ppb, buf);
	}
	if (n->g.oob_inline)
		return nand_block_oob_inline(n, blk, buf);
	s = nand_slot_find(n, blk);
	if (s) {
		memcpy(buf, s->buf, len);
		return 0;
	}
	return bk_pread(n, buf, len, n->g.oob_off + (uint64_t)blk * len);
}

struct oob_slot *nand_slot_get(struct nand *n, uint32_t blk, int *err)
{
	struct oob_slot *s = nand_slot_find(n, blk), *lru = NULL;
	size_t len = (size_t)n->g.ppb * n->g.oob_size;

	*err = 0;
	if (s)
		return s;
	for (int i = 0; i < NAND_OOB_SLOTS; i++) {
		s = &n->slot[i];
		if (s->blk < 0) {
			lru = s;
			break;
		}
		if (!lru || s->used < lru->used)
			lru = s;
	}
	*err = nand_slot_writeback(n, lru);
	if (*err)
		return NULL;
	/* pages of this block programmed before are on the backing */
	*err = bk_pread(n, lru->buf, len, n->g.oob_off + (uint64_t)blk * len);
	if (*err)
		return NULL;
	lru->blk = blk;
	lru->lo = lru->hi = 0;
	return lru;
}
