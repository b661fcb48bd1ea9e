/* SPDX-License-Identifier: MIT */
/*
 * The checkpoint loader: find the newest valid checkpoint at open, check
 * it and every delta record after it, and load map, block states, erase
 * counts, streams and counters into the engine; the mount marker's check.
 * The writer is ftl_ckpt_write.c.  Runs at open and in fsck, before the
 * engine is shared.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

/* A page of scratch after the block table in f->ck.buf. */
static uint8_t *pagebuf(struct ftl *f)
{
	return f->ck.buf + ftl_ckpt_tab_bytes(&f->g);
}

/* The bytes a header of checkpoint version @v lacks at its end, before
 * its crc: xopen before version 6, the lifetime counters too before 5. */
static uint32_t hdr_missing(uint32_t v)
{
	return (v < FTL_CKPT_VERSION_OPEN ? FTL_CKPT_XOPEN_BYTES : 0) +
	       (v < FTL_CKPT_VERSION_LIFE ? FTL_CKPT_LIFE_BYTES : 0);
}

/*
 * Copy a checkpoint or delta header (@full bytes, its counters and xopen
 * last before its crc) from @pb, where it takes @size bytes (its
 * hdr_size): @full less the @missing bytes of an older version
 * (hdr_missing), which then read as 0.  false when @size is not that or
 * the crc does not match.
 */
static bool hdr_load(const uint8_t *pb, uint32_t size, uint32_t missing,
		     void *out, size_t full)
{
	static const uint8_t zero[4];
	uint8_t *o = out;
	uint32_t crc;

	if (size != full - missing)
		return false;
	memset(o, 0, full);
	memcpy(o, pb, size - 4);
	memcpy(&crc, pb + size - 4, 4);
	memcpy(o + full - 4, &crc, 4);
	return oct_crc32c(oct_crc32c(0, pb, size - 4), zero, 4) == crc;
}

/* Read and check the header of slot @slot; 0 and *h, or -EBADMSG;
 * -ESTALE (and *h) a whole header of a smaller image's checkpoint (a grow
 * cut before it wrote bases of the new size in every slot); -EXDEV (and
 * *h) one of a larger image's (a grow cut before its superblock: its base
 * of the new size, ftl_grow.c step 3). */
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
	    !hdr_load(pb, t.hdr_size, hdr_missing(t.version), &t, sizeof(t)))
		return -EBADMSG;
	if (t.version < FTL_CKPT_VERSION_OPEN)
		for (unsigned i = 0; i < FTL_CKPT_XOPEN; i++)
			t.xopen[i] = (struct ftl_ckpt_open){
				.blk = FTL_NONE, .front = (uint8_t)(FTL_NSTREAMS + i),
				.stream = (uint8_t)ftl_oob_stream((int)(FTL_NSTREAMS + i)) };
	*h = t;
	if (t.gen != o->seq || t.gen % FTL_CKPT_SLOTS != slot || !t.gen ||
	    t.gen > FTL_SEQ_MAX || t.seq > FTL_SEQ_MAX ||
	    memcmp(t.uuid, f->sb.uuid, 16) || (t.flags & ~FTL_CKPT_CLEAN) ||
	    t.cnt.last_mount > FTL_MOUNT_SCAN ||
	    (t.version == 4 && !f->g.ckpt_delta) ||
	    /* version 6 exactly on images with OCT_SB_F_CKPT_OPEN */
	    (t.version >= FTL_CKPT_VERSION_OPEN) != f->g.ckpt_open)
		return -EBADMSG;
	if (t.nlpn == f->g.nlpn && t.nblocks == f->g.nblocks &&
	    t.payload_pages == f->g.payload_pages)
		return 0;
	/* whole, of a smaller image: from before a grow (ftl_grow.c) */
	if (t.nlpn < f->g.nlpn && t.nblocks < f->g.nblocks &&
	    t.payload_pages <= f->g.payload_pages)
		return -ESTALE;
	/* of a larger one: a grow that did not reach its superblock */
	return t.nlpn > f->g.nlpn && t.nblocks > f->g.nblocks &&
	       t.payload_pages >= f->g.payload_pages ? -EXDEV : -EBADMSG;
}

/* The open blocks @h names, by frontier (FTL_NONE: none). */
static void hdr_fronts(const struct ftl_ckpt_hdr *h,
		       struct ftl_stream st[FTL_NFRONT])
{
	for (unsigned s = 0; s < FTL_NSTREAMS; s++)
		st[s] = (struct ftl_stream){ h->open[s].blk, h->open[s].wp };
	for (unsigned i = 0; i < FTL_CKPT_XOPEN; i++)
		st[FTL_NSTREAMS + i] = (struct ftl_stream){ h->xopen[i].blk,
							     h->xopen[i].wp };
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
	struct ftl_stream st[FTL_NFRONT];
	int r = 0;

	if (!seen)
		return -ENOMEM;
	hdr_fronts(h, st);
	for (uint32_t l = 0; l < g->nlpn && !r; l++) {
		uint32_t p = f->log.map[l], b, wp = g->ppb;

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
		for (unsigned s = 0; s < FTL_NFRONT; s++)
			if (st[s].blk == b)
				wp = st[s].wp;
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
	uint64_t m = ftl_ckpt_map_bytes(g), end = m + ftl_ckpt_tab_bytes(g);
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
		if (h->version >= 3 && ftl_oob_blank(oob, g->oob)) {
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
				memcpy((uint8_t *)f->log.map + p, pb + (p - lo), n);
			} else {
				n = (end < hi ? end : hi) - p;
				memcpy(f->ck.buf + (p - m), pb + (p - lo), n);
			}
			p += n;
		}
	}
	if (crc != h->payload_crc)
		return -EBADMSG;
	return 0;
}

/* The loaded state (map, table in f->ck.buf) against header @h. */
static int check_state(struct ftl *f, const struct ftl_ckpt_hdr *h)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ck.buf;
	uint64_t total = (uint64_t)g->nblocks * g->ppb;
	struct ftl_stream st[FTL_NFRONT];

	for (uint32_t b = 0; b < g->nblocks; b++) {
		bool ck = b < g->ckpt_blocks;
		if (tab[b].state > FTL_BLK_BAD || tab[b].pad[0] || tab[b].pad[1] ||
		    tab[b].ec > NAND_EC_MAX ||
		    (tab[b].flags & ~FTL_BLKF_MAYBE_DIRTY) ||
		    (ck != (tab[b].state == FTL_BLK_CKPT)) || tab[b].mtime > h->seq)
			return -EBADMSG;
	}
	hdr_fronts(h, st);
	for (unsigned i = 0; i < FTL_CKPT_XOPEN; i++) {
		const struct ftl_ckpt_open *x = &h->xopen[i];

		if (x->front != FTL_NSTREAMS + i || x->pad[0] || x->pad[1] ||
		    x->stream != ftl_oob_stream((int)(FTL_NSTREAMS + i)))
			return -EBADMSG;
	}
	for (unsigned s = 0; s < FTL_NFRONT; s++) {
		uint32_t b = st[s].blk;
		if (b == FTL_NONE)
			continue;
		if (b >= g->nblocks || tab[b].state != FTL_BLK_OPEN ||
		    st[s].wp > g->ppb)
			return -EBADMSG;
		for (unsigned k = 0; k < s; k++)
			if (st[k].blk == b)     /* one block, one frontier */
				return -EBADMSG;
	}
	return check_map(f, h, tab, total);
}

/* Does the data page @pb of a delta hold well-formed runs?  With @apply,
 * put them into the map and the table in f->ck.buf. */
static bool runs_ok(struct ftl *f, const uint8_t *pb, bool apply)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ck.buf;
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
				f->log.map[pr[0]] = pr[1];
		}
		if (apply && h.kind == FTL_RUN_MAP)
			memcpy(&f->log.map[h.start], pb + off, esz * h.count);
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
	/* the version of a base's records: 1 after 4, 2 after 5, 3 after 6 */
	uint32_t v = base->version < FTL_CKPT_VERSION_LIFE ? 1u :
		     base->version < FTL_CKPT_VERSION_OPEN ? 2u : 3u;

	memcpy(&d, pb, offsetof(struct ftl_ckpt_delta, gen));
	if (memcmp(d.magic, FTL_CKPT_DELTA_MAGIC, 8) || d.version != v ||
	    !hdr_load(pb, d.hdr_size, hdr_missing(base->version), &d,
		      sizeof(d)))
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
 * zero)?  With @base_gen, a page whose OOB checks out as that
 * generation's base page at its own index counts as blank too: the rest
 * of a larger image's base, written by a grow cut before its superblock
 * (ftl_grow.c step 3), is no marker nor delta record. */
static int blank_from(struct ftl *f, uint64_t gen, uint32_t from,
		      uint64_t base_gen, bool *blank)
{
	const struct ftl_geom *g = &f->g;
	uint32_t b0 = (uint32_t)(ftl_ckpt_slot_page(f, gen, 0) / g->ppb);
	int r;

	*blank = true;
	for (uint32_t b = from / g->ppb; b < g->slot_blocks && *blank; b++) {
		uint32_t pg0 = b == from / g->ppb ? from % g->ppb : 0;

		if (nand_block_oob_hole(f->nand, b0 + b))
			continue;
		r = nand_read_block_oob(f->nand, b0 + b, f->buf.oob);
		if (r)
			return r;
		for (uint32_t pg = pg0; pg < g->ppb && *blank; pg++) {
			const uint8_t *oob = f->buf.oob + (size_t)pg * g->oob;
			const struct ftl_oob *o = (const struct ftl_oob *)oob;

			*blank = ftl_oob_blank(oob, g->oob) ||
				 (base_gen && ftl_oob_ok(o) &&
				  o->kind == FTL_OOB_CKPT &&
				  o->stream == FTL_CKPT_STREAM_BASE &&
				  o->seq == base_gen &&
				  o->lpn == b * g->ppb + pg);
		}
	}
	return 0;
}

enum chain_end { CHAIN_CLEAN, CHAIN_TORN, CHAIN_DAMAGED };

/*
 * Apply the delta records after base @h (loaded) in order; *h becomes the
 * newest record's view (seq, flags, streams, counters).  *end says how the
 * chain ends: at a blank page (clean), at a record that does not check
 * out with nothing programmed after it (torn by a crash), or with
 * something after it (damaged).  f->ck.mark / ck_didx / ck_deltas follow.
 */
static int load_chain(struct ftl *f, struct ftl_ckpt_hdr *h,
		      enum chain_end *end)
{
	const struct ftl_geom *g = &f->g;
	uint32_t spp = ftl_ckpt_slot_pages(&f->g), pos = g->payload_pages + 2;
	uint8_t oob[1024], *pb = pagebuf(f);
	struct ftl_oob *o = (struct ftl_oob *)oob;
	int r;

	f->ck.mark = g->payload_pages + 1;
	f->ck.didx = 0;
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
			if (ftl_oob_blank(oob, g->oob) && pos == start) {
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
			      delta_ok(f, pb, h, h->seq, f->ck.didx + 1, n, crc,
				       &d);
			break;
		}
		if (!hdr) {
			/* the chain ends at a blank page, or a record cut
			 * short (torn): either only if nothing follows (a
			 * lost block of records, a damaged page) */
			if (pos + 2 > spp && pos == start)
				return 0;
			r = blank_from(f, h->gen, pos + 1, 0, &blank);
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
			if (h->version >= FTL_CKPT_VERSION_OPEN)
				memcpy(h->xopen, d.xopen, sizeof(h->xopen));
			h->write_time = d.write_time;
			h->cnt = d.cnt;
		}
		f->ck.didx++;
		f->ck.mark = pos + 1;
		pos += 2;
	}
}

/* Take over a loaded checkpoint: block states, nand state, streams.  The
 * slot's first @used pages count as programmed. */
static void apply(struct ftl *f, const struct ftl_ckpt_hdr *h, uint32_t used)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_blk *tab = (struct ftl_ckpt_blk *)f->ck.buf;
	uint32_t b0 = (uint32_t)(ftl_ckpt_slot_page(f, h->gen, 0) / g->ppb);

	for (uint32_t b = 0; b < g->nblocks; b++) {
		uint32_t wp = g->ppb;

		f->idx.state[b] = tab[b].state;
		f->log.mtime[b] = tab[b].mtime;
		f->log.trim_seq[b] = 0;
		f->log.fdirty[b] = tab[b].flags & FTL_BLKF_MAYBE_DIRTY;
		if (tab[b].state == FTL_BLK_FREE)
			wp = 0;
		if (b >= b0 && b < b0 + g->slot_blocks) {
			uint64_t first = (uint64_t)(b - b0) * g->ppb;
			wp = used <= first ? 0 : used - first > g->ppb ?
			     g->ppb : (uint32_t)(used - first);
		}
		nand_set_block(f->nand, b, wp, tab[b].ec);
	}
	hdr_fronts(h, f->log.st);
	for (unsigned s = 0; s < FTL_NFRONT; s++)
		if (f->log.st[s].blk != FTL_NONE)
			nand_set_block(f->nand, f->log.st[s].blk, f->log.st[s].wp,
				       tab[f->log.st[s].blk].ec);
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		bool open = false;
		for (unsigned s = 0; s < FTL_NFRONT; s++)
			open |= f->log.st[s].blk == b;
		if (f->idx.state[b] == FTL_BLK_OPEN && !open)
			f->idx.state[b] = FTL_BLK_FULL;
	}
	f->ck.gen = h->gen;
	f->ck.seq = f->log.seq = f->log.flushed_seq = h->seq;
	f->ctr.base = h->cnt;
}

/*
 * Find the newest valid checkpoint and load it into @f.  *gen_out / *flags
 * describe it.  With @report, describe every slot there; *bad counts slots
 * that hold a damaged checkpoint that should have been valid: every used
 * slot that does not check out, except the one the next checkpoint was
 * being written to when an unclean shutdown cut it (slot gen + 1 after a
 * checkpoint that was not clean, or clean with its mount marker).  Any
 * other damaged slot may have held a newer checkpoint than the one used:
 * f->mnt.ckpt_fallback is then set, and the mount must roll forward (blocks the
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

	f->mnt.ckpt_torn = f->mnt.bad_delta = f->mnt.marker_bad = false;
	f->mnt.ckpt_lost = false;
	f->ck.pos = 0;
	for (uint32_t s = 0; s < FTL_CKPT_SLOTS; s++) {
		ok[s] = read_hdr(f, s, &h[s], &used[s]);
		if (ok[s] && ok[s] != -EBADMSG && ok[s] != -ESTALE &&
		    ok[s] != -EXDEV)
			return ok[s];
		if (!ok[s])
			order[n++] = (int)s;
		if (!used[s]) {
			/* header page blank: used all the same if anything
			 * else in the slot is programmed (its first block
			 * lost: it may have held the newest checkpoint) */
			bool blank;

			r = blank_from(f, s, 1, 0, &blank);
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

		apply(f, &cur, end == CHAIN_CLEAN ? f->ck.mark :
			  ftl_ckpt_slot_pages(&f->g));
		cgen = cur.gen;
		*gen_out = cgen;
		*flags = cur.flags;
		if (cur.flags & FTL_CKPT_CLEAN) {
			r = ftl_ckpt_marker_read(f, &marker);
			if (r)
				return r;
		}
		torn_ok = !(cur.flags & FTL_CKPT_CLEAN) || marker;
		if (end == CHAIN_TORN && !torn_ok)
			end = CHAIN_DAMAGED;    /* closed cleanly: never torn */
		f->mnt.ckpt_torn = end == CHAIN_TORN;
		f->mnt.bad_delta = end == CHAIN_DAMAGED;
		if (f->g.ckpt_delta) {
			memcpy(f->ck.tab, f->ck.buf, ftl_ckpt_tab_bytes(&f->g));
			/* a checkpoint older than the lifetime counters
			 * takes no records of this version: a base next */
			if (end == CHAIN_CLEAN &&
			    cur.version >= FTL_CKPT_VERSION_LIFE)
				f->ck.pos = f->ck.mark + 1;
		}
	}
	if (bad)
		*bad = 0;
	f->mnt.ckpt_fallback = false;
	for (uint32_t s = 0; s < FTL_CKPT_SLOTS; s++) {
		bool torn_next = torn_ok && s == (cgen + 1) % FTL_CKPT_SLOTS &&
				 (ok[s] != 0 || h[s].gen == cgen + 1);
		bool damaged;

		if (torn_next && ok[s] && f->g.ckpt_delta) {
			/* a mount marker or delta records after its payload:
			 * that base was whole (then damaged), not cut */
			bool blank;

			r = blank_from(f, s, f->g.payload_pages + 1,
				       cgen + 1, &blank);
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
		/* older than the one used, of the size before a grow: a
		 * checkpoint the grow superseded, not a lost newer one */
		if (ok[s] == -ESTALE && chosen >= 0 && h[s].gen < cgen)
			damaged = false;
		/* the next one after a clean close, of a larger size: the
		 * base a grow wrote (step 3) before it was cut, its
		 * superblock still the old one; it holds what the clean one
		 * holds (the grow writes nothing else), not a lost newer
		 * state */
		if (ok[s] == -EXDEV && chosen >= 0 && h[s].gen == cgen + 1 &&
		    (cur.flags & FTL_CKPT_CLEAN))
			damaged = false;

		if (report)
			fprintf(report, "checkpoint slot %u: %s%s gen %llu\n", s,
				(int)s == chosen ? "in use, " : "",
				!used[s] ? "empty" : !ok[s] ? "valid" :
				damaged || (ok[s] != -ESTALE &&
					    ok[s] != -EXDEV) ? "damaged" :
				ok[s] == -ESTALE ? "superseded (before a grow)" :
				"of a grow cut short (not used)",
				ok[s] ? 0ull : (unsigned long long)h[s].gen);
		if ((int)s == chosen && report && f->g.ckpt_delta)
			fprintf(report, "checkpoint slot %u: %u delta record%s"
				" applied%s\n", s, f->ck.didx,
				f->ck.didx == 1 ? "" : "s",
				end == CHAIN_DAMAGED ? ", the next one damaged" :
				end == CHAIN_TORN ? ", the next one torn" : "");
		if ((int)s == chosen && end == CHAIN_DAMAGED)
			damaged = true;
		if (!damaged)
			continue;
		f->mnt.ckpt_fallback = true;
		if (bad)
			(*bad)++;
	}
	return chosen >= 0 ? 0 : -EBADMSG;
}

/*
 * The mount marker: a page after the clean checkpoint, programmed (and
 * synced) before the first write of a mount that started clean
 * (ftl_ckpt_marker_write).  A clean checkpoint with a marker means the
 * last mount did not close cleanly: *@present.
 */
int ftl_ckpt_marker_read(struct ftl *f, bool *present)
{
	uint64_t ppn = ftl_ckpt_slot_page(f, f->ck.gen, f->ck.mark);
	uint8_t oob[1024];
	int r;

	r = nand_read_oob(f->nand, ppn, oob);
	if (r)
		return r;
	/* nothing but a marker is programmed there (the slot was erased
	 * before this checkpoint): a page that does not check out is a
	 * damaged marker, taken as one, so the open rolls forward rather
	 * than miss the writes after it */
	*present = !ftl_oob_blank(oob, f->g.oob);
	f->mnt.marker_bad = *present &&
		(!ftl_oob_ok((struct ftl_oob *)oob) ||
		 ((struct ftl_oob *)oob)->kind != FTL_OOB_MOUNT ||
		 ((struct ftl_oob *)oob)->seq != f->ck.gen);
	return 0;
}
