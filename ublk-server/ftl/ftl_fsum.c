/* SPDX-License-Identifier: MIT */
/*
 * Flush summaries (images with OCT_SB_F_FLUSH_SUM): what a host flush
 * leaves on the medium.
 *
 * A page's flush record (ftl_geom.c) tells recovery which pages had been
 * flushed, but only once a later page carries it: a flush followed by
 * nothing left no trace, and damage to the pages written just before it
 * read as a torn write (the older version served).  And a flushed page
 * whose OOB record is lost (its block erased, a page programmed over it)
 * left no trace at all: its logical page read the older version, or
 * zeroes.  So a host flush (or FUA write) that follows host pages, once
 * its sync made them durable, programs a summary page listing them
 * (struct ftl_fsum: logical page, flash page, sequence number, data CRC;
 * a trim record's range) into the GC stream's open block, which never
 * holds host pages, writes the flush mark (struct ftl_fmark, in the
 * superblock area: how far the flush went, how many host pages since the
 * checkpoint), and syncs again.  The summary's OOB carries the flush
 * record of that sync.  Recovery then knows how far the flush went, and
 * which logical page each listed page held: a listed page that is not on
 * the medium as listed is media damage (EIO), never the older version.
 * For that a listed page may only disappear through damage: GC erases a
 * block holding a page newer than the last checkpoint only after a newer
 * checkpoint (ftl_erase_pending), which covers it, and a block holding a
 * summary only after the newest checkpoint of the slot before covers it
 * too (a base), since a delta record dies with its slot's base.  Entries
 * that slot does not cover stay listed across checkpoints (a checkpoint of
 * the newest slot is no lasting witness).  When damage took the
 * summary as well, the mark still tells how far the flush went, and that
 * pages are missing (fewer than it counts): the open refuses then.
 *
 * Cost: one page program, a 512-byte write and one more sync per host
 * flush that follows host pages (another page per FTL_FSUM_PER_PAGE of
 * them); nothing for a flush with nothing new, nothing without flushes.
 * When no summary can be programmed (no free block, sequence numbers
 * short, no memory for the list), a checkpoint proves the flush instead.
 * f->lock held throughout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

/* list entries kept across checkpoints (more: dropped, a base proves
 * them at the next flush) */
#define FSUM_KEEP (1u << 18)

static void add(struct ftl *f, uint8_t kind, uint32_t lpn, uint64_t ppn,
		uint64_t seq, uint32_t aux)
{
	if (f->fsum_n == f->fsum_cap) {
		uint32_t cap = f->fsum_cap ? f->fsum_cap * 2 : 256;
		void *p = realloc(f->fsum, (size_t)cap * sizeof(*f->fsum));

		if (!p) {
			f->fsum_oom = true;     /* a checkpoint next flush */
			return;
		}
		f->fsum = p;
		f->fsum_cap = cap;
	}
	f->fsum[f->fsum_n++] = (struct ftl_fsum_ent){ .seq = seq,
		.ppn = (uint32_t)ppn, .lpn = lpn, .aux = aux, .kind = kind };
}

void ftl_fsum_note(struct ftl *f, uint8_t kind, uint32_t lpn, uint64_t ppn,
		   uint64_t seq, uint32_t crc, const void *data)
{
	const struct ftl_trim *t = data;
	uint32_t maxr = (f->g.ps - sizeof(*t)) / sizeof(t->r[0]);

	if (!f->g.flush_sum)
		return;
	f->fsum_need = true;
	f->fsum_host++;                 /* pages, not ranges */
	if (kind == FTL_OOB_DATA) {
		add(f, kind, lpn, ppn, seq, crc);
		return;
	}
	/* a trim record: one entry per range (trim_pages writes one) */
	for (uint32_t i = 0; t && i < t->n && i < maxr; i++)
		add(f, kind, t->r[i].lpn, ppn, seq, t->r[i].count);
}

void ftl_fsum_covered(struct ftl *f)
{
	uint32_t k = 0;

	/* an entry only the newest slot covers stays listed: one lost
	 * block can take that slot (its base) and the entry's page */
	for (uint32_t i = 0; i < f->fsum_n; i++)
		if (f->fsum[i].seq > f->ckpt_slot_seq)
			f->fsum[k++] = f->fsum[i];
	if (k > FSUM_KEEP) {    /* writes without flushes: memory */
		k = 0;
		f->fsum_oom = true;
	}
	f->fsum_n = k;
	f->fsum_host = 0;
	f->fsum_need = k > 0 || f->fsum_oom;
}

static const uint32_t fmark_off[2] = { FTL_FMARK_OFF0, FTL_FMARK_OFF1 };

static uint32_t fmark_crc(const struct ftl_fmark *m)
{
	struct ftl_fmark t = *m;

	t.crc = 0;
	return oct_crc32c(0, &t, sizeof(t));
}

void ftl_fmark_load(struct ftl *f, const uint8_t *area)
{
	static const uint8_t zero[sizeof(struct ftl_fmark)];

	memset(&f->fm, 0, sizeof(f->fm));
	f->fm_bad = 0;
	for (int i = 0; i < 2 && f->g.flush_sum; i++) {
		struct ftl_fmark m;

		memcpy(&m, area + fmark_off[i], sizeof(m));
		if (!memcmp(&m, zero, sizeof(m)))
			continue;               /* never written */
		if (memcmp(m.magic, FTL_FMARK_MAGIC, 8) ||
		    m.version != FTL_FMARK_VERSION ||
		    m.hdr_size != sizeof(m) || fmark_crc(&m) != m.crc ||
		    memcmp(m.uuid, f->sb.uuid, 16) || !m.gen ||
		    m.flushed < m.ckpt_seq || m.flushed >= FTL_SEQ_MAX) {
			f->fm_bad++;            /* damaged, or a torn update */
			continue;
		}
		if (m.gen > f->fm.gen)
			f->fm = m;
	}
}

/* Write the flush mark of the sync just done (@sum_seq at @sum_ppn: the
 * summary programmed after it) into the copy of the next generation. */
static int fmark_store(struct ftl *f, uint64_t sum_seq, uint64_t sum_ppn)
{
	struct nand_backing *b = nand_backing(f->nand);
	uint8_t buf[FTL_FMARK_BYTES];
	struct ftl_fmark m = { .version = FTL_FMARK_VERSION,
		.hdr_size = sizeof(m), .gen = f->fm.gen + 1,
		.ckpt_gen = f->ckpt_gen, .ckpt_seq = f->ckpt_seq,
		.flushed = f->flushed_seq, .host_pages = f->fsum_host,
		.sum_seq = sum_seq, .sum_ppn = (uint32_t)sum_ppn };
	int r;

	memcpy(m.magic, FTL_FMARK_MAGIC, 8);
	memcpy(m.uuid, f->sb.uuid, 16);
	m.crc = fmark_crc(&m);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &m, sizeof(m));
	r = b->ops->pwrite(b, buf, sizeof(buf), fmark_off[m.gen & 1]);
	if (!r)
		f->fm = m;
	return r;
}

/*
 * Program the summary pages of every noted page (at least one page: the
 * flush's record) into the GC stream.  0 done (or a checkpoint the GC
 * stream needed first did it), -EAGAIN when sequence numbers run short,
 * else the error.  The page is built in f->gcbuf (no GC copy runs here:
 * ftl_gc_stream_ready only erases, or checkpoints).
 */
static int program(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;
	uint32_t per = (uint32_t)FTL_FSUM_PER_PAGE(g->ps), done = 0;
	struct ftl_fsum *h = (struct ftl_fsum *)f->gcbuf;
	uint64_t seq = 0, ppn = 0;
	int r;

	do {
		uint64_t cs = f->ckpt_seq;
		uint32_t n;

		r = ftl_gc_stream_ready(f);
		if (r)
			return r;
		if (!f->fsum_need)
			return 0;       /* a checkpoint came first: it covers */
		if (f->ckpt_seq != cs)
			done = 0;       /* ... all but what it kept listed */
		n = f->fsum_n - done < per ? f->fsum_n - done : per;
		if (!ftl_seq_room(f, FTL_PROG_RETRIES + 1))
			return -EAGAIN;
		memset(f->gcbuf, 0, g->ps);
		memcpy(h->magic, FTL_FSUM_MAGIC, 8);
		h->version = FTL_FSUM_VERSION;
		h->hdr_size = sizeof(*h);
		h->count = n;
		memcpy(h + 1, f->fsum + done, (size_t)n * sizeof(*f->fsum));
		h->crc = oct_crc32c(0, h, sizeof(*h) +
				    (size_t)n * sizeof(*f->fsum));
		r = ftl_prog_page(f, STREAM_GC, n, f->gcbuf, FTL_OOB_FSUM,
				  &seq);
		if (r)
			return r;
		ppn = (uint64_t)f->st[STREAM_GC].blk * g->ppb +
		      f->st[STREAM_GC].wp - 1;
		CADD(f, m.fsum_pages, 1);
		done += n;
	} while (done < f->fsum_n);
	f->fsum_n = 0;                  /* listed; still counted (mark) */
	f->fsum_need = false;
	return fmark_store(f, seq, ppn);
}

int ftl_fsum_sync(struct ftl *f)
{
	int r = ftl_sync(f);

	if (r || !f->g.flush_sum || !f->fsum_need)
		return r;
	r = f->fsum_oom ? -ENOMEM : program(f);
	if (r == -EAGAIN) {     /* sequence numbers short: after a checkpoint
				   (which keeps the list), once more */
		r = ftl_ckpt_write(f, false);
		if (!r)
			r = f->fsum_oom ? -ENOMEM : program(f);
	}
	if (!r)
		return ftl_sync(f);
	if (r == -ENOSPC || r == -ENOMEM || r == -EAGAIN || r == -EIO) {
		r = ftl_ckpt_write(f, false);   /* proves it all (the list
						   stays for the next one) */
		if (!r && f->fsum_oom) {        /* entries dropped: a base,
						   proof once its slot is lost */
			ftl_ckpt_force_base(f);
			r = ftl_ckpt_write(f, false);
			if (!r)
				f->fsum_oom = f->fsum_need = false;
		}
	}
	return r;
}
