/* SPDX-License-Identifier: MIT */
/*
 * Recovery: roll forward from the checkpoint over the blocks written since
 * (found by the sequence number in the OOB of their first page, plus the
 * blocks that were open), or rebuild everything from the OOB of every
 * block (--scan).  Pages are applied in sequence order.  A page whose data
 * does not match its OOB crc is a torn program when it is newer than the
 * newest flush the log recorded (the flush records in the OOB), and is
 * ignored; at or below it, the page had been flushed: media damage, and
 * its logical page reads as EIO (FTL_DAMAGED) unless an intact page with
 * the same content is still mapped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

#define REC_BAD 0x80      /* kind flag: data does not match its crc */
#define REC_LOST 0x40     /* kind: a page whose OOB record is damaged, seq
                             the next record's (it was programmed before) */
#define REC_GONE 0x20     /* kind flag: a page a flush summary lists, not
                             on the medium as listed (media damage) */
#define REC_SUMMED 0x10   /* kind flag: a damaged page a flush summary
                             lists (REC_LOST: its logical page is known) */

struct rec {
	uint64_t seq;
	uint32_t ppn;
	uint32_t lpn;     /* data: logical page; trim: index into ranges */
	uint32_t n;       /* trim: ranges */
	uint8_t kind;
	uint8_t stream;
	uint32_t crc;     /* data crc */
};

struct recs {
	struct rec *r;
	size_t n, cap;
	struct ftl_trim_range *t;
	size_t nt, tcap;
	struct ftl_fsum_ent *s;         /* flush summaries' entries */
	size_t ns, scap;
};

static int push(void **arr, size_t *n, size_t *cap, size_t sz)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		void *p = realloc(*arr, c * sz);
		if (!p)
			return -ENOMEM;
		*arr = p;
		*cap = c;
	}
	(*n)++;
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool oob_zero(const uint8_t *o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (o[i])
			return false;
	return true;
}

/* A record of the log at flash page @ppn: a data page, a trim record, a
 * flush summary. */
static bool usable(const struct ftl_geom *g, const struct ftl_oob *o,
		   uint64_t ppn)
{
	return ftl_oob_at(g, o, ppn) &&
	       (o->kind == FTL_OOB_DATA || o->kind == FTL_OOB_TRIM ||
		o->kind == FTL_OOB_FSUM);
}

/*
 * Pages of block @b (OOB in f->buf.oob) whose OOB record does not check out
 * (and is not blank) between two that do, of one erase cycle (same erase
 * count, rising seq), the first newer than @after: pages are programmed in
 * order, so each was written after the checkpoint and before the second
 * record; if that one was flushed, so was it.  Their logical page is
 * unknown: they are counted (REC_LOST), for fsck to report.
 */
static int lost_records(struct ftl *f, uint32_t b, uint64_t after,
			struct recs *rs)
{
	const struct ftl_geom *g = &f->g;
	const struct ftl_oob *prev = NULL;
	uint32_t pp = 0;

	for (uint32_t pg = 0; pg < g->ppb; pg++) {
		const struct ftl_oob *o =
			(const struct ftl_oob *)(f->buf.oob + (size_t)pg * g->oob);

		if (!usable(g, o, (uint64_t)b * g->ppb + pg))
			continue;
		if (prev && pg > pp + 1 && prev->seq > after &&
		    prev->ec == o->ec && prev->seq < o->seq) {
			for (uint32_t k = pp + 1; k < pg; k++) {
				const uint8_t *ko = f->buf.oob + (size_t)k * g->oob;
				struct rec *x;
				int r;

				if (oob_zero(ko, sizeof(struct ftl_oob)))
					continue;
				r = push((void **)&rs->r, &rs->n, &rs->cap,
					 sizeof(*rs->r));
				if (r)
					return r;
				x = &rs->r[rs->n - 1];
				*x = (struct rec){ .seq = o->seq, .kind = REC_LOST,
					.ppn = b * g->ppb + k };
			}
		}
		prev = o;
		pp = pg;
	}
	return 0;
}

/*
 * The highest sequence number a page can carry: pages are numbered at
 * most seq_gap past the newest durable checkpoint (ftl_seq_room), so when
 * roll-forward starts from the newest one (@after its seq, no damaged
 * slot that may have held a newer one) a record above is damaged, however
 * its crc came out; taken as the newest it would win over the real newest
 * version.  A full scan has no log to check against: FTL_SEQ_MAX.
 */
static uint64_t seq_limit(const struct ftl *f, bool full)
{
	if (full || f->mnt.ckpt_fallback || f->mnt.ckpt_torn)
		return FTL_SEQ_MAX;
	return f->ck.seq + f->ck.seq_gap;
}

/*
 * Was a checkpoint newer than the one loaded durable, and is it gone?  A
 * slot lost whole (its blocks erased) reads as never used, so the slots
 * cannot say; the log can: pages are numbered past ck.seq + ck.seq_gap only
 * once a newer checkpoint was written and synced (ftl_prog_page,
 * ftl_ckpt_write).  So a page above that limit whose OOB record and data
 * both check out proves one (a misdirected copy of a page carries a number
 * the log really used, just as well) -- unless its record was damaged into
 * a wild number whose crc still came out, the case the limit is for.  Such
 * a record is not taken as proof: the proof is a page numbered at most one
 * more seq_gap past the limit (as far as one lost checkpoint lets the log
 * run), or one whose flush record (the newest flush when it was
 * programmed, ftl_oob_flushed) is itself past the limit and not past the
 * page's own number: two fields that agree.  Only the blocks roll-forward
 * scans (@cand: written since the checkpoint) are read; the first proof
 * ends the look.
 */
static int newer_ckpt_lost(struct ftl *f, const uint8_t *cand, bool *lost)
{
	const struct ftl_geom *g = &f->g;
	uint64_t limit = f->ck.seq + f->ck.seq_gap;

	*lost = false;
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks && !*lost; b++) {
		uint32_t wp, ec;
		int r = 0;

		if (!cand[b])
			continue;
		r = nand_read_block_oob(f->nand, b, f->buf.oob);
		if (r)
			return r;
		wp = nand_block_wp(f->nand, b);
		ec = nand_block_ec(f->nand, b);
		nand_set_block(f->nand, b, g->ppb, ec);  /* read it all */
		for (uint32_t pg = 0; pg < g->ppb && !r && !*lost; pg++) {
			const struct ftl_oob *o = (const struct ftl_oob *)
				(f->buf.oob + (size_t)pg * g->oob);

			uint64_t ppn = (uint64_t)b * g->ppb + pg;
			uint64_t fl = ftl_oob_flushed(g, o, ppn);

			if (!usable(g, o, ppn) || o->seq <= limit ||
			    o->seq > FTL_SEQ_MAX ||
			    (o->kind == FTL_OOB_DATA && o->lpn >= g->nlpn) ||
			    (o->seq > limit + f->ck.seq_gap &&
			     (fl <= limit || fl > o->seq)))
				continue;
			r = nand_read(f->nand, (uint64_t)b * g->ppb + pg, 0,
				      f->buf.page, g->ps);
			*lost = !r &&
				oct_crc32c(0, f->buf.page, g->ps) == o->data_crc;
		}
		nand_set_block(f->nand, b, wp, ec);
		if (r)
			return r;
	}
	return 0;
}

/* Does trim record @t (its page checked out against @o's data crc) hold
 * what the OOB record says, ranges inside the device? */
static bool trim_ok(const struct ftl_geom *g, const struct ftl_oob *o,
		    const struct ftl_trim *t)
{
	uint32_t maxr = (g->ps - sizeof(*t)) / sizeof(struct ftl_trim_range);

	if (t->magic != FTL_TRIM_MAGIC || t->n > maxr || t->n != o->lpn)
		return false;
	for (uint32_t i = 0; i < t->n; i++)
		if (!t->r[i].count ||
		    (uint64_t)t->r[i].lpn + t->r[i].count > g->nlpn)
			return false;
	return true;
}

/*
 * Flush summary @h (the data of a page numbered @seq, which passed its
 * crc): keep its entries newer than @after.  *ok false when it does not
 * check out (taken as damaged).  0 or -ENOMEM.
 */
static int take_summary(struct ftl *f, const struct ftl_fsum *h,
			uint64_t seq, uint64_t after, struct recs *rs,
			bool *ok)
{
	const struct ftl_geom *g = &f->g;
	const struct ftl_fsum_ent *e = (const struct ftl_fsum_ent *)(h + 1);
	uint64_t first = (uint64_t)g->ckpt_blocks * g->ppb;
	uint64_t total = (uint64_t)g->nblocks * g->ppb;
	struct ftl_fsum t = *h;

	t.crc = 0;
	*ok = !memcmp(h->magic, FTL_FSUM_MAGIC, 8) &&
	      h->version == FTL_FSUM_VERSION && h->hdr_size == sizeof(*h) &&
	      h->count <= FTL_FSUM_PER_PAGE(g->ps);
	if (*ok) {
		uint32_t crc = oct_crc32c(0, &t, sizeof(t));

		crc = oct_crc32c(crc, e, (size_t)h->count * sizeof(*e));
		*ok = crc == h->crc;
	}
	for (uint32_t i = 0; *ok && i < h->count; i++) {
		bool data = e[i].kind == FTL_OOB_DATA;
		int r;

		/* an entry that cannot be right is skipped (the crc vouches
		 * for the page; a bug would put it there, not damage) */
		if (e[i].seq <= after || e[i].seq >= seq ||
		    e[i].ppn < first || e[i].ppn >= total ||
		    e[i].pad[0] || e[i].pad[1] || e[i].pad[2] ||
		    (!data && e[i].kind != FTL_OOB_TRIM) ||
		    e[i].lpn >= g->nlpn ||
		    (!data && e[i].aux > g->nlpn - e[i].lpn))
			continue;
		r = push((void **)&rs->s, &rs->ns, &rs->scap, sizeof(*rs->s));
		if (r)
			return r;
		rs->s[rs->ns - 1] = e[i];
	}
	return 0;
}

/* Collect the records of block @b newer than @after and at most @limit
 * (those whose data fails its crc flagged REC_BAD) and the entries of its
 * flush summaries; raise *flushed to its flush records. */
static int scan_block(struct ftl *f, uint32_t b, uint64_t after,
		      uint64_t limit, struct recs *rs, uint64_t *bmax,
		      uint32_t *ec, uint32_t *used, int *bstream,
		      uint64_t *flushed)
{
	const struct ftl_geom *g = &f->g;
	int r;

	*bmax = 0;
	*used = 0;
	*bstream = -1;
	r = nand_read_block_oob(f->nand, b, f->buf.oob);
	if (r)
		return r;
	r = lost_records(f, b, after, rs);
	if (r)
		return r;
	/* pages up to the last OOB that is not all zero may hold something */
	for (uint32_t pg = 0; pg < g->ppb; pg++)
		for (uint32_t i = 0; i < g->oob; i++)
			if (f->buf.oob[(size_t)pg * g->oob + i]) {
				*used = pg + 1;
				break;
			}
	for (uint32_t pg = 0; pg < g->ppb; pg++) {
		const struct ftl_oob *o =
			(const struct ftl_oob *)(f->buf.oob + (size_t)pg * g->oob);
		uint64_t ppn = (uint64_t)b * g->ppb + pg;
		const struct ftl_trim *t = (const struct ftl_trim *)f->buf.page;
		struct rec *x;
		bool bad;

		if (!usable(g, o, ppn))
			continue;
		if (o->seq > limit)
			continue;       /* past the log: a damaged record */
		if (ftl_oob_flushed(g, o, ppn) > *flushed)
			*flushed = ftl_oob_flushed(g, o, ppn);
		if (o->seq <= after)
			continue;
		if (o->kind == FTL_OOB_DATA && o->lpn >= g->nlpn)
			continue;
		r = nand_read(f->nand, ppn, 0, f->buf.page, g->ps);
		if (r)
			return r;
		/* a trim record that does not hold what it says is damaged
		 * (its crc came out, its fields did not) */
		bad = oct_crc32c(0, f->buf.page, g->ps) != o->data_crc ||
		      (o->kind == FTL_OOB_TRIM && !trim_ok(g, o, t));
		if (bad) {      /* torn, or damaged: decided once all is read */
			r = push((void **)&rs->r, &rs->n, &rs->cap,
				 sizeof(*rs->r));
			if (r)
				return r;
			x = &rs->r[rs->n - 1];
			*x = (struct rec){ .seq = o->seq, .ppn = (uint32_t)ppn,
				.lpn = o->lpn, .kind = o->kind | REC_BAD,
				.stream = (uint8_t)o->stream, .crc = o->data_crc };
			continue;
		}
		if (o->kind == FTL_OOB_FSUM) {
			bool ok;

			r = take_summary(f, (const struct ftl_fsum *)f->buf.page,
					 o->seq, after, rs, &ok);
			if (r)
				return r;
			if (!ok) {      /* damaged, its data crc in spite */
				r = push((void **)&rs->r, &rs->n, &rs->cap,
					 sizeof(*rs->r));
				if (r)
					return r;
				rs->r[rs->n - 1] = (struct rec){ .seq = o->seq,
					.ppn = (uint32_t)ppn,
					.kind = FTL_OOB_FSUM | REC_BAD };
				continue;
			}
		}
		if (o->ec > *ec)
			*ec = o->ec;
		if (o->seq > *bmax) {
			*bmax = o->seq;
			*bstream = o->stream;
		}
		r = push((void **)&rs->r, &rs->n, &rs->cap, sizeof(*rs->r));
		if (r)
			return r;
		x = &rs->r[rs->n - 1];
		x->seq = o->seq;
		x->ppn = (uint32_t)ppn;
		x->kind = o->kind;
		x->stream = (uint8_t)o->stream;
		x->crc = o->data_crc;
		x->lpn = o->lpn;
		x->n = 0;
		if (o->kind != FTL_OOB_TRIM)
			continue;
		x->lpn = (uint32_t)rs->nt;
		x->n = t->n;
		for (uint32_t i = 0; i < t->n; i++) {
			r = push((void **)&rs->t, &rs->nt, &rs->tcap,
				 sizeof(*rs->t));
			if (r)
				return r;
			rs->t[rs->nt - 1] = t->r[i];
		}
	}
	return 0;
}

/*
 * Is @lpn still mapped to an intact page older than @seq holding the data
 * whose CRC is @crc?
 */
static bool same_older(struct ftl *f, uint32_t lpn, uint64_t seq, uint32_t crc)
{
	uint32_t old = f->log.map[lpn], ob, wp;
	uint8_t oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;
	int r;

	if (old == FTL_UNMAPPED || old == FTL_DAMAGED ||
	    old >= (uint64_t)f->g.nblocks * f->g.ppb ||
	    nand_read_oob(f->nand, old, oob) || !ftl_oob_at(&f->g, oob, old) ||
	    o->kind != FTL_OOB_DATA || o->lpn != lpn || o->seq >= seq ||
	    o->data_crc != crc)
		return false;           /* not the same content */
	/* read it whatever the block's write pointer says, and leave that
	 * pointer as it was (it may be a stream's, placed already) */
	ob = old / f->g.ppb;
	wp = nand_block_wp(f->nand, ob);
	nand_set_block(f->nand, ob, f->g.ppb, nand_block_ec(f->nand, ob));
	r = nand_read(f->nand, old, 0, f->buf.page, f->g.ps);
	nand_set_block(f->nand, ob, wp, nand_block_ec(f->nand, ob));
	return !r && oct_crc32c(0, f->buf.page, f->g.ps) == o->data_crc;
}

/*
 * A page whose data fails its CRC although it is not newer than the last
 * recorded flush (@x, REC_BAD): flushed data lost to media damage.  Unless
 * the page still mapped holds the same content (a GC copy's source), the
 * logical page becomes FTL_DAMAGED: reads fail with EIO, fsck reports it;
 * never the older version.  A damaged trim record is counted (fsck).
 */
static void apply_damaged(struct ftl *f, const struct rec *x)
{
	if ((x->kind & ~(REC_BAD | REC_SUMMED)) == FTL_OOB_TRIM) {
		/* a summary restores it (REC_GONE, applied as a trim) */
		f->mnt.rf_lost_trims += !(x->kind & REC_SUMMED);
		return;
	}
	if (!same_older(f, x->lpn, x->seq, x->crc))
		f->log.map[x->lpn] = FTL_DAMAGED;   /* a newer page may still win */
}

static bool block_has_valid(const struct ftl *f, uint32_t b)
{
	for (uint32_t l = 0; l < f->g.nlpn; l++)
		if (f->log.map[l] < FTL_DAMAGED && f->log.map[l] / f->g.ppb == b)
			return true;
	return false;
}

static bool is_candidate(struct ftl *f, uint32_t b, bool full)
{
	uint8_t oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;

	if (f->idx.state[b] == FTL_BLK_OPEN)
		return true;
	if (nand_block_oob_hole(f->nand, b))
		return false;           /* never programmed (sparse file) */
	if (full)
		return true;
	if (nand_read_oob(f->nand, (uint64_t)b * f->g.ppb, oob))
		return true;            /* can't tell: look closer */
	/* damaged (or programmed elsewhere): pages after it may count */
	if (!ftl_oob_at(&f->g, oob, (uint64_t)b * f->g.ppb))
		return !oob_zero(oob, f->g.oob);
	return o->seq > f->ck.seq && usable(&f->g, o, (uint64_t)b * f->g.ppb);
}

/*
 * After the records are applied: a map entry into a block written since
 * the checkpoint (@scanned) must point at a page whose OOB record is the
 * data record of that logical page.  Anything else means the block was
 * erased and reused while the record that moved the page away was lost
 * (a damaged newest checkpoint, a damaged or lost page): the data is gone,
 * the logical page reads as EIO (FTL_DAMAGED), never another page's data.
 */
static int stale_entries(struct ftl *f, const uint8_t *scanned)
{
	uint8_t oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;

	for (uint32_t l = 0; l < f->g.nlpn; l++) {
		uint32_t p = f->log.map[l];
		int r;

		if (p >= FTL_DAMAGED || p >= (uint64_t)f->g.nblocks * f->g.ppb ||
		    !scanned[p / f->g.ppb])
			continue;
		r = nand_read_oob(f->nand, p, oob);
		if (r)
			return r;
		if (!ftl_oob_at(&f->g, oob, p) || o->kind != FTL_OOB_DATA ||
		    o->lpn != l)
			f->log.map[l] = FTL_DAMAGED;
	}
	return 0;
}

/* First of the @n first records of @rs (sorted by seq) numbered @seq,
 * or @n. */
static size_t first_seq(const struct recs *rs, size_t n, uint64_t seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rs->r[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The flush summaries' entries newer than @after and at most @flushed
 * (rs->r sorted by seq): each must be on the medium as listed, a record
 * found with its number, flash page, kind (and logical page).  Those that
 * are not were flushed and lost to damage (a block erased, an OOB record
 * damaged, a page programmed over them: such a page disappears in no
 * other way, ftl_fsum.c): a REC_GONE record stands in for each, applied
 * in sequence order (data: FTL_DAMAGED unless an intact page with the same
 * content is still mapped; a trim record: its range, from the entry).  A
 * damaged page or OOB record the entry names is marked REC_SUMMED.
 */
static int summaries_check(struct recs *rs, uint64_t after,
			   uint64_t flushed)
{
	size_t n = rs->n, nlost = 0, *lost = NULL;
	int r = 0;

	for (size_t k = 0; k < n; k++)  /* damaged OOB records (rare) */
		nlost += rs->r[k].kind == REC_LOST;
	if (nlost && !(lost = malloc(nlost * sizeof(*lost))))
		return -ENOMEM;
	nlost = 0;
	for (size_t k = 0; k < n; k++)
		if (rs->r[k].kind == REC_LOST)
			lost[nlost++] = k;
	for (size_t i = 0; i < rs->ns; i++) {
		const struct ftl_fsum_ent *e = &rs->s[i];
		bool found = false;
		struct rec *x;

		if (e->seq <= after || e->seq > flushed)
			continue;
		for (size_t k = first_seq(rs, n, e->seq);
		     k < n && rs->r[k].seq == e->seq; k++) {
			x = &rs->r[k];
			if (x->ppn != e->ppn)
				continue;
			if (x->kind & REC_BAD)
				x->kind |= REC_SUMMED;
			if (x->kind == e->kind &&
			    (e->kind != FTL_OOB_DATA || x->lpn == e->lpn))
				found = true;
		}
		/* a damaged OOB record there (counted by lost_records with
		 * the next record's number): its logical page is known now */
		for (size_t k = 0; !found && k < nlost; k++)
			if (rs->r[lost[k]].ppn == e->ppn)
				rs->r[lost[k]].kind |= REC_SUMMED;
		if (found)
			continue;
		r = push((void **)&rs->r, &rs->n, &rs->cap, sizeof(*rs->r));
		if (r)
			break;
		x = &rs->r[rs->n - 1];
		*x = (struct rec){ .seq = e->seq, .ppn = e->ppn, .lpn = e->lpn,
			.kind = e->kind | REC_GONE, .crc = e->aux };
		if (e->kind == FTL_OOB_TRIM) {
			r = push((void **)&rs->t, &rs->nt, &rs->tcap,
				 sizeof(*rs->t));
			if (r)
				break;
			rs->t[rs->nt - 1] = (struct ftl_trim_range){ e->lpn,
								   e->aux };
			x = &rs->r[rs->n - 1];
			x->lpn = (uint32_t)(rs->nt - 1);
			x->n = 1;
		}
	}
	free(lost);
	if (rs->n > n)
		qsort(rs->r, rs->n, sizeof(*rs->r), cmp_rec);
	return r;
}

/*
 * Host pages (data pages, trim records) numbered in (@after, @flushed]
 * that the medium or a flush summary accounts for (rs->r sorted by seq),
 * against the flush mark's @count of them: the shortfall, flushed pages
 * lost with no trace of their logical page (damage took a summary too).
 */
static uint64_t unknown_lost(const struct recs *rs, uint64_t after,
			     uint64_t flushed, uint64_t count)
{
	uint64_t known = 0, last = 0;

	for (size_t i = first_seq(rs, rs->n, after + 1);
	     i < rs->n && rs->r[i].seq <= flushed; i++) {
		const struct rec *x = &rs->r[i];
		uint8_t kind = x->kind & ~(REC_BAD | REC_GONE | REC_SUMMED);

		if ((x->kind & REC_LOST) || x->stream != STREAM_HOST ||
		    (kind != FTL_OOB_DATA && kind != FTL_OOB_TRIM) ||
		    x->seq == last)
			continue;
		known++;
		last = x->seq;
	}
	return known < count ? count - known : 0;
}

/*
 * Bring the map loaded from the checkpoint up to date (or, with @full,
 * build it from nothing).  Every block written since ends up FULL, except
 * the newest block of each stream, which stays open past its last page.
 */
int ftl_roll_forward(struct ftl *f, bool full)
{
	const struct ftl_geom *g = &f->g;
	struct recs rs = { 0 };
	uint64_t maxseq = f->log.seq, best_seq[FTL_NSTREAMS] = { 0 };
	uint64_t flushed = full ? 0 : f->ck.seq;
	uint32_t best[FTL_NSTREAMS], best_used[FTL_NSTREAMS];
	uint8_t *scanned;
	bool fm;
	int r = 0;

	f->mnt.rf_lost = f->mnt.rf_lost_trims = f->mnt.rf_lost_unknown = 0;
	f->mnt.rf_lost_sums = f->mnt.rf_sum_trims = f->mnt.rf_unknown = 0;
	f->mnt.rf_gens_lost = 0;
	f->mnt.ckpt_lost = false;
	f->ck.pos = 0;  /* the map changes here: the next checkpoint is a base */
	scanned = calloc(g->nblocks, 1);
	if (!scanned)
		return -ENOMEM;
	/* the blocks to scan (is_candidate reads a page's OOB: once each) */
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++)
		scanned[b] = is_candidate(f, b, full);
	if (!full && !f->mnt.ckpt_fallback && !f->mnt.ckpt_torn) {
		bool lost;

		r = newer_ckpt_lost(f, scanned, &lost);
		if (r)
			goto out;
		/* roll forward from the older one over everything since,
		 * as for a damaged slot: no sequence limit */
		f->mnt.ckpt_lost = f->mnt.ckpt_fallback = lost;
	}
	for (unsigned s = 0; s < FTL_NSTREAMS; s++)
		best[s] = FTL_NONE;
	/* the flush mark, written since this checkpoint: how far the last
	 * flush went (also when it counts from a newer checkpoint, lost:
	 * pages are erased only once two checkpoints cover them) */
	fm = !full && g->flush_sum && f->fmark.last.gen &&
	     f->fmark.last.ckpt_seq >= f->ck.seq &&
	     f->fmark.last.flushed <= seq_limit(f, full);
	if (fm && f->fmark.last.flushed > flushed)
		flushed = f->fmark.last.flushed;
	/* pass 0: the blocks above; pass 1: blocks flush summaries list
	 * pages in that pass 0 did not take (their first page damaged into
	 * an older record, say) */
	for (uint32_t b = g->ckpt_blocks, pass = 0; pass < 2 && !r; b++) {
		uint64_t bmax = 0;
		uint32_t ec, used;
		int bs;

		if (b == g->nblocks) {
			b = g->ckpt_blocks - 1;
			pass++;
			for (size_t i = 0; pass == 1 && i < rs.ns; i++) {
				uint32_t sb = rs.s[i].ppn / g->ppb;

				if (rs.s[i].seq <= flushed && !full &&
				    !scanned[sb])
					scanned[sb] = 2;
			}
			continue;
		}
		if (scanned[b] != pass + 1)
			continue;
		ec = nand_block_ec(f->nand, b);
		nand_set_block(f->nand, b, g->ppb, ec);  /* read everything */
		r = scan_block(f, b, full ? 0 : f->ck.seq,
			       seq_limit(f, full), &rs, &bmax, &ec, &used, &bs,
			       &flushed);
		if (r)
			break;
		if (bmax && bs >= 0 && bs < (int)FTL_NSTREAMS &&
		    bmax > best_seq[bs]) {
			best_seq[bs] = bmax;
			best[bs] = b;
			best_used[bs] = used;
		}
		if (bmax || f->idx.state[b] == FTL_BLK_OPEN) {
			f->idx.state[b] = FTL_BLK_FULL;
			f->log.mtime[b] = bmax > f->log.mtime[b] ? bmax : f->log.mtime[b];
			nand_set_block(f->nand, b, g->ppb, ec);
		} else if (full || f->idx.state[b] == FTL_BLK_FREE) {
			f->idx.state[b] = FTL_BLK_FREE;
			f->log.mtime[b] = 0;
			nand_set_block(f->nand, b, 0, ec);
		}
		if (bmax > maxseq)
			maxseq = bmax;
	}
	if (r)
		goto out;
	/* a free block may hold what the crash left: check it before use */
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++)
		f->log.fdirty[b] = f->idx.state[b] == FTL_BLK_FREE;
	if (rs.n)
		qsort(rs.r, rs.n, sizeof(*rs.r), cmp_rec);
	/* not in a full scan: its summaries may be older than checkpoints
	 * since erased, their pages legitimately gone */
	if (!full)
		r = summaries_check(&rs, f->ck.seq, flushed);
	if (r)
		goto out;
	if (fm)
		f->mnt.rf_unknown = unknown_lost(&rs, f->fmark.last.ckpt_seq,
					     f->fmark.last.flushed, f->fmark.last.host_pages);
	if (fm && f->fmark.last.ckpt_gen > f->ck.gen + 1)
		f->mnt.rf_gens_lost = f->fmark.last.ckpt_gen - f->ck.gen;
	for (size_t i = 0; i < rs.n; i++) {
		const struct rec *x = &rs.r[i];
		uint8_t kind = x->kind & ~(REC_BAD | REC_GONE | REC_SUMMED);

		if (x->kind & REC_LOST) {
			f->mnt.rf_lost_unknown += x->seq <= flushed &&
					      !(x->kind & REC_SUMMED);
			continue;
		}
		if (kind == FTL_OOB_FSUM) {
			f->mnt.rf_lost_sums += (x->kind & REC_BAD) &&
					   x->seq <= flushed;
			if (x->kind == FTL_OOB_FSUM)    /* kept (ftl_gc.c) */
				f->log.trim_seq[x->ppn / g->ppb] = x->seq;
			continue;       /* its entries were checked above */
		}
		if ((x->kind & REC_GONE) && kind == FTL_OOB_TRIM) {
			f->mnt.rf_sum_trims++;      /* restored: applied below */
		} else if (x->kind & (REC_BAD | REC_GONE)) {
			if (x->seq <= flushed)
				apply_damaged(f, x);
			continue;       /* else torn: never acknowledged */
		}
		/* a GC copy takes over from its source like any newer page,
		 * even if the source is still there (the crash came before
		 * its block was erased): the victim then holds no valid page
		 * and GC frees it by an erase alone.  Keeping the source
		 * instead left the copies as garbage in blocks taken from the
		 * reserve, and GC with nowhere to copy to (ENOSPC). */
		if (x->kind == FTL_OOB_DATA) {
			f->log.map[x->lpn] = x->ppn;
			continue;
		}
		for (uint32_t k = 0; k < x->n; k++) {
			const struct ftl_trim_range *t = &rs.t[x->lpn + k];
			for (uint64_t l = t->lpn;
			     l < (uint64_t)t->lpn + t->count && l < g->nlpn; l++)
				f->log.map[l] = FTL_UNMAPPED;
		}
		f->log.trim_seq[x->ppn / g->ppb] = x->seq;
	}
	r = stale_entries(f, scanned);
	if (r)
		goto out;
	/*
	 * Each stream goes on in its newest block, past anything written
	 * there, so a crash does not cost the rest of those blocks; but not
	 * in a block left without a valid page (all its pages superseded):
	 * as a full block GC reclaims it at once,
	 * left open it would hold its pages out of reach while the free
	 * blocks run out.  The other frontiers (checkpoint xopen: scanned
	 * like every open block) start on fresh blocks.
	 */
	for (unsigned s = FTL_NSTREAMS; s < FTL_NFRONT; s++)
		f->log.st[s].blk = FTL_NONE;
	for (unsigned s = 0; s < FTL_NSTREAMS; s++) {
		uint32_t b = best[s];

		f->log.st[s].blk = FTL_NONE;
		if (b == FTL_NONE || best_used[s] >= g->ppb ||
		    !block_has_valid(f, b))
			continue;
		f->log.st[s].blk = b;
		f->log.st[s].wp = best_used[s];
		f->idx.state[b] = FTL_BLK_OPEN;
		nand_set_block(f->nand, b, best_used[s], nand_block_ec(f->nand, b));
	}
	for (uint32_t l = 0; l < g->nlpn; l++)
		f->mnt.rf_lost += f->log.map[l] == FTL_DAMAGED;
	/*
	 * Pages not taken (torn, or whose block was not recognised) may carry
	 * any number up to ck.seq + ck.seq_gap: new numbers start above, so the
	 * next checkpoint makes them all stale for good.
	 */
	f->log.seq = maxseq;
	if (f->log.seq < f->ck.seq + f->ck.seq_gap)
		f->log.seq = f->ck.seq + f->ck.seq_gap;
	if (full)
		f->log.seq = maxseq + f->ck.seq_gap;
out:
	free(scanned);
	free(rs.r);
	free(rs.t);
	free(rs.s);
	return r;
}
