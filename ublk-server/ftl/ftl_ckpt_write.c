/* SPDX-License-Identifier: MIT */
/*
 * The checkpoint writer: map, block states, erase counts and counters, as
 * a base (the whole payload) in the next of the rotating slots, or as a
 * delta record of what changed after the newest one in the same slot (see
 * ftl-format.h and docs/image-format.md); the mount marker.  The loader
 * is ftl_ckpt_load.c.  f->lock held throughout.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "ftl-int.h"

/* Payload page @i (map bytes, then the block table in f->ck.buf) into @buf. */
static void payload_page(struct ftl *f, uint32_t i, uint8_t *buf)
{
	uint64_t ps = f->g.ps, lo = i * ps, hi = lo + ps;
	uint64_t m = ftl_ckpt_map_bytes(&f->g), end = m + ftl_ckpt_tab_bytes(&f->g);

	memset(buf, 0, ps);
	for (uint64_t o = lo; o < hi && o < end;) {
		uint64_t n;
		if (o < m) {
			n = (m < hi ? m : hi) - o;
			memcpy(buf + (o - lo), (uint8_t *)f->log.map + o, n);
		} else {
			n = (end < hi ? end : hi) - o;
			memcpy(buf + (o - lo), f->ck.buf + (o - m), n);
		}
		o += n;
	}
}

/* A page of scratch after the block table in f->ck.buf. */
static uint8_t *pagebuf(struct ftl *f)
{
	return f->ck.buf + ftl_ckpt_tab_bytes(&f->g);
}

static int prog_ckpt_page(struct ftl *f, uint64_t gen, uint32_t idx,
			  uint8_t kind, uint16_t stream, const void *data)
{
	uint8_t oob[1024];
	uint64_t ppn = ftl_ckpt_slot_page(f, gen, idx);
	int r;

	memset(oob, 0, f->g.oob);
	ftl_oob_fill((struct ftl_oob *)oob, kind, stream, idx, gen,
		     nand_block_ec(f->nand, (uint32_t)(ppn / f->g.ppb)), data,
		     f->g.ps);
	r = nand_program(f->nand, ppn, data, oob);
	if (!r)
		CADD(f, m.ckpt_bytes, f->g.ps);
	return r;
}

void ftl_ckpt_force_base(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	f->ck.pos = 0;
}

/* A delta record being written: data pages filled with runs. */
struct emit {
	struct ftl *f;
	uint8_t *pb;
	uint32_t off, pos, n, crc;
	/* the pending run */
	uint32_t kind, start, cnt;
	union {
		uint32_t map[1024];
		struct ftl_ckpt_blk blk[256];
	} run;
	/* single map entries, as {lpn, entry} pairs (FTL_RUN_PAIRS) */
	uint32_t pair[1024], npair;
};

/* Program the data page being filled (stream FTL_CKPT_STREAM_DATA). */
static int emit_page(struct emit *e)
{
	struct ftl *f = e->f;
	int r;

	if (e->pos + 3 > ftl_ckpt_slot_pages(&f->g))
		return -ENOSPC;         /* no room for it, header and marker */
	r = prog_ckpt_page(f, f->ck.gen, e->pos, FTL_OOB_CKPT,
			   FTL_CKPT_STREAM_DATA, e->pb);
	if (r)
		return r;
	e->crc = oct_crc32c(e->crc, e->pb, f->g.ps);
	e->pos++;
	e->n++;
	e->off = 0;
	memset(e->pb, 0, f->g.ps);
	return 0;
}

/* Put @cnt entries of @esz bytes at @data into runs of @kind from @start
 * (pairs: start 0), split at page ends. */
static int emit_run(struct emit *e, uint32_t kind, uint32_t start,
		    uint32_t esz, const void *data, uint32_t cnt)
{
	uint32_t ps = e->f->g.ps, done = 0;
	int r;

	while (done < cnt) {
		struct ftl_ckpt_run h;
		uint32_t k;

		if (e->off + sizeof(h) + esz > ps) {
			r = emit_page(e);
			if (r)
				return r;
		}
		k = (uint32_t)((ps - e->off - sizeof(h)) / esz);
		if (k > cnt - done)
			k = cnt - done;
		h = (struct ftl_ckpt_run){ kind,
			kind == FTL_RUN_PAIRS ? 0 : start + done, k };
		memcpy(e->pb + e->off, &h, sizeof(h));
		memcpy(e->pb + e->off + sizeof(h),
		       (const uint8_t *)data + (size_t)done * esz,
		       (size_t)k * esz);
		e->off += (uint32_t)(sizeof(h) + (size_t)k * esz);
		done += k;
	}
	return 0;
}

static int emit_pairs(struct emit *e)
{
	int r = emit_run(e, FTL_RUN_PAIRS, 0, 8, e->pair, e->npair / 2);

	e->npair = 0;
	return r;
}

/* Put the pending run into data pages: a single map entry goes with the
 * pairs (8 bytes instead of a 12-byte run header and 4). */
static int emit_flush(struct emit *e)
{
	int r = 0;

	if (e->kind == FTL_RUN_MAP && e->cnt == 1) {
		e->pair[e->npair++] = e->start;
		e->pair[e->npair++] = e->run.map[0];
		if (e->npair == sizeof(e->pair) / sizeof(e->pair[0]))
			r = emit_pairs(e);
	} else if (e->cnt) {
		r = emit_run(e, e->kind, e->start, e->kind == FTL_RUN_MAP ? 4u :
			     (uint32_t)sizeof(struct ftl_ckpt_blk), &e->run,
			     e->cnt);
	}
	e->cnt = 0;
	return r;
}

/* Add entry @i (map entry or block-table entry @ent) to the runs. */
static int emit_add(struct emit *e, uint32_t kind, uint32_t i, const void *ent)
{
	uint32_t max = kind == FTL_RUN_MAP ? 1024u : 256u;
	int r;

	if (e->cnt && (e->kind != kind || i != e->start + e->cnt ||
		       e->cnt == max)) {
		r = emit_flush(e);
		if (r)
			return r;
	}
	if (!e->cnt) {
		e->kind = kind;
		e->start = i;
	}
	if (kind == FTL_RUN_MAP)
		memcpy(&e->run.map[e->cnt++], ent, 4);
	else
		memcpy(&e->run.blk[e->cnt++], ent, sizeof(struct ftl_ckpt_blk));
	return 0;
}

/* The open blocks beyond the host and GC streams' (checkpoint version 6,
 * delta version 3: images with OCT_SB_F_CKPT_OPEN). */
static void xopen_fill(const struct ftl *f, struct ftl_ckpt_open *x)
{
	memset(x, 0, FTL_CKPT_XOPEN_BYTES);
	for (unsigned i = 0; i < FTL_CKPT_XOPEN; i++) {
		const struct ftl_stream *st = &f->log.st[FTL_NSTREAMS + i];

		x[i].blk = st->blk;
		x[i].wp = st->blk == FTL_NONE ? 0 : st->wp;
		x[i].front = (uint8_t)(FTL_NSTREAMS + i);
		x[i].stream = (uint8_t)ftl_oob_stream((int)(FTL_NSTREAMS + i));
	}
}

/* Seal header @p (@full bytes, its crc last) as @size bytes: without
 * OCT_SB_F_CKPT_OPEN the header of the version before xopen, whose crc
 * sits where xopen starts (the bytes after it zero). */
static void hdr_seal(void *p, uint32_t size, size_t full)
{
	uint8_t *b = p;
	uint32_t crc;

	memset(b + size - 4, 0, full - size + 4);
	crc = oct_crc32c(0, b, size);
	memcpy(b + size - 4, &crc, 4);
}

/* Block @b's checkpoint-table entry as it is now. */
static void tab_fill(struct ftl *f, uint32_t b, struct ftl_ckpt_blk *t)
{
	memset(t, 0, sizeof(*t));
	t->ec = nand_block_ec(f->nand, b);
	t->state = f->idx.state[b];
	t->flags = f->log.fdirty[b] ? FTL_BLKF_MAYBE_DIRTY : 0;
	t->mtime = f->log.mtime[b];
}

void ftl_ckpt_blk_dirty_all(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	if (f->ck.bdirty)
		memset(f->ck.bdirty, 0xff, ((size_t)f->g.nblocks / 64 + 1) * 8);
}

#ifdef FTL_CKPT_CHECK
/* Every entry that differs from ck.tab is marked (ftl_ckpt_blk_dirty). */
static void check_marks(struct ftl *f)
{
	for (uint32_t b = 0; b < f->g.nblocks; b++) {
		struct ftl_ckpt_blk t;

		tab_fill(f, b, &t);
		if (memcmp(&t, &f->ck.tab[b], sizeof(t)) &&
		    !(f->ck.bdirty[b / 64] & (1ull << (b % 64)))) {
			fprintf(stderr, "ftl: block %u's table entry changed "
				"without ftl_ckpt_blk_dirty\n", b);
			abort();
		}
	}
}
#endif

/* The marked blocks whose entry differs from ck.tab, into f->ck.chg (and
 * their entries into the table in f->ck.buf); the marks are consumed. */
static uint32_t changed_blocks(struct ftl *f)
{
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ck.buf;
	uint32_t n = 0;

#ifdef FTL_CKPT_CHECK
	check_marks(f);
#endif
	for (uint32_t w = 0; w <= f->g.nblocks / 64; w++) {
		uint64_t x = f->ck.bdirty[w];

		f->ck.bdirty[w] = 0;
		for (; x; x &= x - 1) {
			uint32_t b = w * 64 + (uint32_t)__builtin_ctzll(x);

			if (b >= f->g.nblocks)
				break;
			tab_fill(f, b, &tab[b]);
			if (memcmp(&tab[b], &f->ck.tab[b], sizeof(tab[b])))
				f->ck.chg[n++] = b;
		}
	}
	return n;
}

/* Emit the map entries whose dirty bit is set, in order, clearing them. */
static int emit_dirty_map(struct ftl *f, struct emit *e)
{
	int r = 0;

	for (uint32_t s = 0; !r && s <= f->g.nlpn / 4096; s++) {
		uint64_t y;

		if (!__atomic_load_n(&f->ck.dsum[s], __ATOMIC_RELAXED))
			continue;
		/* clear first: a word that fills after this sets it again */
		y = __atomic_exchange_n(&f->ck.dsum[s], 0, __ATOMIC_ACQ_REL);
		for (; y && !r; y &= y - 1) {
			uint32_t w = s * 64 + (uint32_t)__builtin_ctzll(y);
			uint64_t x;

			if (w > f->g.nlpn / 64)
				break;
			/* clear first: a change after this sets the bit again */
			x = __atomic_exchange_n(&f->ck.dirty[w], 0,
						__ATOMIC_ACQ_REL);
			__atomic_fetch_sub(&f->ck.ndirty,
					   (uint64_t)__builtin_popcountll(x),
					   __ATOMIC_RELAXED);
			while (x && !r) {
				uint32_t l = w * 64 + (uint32_t)__builtin_ctzll(x);
				uint32_t v = ftl_map_get(f, l);

				x &= x - 1;
				r = emit_add(e, FTL_RUN_MAP, l, &v);
			}
		}
	}
	return r;
}

/*
 * A delta record after the newest one in the current slot: the map
 * entries whose dirty bit is set and the @nblk block-table entries in
 * f->ck.chg (built in f->ck.buf), then the header.  -ENOSPC when it would
 * not fit (or a base is no larger): write a base.
 */
static int write_delta(struct ftl *f, bool clean, uint32_t nblk)
{
	const struct ftl_geom *g = &f->g;
	const struct ftl_ckpt_blk *tab = (const struct ftl_ckpt_blk *)f->ck.buf;
	uint64_t ndirty = __atomic_load_n(&f->ck.ndirty, __ATOMIC_RELAXED);
	uint64_t bound;
	struct ftl_ckpt_delta *d;
	struct emit *e;
	int r = 0;

	/* at worst every entry is a run of its own */
	bound = ndirty * (4 + sizeof(struct ftl_ckpt_run)) +
		(uint64_t)nblk * (sizeof(struct ftl_ckpt_blk) +
				  sizeof(struct ftl_ckpt_run));
	bound = bound / (g->ps - 32) + 1;
	if ((uint64_t)f->ck.pos + bound + 2 > ftl_ckpt_slot_pages(&f->g) ||
	    bound > g->payload_pages)
		return -ENOSPC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct emit){ .f = f, .pb = pagebuf(f), .pos = f->ck.pos };
	f->ck.pos = 0;          /* until this record is whole: a base next */
	memset(e->pb, 0, g->ps);
	r = emit_dirty_map(f, e);
	for (uint32_t i = 0; !r && i < nblk; i++) {
		uint32_t b = f->ck.chg[i];

		f->ck.tab[b] = tab[b];
		r = emit_add(e, FTL_RUN_BLK, b, &tab[b]);
	}
	if (!r && e->cnt)
		r = emit_flush(e);
	if (!r && e->npair)
		r = emit_pairs(e);
	if (!r && e->off)
		r = emit_page(e);
	if (r)
		goto out;
	d = (struct ftl_ckpt_delta *)e->pb;
	memset(e->pb, 0, g->ps);
	memcpy(d->magic, FTL_CKPT_DELTA_MAGIC, 8);
	/* version 2 after a version-5 base (images without the flag) */
	d->version = g->ckpt_open ? FTL_CKPT_DELTA_VERSION : 2u;
	d->hdr_size = (uint32_t)sizeof(*d) -
		      (g->ckpt_open ? 0 : FTL_CKPT_XOPEN_BYTES);
	d->gen = f->ck.gen;
	d->idx = f->ck.didx + 1;
	d->count = e->n;
	d->seq = f->log.seq;
	d->prev_seq = f->ck.seq;
	d->flags = clean ? FTL_CKPT_CLEAN : 0;
	d->data_crc = e->crc;
	memcpy(d->uuid, f->sb.uuid, 16);
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		d->open[s].blk = f->log.st[s].blk;
		d->open[s].wp = f->log.st[s].wp;
	}
	d->write_time = (uint64_t)time(NULL);
	CADD(f, m.ckpt_writes, 1);
	ftl_counters_snapshot(f, &d->cnt);
	/* this header page, programmed below (the delta's pages before it
	 * are counted already) */
	d->cnt.page_programs += 1;
	xopen_fill(f, d->xopen);
	hdr_seal(d, d->hdr_size, sizeof(*d));
	r = prog_ckpt_page(f, f->ck.gen, e->pos, FTL_OOB_CKPT,
			   FTL_CKPT_STREAM_DHDR, e->pb);
	if (!r)
		r = ftl_sync(f);
	if (r)
		goto out;
	f->ck.didx++;
	f->ck.mark = e->pos + 1;
	f->ck.pos = e->pos + 2;
	f->ck.prev_seq = f->ck.seq;
	f->ck.seq = f->log.seq;
	f->ck.allocs = 0;
	f->ck.due = false;
	ftl_fsum_covered(f);
out:
	free(e);
	return r;
}

/*
 * Write a checkpoint of the current state (f->lock held): sync first so
 * that everything it points to is durable; then a delta record after the
 * newest one (images with OCT_SB_F_CKPT_DELTA, when it fits), else a base:
 * erase the next slot, program header and payload, sync.
 */
int ftl_ckpt_write(struct ftl *f, bool clean)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ck.buf;
	struct ftl_ckpt_hdr *h;
	uint8_t *pb = pagebuf(f);
	uint64_t gen = f->ck.gen + 1;
	uint32_t crc = 0, b0, nprog = 1;        /* header + payload */
	int r;

	FTL_ASSERT_HELD(&f->lock);
	if (f->readonly)
		return -EROFS;
	if (f->log.seq > FTL_SEQ_MAX || gen > FTL_SEQ_MAX)
		return -EOVERFLOW;      /* never write one open would refuse */
	/* a version-5 checkpoint records two open blocks: the others
	 * closed; so are frontiers out of use (streams off, or spare
	 * blocks gone), which would otherwise stay open for good */
	if (!g->ckpt_open || !ftl_place_on(f))
		ftl_frontiers_close(f);
	r = ftl_sync(f);
	if (r)
		return r;
	if (g->ckpt_delta && f->ck.pos) {
		r = write_delta(f, clean, changed_blocks(f));
		if (r != -ENOSPC) {
			if (r)  /* the marks are spent: a base next */
				f->ck.pos = 0;
			return r;
		}
	}
	f->ck.pos = 0;
	for (uint32_t b = 0; b < g->nblocks; b++)
		tab_fill(f, b, &tab[b]);
	if (g->ckpt_delta) {    /* the base covers every change so far */
		memset(f->ck.dirty, 0, ((size_t)g->nlpn / 64 + 1) * 8);
		memset(f->ck.dsum, 0, ((size_t)g->nlpn / 4096 + 1) * 8);
		__atomic_store_n(&f->ck.ndirty, 0, __ATOMIC_RELAXED);
		/* its table is this one (the slot erases below mark theirs) */
		memset(f->ck.bdirty, 0, ((size_t)g->nblocks / 64 + 1) * 8);
	}
	for (uint32_t i = 0; i < g->payload_pages; i++) {
		payload_page(f, i, pb);
		crc = oct_crc32c(crc, pb, g->ps);
		nprog += !ftl_ckpt_page_blank(g, i, pb);
	}
	b0 = (uint32_t)(ftl_ckpt_slot_page(f, gen, 0) / g->ppb);
	for (uint32_t b = b0; b < b0 + g->slot_blocks; b++) {
		r = ftl_erase(f, b);
		if (r)
			return r;
	}
	memset(pb, 0, g->ps);
	h = (struct ftl_ckpt_hdr *)pb;
	memcpy(h->magic, FTL_CKPT_MAGIC, 8);
	h->version = g->ckpt_open ? FTL_CKPT_VERSION : FTL_CKPT_VERSION_LIFE;
	h->hdr_size = (uint32_t)sizeof(*h) -
		      (g->ckpt_open ? 0 : FTL_CKPT_XOPEN_BYTES);
	h->gen = gen;
	h->seq = f->log.seq;
	h->flags = clean ? FTL_CKPT_CLEAN : 0;
	h->payload_pages = g->payload_pages;
	h->nlpn = g->nlpn;
	h->nblocks = g->nblocks;
	h->payload_crc = crc;
	memcpy(h->uuid, f->sb.uuid, 16);
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		h->open[s].blk = f->log.st[s].blk;
		h->open[s].wp = f->log.st[s].wp;
	}
	h->write_time = (uint64_t)time(NULL);
	CADD(f, m.ckpt_writes, 1);
	ftl_counters_snapshot(f, &h->cnt);
	/* the pages programmed below: counted, else every open from this
	 * checkpoint would lose them */
	h->cnt.page_programs += nprog;
	xopen_fill(f, h->xopen);
	hdr_seal(h, h->hdr_size, sizeof(*h));
	r = prog_ckpt_page(f, gen, 0, FTL_OOB_CKPT, FTL_CKPT_STREAM_BASE, pb);
	for (uint32_t i = 0; !r && i < g->payload_pages; i++) {
		payload_page(f, i, pb);
		if (!ftl_ckpt_page_blank(g, i, pb))  /* else left erased (v3) */
			r = prog_ckpt_page(f, gen, i + 1, FTL_OOB_CKPT,
					   FTL_CKPT_STREAM_BASE, pb);
	}
	if (!r)
		r = ftl_sync(f);
	if (r)
		return r;
	if (g->ckpt_delta) {
		memcpy(f->ck.tab, tab, ftl_ckpt_tab_bytes(&f->g));
		f->ck.pos = g->payload_pages + 2;
	}
	f->ck.mark = g->payload_pages + 1;
	f->ck.didx = 0;
	f->ck.gen = gen;
	f->ck.slot_seq = f->ck.seq;
	f->ck.prev_seq = f->ck.seq;
	f->ck.seq = f->log.seq;
	f->ck.allocs = 0;
	f->ck.due = false;
	ftl_fsum_covered(f);
	return 0;
}

/* The mount marker (ftl_ckpt_marker_read): programmed after the newest
 * checkpoint, synced. */
int ftl_ckpt_marker_write(struct ftl *f)
{
	int r = prog_ckpt_page(f, f->ck.gen, f->ck.mark, FTL_OOB_MOUNT,
			       FTL_CKPT_STREAM_BASE, f->buf.zero);

	FTL_ASSERT_HELD(&f->lock);
	return r ? r : ftl_sync(f);
}
