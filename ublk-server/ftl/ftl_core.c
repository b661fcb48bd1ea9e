/* SPDX-License-Identifier: MIT */
/* Engine state: allocation, block lists, mounting (clean / roll-forward /
 * scan). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-int.h"

/* Allocate an engine for geometry @g: everything unmapped, no nand yet. */
int ftl_alloc(const struct ftl_geom *g, struct ftl **out)
{
	struct ftl *f = calloc(1, sizeof(*f));
	pthread_rwlockattr_t ra;
	size_t nb = g->nblocks;

	if (!f)
		return -ENOMEM;
	f->g = *g;
	f->fd = -1;
	f->log.map = malloc((size_t)g->nlpn * sizeof(*f->log.map));
	f->idx.valid = calloc(nb, sizeof(*f->idx.valid));
	f->idx.run_pages = calloc(nb, sizeof(*f->idx.run_pages));
	f->idx.state = calloc(nb, 1);
	f->log.mtime = calloc(nb, sizeof(*f->log.mtime));
	f->log.trim_seq = calloc(nb, sizeof(*f->log.trim_seq));
	f->log.fdirty = calloc(nb, 1);
	f->log.hotblk = calloc(nb, 1);
	f->gc.pend = calloc(nb, sizeof(*f->gc.pend));
	f->gc.pend_gen = calloc(nb, sizeof(*f->gc.pend_gen));
	f->buf.page = aligned_alloc(4096, g->ps);
	f->buf.zero = aligned_alloc(4096, g->ps);
	f->buf.oob = malloc((size_t)g->ppb * g->oob);
	f->buf.oob2 = malloc((size_t)g->ppb * g->oob);
	f->ck.buf = malloc(nb * sizeof(struct ftl_ckpt_blk) + g->ps);
	if (g->ckpt_delta) {
		f->ck.dirty = calloc((size_t)g->nlpn / 64 + 1, sizeof(uint64_t));
		f->ck.tab = calloc(nb, sizeof(struct ftl_ckpt_blk));
		f->ck.chg = calloc(nb, sizeof(uint32_t));
		f->ck.dsum = calloc((size_t)g->nlpn / 4096 + 1, sizeof(uint64_t));
		f->ck.bdirty = calloc(nb / 64 + 1, sizeof(uint64_t));
	}
	f->bb.tab = calloc(FTL_BBT_MAX, sizeof(*f->bb.tab));
	f->maint.bb_done = calloc(nb, 1);
	for (int i = 0; i < 2; i++) {
		f->gc.ev[i].v = FTL_NONE;
		f->gc.ev[i].oob = malloc((size_t)g->ppb * g->oob);
		f->gc.ev[i].res = calloc(g->ppb, sizeof(int));
		f->gc.ev[i].at = calloc(g->ppb, sizeof(void *));
	}
	f->gc.cur = FTL_NONE;
	if (ftl_place_init(f, false) || ftl_dying_init(f) || !f->log.hotblk || !f->log.map || !f->idx.valid || !f->idx.run_pages || !f->idx.state || !f->log.mtime || !f->log.trim_seq ||
	    !f->log.fdirty || ftl_idx_init(f) || !f->gc.pend || !f->gc.pend_gen || !f->buf.page || !f->buf.zero ||
	    !f->buf.oob || !f->buf.oob2 || !f->ck.buf || !f->bb.tab ||
	    !f->maint.bb_done || !f->gc.ev[0].oob || !f->gc.ev[0].res || !f->gc.ev[1].oob ||
	    !f->gc.ev[1].res || !f->gc.ev[0].at || !f->gc.ev[1].at ||
	    (g->ckpt_delta && (!f->ck.dirty || !f->ck.tab || !f->ck.chg ||
			     !f->ck.dsum || !f->ck.bdirty))) {
		ftl_free(f);
		return -ENOMEM;
	}
	memset(f->log.map, 0xff, (size_t)g->nlpn * sizeof(*f->log.map));
	memset(f->buf.zero, 0, g->ps);
	for (uint32_t b = 0; b < g->ckpt_blocks; b++)
		f->idx.state[b] = FTL_BLK_CKPT;
	for (int s = 0; s < (int)FTL_NFRONT; s++)
		f->log.st[s].blk = FTL_NONE;
	f->ck.interval = g->data_blocks / 4 > 16 ? g->data_blocks / 4 : 16;
	/* with delta records a checkpoint costs what changed, so it comes
	 * after a fixed amount of writing: roll-forward stays bounded
	 * (FTL_CKPT_DELTA_PAGES, not the device size) */
	if (g->ckpt_delta && f->ck.interval > FTL_CKPT_DELTA_PAGES / g->ppb)
		f->ck.interval = FTL_CKPT_DELTA_PAGES / g->ppb > 16 ?
				   FTL_CKPT_DELTA_PAGES / g->ppb : 16;
	f->ck.seq_gap = 2ull * f->ck.interval * g->ppb;
	/* GC's reserve: FTL_GC_RESERVE, less on devices whose spare blocks
	 * cannot hold it, two open blocks and two of slack (with 3 on 4
	 * spare blocks a full device left the host stream nothing: ENOSPC
	 * for ever); at least 2 (with 1, a crash could leave every block
	 * full and GC nowhere to copy to).  Runtime policy only. */
	{
		uint32_t spare = g->data_blocks - (g->nlpn + g->ppb - 1) / g->ppb;

		f->gc.reserve = spare >= FTL_GC_RESERVE + FTL_NSTREAMS + 2 ?
				FTL_GC_RESERVE :
				spare > FTL_NSTREAMS + 3 ? spare - FTL_NSTREAMS - 2 : 2;
	}
	ftl_bggc_marks(f);
	f->gc.batch = 1;
	f->gc.batch_max = (g->data_blocks - (g->nlpn + g->ppb - 1) / g->ppb) / 8;
	if (f->gc.batch_max < 1)
		f->gc.batch_max = 1;
	if (f->gc.batch_max > 16)
		f->gc.batch_max = 16;
	ftl_mutex_init(&f->lock);
	ftl_mutex_init(&f->scrub.lock);
	pthread_cond_init(&f->bggc.cv, NULL);
	pthread_cond_init(&f->bggc.room, NULL);
	ftl_mutex_init(&f->pipe.mx);
	pthread_cond_init(&f->pipe.cv, NULL);
	for (unsigned i = 0; i < FTL_IO_TURNS; i++)
		pthread_cond_init(&f->pipe.turn[i], NULL);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&f->io_rw.rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	for (unsigned i = 0; i < FTL_NSTRIPES; i++)
		ftl_mutex_init(&f->stripe[i]);
	*out = f;
	return 0;
}

/* Free an engine and its nand (closing nothing else). */
void ftl_free(struct ftl *f)
{
	if (!f)
		return;
	ftl_bggc_stop(f);               /* nothing may run on a freed engine */
	if (f->nand)
		nand_destroy(f->nand);
	free(f->log.map);
	free(f->idx.valid);
	free(f->idx.run_pages);
	free(f->idx.state);
	free(f->log.mtime);
	free(f->log.trim_seq);
	free(f->log.fdirty);
	free(f->log.hotblk);
	ftl_place_fini(f);
	ftl_dying_fini(f);
	ftl_idx_fini(f);
	free(f->gc.pend);
	free(f->gc.pend_gen);
	free(f->buf.page);
	for (int i = 0; i < 2; i++) {
		free(f->gc.ev[i].blk);
		free(f->gc.ev[i].oob);
		free(f->gc.ev[i].res);
		free(f->gc.ev[i].at);
	}
	free(f->log.runoob);
	free(f->fsl.ent);
	free(f->buf.zero);
	free(f->buf.oob);
	free(f->buf.oob2);
	free(f->ck.buf);
	free(f->ck.dirty);
	free(f->ck.tab);
	free(f->ck.chg);
	free(f->ck.dsum);
	free(f->ck.bdirty);
	free(f->bb.tab);
	free(f->maint.bb_done);
	pthread_mutex_destroy(&f->lock.mx);
	pthread_mutex_destroy(&f->scrub.lock.mx);
	pthread_cond_destroy(&f->bggc.cv);
	pthread_cond_destroy(&f->bggc.room);
	pthread_mutex_destroy(&f->pipe.mx.mx);
	pthread_cond_destroy(&f->pipe.cv);
	for (unsigned i = 0; i < FTL_IO_TURNS; i++)
		pthread_cond_destroy(&f->pipe.turn[i]);
	pthread_rwlock_destroy(&f->io_rw.rw);
	for (unsigned i = 0; i < FTL_NSTRIPES; i++)
		pthread_mutex_destroy(&f->stripe[i].mx);
	free(f);
}

/* Recompute valid counts, the free and pending lists and the block
 * indexes from map and states. */
void ftl_rebuild_lists(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;

	FTL_ASSERT_HELD(&f->lock);
	memset(f->idx.valid, 0, (size_t)g->nblocks * sizeof(*f->idx.valid));
	f->log.mapped = 0;
	for (uint32_t l = 0; l < g->nlpn; l++) {
		uint32_t p = f->log.map[l];
		if (p == FTL_UNMAPPED)
			continue;
		if (p != FTL_DAMAGED)
			f->idx.valid[p / g->ppb]++;
		f->log.mapped++;
	}
	f->gc.npend = 0;
	ftl_idx_rebuild(f);
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		if (f->idx.state[b] == FTL_BLK_PENDING) {
			f->gc.pend_gen[f->gc.npend] = 0;  /* durable: no sync needed */
			f->gc.pend[f->gc.npend++] = b;
		}
	}
}

/*
 * Bring the nand-backed engine @f to a usable state: newest valid
 * checkpoint, then nothing more (clean), roll-forward (after a crash), or a
 * full OOB scan (o->scan).  A read-write mount then makes its state durable
 * (mount marker, or a new checkpoint) before any write.
 */
int ftl_mount(struct ftl *f, const struct ftl_open_opts *o)
{
	double t0 = ftl_now_ms();
	uint64_t gen = 0;
	uint32_t flags = 0;
	bool marker = false, clean;
	int r = 0, found;

	f->o = *o;
	f->place.off = !o->streams;
	if (!f->o.wl_threshold)
		f->o.wl_threshold = 128;
	f->readonly = o->readonly;
	if (o->gc_batch)
		f->gc.batch = o->gc_batch < f->gc.batch_max ? o->gc_batch :
			      f->gc.batch_max;
	found = ftl_ckpt_find(f, &gen, &flags, NULL, NULL);
	if (found && (!o->scan || found != -EBADMSG))
		return found;
	if (!found && (flags & FTL_CKPT_CLEAN)) {
		r = ftl_ckpt_marker_read(f, &marker);
		if (r)
			return r;
	}
	/* the last read-write session ended with a clean checkpoint */
	clean = !found && (flags & FTL_CKPT_CLEAN) && !marker &&
		!f->mnt.ckpt_fallback;
	if (o->scan) {
		/* forget everything but the generation and counters */
		memset(f->log.map, 0xff, (size_t)f->g.nlpn * sizeof(*f->log.map));
		f->log.seq = f->ck.seq = 0;
		r = ftl_roll_forward(f, true);
		f->mnt.kind = FTL_MOUNT_SCAN;
	} else if (clean) {
		f->mnt.kind = FTL_MOUNT_CLEAN;
	} else {
		r = ftl_roll_forward(f, false);
		f->mnt.kind = FTL_MOUNT_ROLL_FORWARD;
	}
	if (r)
		return r;
	/* flushed pages gone without a trace of their logical page: any
	 * sector may read an older version; only a repair takes that */
	if ((f->mnt.rf_unknown || f->mnt.rf_gens_lost) && !o->accept_loss)
		return -EUCLEAN;
	/* the engine is not shared yet; f->lock for what asserts it */
	ftl_lock(&f->lock);
	ftl_bb_apply(f);                /* the bad-block table has the say */
	ftl_rebuild_lists(f);
	ftl_ckpt_blk_dirty_all(f);      /* recovery moved any of them */
	ftl_unlock(&f->lock);
	nand_counters_get(f->nand, &f->ctr.nbase);
	f->mnt.ms = ftl_now_ms() - t0;
	if (f->readonly)
		return 0;
	f->ctr.base.last_mount = f->mnt.kind;
	f->ctr.base.last_mount_time = (uint64_t)time(NULL);
	f->ctr.base.last_mount_us = (uint32_t)(f->mnt.ms * 1000);
	/* a clean checkpoint with its mount marker: the session that wrote
	 * the marker died before any checkpoint counted its open */
	f->ctr.base.power_cycles += 1 + (!found && (flags & FTL_CKPT_CLEAN) &&
				     marker);
	f->ctr.base.unsafe_shutdowns += !clean;
	f->ctr.rw_t0 = ftl_now_ms();
	ftl_lock(&f->lock);
	r = ftl_bb_sync(f);
	if (!r)
		r = ftl_streams_check(f);
	if (r)
		goto unlock;
	if (f->mnt.kind == FTL_MOUNT_CLEAN)
		r = ftl_ckpt_marker_write(f);
	else
		r = ftl_ckpt_write(f, false);
unlock:
	ftl_unlock(&f->lock);
	f->mnt.ms = ftl_now_ms() - t0;
	f->ctr.base.last_mount_us = (uint32_t)(f->mnt.ms * 1000);
	return r;
}


/* The nand under an engine (tests). */
struct nand *ftl_test_nand(struct ftl *f)
{
	return f->nand;
}

/* The geometry of an engine (tests). */
const struct ftl_geom *ftl_test_geom(const struct ftl *f)
{
	return &f->g;
}

/* Hold (@hold) or give back the engine's mutex (tests): while held, no
 * host write, checkpoint or step of the GC thread runs. */
void ftl_test_hold(struct ftl *f, bool hold)
{
	if (hold)
		ftl_lock(&f->lock);
	else
		ftl_unlock(&f->lock);
}
