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
 * The host pages programmed since the last summary are listed by the
 * append layer as it programs them (ftl_fsum_list.c).  f->lock held
 * throughout.
 */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

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

	memset(&f->fmark.last, 0, sizeof(f->fmark.last));
	f->fmark.bad = 0;
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
			f->fmark.bad++;            /* damaged, or a torn update */
			continue;
		}
		if (m.gen > f->fmark.last.gen)
			f->fmark.last = m;
	}
}

/* Write the flush mark of the sync just done (@sum_seq at @sum_ppn: the
 * summary programmed after it) into the copy of the next generation. */
static int fmark_store(struct ftl *f, uint64_t sum_seq, uint64_t sum_ppn)
{
	struct nand_backing *b = nand_backing(f->nand);
	uint8_t buf[FTL_FMARK_BYTES];
	struct ftl_fmark m = { .version = FTL_FMARK_VERSION,
		.hdr_size = sizeof(m), .gen = f->fmark.last.gen + 1,
		.ckpt_gen = f->ck.gen, .ckpt_seq = f->ck.seq,
		.flushed = f->log.flushed_seq, .host_pages = f->fsl.host,
		.sum_seq = sum_seq, .sum_ppn = (uint32_t)sum_ppn };
	int r;

	memcpy(m.magic, FTL_FMARK_MAGIC, 8);
	memcpy(m.uuid, f->sb.uuid, 16);
	m.crc = fmark_crc(&m);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &m, sizeof(m));
	r = b->ops->pwrite(b, buf, sizeof(buf), fmark_off[m.gen & 1]);
	if (!r)
		f->fmark.last = m;
	return r;
}

/*
 * Program the summary pages of every noted page (at least one page: the
 * flush's record) into the GC stream.  0 done (or a checkpoint the GC
 * stream needed first did it), -EAGAIN when sequence numbers run short,
 * else the error.  The page is built in f->buf.page (no GC copy runs here:
 * ftl_gc_stream_ready only erases, or checkpoints).
 */
static int program(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;
	uint32_t per = (uint32_t)FTL_FSUM_PER_PAGE(g->ps), done = 0;
	struct ftl_fsum *h = (struct ftl_fsum *)f->buf.page;
	uint64_t seq = 0, ppn = 0;
	int r;

	do {
		uint64_t cs = f->ck.seq;
		uint32_t n;

		r = ftl_gc_stream_ready(f);
		if (r)
			return r;
		if (!f->fsl.need)
			return 0;       /* a checkpoint came first: it covers */
		if (f->ck.seq != cs)
			done = 0;       /* ... all but what it kept listed */
		n = f->fsl.n - done < per ? f->fsl.n - done : per;
		if (!ftl_seq_room(f, FTL_PROG_RETRIES + 1))
			return -EAGAIN;
		memset(f->buf.page, 0, g->ps);
		memcpy(h->magic, FTL_FSUM_MAGIC, 8);
		h->version = FTL_FSUM_VERSION;
		h->hdr_size = sizeof(*h);
		h->count = n;
		memcpy(h + 1, f->fsl.ent + done, (size_t)n * sizeof(*f->fsl.ent));
		h->crc = oct_crc32c(0, h, sizeof(*h) +
				    (size_t)n * sizeof(*f->fsl.ent));
		r = ftl_prog_page(f, STREAM_GC, n, f->buf.page, FTL_OOB_FSUM,
				  &seq);
		if (r)
			return r;
		ppn = (uint64_t)f->log.st[STREAM_GC].blk * g->ppb +
		      f->log.st[STREAM_GC].wp - 1;
		CADD(f, m.fsum_pages, 1);
		done += n;
	} while (done < f->fsl.n);
	ftl_fsum_listed(f);             /* still counted (the mark) */
	return fmark_store(f, seq, ppn);
}

int ftl_fsum_sync(struct ftl *f)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	r = ftl_sync(f);
	if (r || !f->g.flush_sum || !f->fsl.need)
		return r;
	r = f->fsl.oom ? -ENOMEM : program(f);
	if (r == -EAGAIN) {     /* sequence numbers short: after a checkpoint
				   (which keeps the list), once more */
		r = ftl_ckpt_write(f, false);
		if (!r)
			r = f->fsl.oom ? -ENOMEM : program(f);
	}
	if (!r)
		return ftl_sync(f);
	if (r == -ENOSPC || r == -ENOMEM || r == -EAGAIN || r == -EIO) {
		r = ftl_ckpt_write(f, false);   /* proves it all (the list
						   stays for the next one) */
		if (!r && f->fsl.oom) {         /* entries dropped: a base,
						   proof once its slot is lost */
			ftl_ckpt_force_base(f);
			r = ftl_ckpt_write(f, false);
			if (!r)
				ftl_fsum_based(f);
		}
	}
	return r;
}
