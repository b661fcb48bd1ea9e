/* SPDX-License-Identifier: MIT */
/*
 * The backing's mapping (nand.h, view / wview / resident): reads and
 * program runs copied through it instead of pread / pwritev, only over
 * slots proven allocated (a read fault on a tmpfs hole allocates, a store
 * into one may SIGBUS), under the SIGBUS guard (nand_guard.c); and the
 * holes of a sparse backing (nand_block_oob_hole: lseek SEEK_DATA).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "nand-int.h"

/* How many pages of block @blk from its first are backed by allocated
 * bytes?  Proves at least @need + 1 or fails.  A page the write pointer
 * counts as programmed can still be a hole: while the FTL mounts (every
 * write pointer is ppb until it learns them), a program that failed (the
 * page used up, nothing written) or a damaged image; and a read fault on
 * a tmpfs hole allocates a page (SIGBUS when the tmpfs is full), even in
 * a read-only mapping.  So before the first mapped read of a block, one
 * mincore over its slots (and its OOB region, separate layout) proves how
 * far it is allocated, and the proof is kept (n->mapped).  Not SEEK_HOLE:
 * on a full image it walks every page to the end of the file. */
static uint32_t mapped_pages(struct nand *n, uint32_t blk, uint32_t need)
{
	uint32_t have = __atomic_load_n(&n->mapped[blk], __ATOMIC_ACQUIRE);
	uint64_t first = (uint64_t)blk * n->g.ppb, off, k;
	uint64_t len = (uint64_t)n->g.ppb * n->stride;

	if (need < have)
		return have;
	off = data_at(n, first);
	k = n->b->ops->resident(n->b, off, len) / n->stride;
	if (!n->g.oob_inline) {
		uint64_t ko = n->b->ops->resident(n->b, oob_at(n, first),
						  (uint64_t)n->g.ppb *
						  n->g.oob_size) / n->g.oob_size;

		k = ko < k ? ko : k;
	}
	if (k > have)
		__atomic_store_n(&n->mapped[blk], (uint32_t)k, __ATOMIC_RELEASE);
	return (uint32_t)k;
}

/* A copy through the mapping, run by nand_guarded (no locks, no
 * allocation in it). */
struct map_copy {
	const struct nand *n;
	const uint8_t *sd, *so;  /* reads: the mapping's data and OOB */
	uint8_t *dst;            /* programs: the mapping's first slot */
	uint8_t *d, *o;          /* reads: the caller's buffers */
	const uint8_t *cd, *co;  /* programs: the caller's data and OOB */
	const void *const *cp;   /* programs: or one pointer per page */
	uint64_t ppn;
	uint32_t count, gen;
};

static void view_copy(void *ctx)
{
	const struct map_copy *m = ctx;
	const struct nand *n = m->n;
	uint32_t ps = n->g.page_size, os = n->g.oob_size;

	if (!n->g.oob_inline) {
		if (m->d)
			memcpy(m->d, m->sd, (size_t)m->count * ps);
		memcpy(m->o, m->so, (size_t)m->count * os);
		return;
	}
	for (uint32_t i = 0; i < m->count; i++) {
		if (m->d)       /* NULL: the OOB only (nand_run_viewp) */
			memcpy(m->d + (size_t)i * ps,
			       m->sd + (size_t)i * n->stride, ps);
		memcpy(m->o + (size_t)i * os, m->so + (size_t)i * n->stride, os);
	}
}

static void wview_copy(void *ctx)
{
	const struct map_copy *m = ctx;
	const struct nand *n = m->n;
	uint32_t ps = n->g.page_size, os = n->g.oob_size;
	uint32_t rec = n->g.oob_stamp ? os - NAND_STAMP_SIZE : os;
	uint8_t *dst = m->dst;

	for (uint32_t i = 0; i < m->count; i++, dst += n->stride) {
		memcpy(dst, m->cp ? m->cp[i] : m->cd + (size_t)i * ps, ps);
		memcpy(dst + ps, m->co + (size_t)i * os, rec);
		if (n->g.oob_stamp)
			nand_stamp_fill(dst + ps + rec, m->ppn + i,
					STAMP_PROG, m->gen);
	}
}

/* Run @fn over the mapping's bytes [@lo, @end) under the SIGBUS guard
 * (nand_guard.c): true when it ran to its end.  After a fault (a file
 * truncated underneath) the backing looks at the store (mapfault) and the
 * caller goes through pread / pwrite, which then fail. */
static bool map_guarded(struct nand *n, const void *lo, const void *end,
			void (*fn)(void *), struct map_copy *m, uint64_t off)
{
	int r = nand_guarded(lo, (size_t)((const uint8_t *)end -
					  (const uint8_t *)lo), fn, m);

	if (r == -EFAULT && n->b->ops->mapfault)
		n->b->ops->mapfault(n->b, off);
	return !r;
}

/* The mapping's bytes of the run [ppn, ppn + count): its first page's
 * data (*sd) and OOB record (*so), when every page of the run is below its
 * block's write pointer (programmed) and proven allocated (mapped_pages). */
static bool run_mapped(struct nand *n, uint64_t ppn, uint32_t count,
		       const uint8_t **sd, const uint8_t **so)
{
	const struct nand_backing_ops *ops = n->b->ops;
	uint32_t ps = n->g.page_size, os = n->g.oob_size, ppb = n->g.ppb;
	uint64_t last = ppn + count - 1;

	if (!n->mapped)
		return false;
	for (uint64_t b = ppn / ppb; b <= last / ppb; b++) {
		uint64_t end = last < (b + 1) * ppb ? last : (b + 1) * ppb - 1;

		if (end % ppb >= __atomic_load_n(&n->wp[b], __ATOMIC_ACQUIRE) ||
		    end % ppb >= mapped_pages(n, (uint32_t)b, end % ppb))
			return false;
	}
	*sd = ops->view(n->b, data_at(n, ppn), (uint64_t)count * n->stride);
	*so = n->g.oob_inline ? *sd + ps
			      : ops->view(n->b, oob_at(n, ppn),
					  (uint64_t)count * os);
	return *sd && *so;
}

/* Copy the OOB records (and with @d the data) of the run at @sd / @so in
 * the mapping under the SIGBUS guard. */
static bool run_view_copy(struct nand *n, uint64_t ppn, uint32_t count,
			  const uint8_t *sd, const uint8_t *so, uint8_t *d,
			  uint8_t *o)
{
	uint32_t ps = n->g.page_size, os = n->g.oob_size;
	struct map_copy m = { .n = n, .sd = sd, .so = so, .d = d, .o = o,
			      .count = count };
	const uint8_t *end;

	if (n->g.oob_inline)
		end = sd + (size_t)count * n->stride;
	else    /* the lower to the higher of the two regions */
		end = so > sd ? so + (size_t)count * os : sd + (size_t)count * ps;
	if (!map_guarded(n, so > sd ? sd : so, end, view_copy, &m,
			 data_at(n, ppn)))
		return false;
	CNT_ADD(n, backing_reads);
	__atomic_fetch_add(&n->c.read_bytes, (uint64_t)count *
			   (d ? ps + os : os), __ATOMIC_RELAXED);
	return true;
}

/*
 * Copy the run [ppn, ppn + count) with its OOB records from the backing's
 * mapping (view) instead of reading it: counted as one backing read, no
 * syscall.  Only when every page of the run is below its block's write
 * pointer (programmed) and proven allocated (mapped_pages).  The caller
 * excludes an erase of these blocks, as for a pread.  False: not mapped,
 * or the copy faulted (map_guarded): read it.
 */
bool nand_run_view(struct nand *n, uint64_t ppn, uint32_t count,
		   uint8_t *d, uint8_t *o)
{
	const uint8_t *sd, *so;

	if (!run_mapped(n, ppn, count, &sd, &so))
		return false;
	return run_view_copy(n, ppn, count, sd, so, d, o);
}

/*
 * The same by pointer (nand_read_run_view, nand.h): @pages[i] points at
 * page i's data in the mapping, only the OOB records are copied (into
 * @o).  False as nand_run_view.
 */
bool nand_run_viewp(struct nand *n, uint64_t ppn, uint32_t count,
		    const void **pages, uint8_t *o)
{
	const uint8_t *sd, *so;

	if (!run_mapped(n, ppn, count, &sd, &so) ||
	    !run_view_copy(n, ppn, count, sd, so, NULL, o))
		return false;
	for (uint32_t i = 0; i < count; i++)
		pages[i] = sd + (size_t)i * n->stride;
	return true;
}

/*
 * Program the run [ppn, ppn + count) of one block, inline layout, by
 * copying each page's data and OOB record (and stamp, with @gen) into the
 * backing's writable mapping instead of a pwritev: the same bytes in the
 * same page cache, in the same order (data, then its OOB), visible to
 * every read the moment the copy is done, as after a pwrite.  A killed
 * server keeps what was copied (a program cut short is torn, as a pwritev
 * cut between the tmpfs pages a slot spans is, and its data CRC tells);
 * the write pointer moves after, so no read sees a page being copied.
 * Only over slots proven allocated (mapped_pages): a store to a tmpfs
 * hole would allocate it and, with the tmpfs full, SIGBUS instead of
 * ENOSPC.  A SIGBUS all the same (the file truncated underneath) is
 * caught (map_guarded).  False: not mapped, or the copy faulted part way:
 * write it (a pwrite that fails then is undone, prog_undo, over what the
 * copy left too).
 */
bool nand_run_wview(struct nand *n, uint64_t ppn, uint32_t count,
		    const uint8_t *d, const void *const *pages,
		    const uint8_t *o, uint32_t gen)
{
	uint32_t ppb = n->g.ppb, ps = n->g.page_size;
	uint32_t blk = (uint32_t)(ppn / ppb), last = (uint32_t)(ppn % ppb) + count - 1;
	uintptr_t lo, hi;
	struct map_copy m;
	uint8_t *dst;

	if (!n->mapped || !n->b->ops->wview || !n->g.oob_inline)
		return false;
	if (last >= __atomic_load_n(&n->mapped[blk], __ATOMIC_ACQUIRE)) {
		if (__atomic_exchange_n(&n->wtried[blk], 1, __ATOMIC_ACQ_REL))
			return false;   /* tried in this cycle: a hole */
		if (last >= mapped_pages(n, blk, last))
			return false;
	}
	dst = n->b->ops->wview(n->b, data_at(n, ppn), (uint64_t)count * n->stride);
	if (!dst)
		return false;
	m = (struct map_copy){ .n = n, .dst = dst, .cd = d, .cp = pages,
			       .co = o, .ppn = ppn, .count = count, .gen = gen };
	/* the guard covers the sources too: pages of a victim read by
	 * pointer (nand_run_viewp) are in the mapping */
	lo = (uintptr_t)dst;
	hi = lo + (size_t)count * n->stride;
	for (uint32_t i = 0; i < count; i++) {
		uintptr_t p = (uintptr_t)(pages ? pages[i] : d + (size_t)i * ps);

		lo = p < lo ? p : lo;
		hi = p + ps > hi ? p + ps : hi;
	}
	if (!map_guarded(n, (const void *)lo, (const void *)hi, wview_copy,
			 &m, data_at(n, ppn)))
		return false;
	__atomic_fetch_add(&n->c.backing_writes, 1, __ATOMIC_RELAXED);
	return true;
}

static void plain_copy(void *ctx)
{
	const struct map_copy *m = ctx;

	memcpy(m->d, m->cd, m->count);
}

/* Copy @len bytes from @src, which may be a page of the mapping
 * (nand_run_viewp), to @dst: under the SIGBUS guard when the backing is
 * mapped.  -EIO when it faulted (a file truncated underneath). */
int nand_copy_in(struct nand *n, void *dst, const void *src, uint32_t len)
{
	struct map_copy m = { .n = n, .d = dst, .cd = src, .count = len };
	const uint8_t *base;
	int r;

	if (!n->mapped) {
		memcpy(dst, src, len);
		return 0;
	}
	r = nand_guarded(src, len, plain_copy, &m);
	if (r != -EFAULT) {
		if (r)          /* no guard to be had: as before the guard */
			memcpy(dst, src, len);
		return 0;
	}
	base = n->b->ops->view(n->b, 0, 1);
	if (n->b->ops->mapfault)
		n->b->ops->mapfault(n->b, base && (const uint8_t *)src >= base ?
				    (uint64_t)((const uint8_t *)src - base) : 0);
	return -EIO;
}

/* Inline layout: is [off, off+len) a hole?  One SEEK_DATA, no SEEK_HOLE
 * (the flash is mostly data: a SEEK_HOLE would walk all of it); remembers
 * where the next data is, so a forward walk over holes costs one lseek
 * per data extent. */
bool nand_slots_hole(struct nand *n, uint64_t off, uint64_t len)
{
	int64_t d;

	if (n->no_seek || !n->b->ops->seek)
		return false;
	uint64_t gen = __atomic_load_n(&n->wgen, __ATOMIC_ACQUIRE);

	if (n->win_gen == gen && off >= n->win_from &&
	    off + len <= n->data_at)
		return true;            /* before the next data */
	d = n->b->ops->seek(n->b, off, SEEK_DATA);
	if (d < 0) {
		if (errno != ENXIO) {   /* no SEEK_DATA here: can't tell */
			n->no_seek = true;
			return false;
		}
		d = INT64_MAX;          /* only holes follow */
	}
	n->win_from = off;
	n->data_at = (uint64_t)d;
	n->win_gen = gen;       /* a write since the load voids it */
	return off + len <= (uint64_t)d;
}

/* Is block @blk's OOB region a hole of the backing (see nand.h)?  Keeps
 * one [data, hole) window, so a forward walk costs two lseeks per extent. */
bool nand_block_oob_hole(struct nand *n, uint32_t blk)
{
	uint64_t len = (uint64_t)n->g.ppb * n->g.oob_size;
	uint64_t off = n->g.oob_off + (uint64_t)blk * len;
	int64_t d, h;

	/* erased here and not written since: its OOB bytes are the zeroes
	 * nand_erase wrote (no read, no lseek) */
	if (blk < n->g.nblocks &&
	    __atomic_load_n(&n->zeroed[blk], __ATOMIC_ACQUIRE))
		return true;
	if (n->g.oob_inline) {          /* the block's page slots */
		len = (uint64_t)n->g.ppb * n->stride;
		off = data_at(n, (uint64_t)blk * n->g.ppb);
		return nand_slots_hole(n, off, len);
	}
	if (n->no_seek || !n->b->ops->seek || nand_slot_find(n, blk))
		return false;
	if (n->hole_at && off >= n->win_from) {
		if (off + len <= n->data_at)
			return true;    /* before the next data extent */
		if (off >= n->data_at && off + len <= n->hole_at)
			return false;   /* inside it */
	}
	d = n->b->ops->seek(n->b, off, SEEK_DATA);
	if (d < 0) {
		if (errno != ENXIO) {   /* no SEEK_DATA here: can't tell */
			n->no_seek = true;
			return false;
		}
		n->win_from = off;
		n->data_at = n->hole_at = UINT64_MAX;   /* only holes follow */
		return true;
	}
	h = n->b->ops->seek(n->b, (uint64_t)d, SEEK_HOLE);
	if (h < 0) {
		n->no_seek = true;
		return false;
	}
	n->win_from = off;
	n->data_at = (uint64_t)d;
	n->hole_at = (uint64_t)h;
	return off + len <= n->data_at;
}
