/* SPDX-License-Identifier: MIT */
/* Emulated NAND flash: rules, counters, buffered OOB (see nand.h). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "nand-int.h"

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
 * the end of a truncated store (-ENXIO, nand.h) is an I/O error too. */
static int bk_err(int r)
{
	return r == -NAND_EFAIL || r == -EBADMSG || r == -ENXIO ? -EIO : r;
}

static int bk_pread(struct nand *n, void *buf, size_t len, uint64_t off)
{
	CNT_ADD(n, backing_reads);
	return bk_err(n->b->ops->pread(n->b, buf, len, off));
}

static int bk_pwrite(struct nand *n, const void *buf, size_t len,
		     uint64_t off)
{
	CNT_ADD(n, backing_writes);
	return bk_err(n->b->ops->pwrite(n->b, buf, len, off));
}

/* Vectored: one call per NAND_IOV_MAX iovecs, or one per iovec. */
static int bk_rw_vec(struct nand *n, bool wr, const struct iovec *iov,
		     int cnt, uint64_t off)
{
	const struct nand_backing_ops *o = n->b->ops;
	int r = 0;

	while (cnt > 0 && !r) {
		int c = cnt < NAND_IOV_MAX ? cnt : NAND_IOV_MAX;

		if (wr ? !o->pwritev : !o->preadv)
			c = 1;
		if (c == 1)
			r = wr ? bk_pwrite(n, iov->iov_base, iov->iov_len, off)
			       : bk_pread(n, iov->iov_base, iov->iov_len, off);
		else if (wr) {
			CNT_ADD(n, backing_writes);
			r = bk_err(o->pwritev(n->b, iov, c, off));
		} else {
			CNT_ADD(n, backing_reads);
			r = bk_err(o->preadv(n->b, iov, c, off));
		}
		for (int i = 0; i < c; i++)
			off += iov[i].iov_len;
		iov += c;
		cnt -= c;
	}
	return bk_err(r);
}

static bool slots_hole(struct nand *n, uint64_t off, uint64_t len);

/* Inline: page slots were written, the hole window is stale.  After the
 * write: slots_hole() loads the generation before its lseek, so a write
 * racing with it voids the window it takes. */
static void hole_stale(struct nand *n)
{
	__atomic_fetch_add(&n->wgen, 1, __ATOMIC_RELEASE);
}

/* Block @blk is (about to be) written: nand_block_oob_hole can no longer
 * answer from nand_erase's zeroes. */
static void zeroed_clear(struct nand *n, uint32_t blk)
{
	__atomic_store_n(&n->zeroed[blk], 0, __ATOMIC_RELEASE);
}

/* ---- erase stamps (oob_stamp; see nand.h) -------------------------------
 *
 * The last NAND_STAMP_SIZE bytes of each page's OOB slot: a program stamp
 * (the block's generation when the page was programmed) or, in page 0
 * only, an erase stamp (the generation the erase started).  A block's
 * current generation is page 0's stamp (0 when it holds none: a block
 * never erased since the image was created).  A page's OOB is current
 * when it holds a program stamp of the current generation; every other
 * OOB reads as erased (zeroes), as the zeroing erase left it.
 *
 * Why a stale page can never pass for current: an erase takes a generation
 * above every stamp in the block (gmax, read from the medium once when not
 * known yet) and above its erase count, and writes it into page 0, so a
 * page programmed before the erase carries a lower one; programs after it
 * carry the new one.  So nothing older than the erase matches page 0.
 * Power cuts (any in-order subset of the writes since the last sync, one
 * torn at 512-byte sectors; an OOB never crosses a sector,
 * nand_stamp_geom_ok, so an OOB is all old or all new):
 *  - the erase stamp lost, page 0's program kept: page 0 carries the new
 *    generation, the stale pages stay hidden;
 *  - the erase stamp kept, page 0's program lost: page 0 is an erase stamp
 *    (its OOB reads zero, as the zeroing erase left it), later pages of the
 *    new generation still count (the FTL ignores a block whose page 0 is
 *    blank, and checks it before reuse, as before);
 *  - both lost: page 0 still holds the old generation: the old pages show
 *    as they would had the zeroing writes been lost, those of the new
 *    generation are hidden; none of them was flushed (a page programmed
 *    after an unflushed write to page 0 was not flushed either).
 * In every case a later erase still goes above every stamp left in the
 * block (gmax is read from the medium, never taken from the checkpoint).
 */
#define STAMP_MAGIC   0x5347u   /* "GS" */
#define STAMP_VERSION 1u
#define GEN_KNOWN     (1ull << 32)
enum { STAMP_PROG = 1, STAMP_ERASE = 2 };

struct nand_stamp {
	uint32_t gen;         /* the block's generation */
	uint16_t magic;       /* STAMP_MAGIC */
	uint8_t  version;     /* STAMP_VERSION */
	uint8_t  kind;        /* STAMP_PROG / STAMP_ERASE */
	uint32_t ppn;         /* the page it belongs to */
	uint32_t crc;         /* crc32c of the 12 bytes before */
} __attribute__((packed));
_Static_assert(sizeof(struct nand_stamp) == NAND_STAMP_SIZE, "stamp size");

/* Stamps need an OOB that no 512-byte sector boundary cuts (a torn write
 * then leaves each OOB old or new, never an old record under a new stamp):
 * a power of two up to 512 bytes, page size and flash offset multiples of
 * 512, room for a record before the stamp. */
bool nand_stamp_geom_ok(const struct nand_geom *g)
{
	uint32_t o = g->oob_size;

	return g->oob_inline && o >= 2 * NAND_STAMP_SIZE && o <= 512 &&
	       !(o & (o - 1)) && g->page_size % 512 == 0 &&
	       g->flash_off % 512 == 0;
}

/* Write the stamp of page @ppn into @tail (NAND_STAMP_SIZE bytes). */
static void stamp_fill(uint8_t *tail, uint64_t ppn, uint8_t kind,
		       uint32_t gen)
{
	struct nand_stamp s = { .gen = gen, .magic = STAMP_MAGIC,
		.version = STAMP_VERSION, .kind = kind, .ppn = (uint32_t)ppn };

	s.crc = oct_crc32c(0, &s, offsetof(struct nand_stamp, crc));
	memcpy(tail, &s, sizeof(s));
}

static void stamp_put(const struct nand *n, uint8_t *oob, uint64_t ppn,
		      uint8_t kind, uint32_t gen)
{
	stamp_fill(oob + n->g.oob_size - NAND_STAMP_SIZE, ppn, kind, gen);
}

/* The kind of stamp in @oob, page @ppn's (0: none) and its generation. */
static int stamp_get(const struct nand *n, uint64_t ppn, const uint8_t *oob,
		     uint32_t *gen)
{
	struct nand_stamp s;

	memcpy(&s, oob + n->g.oob_size - NAND_STAMP_SIZE, sizeof(s));
	if (s.magic != STAMP_MAGIC || s.version != STAMP_VERSION ||
	    s.ppn != (uint32_t)ppn || s.gen > NAND_EC_MAX ||
	    s.crc != oct_crc32c(0, &s, offsetof(struct nand_stamp, crc)))
		return 0;       /* above the ceiling: damaged or forged */
	if (s.kind != STAMP_PROG &&
	    (s.kind != STAMP_ERASE || ppn % n->g.ppb))
		return 0;
	*gen = s.gen;
	return s.kind;
}

/* Block @blk's generation as page 0's OOB @oob0 says. */
static uint32_t page0_gen(const struct nand *n, uint32_t blk,
			  const uint8_t *oob0)
{
	uint32_t gen = 0;

	return stamp_get(n, (uint64_t)blk * n->g.ppb, oob0, &gen) ? gen : 0;
}

/* Remember what the medium says, unless the nand knows already (a program
 * or an erase of this nand stores, it never loses to a reader). */
static void gen_learn(struct nand *n, uint32_t blk, uint32_t gen)
{
	uint64_t exp = 0;

	__atomic_compare_exchange_n(&n->gcur[blk], &exp, GEN_KNOWN | gen,
				    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void gen_set(struct nand *n, uint32_t blk, uint32_t gen)
{
	__atomic_store_n(&n->gcur[blk], GEN_KNOWN | gen, __ATOMIC_RELEASE);
	__atomic_store_n(&n->gmax[blk], GEN_KNOWN | gen, __ATOMIC_RELEASE);
}

static uint64_t data_at(const struct nand *n, uint64_t ppn);
static uint64_t oob_at(const struct nand *n, uint64_t ppn);

/* Block @blk's current generation: known, or read from page 0's OOB (one
 * small read, once). */
static int cur_gen(struct nand *n, uint32_t blk, uint32_t *gen)
{
	uint64_t v = __atomic_load_n(&n->gcur[blk], __ATOMIC_ACQUIRE);
	uint8_t oob[512];
	int r;

	if (!(v & GEN_KNOWN)) {
		r = bk_pread(n, oob, n->g.oob_size,
			     oob_at(n, (uint64_t)blk * n->g.ppb));
		if (r)
			return r;
		gen_learn(n, blk, page0_gen(n, blk, oob));
		v = __atomic_load_n(&n->gcur[blk], __ATOMIC_ACQUIRE);
	}
	*gen = (uint32_t)v;
	return 0;
}

/* The OOB of page @ppn as handed out (block generation @gen): the record
 * when its page carries a program stamp of @gen (the stamp bytes read
 * zero), else all zero. */
static void stamp_view(const struct nand *n, uint64_t ppn, uint8_t *oob,
		       uint32_t gen)
{
	uint32_t os = n->g.oob_size, g;

	if (stamp_get(n, ppn, oob, &g) == STAMP_PROG && g == gen)
		memset(oob + os - NAND_STAMP_SIZE, 0, NAND_STAMP_SIZE);
	else
		memset(oob, 0, os);
}

/* @count raw OOBs of block @blk from page @pg in @buf: learn what they say
 * (page 0's generation; the highest stamp when they are the whole block),
 * then turn them into the view handed out. */
static int stamp_view_pages(struct nand *n, uint32_t blk, uint32_t pg,
			    uint32_t count, uint8_t *buf)
{
	uint32_t os = n->g.oob_size, gen, mx = 0, g2;
	uint64_t first = (uint64_t)blk * n->g.ppb;
	int r;

	if (!pg)
		gen_learn(n, blk, page0_gen(n, blk, buf));
	if (!pg && count == n->g.ppb) {
		for (uint32_t i = 0; i < count; i++)
			if (stamp_get(n, first + i, buf + (size_t)i * os, &g2) &&
			    g2 > mx)
				mx = g2;
		uint64_t exp = 0;

		__atomic_compare_exchange_n(&n->gmax[blk], &exp, GEN_KNOWN | mx,
					    false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
	r = cur_gen(n, blk, &gen);
	if (r)
		return r;
	for (uint32_t i = 0; i < count; i++)
		stamp_view(n, first + pg + i, buf + (size_t)i * os, gen);
	return 0;
}

/* Where the data / the OOB of page @ppn sit in the backing. */
static uint64_t data_at(const struct nand *n, uint64_t ppn)
{
	return n->g.flash_off + ppn * n->stride;
}

static uint64_t oob_at(const struct nand *n, uint64_t ppn)
{
	return n->g.oob_inline ? data_at(n, ppn) + n->g.page_size
			       : n->g.oob_off + ppn * n->g.oob_size;
}

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
	uint64_t ppn;
	uint32_t count, gen;
};

static void view_copy(void *ctx)
{
	const struct map_copy *m = ctx;
	const struct nand *n = m->n;
	uint32_t ps = n->g.page_size, os = n->g.oob_size;

	if (!n->g.oob_inline) {
		memcpy(m->d, m->sd, (size_t)m->count * ps);
		memcpy(m->o, m->so, (size_t)m->count * os);
		return;
	}
	for (uint32_t i = 0; i < m->count; i++) {
		memcpy(m->d + (size_t)i * ps, m->sd + (size_t)i * n->stride, ps);
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
		memcpy(dst, m->cd + (size_t)i * ps, ps);
		memcpy(dst + ps, m->co + (size_t)i * os, rec);
		if (n->g.oob_stamp)
			stamp_fill(dst + ps + rec, m->ppn + i, STAMP_PROG,
				   m->gen);
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

/*
 * Copy the run [ppn, ppn + count) with its OOB records from the backing's
 * mapping (view) instead of reading it: counted as one backing read, no
 * syscall.  Only when every page of the run is below its block's write
 * pointer (programmed) and proven allocated (mapped_pages).  The caller
 * excludes an erase of these blocks, as for a pread.  False: not mapped,
 * or the copy faulted (map_guarded): read it.
 */
static bool run_view(struct nand *n, uint64_t ppn, uint32_t count,
		     uint8_t *d, uint8_t *o)
{
	const struct nand_backing_ops *ops = n->b->ops;
	uint32_t ps = n->g.page_size, os = n->g.oob_size, ppb = n->g.ppb;
	uint64_t last = ppn + count - 1;
	const uint8_t *sd, *so, *end;
	struct map_copy m;

	if (!n->mapped)
		return false;
	for (uint64_t b = ppn / ppb; b <= last / ppb; b++) {
		uint64_t end = last < (b + 1) * ppb ? last : (b + 1) * ppb - 1;

		if (end % ppb >= __atomic_load_n(&n->wp[b], __ATOMIC_ACQUIRE) ||
		    end % ppb >= mapped_pages(n, (uint32_t)b, end % ppb))
			return false;
	}
	sd = ops->view(n->b, data_at(n, ppn), (uint64_t)count * n->stride);
	so = n->g.oob_inline ? sd + ps
			     : ops->view(n->b, oob_at(n, ppn),
					 (uint64_t)count * os);
	if (!sd || !so)
		return false;
	m = (struct map_copy){ .n = n, .sd = sd, .so = so, .d = d, .o = o,
			       .count = count };
	if (n->g.oob_inline)
		end = sd + (size_t)count * n->stride;
	else    /* the lower to the higher of the two regions */
		end = so > sd ? so + (size_t)count * os : sd + (size_t)count * ps;
	if (!map_guarded(n, so > sd ? sd : so, end, view_copy, &m,
			 data_at(n, ppn)))
		return false;
	CNT_ADD(n, backing_reads);
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
static bool run_wview(struct nand *n, uint64_t ppn, uint32_t count,
		      const uint8_t *d, const uint8_t *o, uint32_t gen)
{
	uint32_t ppb = n->g.ppb;
	uint32_t blk = (uint32_t)(ppn / ppb), last = (uint32_t)(ppn % ppb) + count - 1;
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
	m = (struct map_copy){ .n = n, .dst = dst, .cd = d, .co = o,
			       .ppn = ppn, .count = count, .gen = gen };
	if (!map_guarded(n, dst, dst + (size_t)count * n->stride, wview_copy,
			 &m, data_at(n, ppn)))
		return false;
	__atomic_fetch_add(&n->c.backing_writes, 1, __ATOMIC_RELAXED);
	return true;
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
	if (run_view(n, ppn, count, d, o)) {
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
	for (uint32_t i = 0; n->g.oob_stamp && i < count;) {
		uint32_t blk = (uint32_t)((ppn + i) / n->g.ppb);
		uint32_t pg = (uint32_t)((ppn + i) % n->g.ppb);
		uint32_t c = n->g.ppb - pg < count - i ? n->g.ppb - pg : count - i;

		r = stamp_view_pages(n, blk, pg, c, o + (size_t)i * os);
		if (r)
			return r;
		i += c;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint64_t p = ppn + i;
		uint32_t blk = (uint32_t)(p / n->g.ppb);

		res[i] = 0;
		if (p % n->g.ppb >= __atomic_load_n(&n->wp[blk], __ATOMIC_ACQUIRE))
			memset(d + (size_t)i * ps, 0xff, ps);
		else if (fault(n, NAND_OP_READ, p, d + (size_t)i * ps, ps) < 0)
			res[i] = -EIO;
	}
	return 0;
}

static struct oob_slot *slot_find(struct nand *n, uint32_t blk)
{
	for (int i = 0; i < NAND_OOB_SLOTS; i++)
		if (n->slot[i].blk == (int64_t)blk)
			return &n->slot[i];
	return NULL;
}

static int slot_writeback(struct nand *n, struct oob_slot *s)
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

		return r ? r : stamp_view_pages(n, blk,
						(uint32_t)(ppn % n->g.ppb), 1,
						oob);
	}
	s = slot_find(n, blk);
	if (s) {
		memcpy(oob, s->buf + (ppn % n->g.ppb) * n->g.oob_size,
		       n->g.oob_size);
		return 0;
	}
	return bk_pread(n, oob, n->g.oob_size, oob_at(n, ppn));
}

/* Inline layout: the OOB bytes of a block's pages, the data read past into
 * one scratch page (one preadv per NAND_IOV_MAX / 2 pages). */
static int block_oob_inline(struct nand *n, uint32_t blk, uint8_t *buf)
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
		int r = block_oob_inline(n, blk, buf);

		return r ? r : stamp_view_pages(n, blk, 0, n->g.ppb, buf);
	}
	if (n->g.oob_inline)
		return block_oob_inline(n, blk, buf);
	s = slot_find(n, blk);
	if (s) {
		memcpy(buf, s->buf, len);
		return 0;
	}
	return bk_pread(n, buf, len, n->g.oob_off + (uint64_t)blk * len);
}

static struct oob_slot *slot_get(struct nand *n, uint32_t blk, int *err)
{
	struct oob_slot *s = slot_find(n, blk), *lru = NULL;
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
	*err = slot_writeback(n, lru);
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
			stamp_put(n, blank, p, STAMP_ERASE, gen);
		CNT_ADD(n, backing_writes);
		if (!ops->pwrite(n->b, blank, os, at))
			continue;
		memcpy(want, oob + (size_t)i * os, os);
		if (n->g.oob_stamp)
			stamp_put(n, want, p, STAMP_PROG, gen);
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
			r = cur_gen(n, blk, &gen);
			if (r)
				return r;
		}
		if (!run_wview(n, ppn, 1, data, oob, gen)) {
			memcpy(n->pbuf, data, n->g.page_size);
			memcpy(n->pbuf + n->g.page_size, oob, n->g.oob_size);
			if (n->g.oob_stamp)
				stamp_put(n, n->pbuf + n->g.page_size, ppn,
					  STAMP_PROG, gen);
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
	s = slot_get(n, blk, &r);
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
	r = slot_writeback(n, s);
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

/* Program a run of pages of one block (see nand.h). */
int nand_program_run(struct nand *n, uint64_t ppn, uint32_t count,
		     const void *data, const void *oob, uint32_t *done)
{
	uint32_t blk = (uint32_t)(ppn / n->g.ppb), pg = (uint32_t)(ppn % n->g.ppb);
	uint32_t ps = n->g.page_size, os = n->g.oob_size;
	const uint8_t *d = data, *o = oob;
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
			r = nand_program(n, ppn + i, d + (size_t)i * ps,
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
		r = cur_gen(n, blk, &gen);
		if (r)
			return r;
	}
	for (uint32_t i = 0; i < count && !r;) {
		uint32_t c = count - i < per ? count - i : per;
		int v = 0;

		if (run_wview(n, ppn + i, c, d + (size_t)i * ps,
			      o + (size_t)i * os, gen)) {
			hole_stale(n);
			i += c;
			__atomic_store_n(&n->wp[blk], pg + i, __ATOMIC_RELEASE);
			__atomic_fetch_add(&n->c.programs, c, __ATOMIC_RELAXED);
			*done = i;
			continue;
		}
		for (uint32_t k = 0; k < c; k++) {
			iov[v].iov_base = (void *)(d + (size_t)(i + k) * ps);
			iov[v++].iov_len = ps;
			iov[v].iov_base = (void *)(o + (size_t)(i + k) * os);
			iov[v++].iov_len = os;
			if (!n->g.oob_stamp)
				continue;
			/* the caller's record, then the nand's stamp */
			iov[v - 1].iov_len = os - NAND_STAMP_SIZE;
			stamp_fill(tails[k], ppn + i + k, STAMP_PROG, gen);
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

static int block_oob_inline(struct nand *n, uint32_t blk, uint8_t *buf);

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

	if (!(mx & GEN_KNOWN) && slots_hole(n, data_at(n, first),
					    (uint64_t)n->g.ppb * n->stride)) {
		gen_set(n, blk, 0);
		++*ec;
		return 0;
	}
	if (!(mx & GEN_KNOWN)) {        /* read every stamp of the block once */
		uint8_t *buf = malloc((size_t)n->g.ppb * os);

		if (!buf)
			return -ENOMEM;
		r = block_oob_inline(n, blk, buf);
		if (!r)
			r = stamp_view_pages(n, blk, 0, n->g.ppb, buf);
		free(buf);
		if (r)
			return r;
		mx = __atomic_load_n(&n->gmax[blk], __ATOMIC_ACQUIRE);
	}
	r = cur_gen(n, blk, &gen);
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
	stamp_put(n, st, first, STAMP_ERASE, gen);
	r = bk_pwrite(n, st, os, oob_at(n, first));
	hole_stale(n);
	if (r)
		return r;
	gen_set(n, blk, gen);
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
	s = slot_find(n, blk);
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
		r = slots_hole(n, at, len) ? 0 : nand_zero(n, at, len);
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
int nand_sync(struct nand *n)
{
	int r;

	if (nand_failed(n))
		return -EIO;
	for (int i = 0; i < NAND_OOB_SLOTS; i++) {
		r = slot_writeback(n, &n->slot[i]);
		if (r)
			return r;
	}
	CNT_ADD(n, syncs);
	CNT_ADD(n, backing_writes);
	return bk_err(n->b->ops->sync(n->b));
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

/* Inline layout: is [off, off+len) a hole?  One SEEK_DATA, no SEEK_HOLE
 * (the flash is mostly data: a SEEK_HOLE would walk all of it); remembers
 * where the next data is, so a forward walk over holes costs one lseek
 * per data extent. */
static bool slots_hole(struct nand *n, uint64_t off, uint64_t len)
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
		return slots_hole(n, off, len);
	}
	if (n->no_seek || !n->b->ops->seek || slot_find(n, blk))
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
