/* SPDX-License-Identifier: MIT */
/*
 * Between the nand's files.  Not a public API.  Calls go downwards only:
 *   nand.c          the NAND rules: program in order, once per erase; erase
 *                   per block; reads, runs, counters, the fault hook and
 *                   model, bad blocks, failed programs undone
 *   nand_map.c      the backing's mapping: copies through it (reads and
 *                   program runs), residency proofs, holes
 *   nand_oob.c      OOB reads, and the OOB slot cache of the separate
 *                   layout (buffered per block, written through)
 *   nand_stamp.c    erase stamps (oob_stamp): generations, the OOB view
 *   nand_fault.c, nand_guard.c   the fault model; copies that survive a
 *                   SIGBUS (below all of them)
 * The backings (nand_backing*.c) are reached only through struct
 * nand_backing_ops (nand.h).
 */
#ifndef OCTANT_NAND_INT_H
#define OCTANT_NAND_INT_H

#include <errno.h>
#include <stdbool.h>
#include <sys/uio.h>

#include "nand.h"

/* ---- struct nand: one per medium; the caller serializes everything but
 * reads and unlocked program runs (nand.h, Threads) ------------------- */
#define NAND_OOB_SLOTS 8

/* OOB bytes of one block, buffered; [lo, hi) pages not yet written out. */
struct oob_slot {
	int64_t blk;          /* -1 = empty */
	uint32_t lo, hi;
	uint64_t used;        /* LRU stamp */
	uint8_t *buf;         /* ppb * oob_size */
};

struct nand {
	struct nand_geom g;
	struct nand_backing *b;
	uint32_t *wp;         /* per block: next programmable page */
	uint32_t *ec;         /* per block: erase count */
	struct oob_slot slot[NAND_OOB_SLOTS];
	uint64_t stamp;
	uint64_t win_from, data_at, hole_at; /* nand_block_oob_hole's window */
	uint64_t wgen;        /* inline: writes to page slots (atomic; a
	                         program run may add outside the caller's
	                         lock) ... */
	uint64_t win_gen;     /* ... when the window was taken: valid while
	                         equal */
	bool no_seek;
	nand_fault_fn fault;
	void *fault_ctx;
	struct nand_fm *fm;   /* fault model, NULL: a perfect medium */
	uint32_t fm_first;    /* first block the model applies to */
	uint8_t *bad;         /* per block: marked bad */
	uint8_t *zeroed;      /* per block: erased by this nand (its OOB bytes
	                         zeroed) and not written since (atomic) */
	uint8_t *pbuf;        /* inline: one page slot for a program */
	uint64_t *gcur;       /* oob_stamp, per block: GEN_KNOWN | its current
	                         generation (page 0's stamp), 0 = not read yet
	                         (atomic) */
	uint64_t *gmax;       /* oob_stamp, per block: GEN_KNOWN | the highest
	                         generation of any stamp in it, 0 = unknown */
	uint64_t stride;      /* bytes from one page's data to the next */
	uint32_t *mapped;     /* mapped backings, per block: its pages [0, n)
	                         (data and OOB) are proven allocated in the
	                         backing (resident: mincore), so
	                         a read through the mapping allocates nothing;
	                         0 = not proven yet.  Only grows: this engine
	                         never punches a block it serves (create does,
	                         before).  Racing stores are each a proof. */
	uint8_t *wtried;      /* mapped, per block: a program found it not
	                         proven and tried once (atomic); cleared by
	                         an erase.  Bounds the mincores of programs
	                         into a fresh image's holes to one a cycle. */
	uint64_t full_said;   /* CLOCK_MONOTONIC second (+1) a full store
	                         was last said on stderr, 0: never
	                         (nand_store_full; atomic) */
	bool failed;          /* a failed program could not be undone
	                         (prog_undo): nothing is written any more
	                         (atomic; never cleared) */
	struct nand_counters c;  /* updated with atomics */
};

#define CNT_ADD(n, f) __atomic_fetch_add(&(n)->c.f, 1, __ATOMIC_RELAXED)
#define NAND_IOV_MAX 1024       /* iovecs per vectored call (IOV_MAX) */
#define NAND_OOB_MAX 1024       /* OOB bytes a failed program can undo */

/* ---- backing calls, counted ------------------------------------------ */

/* A backing's error is never a medium fault: the codes this layer gives
 * those (-NAND_EFAIL = EREMOTEIO, a program or erase status FAIL; -EBADMSG,
 * beyond the ECC) coming from a backing (an NFS EREMOTEIO, a filesystem's
 * EBADMSG for a checksum) become -EIO, or the FTL would retire a good
 * block (and use up the spares) for an error of the store under it.  Past
 * the end of a truncated store (-ENXIO, nand.h) is an I/O error too, and
 * so is a write from a page of the mapping lost underneath (-EFAULT: a
 * GC copy programmed by pointer, nand_read_run_view). */
static inline int bk_err(int r)
{
	return r == -NAND_EFAIL || r == -EBADMSG || r == -ENXIO ||
	       r == -EFAULT ? -EIO : r;
}

void nand_store_full(struct nand *n, int r);   /* nand_room.c */

/* A backing write or sync ended with @r: a store without room is counted
 * and said (nand_store_full). */
static inline int bk_wrote(struct nand *n, int r)
{
	if (r == -ENOSPC || r == -EDQUOT)
		nand_store_full(n, r);
	return r;
}

static inline int bk_pread(struct nand *n, void *buf, size_t len, uint64_t off)
{
	CNT_ADD(n, backing_reads);
	__atomic_fetch_add(&n->c.read_bytes, len, __ATOMIC_RELAXED);
	return bk_err(n->b->ops->pread(n->b, buf, len, off));
}

static inline int bk_pwrite(struct nand *n, const void *buf, size_t len,
			    uint64_t off)
{
	CNT_ADD(n, backing_writes);
	return bk_wrote(n, bk_err(n->b->ops->pwrite(n->b, buf, len, off)));
}

/* Vectored: one call per NAND_IOV_MAX iovecs, or one per iovec. */
static inline int bk_rw_vec(struct nand *n, bool wr,
			    const struct iovec *iov, int cnt, uint64_t off)
{
	const struct nand_backing_ops *o = n->b->ops;
	int r = 0;

	while (cnt > 0 && !r) {
		int c = cnt < NAND_IOV_MAX ? cnt : NAND_IOV_MAX;
		uint64_t len = 0;

		if (wr ? !o->pwritev : !o->preadv)
			c = 1;
		for (int i = 0; i < c; i++)
			len += iov[i].iov_len;
		if (c == 1)
			r = wr ? bk_pwrite(n, iov->iov_base, iov->iov_len, off)
			       : bk_pread(n, iov->iov_base, iov->iov_len, off);
		else if (wr) {
			CNT_ADD(n, backing_writes);
			r = bk_wrote(n, bk_err(o->pwritev(n->b, iov, c,
							   off)));
		} else {
			CNT_ADD(n, backing_reads);
			__atomic_fetch_add(&n->c.read_bytes, len,
					   __ATOMIC_RELAXED);
			r = bk_err(o->preadv(n->b, iov, c, off));
		}
		off += len;
		iov += c;
		cnt -= c;
	}
	return bk_err(r);
}

/* Inline: page slots were written, the hole window is stale.  After the
 * write: nand_slots_hole() loads the generation before its lseek, so a
 * write racing with it voids the window it takes. */
static inline void hole_stale(struct nand *n)
{
	__atomic_fetch_add(&n->wgen, 1, __ATOMIC_RELEASE);
}

/* Block @blk is (about to be) written: nand_block_oob_hole can no longer
 * answer from nand_erase's zeroes. */
static inline void zeroed_clear(struct nand *n, uint32_t blk)
{
	__atomic_store_n(&n->zeroed[blk], 0, __ATOMIC_RELEASE);
}

/* Where the data / the OOB of page @ppn sit in the backing. */
static inline uint64_t data_at(const struct nand *n, uint64_t ppn)
{
	return n->g.flash_off + ppn * n->stride;
}

static inline uint64_t oob_at(const struct nand *n, uint64_t ppn)
{
	return n->g.oob_inline ? data_at(n, ppn) + n->g.page_size
			       : n->g.oob_off + ppn * n->g.oob_size;
}

/* nand_stamp.c: erase stamps (see there) */
#define GEN_KNOWN     (1ull << 32)
enum { STAMP_PROG = 1, STAMP_ERASE = 2 };
void nand_stamp_fill(uint8_t *tail, uint64_t ppn, uint8_t kind, uint32_t gen);
void nand_stamp_put(const struct nand *n, uint8_t *oob, uint64_t ppn,
		    uint8_t kind, uint32_t gen);
void nand_gen_set(struct nand *n, uint32_t blk, uint32_t gen);
int nand_cur_gen(struct nand *n, uint32_t blk, uint32_t *gen);
int nand_stamp_view_pages(struct nand *n, uint32_t blk, uint32_t pg,
			  uint32_t count, uint8_t *buf);

/* nand_oob.c: the OOB slot cache (separate layout) */
struct oob_slot *nand_slot_find(struct nand *n, uint32_t blk);
struct oob_slot *nand_slot_get(struct nand *n, uint32_t blk, int *err);
int nand_slot_writeback(struct nand *n, struct oob_slot *s);
int nand_block_oob_inline(struct nand *n, uint32_t blk, uint8_t *buf);

/* nand_map.c: the backing's mapping */
bool nand_run_view(struct nand *n, uint64_t ppn, uint32_t count,
		   uint8_t *d, uint8_t *o);
bool nand_run_viewp(struct nand *n, uint64_t ppn, uint32_t count,
		    const void **pages, uint8_t *o);
bool nand_run_wview(struct nand *n, uint64_t ppn, uint32_t count,
		    const uint8_t *d, const void *const *pages,
		    const uint8_t *o, uint32_t gen);
int nand_copy_in(struct nand *n, void *dst, const void *src, uint32_t len);
bool nand_slots_hole(struct nand *n, uint64_t off, uint64_t len);

/* nand_fault.c: the fault model */
struct nand_fm;

int nand_fm_create(const struct nand_fault_spec *s, const struct nand_geom *g,
		   struct nand_fm **out);
void nand_fm_destroy(struct nand_fm *m);
/* Should this program / erase fail? */
bool nand_fm_program_fails(struct nand_fm *m, uint64_t ppn);
bool nand_fm_erase_fails(struct nand_fm *m, uint32_t blk);
/* Pass a read of [off, off+len) of page @ppn (block erase count @ec)
 * through the ECC: 0, or -EBADMSG with bits flipped in @buf. */
int nand_fm_read(struct nand_fm *m, uint64_t ppn, uint32_t ec, uint32_t off,
		 void *buf, uint32_t len, struct nand_ecc *e);
int nand_fm_inject(struct nand_fm *m, uint64_t ppn, uint32_t cw,
		   uint32_t bits);
void nand_fm_erased(struct nand_fm *m, uint32_t blk);

uint32_t nand_fm_cw(const struct nand_fm *m);
uint32_t nand_fm_ecc(const struct nand_fm *m);

/* nand_guard.c: run @fn(@ctx), a copy from or to a file mapping, with a
 * SIGBUS at an address in [@lo, @lo + @len) taken as the copy's failure:
 * 0 when @fn ran to its end, -EFAULT when it faulted (abandoned where it
 * was), else -errno without running it (no guard slot free, the handler
 * could not be installed).  Only memcpy-like work in @fn: no locks, no
 * allocation. */
int nand_guarded(const void *lo, size_t len, void (*fn)(void *ctx),
		 void *ctx);

#endif
