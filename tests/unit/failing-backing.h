/* SPDX-License-Identifier: MIT */
/*
 * A backing that fails like a full tmpfs or a broken NBD server: it wraps
 * another backing (a memory one, for crash images) and, once armed, the
 * next write of fb_min_len to fb_max_len bytes lands only its first fb_keep
 * bytes (one write of the inner backing: a power cut may keep or lose
 * it) and returns fb_err, as a pwritev cut short by ENOSPC does.  With
 * fb_all every later write fails too (writes nothing), and the syncs;
 * with fb_reads so do the reads.  One translation unit per test, so the
 * state is file-static here.  Writes come from several threads (program
 * runs outside the engine's lock): one mutex.
 */
#ifndef OCTANT_FAILING_BACKING_H
#define OCTANT_FAILING_BACKING_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "nand.h"

struct fb_backing {
	struct nand_backing b;
	struct nand_backing *in;
};

static pthread_mutex_t fb_mx = PTHREAD_MUTEX_INITIALIZER;
static bool fb_armed;          /* the next write of [min, max] bytes fails */
static uint64_t fb_min_len, fb_max_len, fb_keep;
static uint64_t fb_min_off;    /* ... at or past this offset (0: any) */
static int fb_err = -ENOSPC;
static bool fb_all, fb_reads;  /* after it: every write / read fails */
static unsigned fb_failed;     /* writes failed so far */
static uint64_t fb_fail_off;   /* where the failing write was */

static void fb_arm(uint64_t min_len, uint64_t max_len, uint64_t keep, int err,
		   bool all, bool reads)
{
	pthread_mutex_lock(&fb_mx);
	fb_armed = true;
	fb_min_len = min_len;
	fb_max_len = max_len;
	fb_keep = keep;
	fb_err = err;
	fb_all = all;
	fb_reads = reads;
	fb_failed = 0;
	pthread_mutex_unlock(&fb_mx);
}

static void fb_disarm(void)
{
	pthread_mutex_lock(&fb_mx);
	fb_armed = fb_all = fb_reads = false;
	pthread_mutex_unlock(&fb_mx);
}

static int fb_write(struct nand_backing *b, const struct iovec *iov, int cnt,
		    uint64_t off)
{
	struct fb_backing *w = (struct fb_backing *)b;
	uint64_t len = 0;
	int r;

	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	pthread_mutex_lock(&fb_mx);
	if (fb_failed && fb_all) {
		fb_failed++;
		r = fb_err;
	} else if (fb_armed && len >= fb_min_len && len <= fb_max_len &&
		   off >= fb_min_off) {
		uint8_t *buf = malloc(len ? len : 1);
		uint64_t at = 0;

		fb_armed = false;
		fb_failed++;
		fb_fail_off = off;
		r = buf ? fb_err : -ENOMEM;
		for (int i = 0; buf && i < cnt; at += iov[i].iov_len, i++)
			memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
		if (buf && fb_keep)
			w->in->ops->pwrite(w->in, buf,
					   fb_keep < len ? fb_keep : len, off);
		free(buf);
	} else {
		r = w->in->ops->pwritev(w->in, iov, cnt, off);
	}
	pthread_mutex_unlock(&fb_mx);
	return r;
}

static int fb_pwritev(struct nand_backing *b, const struct iovec *iov,
		      int cnt, uint64_t off)
{
	return fb_write(b, iov, cnt, off);
}

static int fb_pwrite(struct nand_backing *b, const void *buf, size_t len,
		     uint64_t off)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return fb_write(b, &v, 1, off);
}

static bool fb_reads_fail(void)
{
	bool f;

	pthread_mutex_lock(&fb_mx);
	f = fb_failed && fb_reads;
	pthread_mutex_unlock(&fb_mx);
	return f;
}

static int fb_pread(struct nand_backing *b, void *buf, size_t len,
		    uint64_t off)
{
	struct fb_backing *w = (struct fb_backing *)b;

	return fb_reads_fail() ? -EIO : w->in->ops->pread(w->in, buf, len, off);
}

static int fb_preadv(struct nand_backing *b, const struct iovec *iov,
		     int cnt, uint64_t off)
{
	struct fb_backing *w = (struct fb_backing *)b;

	return fb_reads_fail() ? -EIO
			       : w->in->ops->preadv(w->in, iov, cnt, off);
}

static int fb_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	struct fb_backing *w = (struct fb_backing *)b;

	return w->in->ops->punch(w->in, off, len);
}

static int fb_sync(struct nand_backing *b)
{
	struct fb_backing *w = (struct fb_backing *)b;
	bool fail;

	pthread_mutex_lock(&fb_mx);
	fail = fb_failed && fb_all;
	pthread_mutex_unlock(&fb_mx);
	return fail ? fb_err : w->in->ops->sync(w->in);
}

static void fb_destroy(struct nand_backing *b)
{
	struct fb_backing *w = (struct fb_backing *)b;

	w->in->ops->destroy(w->in);
	free(w);
}

static const struct nand_backing_ops fb_ops = {
	.pread = fb_pread, .pwrite = fb_pwrite, .punch = fb_punch,
	.sync = fb_sync, .destroy = fb_destroy, .preadv = fb_preadv,
	.pwritev = fb_pwritev,
};

/* A failing backing over @in (which it destroys with itself). */
static struct nand_backing *fb_wrap(struct nand_backing *in)
{
	struct fb_backing *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->b.ops = &fb_ops;
	w->in = in;
	return &w->b;
}

#endif
