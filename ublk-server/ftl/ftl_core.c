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
	f->map = malloc((size_t)g->nlpn * sizeof(*f->map));
	f->valid = calloc(nb, sizeof(*f->valid));
	f->run_pages = calloc(nb, sizeof(*f->run_pages));
	f->state = calloc(nb, 1);
	f->mtime = calloc(nb, sizeof(*f->mtime));
	f->trim_seq = calloc(nb, sizeof(*f->trim_seq));
	f->fdirty = calloc(nb, 1);
	f->pend = calloc(nb, sizeof(*f->pend));
	f->pend_gen = calloc(nb, sizeof(*f->pend_gen));
	f->gcbuf = aligned_alloc(4096, g->ps);
	f->zero = aligned_alloc(4096, g->ps);
	f->oobbuf = malloc((size_t)g->ppb * g->oob);
	f->oobbuf2 = malloc((size_t)g->ppb * g->oob);
	f->ckbuf = malloc(nb * sizeof(struct ftl_ckpt_blk) + g->ps);
	if (g->ckpt_delta) {
		f->ck_dirty = calloc((size_t)g->nlpn / 64 + 1, sizeof(uint64_t));
		f->ck_tab = calloc(nb, sizeof(struct ftl_ckpt_blk));
		f->ck_chg = calloc(nb, sizeof(uint32_t));
		f->ck_dsum = calloc((size_t)g->nlpn / 4096 + 1, sizeof(uint64_t));
		f->ck_bdirty = calloc(nb / 64 + 1, sizeof(uint64_t));
	}
	f->bbt = calloc(FTL_BBT_MAX, sizeof(*f->bbt));
	f->bb_done = calloc(nb, 1);
	for (int i = 0; i < 2; i++) {
		f->ev[i].v = FTL_NONE;
		f->ev[i].oob = malloc((size_t)g->ppb * g->oob);
		f->ev[i].res = calloc(g->ppb, sizeof(int));
	}
	f->gc_cur = FTL_NONE;
	if (!f->map || !f->valid || !f->run_pages || !f->state || !f->mtime || !f->trim_seq ||
	    !f->fdirty || ftl_idx_init(f) || !f->pend || !f->pend_gen || !f->gcbuf || !f->zero ||
	    !f->oobbuf || !f->oobbuf2 || !f->ckbuf || !f->bbt ||
	    !f->bb_done || !f->ev[0].oob || !f->ev[0].res || !f->ev[1].oob ||
	    !f->ev[1].res ||
	    (g->ckpt_delta && (!f->ck_dirty || !f->ck_tab || !f->ck_chg ||
			     !f->ck_dsum || !f->ck_bdirty))) {
		ftl_free(f);
		return -ENOMEM;
	}
	memset(f->map, 0xff, (size_t)g->nlpn * sizeof(*f->map));
	memset(f->zero, 0, g->ps);
	for (uint32_t b = 0; b < g->ckpt_blocks; b++)
		f->state[b] = FTL_BLK_CKPT;
	for (int s = 0; s < (int)FTL_NSTREAMS; s++)
		f->st[s].blk = FTL_NONE;
	f->ckpt_interval = g->data_blocks / 4 > 16 ? g->data_blocks / 4 : 16;
	/* with delta records a checkpoint costs what changed, so it comes
	 * after a fixed amount of writing: roll-forward stays bounded
	 * (FTL_CKPT_DELTA_PAGES, not the device size) */
	if (g->ckpt_delta && f->ckpt_interval > FTL_CKPT_DELTA_PAGES / g->ppb)
		f->ckpt_interval = FTL_CKPT_DELTA_PAGES / g->ppb > 16 ?
				   FTL_CKPT_DELTA_PAGES / g->ppb : 16;
	f->seq_gap = 2ull * f->ckpt_interval * g->ppb;
	/* GC's reserve: FTL_GC_RESERVE, less on devices whose spare blocks
	 * cannot hold it, two open blocks and two of slack (with 3 on 4
	 * spare blocks a full device left the host stream nothing: ENOSPC
	 * for ever); at least 2 (with 1, a crash could leave every block
	 * full and GC nowhere to copy to).  Runtime policy only. */
	{
		uint32_t spare = g->data_blocks - (g->nlpn + g->ppb - 1) / g->ppb;

		f->gc_reserve = spare >= FTL_GC_RESERVE + FTL_NSTREAMS + 2 ?
				FTL_GC_RESERVE :
				spare > FTL_NSTREAMS + 3 ? spare - FTL_NSTREAMS - 2 : 2;
	}
	ftl_bggc_marks(f);
	f->gc_batch = 1;
	f->gc_batch_max = (g->data_blocks - (g->nlpn + g->ppb - 1) / g->ppb) / 8;
	if (f->gc_batch_max < 1)
		f->gc_batch_max = 1;
	if (f->gc_batch_max > 16)
		f->gc_batch_max = 16;
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->scrub_lock, NULL);
	pthread_cond_init(&f->gc_cv, NULL);
	pthread_mutex_init(&f->io_mx, NULL);
	pthread_cond_init(&f->io_cv, NULL);
	for (unsigned i = 0; i < FTL_IO_TURNS; i++)
		pthread_cond_init(&f->io_turn[i], NULL);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&f->io_rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	for (unsigned i = 0; i < FTL_NSTRIPES; i++)
		pthread_mutex_init(&f->stripe[i], NULL);
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
	free(f->map);
	free(f->valid);
	free(f->run_pages);
	free(f->state);
	free(f->mtime);
	free(f->trim_seq);
	free(f->fdirty);
	ftl_idx_fini(f);
	free(f->pend);
	free(f->pend_gen);
	free(f->gcbuf);
	for (int i = 0; i < 2; i++) {
		free(f->ev[i].blk);
		free(f->ev[i].oob);
		free(f->ev[i].res);
		free(f->ev[i].run);
	}
	free(f->runoob);
	free(f->fsum);
	free(f->zero);
	free(f->oobbuf);
	free(f->oobbuf2);
	free(f->ckbuf);
	free(f->ck_dirty);
	free(f->ck_tab);
	free(f->ck_chg);
	free(f->ck_dsum);
	free(f->ck_bdirty);
	free(f->bbt);
	free(f->bb_done);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->scrub_lock);
	pthread_cond_destroy(&f->gc_cv);
	pthread_mutex_destroy(&f->io_mx);
	pthread_cond_destroy(&f->io_cv);
	for (unsigned i = 0; i < FTL_IO_TURNS; i++)
		pthread_cond_destroy(&f->io_turn[i]);
	pthread_rwlock_destroy(&f->io_rw);
	for (unsigned i = 0; i < FTL_NSTRIPES; i++)
		pthread_mutex_destroy(&f->stripe[i]);
	free(f);
}

/* Recompute valid counts, the free and pending lists and the block
 * indexes from map and states. */
void ftl_rebuild_lists(struct ftl *f)
{
	const struct ftl_geom *g = &f->g;

	memset(f->valid, 0, (size_t)g->nblocks * sizeof(*f->valid));
	f->mapped = 0;
	for (uint32_t l = 0; l < g->nlpn; l++) {
		uint32_t p = f->map[l];
		if (p == FTL_UNMAPPED)
			continue;
		if (p != FTL_DAMAGED)
			f->valid[p / g->ppb]++;
		f->mapped++;
	}
	f->npend = 0;
	ftl_idx_rebuild(f);
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		if (f->state[b] == FTL_BLK_PENDING) {
			f->pend_gen[f->npend] = 0;  /* durable: no sync needed */
			f->pend[f->npend++] = b;
		}
	}
}

double ftl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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
	if (!f->o.wl_threshold)
		f->o.wl_threshold = 128;
	f->readonly = o->readonly;
	if (o->gc_batch)
		f->gc_batch = o->gc_batch < f->gc_batch_max ? o->gc_batch :
			      f->gc_batch_max;
	found = ftl_ckpt_find(f, &gen, &flags, NULL, NULL);
	if (found && (!o->scan || found != -EBADMSG))
		return found;
	if (!found && (flags & FTL_CKPT_CLEAN)) {
		r = ftl_ckpt_mount_marker(f, &marker, false);
		if (r)
			return r;
	}
	/* the last read-write session ended with a clean checkpoint */
	clean = !found && (flags & FTL_CKPT_CLEAN) && !marker &&
		!f->ckpt_fallback;
	if (o->scan) {
		/* forget everything but the generation and counters */
		memset(f->map, 0xff, (size_t)f->g.nlpn * sizeof(*f->map));
		f->seq = f->ckpt_seq = 0;
		r = ftl_roll_forward(f, true);
		f->mount_kind = FTL_MOUNT_SCAN;
	} else if (clean) {
		f->mount_kind = FTL_MOUNT_CLEAN;
	} else {
		r = ftl_roll_forward(f, false);
		f->mount_kind = FTL_MOUNT_ROLL_FORWARD;
	}
	if (r)
		return r;
	/* flushed pages gone without a trace of their logical page: any
	 * sector may read an older version; only a repair takes that */
	if ((f->rf_unknown || f->rf_gens_lost) && !o->accept_loss)
		return -EUCLEAN;
	ftl_bb_apply(f);                /* the bad-block table has the say */
	ftl_rebuild_lists(f);
	ftl_ckpt_blk_dirty_all(f);      /* recovery moved any of them */
	nand_counters_get(f->nand, &f->nbase);
	f->mount_ms = ftl_now_ms() - t0;
	if (f->readonly)
		return 0;
	f->base.last_mount = f->mount_kind;
	f->base.last_mount_time = (uint64_t)time(NULL);
	f->base.last_mount_us = (uint32_t)(f->mount_ms * 1000);
	/* a clean checkpoint with its mount marker: the session that wrote
	 * the marker died before any checkpoint counted its open */
	f->base.power_cycles += 1 + (!found && (flags & FTL_CKPT_CLEAN) &&
				     marker);
	f->base.unsafe_shutdowns += !clean;
	f->rw_t0 = ftl_now_ms();
	pthread_mutex_lock(&f->lock);
	r = ftl_bb_sync(f);
	if (!r)
		r = ftl_streams_check(f);
	if (r)
		goto unlock;
	if (f->mount_kind == FTL_MOUNT_CLEAN)
		r = ftl_ckpt_mount_marker(f, &marker, true);
	else
		r = ftl_ckpt_write(f, false);
unlock:
	pthread_mutex_unlock(&f->lock);
	f->mount_ms = ftl_now_ms() - t0;
	f->base.last_mount_us = (uint32_t)(f->mount_ms * 1000);
	return r;
}


/* The nand under an engine (tests). */
struct nand *ftl_test_nand(struct ftl *f)
{
	return f->nand;
}
