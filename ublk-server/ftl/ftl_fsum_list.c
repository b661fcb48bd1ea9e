/* SPDX-License-Identifier: MIT */
/*
 * The host pages a flush summary will list (images with OCT_SB_F_FLUSH_SUM,
 * ftl_fsum.c): the append layer notes every host page (data or trim
 * record) it programs; a summary (ftl_fsum.c) or a checkpoint
 * (ftl_ckpt_write.c) that covers them empties the list.  f->lock held.
 */
#include <stdlib.h>

#include "ftl-int.h"

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
	FTL_ASSERT_HELD(&f->lock);
	f->fsl.n = 0;
	f->fsl.host = 0;
	f->fsl.need = f->fsl.oom = false;
}


void ftl_fsum_listed(struct ftl *f)
{
	FTL_ASSERT_HELD(&f->lock);
	f->fsl.n = 0;
	f->fsl.need = false;
}
