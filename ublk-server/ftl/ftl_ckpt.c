/* SPDX-License-Identifier: MIT */
/* Checkpoints: map, block states, erase counts and counters, written to
 * rotating slots (see ftl-format.h and docs/image-format.md). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "ftl-int.h"

/* Physical page @idx of the slot that generation @gen uses. */
uint64_t ftl_ckpt_slot_page(const struct ftl *f, uint64_t gen, uint32_t idx)
{
	uint64_t slot = gen % FTL_CKPT_SLOTS;

	return slot * f->g.slot_blocks * f->g.ppb + idx;
}

static uint64_t map_bytes(const struct ftl *f)
{
	return (uint64_t)f->g.nlpn * sizeof(uint32_t);
}

static uint64_t tab_bytes(const struct ftl *f)
{
	return (uint64_t)f->g.nblocks * sizeof(struct ftl_ckpt_blk);
}

/* Payload page @i (map bytes, then the block table in f->ckbuf) into @buf. */
static void payload_page(struct ftl *f, uint32_t i, uint8_t *buf)
{
	uint64_t ps = f->g.ps, lo = i * ps, hi = lo + ps, m = map_bytes(f);
	uint64_t end = m + tab_bytes(f);

	memset(buf, 0, ps);
	for (uint64_t o = lo; o < hi && o < end;) {
		uint64_t n;
		if (o < m) {
			n = (m < hi ? m : hi) - o;
			memcpy(buf + (o - lo), (uint8_t *)f->map + o, n);
		} else {
			n = (end < hi ? end : hi) - o;
			memcpy(buf + (o - lo), f->ckbuf + (o - m), n);
		}
		o += n;
	}
}

/*
 * Payload page @i of an empty engine's checkpoint: map bytes 0xff
 * (FTL_UNMAPPED), block-table and tail bytes 0.  Version 3 leaves payload
 * pages equal to it unprogrammed (blank OOB); a reader takes a payload
 * page with a blank OOB as this, and the payload crc in the header (over
 * every page's content, as before) rejects a checkpoint torn before a page
 * that was not blank.
 */
void ftl_ckpt_blank_page(const struct ftl_geom *g, uint32_t i, uint8_t *buf)
{
	uint64_t ps = g->ps, lo = (uint64_t)i * ps, m = (uint64_t)g->nlpn * 4;

	memset(buf, 0, ps);
	if (lo < m)
		memset(buf, 0xff, m - lo < ps ? m - lo : ps);
}

static bool all_byte(const uint8_t *p, uint64_t n, uint8_t v)
{
	return !n || (p[0] == v && !memcmp(p, p + 1, n - 1));
}

/* Is @buf (payload page @i) what ftl_ckpt_blank_page() gives? */
static bool page_blank(const struct ftl_geom *g, uint32_t i, const uint8_t *buf)
{
	uint64_t ps = g->ps, lo = (uint64_t)i * ps, m = (uint64_t)g->nlpn * 4;
	uint64_t nm = lo < m ? (m - lo < ps ? m - lo : ps) : 0;

	return all_byte(buf, nm, 0xff) && all_byte(buf + nm, ps - nm, 0);
}

static bool oob_blank(const uint8_t *oob, uint32_t n)
{
	return all_byte(oob, n, 0);
}

static uint8_t *pagebuf(struct ftl *f)
{
	return f->ckbuf + tab_bytes(f);
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
	f->ck_pos = 0;
}

/* Slot pages of one slot. */
static uint32_t slot_pages(const struct ftl *f)
{
	return f->g.slot_blocks * f->g.ppb;
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

	if (e->pos + 3 > slot_pages(f))
		return -ENOSPC;         /* no room for it, header and marker */
	r = prog_ckpt_page(f, f->ckpt_gen, e->pos, FTL_OOB_CKPT,
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

/* Block @b's checkpoint-table entry as it is now. */
static void tab_fill(struct ftl *f, uint32_t b, struct ftl_ckpt_blk *t)
{
	memset(t, 0, sizeof(*t));
	t->ec = nand_block_ec(f->nand, b);
	t->state = f->state[b];
	t->flags = f->fdirty[b] ? FTL_BLKF_MAYBE_DIRTY : 0;
	t->mtime = f->mtime[b];
}

void ftl_ckpt_blk_dirty_all(struct ftl *f)
{
	if (f->ck_bdirty)
		memset(f->ck_bdirty, 0xff, ((size_t)f->g.nblocks / 64 + 1) * 8);
}

#ifdef FTL_CKPT_CHECK
/* Every entry that differs from ck_tab is marked (ftl_ckpt_blk_dirty). */
static void check_marks(struct ftl *f)
{
	for (uint32_t b = 0; b < f->g.nblocks; b++) {
		struct ftl_ckpt_blk t;

		tab_fill(f, b, &t);
		if (memcmp(&t, &f->ck_tab[b], sizeof(t)) &&
		    !(f->ck_bdirty[b / 64] & (1ull << (b % 64)))) {
			fprintf(stderr, "ftl: block %u's table entry changed "
				"without ftl_ckpt_blk_dirty\n", b);
			abort();
		}
	}
}
#endif

/* The marked blocks whose entry differs from ck_tab, into f->ck_chg (and
 * their entries into the table in f->ckbuf); the marks are consumed. */
static uint32_t changed_blocks(struct ftl *f)
{
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ckbuf;
	uint32_t n = 0;

#ifdef FTL_CKPT_CHECK
	check_marks(f);
#endif
	for (uint32_t w = 0; w <= f->g.nblocks / 64; w++) {
		uint64_t x = f->ck_bdirty[w];

		f->ck_bdirty[w] = 0;
		for (; x; x &= x - 1) {
			uint32_t b = w * 64 + (uint32_t)__builtin_ctzll(x);

			if (b >= f->g.nblocks)
				break;
			tab_fill(f, b, &tab[b]);
			if (memcmp(&tab[b], &f->ck_tab[b], sizeof(tab[b])))
				f->ck_chg[n++] = b;
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

		if (!__atomic_load_n(&f->ck_dsum[s], __ATOMIC_RELAXED))
			continue;
		/* clear first: a word that fills after this sets it again */
		y = __atomic_exchange_n(&f->ck_dsum[s], 0, __ATOMIC_ACQ_REL);
		for (; y && !r; y &= y - 1) {
			uint32_t w = s * 64 + (uint32_t)__builtin_ctzll(y);
			uint64_t x;

			if (w > f->g.nlpn / 64)
				break;
			/* clear first: a change after this sets the bit again */
			x = __atomic_exchange_n(&f->ck_dirty[w], 0,
						__ATOMIC_ACQ_REL);
			__atomic_fetch_sub(&f->ck_ndirty,
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
 * f->ck_chg (built in f->ckbuf), then the header.  -ENOSPC when it would
 * not fit (or a base is no larger): write a base.
 */
static int write_delta(struct ftl *f, bool clean, uint32_t nblk)
{
	const struct ftl_geom *g = &f->g;
	const struct ftl_ckpt_blk *tab = (const struct ftl_ckpt_blk *)f->ckbuf;
	uint64_t ndirty = __atomic_load_n(&f->ck_ndirty, __ATOMIC_RELAXED);
	uint64_t bound;
	struct ftl_ckpt_delta *d;
	struct emit *e;
	int r = 0;

	/* at worst every entry is a run of its own */
	bound = ndirty * (4 + sizeof(struct ftl_ckpt_run)) +
		(uint64_t)nblk * (sizeof(struct ftl_ckpt_blk) +
				  sizeof(struct ftl_ckpt_run));
	bound = bound / (g->ps - 32) + 1;
	if ((uint64_t)f->ck_pos + bound + 2 > slot_pages(f) ||
	    bound > g->payload_pages)
		return -ENOSPC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct emit){ .f = f, .pb = pagebuf(f), .pos = f->ck_pos };
	f->ck_pos = 0;          /* until this record is whole: a base next */
	memset(e->pb, 0, g->ps);
	r = emit_dirty_map(f, e);
	for (uint32_t i = 0; !r && i < nblk; i++) {
		uint32_t b = f->ck_chg[i];

		f->ck_tab[b] = tab[b];
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
	d->version = FTL_CKPT_DELTA_VERSION;
	d->hdr_size = sizeof(*d);
	d->gen = f->ckpt_gen;
	d->idx = f->ck_didx + 1;
	d->count = e->n;
	d->seq = f->seq;
	d->prev_seq = f->ckpt_seq;
	d->flags = clean ? FTL_CKPT_CLEAN : 0;
	d->data_crc = e->crc;
	memcpy(d->uuid, f->sb.uuid, 16);
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		d->open[s].blk = f->st[s].blk;
		d->open[s].wp = f->st[s].wp;
	}
	d->write_time = (uint64_t)time(NULL);
	CADD(f, m.ckpt_writes, 1);
	ftl_counters_snapshot(f, &d->cnt);
	/* this header page, programmed below (the delta's pages before it
	 * are counted already) */
	d->cnt.page_programs += 1;
	d->crc = 0;
	d->crc = oct_crc32c(0, d, sizeof(*d));
	r = prog_ckpt_page(f, f->ckpt_gen, e->pos, FTL_OOB_CKPT,
			   FTL_CKPT_STREAM_DHDR, e->pb);
	if (!r)
		r = ftl_sync(f);
	if (r)
		goto out;
	f->ck_didx++;
	f->ck_mark = e->pos + 1;
	f->ck_pos = e->pos + 2;
	f->ckpt_prev_seq = f->ckpt_seq;
	f->ckpt_seq = f->seq;
	f->allocs_since_ckpt = 0;
	f->ckpt_due = false;
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
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ckbuf;
	struct ftl_ckpt_hdr *h;
	uint8_t *pb = pagebuf(f);
	uint64_t gen = f->ckpt_gen + 1;
	uint32_t crc = 0, b0, nprog = 1;        /* header + payload */
	int r;

	if (f->readonly)
		return -EROFS;
	if (f->seq > FTL_SEQ_MAX || gen > FTL_SEQ_MAX)
		return -EOVERFLOW;      /* never write one open would refuse */
	r = ftl_sync(f);
	if (r)
		return r;
	if (g->ckpt_delta && f->ck_pos) {
		r = write_delta(f, clean, changed_blocks(f));
		if (r != -ENOSPC) {
			if (r)  /* the marks are spent: a base next */
				f->ck_pos = 0;
			return r;
		}
	}
	f->ck_pos = 0;
	for (uint32_t b = 0; b < g->nblocks; b++)
		tab_fill(f, b, &tab[b]);
	if (g->ckpt_delta) {    /* the base covers every change so far */
		memset(f->ck_dirty, 0, ((size_t)g->nlpn / 64 + 1) * 8);
		memset(f->ck_dsum, 0, ((size_t)g->nlpn / 4096 + 1) * 8);
		__atomic_store_n(&f->ck_ndirty, 0, __ATOMIC_RELAXED);
		/* its table is this one (the slot erases below mark theirs) */
		memset(f->ck_bdirty, 0, ((size_t)g->nblocks / 64 + 1) * 8);
	}
	for (uint32_t i = 0; i < g->payload_pages; i++) {
		payload_page(f, i, pb);
		crc = oct_crc32c(crc, pb, g->ps);
		nprog += !page_blank(g, i, pb);
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
	h->version = FTL_CKPT_VERSION;
	h->hdr_size = sizeof(*h);
	h->gen = gen;
	h->seq = f->seq;
	h->flags = clean ? FTL_CKPT_CLEAN : 0;
	h->payload_pages = g->payload_pages;
	h->nlpn = g->nlpn;
	h->nblocks = g->nblocks;
	h->payload_crc = crc;
	memcpy(h->uuid, f->sb.uuid, 16);
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		h->open[s].blk = f->st[s].blk;
		h->open[s].wp = f->st[s].wp;
	}
	h->write_time = (uint64_t)time(NULL);
	CADD(f, m.ckpt_writes, 1);
	ftl_counters_snapshot(f, &h->cnt);
	/* the pages programmed below: counted, else every open from this
	 * checkpoint would lose them */
	h->cnt.page_programs += nprog;
	h->crc = 0;
	h->crc = oct_crc32c(0, h, sizeof(*h));
	r = prog_ckpt_page(f, gen, 0, FTL_OOB_CKPT, FTL_CKPT_STREAM_BASE, pb);
	for (uint32_t i = 0; !r && i < g->payload_pages; i++) {
		payload_page(f, i, pb);
		if (!page_blank(g, i, pb))      /* else left erased (v3) */
			r = prog_ckpt_page(f, gen, i + 1, FTL_OOB_CKPT,
					   FTL_CKPT_STREAM_BASE, pb);
	}
	if (!r)
		r = ftl_sync(f);
	if (r)
		return r;
	if (g->ckpt_delta) {
		memcpy(f->ck_tab, tab, tab_bytes(f));
		f->ck_pos = g->payload_pages + 2;
	}
	f->ck_mark = g->payload_pages + 1;
	f->ck_didx = 0;
	f->ckpt_gen = gen;
	f->ckpt_slot_seq = f->ckpt_seq;
	f->ckpt_prev_seq = f->ckpt_seq;
	f->ckpt_seq = f->seq;
	f->allocs_since_ckpt = 0;
	f->ckpt_due = false;
	ftl_fsum_covered(f);
	return 0;
}

/*
 * Copy a checkpoint or delta header (@full bytes, its counters last before
 * its crc) from @pb, where it takes @size bytes (its hdr_size): @full, or
 * with @old (a version before the lifetime counters) FTL_CKPT_LIFE_BYTES
 * fewer, which then read as 0.  false when @size is not that or the crc
 * does not match.
 */
static bool hdr_load(const uint8_t *pb, uint32_t size, bool old, void *out,
		     size_t full)
{
	static const uint8_t zero[4];
	uint8_t *o = out;
	uint32_t crc;

	if (size != full - (old ? FTL_CKPT_LIFE_BYTES : 0))
		return false;
	memset(o, 0, full);
	memcpy(o, pb, size - 4);
	memcpy(&crc, pb + size - 4, 4);
	memcpy(o + full - 4, &crc, 4);
	return oct_crc32c(oct_crc32c(0, pb, size - 4), zero, 4) == crc;
}

/* Read and check the header of slot @slot; 0 and *h, or -EBADMSG. */
static int read_hdr(struct ftl *f, uint32_t slot, struct ftl_ckpt_hdr *h,
		    bool *looks_used)
{
	uint8_t oob[1024], *pb = pagebuf(f);
	struct ftl_oob *o = (struct ftl_oob *)oob;
	uint64_t ppn = (uint64_t)slot * f->g.slot_blocks * f->g.ppb;
	struct ftl_ckpt_hdr t;
	int r;

	*looks_used = false;
	r = nand_read_oob(f->nand, ppn, oob);
	if (r)
		return r;
	for (uint32_t i = 0; i < sizeof(*o); i++)
		if (oob[i])
			*looks_used = true;
	if (!ftl_oob_ok(o) || o->kind != FTL_OOB_CKPT || o->lpn != 0)
		return -EBADMSG;
	r = nand_read(f->nand, ppn, 0, pb, f->g.ps);
	if (r)
		return r;
	if (oct_crc32c(0, pb, f->g.ps) != o->data_crc)
		return -EBADMSG;
	memcpy(&t, pb, offsetof(struct ftl_ckpt_hdr, gen));
	if (memcmp(t.magic, FTL_CKPT_MAGIC, 8) || !t.version ||
	    t.version > FTL_CKPT_VERSION ||
	    !hdr_load(pb, t.hdr_size, t.version < FTL_CKPT_VERSION_LIFE, &t,
		      sizeof(t)))
		return -EBADMSG;
	*h = t;
	if (t.gen != o->seq || t.gen % FTL_CKPT_SLOTS != slot || !t.gen ||
	    t.gen > FTL_SEQ_MAX || t.seq > FTL_SEQ_MAX ||
	    t.nlpn != f->g.nlpn || t.nblocks != f->g.nblocks ||
	    t.payload_pages != f->g.payload_pages ||
	    memcmp(t.uuid, f->sb.uuid, 16) || (t.flags & ~FTL_CKPT_CLEAN) ||
	    t.cnt.last_mount > FTL_MOUNT_SCAN ||
	    (t.version == 4 && !f->g.ckpt_delta))
		return -EBADMSG;
	return 0;
}

/*
 * Every map entry against the rest: inside a data block that is open or
 * full, below the write pointer of an open one, no page shared by two
 * logical pages; FTL_DAMAGED only from version 2.
 */
static int check_map(struct ftl *f, const struct ftl_ckpt_hdr *h,
		     const struct ftl_ckpt_blk *tab, uint64_t total)
{
	const struct ftl_geom *g = &f->g;
	uint8_t *seen = calloc(total / 8 + 1, 1);
	int r = 0;

	if (!seen)
		return -ENOMEM;
	for (uint32_t l = 0; l < g->nlpn && !r; l++) {
		uint32_t p = f->map[l], b, wp = g->ppb;

		if (p == FTL_UNMAPPED || (p == FTL_DAMAGED && h->version >= 2))
			continue;
		b = p / g->ppb;
		if (p >= total || b < g->ckpt_blocks ||
		    (seen[p / 8] & (1u << (p % 8))) ||
		    (tab[b].state != FTL_BLK_OPEN && tab[b].state != FTL_BLK_FULL &&
		     tab[b].state != FTL_BLK_BAD)) {  /* retired: still read */
			r = -EBADMSG;
			break;
		}
		seen[p / 8] |= (uint8_t)(1u << (p % 8));
		for (unsigned s = 0; s < FTL_NSTREAMS; s++)
			if (h->open[s].blk == b)
				wp = h->open[s].wp;
		if (p % g->ppb >= wp)
			r = -EBADMSG;
	}
	free(seen);
	return r;
}

/* Load and check the payload of @h into the engine; -EBADMSG if bad. */
static int load_payload(struct ftl *f, const struct ftl_ckpt_hdr *h)
{
	const struct ftl_geom *g = &f->g;
	uint64_t m = map_bytes(f), end = m + tab_bytes(f);
	uint8_t oob[1024], *pb = pagebuf(f);
	struct ftl_oob *o = (struct ftl_oob *)oob;
	uint32_t crc = 0;
	int r;

	for (uint32_t i = 0; i < g->payload_pages; i++) {
		uint64_t ppn = ftl_ckpt_slot_page(f, h->gen, i + 1);
		uint64_t lo = (uint64_t)i * g->ps, hi = lo + g->ps;

		r = nand_read_oob(f->nand, ppn, oob);
		if (r)
			return r;
		if (h->version >= 3 && oob_blank(oob, g->oob)) {
			ftl_ckpt_blank_page(g, i, pb);  /* not programmed */
		} else {
			r = nand_read(f->nand, ppn, 0, pb, g->ps);
			if (r)
				return r;
			if (!ftl_oob_ok(o) || o->kind != FTL_OOB_CKPT ||
			    o->seq != h->gen || o->lpn != i + 1 ||
			    oct_crc32c(0, pb, g->ps) != o->data_crc)
				return -EBADMSG;
		}
		crc = oct_crc32c(crc, pb, g->ps);
		for (uint64_t p = lo; p < hi && p < end;) {
			uint64_t n;
			if (p < m) {
				n = (m < hi ? m : hi) - p;
				memcpy((uint8_t *)f->map + p, pb + (p - lo), n);
			} else {
				n = (end < hi ? end : hi) - p;
				memcpy(f->ckbuf + (p - m), pb + (p - lo), n);
			}
			p += n;
		}
	}
	if (crc != h->payload_crc)
		return -EBADMSG;
	return 0;
}

/* The loaded state (map, table in f->ckbuf) against header @h. */
static int check_state(struct ftl *f, const struct ftl_ckpt_hdr *h)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ckbuf;
	uint64_t total = (uint64_t)g->nblocks * g->ppb;

	for (uint32_t b = 0; b < g->nblocks; b++) {
		bool ck = b < g->ckpt_blocks;
		if (tab[b].state > FTL_BLK_BAD || tab[b].pad[0] || tab[b].pad[1] ||
		    tab[b].ec > NAND_EC_MAX ||
		    (tab[b].flags & ~FTL_BLKF_MAYBE_DIRTY) ||
		    (ck != (tab[b].state == FTL_BLK_CKPT)) || tab[b].mtime > h->seq)
			return -EBADMSG;
	}
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		uint32_t b = h->open[s].blk;
		if (b == FTL_NONE)
			continue;
		if (b >= g->nblocks || tab[b].state != FTL_BLK_OPEN ||
		    h->open[s].wp > g->ppb ||
		    (s && h->open[0].blk == b))
			return -EBADMSG;
	}
	return check_map(f, h, tab, total);
}

/* Does the data page @pb of a delta hold well-formed runs?  With @apply,
 * put them into the map and the table in f->ckbuf. */
static bool runs_ok(struct ftl *f, const uint8_t *pb, bool apply)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ckbuf;
	uint32_t off = 0;

	while (off + sizeof(struct ftl_ckpt_run) <= g->ps) {
		struct ftl_ckpt_run h;
		uint64_t esz, lim;

		memcpy(&h, pb + off, sizeof(h));
		off += sizeof(h);
		if (h.kind == FTL_RUN_END)
			return true;
		if (h.kind == FTL_RUN_MAP) {
			esz = 4;
			lim = g->nlpn;
		} else if (h.kind == FTL_RUN_BLK) {
			esz = sizeof(struct ftl_ckpt_blk);
			lim = g->nblocks;
		} else if (h.kind == FTL_RUN_PAIRS && !h.start) {
			esz = 8;
			lim = UINT32_MAX;
		} else {
			return false;
		}
		if (!h.count || (uint64_t)h.start + h.count > lim ||
		    off + esz * h.count > g->ps)
			return false;
		for (uint32_t k = 0; h.kind == FTL_RUN_PAIRS && k < h.count; k++) {
			uint32_t pr[2];

			memcpy(pr, pb + off + 8 * k, 8);
			if (pr[0] >= g->nlpn)
				return false;
			if (apply)
				f->map[pr[0]] = pr[1];
		}
		if (apply && h.kind == FTL_RUN_MAP)
			memcpy(&f->map[h.start], pb + off, esz * h.count);
		else if (apply && h.kind == FTL_RUN_BLK)
			memcpy(&tab[h.start], pb + off, esz * h.count);
		off += (uint32_t)(esz * h.count);
	}
	return true;
}

/* Is the header in @pb the delta record @idx of base @base with @n data
 * pages whose crc is @crc?  It goes into *@out (version 1, after a base
 * older than the lifetime counters: those read as 0). */
static bool delta_ok(struct ftl *f, const uint8_t *pb,
		     const struct ftl_ckpt_hdr *base, uint64_t prev_seq,
		     uint32_t idx, uint32_t n, uint32_t crc,
		     struct ftl_ckpt_delta *out)
{
	struct ftl_ckpt_delta d;
	bool old = base->version < FTL_CKPT_VERSION_LIFE;

	memcpy(&d, pb, offsetof(struct ftl_ckpt_delta, gen));
	if (memcmp(d.magic, FTL_CKPT_DELTA_MAGIC, 8) ||
	    d.version != (old ? 1u : FTL_CKPT_DELTA_VERSION) ||
	    !hdr_load(pb, d.hdr_size, old, &d, sizeof(d)))
		return false;
	*out = d;
	return d.gen == base->gen && d.idx == idx && d.count == n &&
	       d.data_crc == crc && d.prev_seq == prev_seq &&
	       d.seq >= prev_seq && d.seq <= FTL_SEQ_MAX &&
	       !memcmp(d.uuid, f->sb.uuid, 16) &&
	       !(d.flags & ~FTL_CKPT_CLEAN) &&
	       d.cnt.last_mount <= FTL_MOUNT_SCAN;
}

/* Is every page of slot @gen from slot page @from on blank (OOB all
 * zero)? */
static int blank_from(struct ftl *f, uint64_t gen, uint32_t from, bool *blank)
{
	const struct ftl_geom *g = &f->g;
	uint32_t b0 = (uint32_t)(ftl_ckpt_slot_page(f, gen, 0) / g->ppb);
	int r;

	*blank = true;
	for (uint32_t b = from / g->ppb; b < g->slot_blocks && *blank; b++) {
		uint32_t pg0 = b == from / g->ppb ? from % g->ppb : 0;

		if (nand_block_oob_hole(f->nand, b0 + b))
			continue;
		r = nand_read_block_oob(f->nand, b0 + b, f->oobbuf);
		if (r)
			return r;
		*blank = oob_blank(f->oobbuf + (size_t)pg0 * g->oob,
				   (g->ppb - pg0) * g->oob);
	}
	return 0;
}

enum chain_end { CHAIN_CLEAN, CHAIN_TORN, CHAIN_DAMAGED };

/*
 * Apply the delta records after base @h (loaded) in order; *h becomes the
 * newest record's view (seq, flags, streams, counters).  *end says how the
 * chain ends: at a blank page (clean), at a record that does not check
 * out with nothing programmed after it (torn by a crash), or with
 * something after it (damaged).  f->ck_mark / ck_didx / ck_deltas follow.
 */
static int load_chain(struct ftl *f, struct ftl_ckpt_hdr *h,
		      enum chain_end *end)
{
	const struct ftl_geom *g = &f->g;
	uint32_t spp = slot_pages(f), pos = g->payload_pages + 2;
	uint8_t oob[1024], *pb = pagebuf(f);
	struct ftl_oob *o = (struct ftl_oob *)oob;
	int r;

	f->ck_mark = g->payload_pages + 1;
	f->ck_didx = 0;
	*end = CHAIN_CLEAN;
	if (!g->ckpt_delta || h->version < 4)
		return 0;
	for (;;) {
		uint32_t start = pos, n = 0, crc = 0;
		bool hdr = false, blank;
		struct ftl_ckpt_delta d;

		*end = CHAIN_CLEAN;
		for (; pos + 2 <= spp; pos++) {
			uint64_t ppn = ftl_ckpt_slot_page(f, h->gen, pos);

			r = nand_read_oob(f->nand, ppn, oob);
			if (r)
				return r;
			if (oob_blank(oob, g->oob) && pos == start) {
				*end = CHAIN_CLEAN;
				break;
			}
			*end = CHAIN_TORN;
			if (!ftl_oob_ok(o) || o->kind != FTL_OOB_CKPT ||
			    o->seq != h->gen || o->lpn != pos)
				break;
			r = nand_read(f->nand, ppn, 0, pb, g->ps);
			if (r)
				return r;
			if (oct_crc32c(0, pb, g->ps) != o->data_crc)
				break;
			if (o->stream == FTL_CKPT_STREAM_DATA &&
			    runs_ok(f, pb, false)) {
				crc = oct_crc32c(crc, pb, g->ps);
				n++;
				continue;
			}
			hdr = o->stream == FTL_CKPT_STREAM_DHDR &&
			      delta_ok(f, pb, h, h->seq, f->ck_didx + 1, n, crc,
				       &d);
			break;
		}
		if (!hdr) {
			/* the chain ends at a blank page, or a record cut
			 * short (torn): either only if nothing follows (a
			 * lost block of records, a damaged page) */
			if (pos + 2 > spp && pos == start)
				return 0;
			r = blank_from(f, h->gen, pos + 1, &blank);
			if (r)
				return r;
			if (!blank)
				*end = CHAIN_DAMAGED;
			return 0;
		}
		/* whole: apply it (its header is in d) */
		{
			for (uint32_t p = start; p < start + n; p++) {
				r = nand_read(f->nand,
					      ftl_ckpt_slot_page(f, h->gen, p),
					      0, pb, g->ps);
				if (r)
					return r;
				if (!runs_ok(f, pb, true))
					return -EBADMSG;  /* changed under us */
			}
			h->seq = d.seq;
			h->flags = d.flags;
			memcpy(h->open, d.open, sizeof(h->open));
			h->write_time = d.write_time;
			h->cnt = d.cnt;
		}
		f->ck_didx++;
		f->ck_mark = pos + 1;
		pos += 2;
	}
}

/* Take over a loaded checkpoint: block states, nand state, streams.  The
 * slot's first @used pages count as programmed. */
static void apply(struct ftl *f, const struct ftl_ckpt_hdr *h, uint32_t used)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ckbuf;
	uint32_t b0 = (uint32_t)(ftl_ckpt_slot_page(f, h->gen, 0) / g->ppb);

	for (uint32_t b = 0; b < g->nblocks; b++) {
		uint32_t wp = g->ppb;

		f->state[b] = tab[b].state;
		f->mtime[b] = tab[b].mtime;
		f->trim_seq[b] = 0;
		f->fdirty[b] = tab[b].flags & FTL_BLKF_MAYBE_DIRTY;
		if (tab[b].state == FTL_BLK_FREE)
			wp = 0;
		if (b >= b0 && b < b0 + g->slot_blocks) {
			uint64_t first = (uint64_t)(b - b0) * g->ppb;
			wp = used <= first ? 0 : used - first > g->ppb ?
			     g->ppb : (uint32_t)(used - first);
		}
		nand_set_block(f->nand, b, wp, tab[b].ec);
	}
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		f->st[s].blk = h->open[s].blk;
		f->st[s].wp = h->open[s].wp;
		if (f->st[s].blk != FTL_NONE)
			nand_set_block(f->nand, f->st[s].blk, f->st[s].wp,
				       tab[f->st[s].blk].ec);
	}
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		bool open = false;
		for (unsigned s = 0; s < FTL_NSTREAMS; s++)
			open |= f->st[s].blk == b;
		if (f->state[b] == FTL_BLK_OPEN && !open)
			f->state[b] = FTL_BLK_FULL;
	}
	f->ckpt_gen = h->gen;
	f->ckpt_seq = f->seq = f->flushed_seq = h->seq;
	f->base = h->cnt;
}

/*
 * Find the newest valid checkpoint and load it into @f.  *gen_out / *flags
 * describe it.  With @report, describe every slot there; *bad counts slots
 * that hold a damaged checkpoint that should have been valid: every used
 * slot that does not check out, except the one the next checkpoint was
 * being written to when an unclean shutdown cut it (slot gen + 1 after a
 * checkpoint that was not clean, or clean with its mount marker).  Any
 * other damaged slot may have held a newer checkpoint than the one used:
 * f->ckpt_fallback is then set, and the mount must roll forward (blocks the
 * checkpoint calls free may hold data).  -EBADMSG if none is valid.
 */
int ftl_ckpt_find(struct ftl *f, uint64_t *gen_out, uint32_t *flags,
		  int *bad, FILE *report)
{
	struct ftl_ckpt_hdr h[FTL_CKPT_SLOTS], cur;
	int ok[FTL_CKPT_SLOTS], order[FTL_CKPT_SLOTS], n = 0, r, chosen = -1;
	bool used[FTL_CKPT_SLOTS], torn_ok = false;
	enum chain_end end = CHAIN_CLEAN;
	uint64_t cgen = 0;

	f->ckpt_torn = f->ck_bad_delta = f->ck_marker_bad = false;
	f->ckpt_lost = false;
	f->ck_pos = 0;
	for (uint32_t s = 0; s < FTL_CKPT_SLOTS; s++) {
		ok[s] = read_hdr(f, s, &h[s], &used[s]);
		if (ok[s] && ok[s] != -EBADMSG)
			return ok[s];
		if (!ok[s])
			order[n++] = (int)s;
		if (!used[s]) {
			/* header page blank: used all the same if anything
			 * else in the slot is programmed (its first block
			 * lost: it may have held the newest checkpoint) */
			bool blank;

			r = blank_from(f, s, 1, &blank);
			if (r)
				return r;
			used[s] = !blank;
		}
	}
	/* newest first */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (h[order[j]].gen > h[order[i]].gen) {
				int t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	for (int i = 0; i < n; i++) {
		int s = order[i];

		cur = h[s];
		r = load_payload(f, &cur);
		if (!r)
			r = load_chain(f, &cur, &end);
		if (!r)
			r = check_state(f, &cur);
		if (r == -EBADMSG) {
			ok[s] = r;
			continue;
		}
		if (r)
			return r;
		chosen = s;
		break;
	}
	if (chosen >= 0) {
		bool marker = false;

		apply(f, &cur, end == CHAIN_CLEAN ? f->ck_mark : slot_pages(f));
		cgen = cur.gen;
		*gen_out = cgen;
		*flags = cur.flags;
		if (cur.flags & FTL_CKPT_CLEAN) {
			r = ftl_ckpt_mount_marker(f, &marker, false);
			if (r)
				return r;
		}
		torn_ok = !(cur.flags & FTL_CKPT_CLEAN) || marker;
		if (end == CHAIN_TORN && !torn_ok)
			end = CHAIN_DAMAGED;    /* closed cleanly: never torn */
		f->ckpt_torn = end == CHAIN_TORN;
		f->ck_bad_delta = end == CHAIN_DAMAGED;
		if (f->g.ckpt_delta) {
			memcpy(f->ck_tab, f->ckbuf, tab_bytes(f));
			/* a checkpoint older than the lifetime counters
			 * takes no records of this version: a base next */
			if (end == CHAIN_CLEAN &&
			    cur.version >= FTL_CKPT_VERSION_LIFE)
				f->ck_pos = f->ck_mark + 1;
		}
	}
	if (bad)
		*bad = 0;
	f->ckpt_fallback = false;
	for (uint32_t s = 0; s < FTL_CKPT_SLOTS; s++) {
		bool torn_next = torn_ok && s == (cgen + 1) % FTL_CKPT_SLOTS &&
				 (ok[s] != 0 || h[s].gen == cgen + 1);
		bool damaged;

		if (torn_next && ok[s] && f->g.ckpt_delta) {
			/* a mount marker or delta records after its payload:
			 * that base was whole (then damaged), not cut */
			bool blank;

			r = blank_from(f, s, f->g.payload_pages + 1, &blank);
			if (r)
				return r;
			torn_next = blank;
		}
		damaged = used[s] && ok[s] && !torn_next;
		/* create writes generations 1 and 2 (before the superblock):
		 * with 1 the newest valid one, 2 was lost, whatever its slot
		 * looks like now (erased whole: as never used) */
		if (chosen >= 0 && cgen == 1 && s == 2 % FTL_CKPT_SLOTS &&
		    ok[s])
			damaged = true;

		if (report)
			fprintf(report, "checkpoint slot %u: %s%s gen %llu\n", s,
				(int)s == chosen ? "in use, " : "",
				!used[s] ? "empty" : ok[s] ? "damaged" : "valid",
				ok[s] ? 0ull : (unsigned long long)h[s].gen);
		if ((int)s == chosen && report && f->g.ckpt_delta)
			fprintf(report, "checkpoint slot %u: %u delta record%s"
				" applied%s\n", s, f->ck_didx,
				f->ck_didx == 1 ? "" : "s",
				end == CHAIN_DAMAGED ? ", the next one damaged" :
				end == CHAIN_TORN ? ", the next one torn" : "");
		if ((int)s == chosen && end == CHAIN_DAMAGED)
			damaged = true;
		if (!damaged)
			continue;
		f->ckpt_fallback = true;
		if (bad)
			(*bad)++;
	}
	return chosen >= 0 ? 0 : -EBADMSG;
}

/*
 * The mount marker: a page after the clean checkpoint, programmed (and
 * synced) before the first write of a mount that started clean.  A clean
 * checkpoint with a marker means the last mount did not close cleanly.
 */
int ftl_ckpt_mount_marker(struct ftl *f, bool *present, bool write)
{
	uint32_t idx = f->ck_mark;
	uint64_t ppn = ftl_ckpt_slot_page(f, f->ckpt_gen, idx);
	uint8_t oob[1024];
	int r;

	if (!write) {
		r = nand_read_oob(f->nand, ppn, oob);
		if (r)
			return r;
		/* nothing but a marker is programmed there (the slot was
		 * erased before this checkpoint): a page that does not
		 * check out is a damaged marker, taken as one, so the open
		 * rolls forward rather than miss the writes after it */
		*present = !oob_blank(oob, f->g.oob);
		f->ck_marker_bad = *present &&
			(!ftl_oob_ok((struct ftl_oob *)oob) ||
			 ((struct ftl_oob *)oob)->kind != FTL_OOB_MOUNT ||
			 ((struct ftl_oob *)oob)->seq != f->ckpt_gen);
		return 0;
	}
	r = prog_ckpt_page(f, f->ckpt_gen, idx, FTL_OOB_MOUNT,
			   FTL_CKPT_STREAM_BASE, f->zero);
	if (!r)
		r = ftl_sync(f);
	return r;
}
