/* SPDX-License-Identifier: MIT */
/*
 * The host pages a flush summary will list (images with OCT_SB_F_FLUSH_SUM,
 * ftl_fsum.c): the append layer notes every host page (data or trim
 * record) it programs; a summary (ftl_fsum.c) empties the list, a
 * checkpoint (ftl_ckpt_write.c) drops what the newest checkpoint of the
 * slot before covers: entries that slot does not cover stay listed across
 * checkpoints (a checkpoint of the newest slot is no lasting witness: one
 * lost block can take that slot's base and the entry's page).  f->lock
 * held.
 */
#include <stdlib.h>

#include "ftl-int.h"

/* list entries kept across checkpoints (more: dropped, a base proves
 * them at the next flush) */
#define FSUM_KEEP (1u << 18)

static void add(struct ftl *f, uint8_t kind, uint32_t lpn, uint64_t ppn,
		uint64_t seq, uint32_t aux)
{
	if (f->fsl.n == f->fsl.cap) {
		uint32_t cap = f->fsl.cap ? f->fsl.cap * 2 : 256;
		void *p = realloc(f->fsl.ent, (size_t)cap * sizeof(*f->fsl.ent));

		if (!p) {
			f->fsl.oom = true;     /* a checkpoint next flush */
			return;
		}
		f->fsl.ent = p;
		f->fsl.cap = cap;
	}
	f->fsl.ent[f->fsl.n++] = (struct ftl_fsum_ent){ .seq = seq,
		.ppn = (uint32_t)ppn, .lpn = lpn, .aux = aux, .kind = kind };
}

void ftl_fsum_note(struct ftl *f, uint8_t kind, uint32_t lpn, uint64_t ppn,
		   uint64_t seq, uint32_t crc, const void *data)
{
	const struct ftl_trim *t = data;
	uint32_t maxr = (f->g.ps - sizeof(*t)) / sizeof(t->r[0]);

	FTL_ASSERT_HELD(&f->lock);
	if (!f->g.flush_sum)
		return;
	f->fsl.need = true;
	f->fsl.host++;                 /* pages, not ranges */
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

	FTL_ASSERT_HELD(&f->lock);
	/* an entry only the newest slot covers stays listed: one lost
	 * block can take that slot (its base) and the entry's page */
	for (uint32_t i = 0; i < f->fsl.n; i++)
		if (f->fsl.ent[i].seq > f->ck.slot_seq)
			f->fsl.ent[k++] = f->fsl.ent[i];
	if (k > FSUM_KEEP) {    /* writes without flushes: memory */
		k = 0;
		f->fsl.oom = true;
	}
	f->fsl.n = k;
	f->fsl.host = 0;
	f->fsl.need = k > 0 || f->fsl.oom;
}

void ftl_fsum_based(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	f->fsl.oom = f->fsl.need = false;
}


void ftl_fsum_listed(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	f->fsl.n = 0;
	f->fsl.need = false;
}
