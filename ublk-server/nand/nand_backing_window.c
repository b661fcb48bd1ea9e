/* SPDX-License-Identifier: MIT */
/*
 * A window backing (nand.h, nand_backing_window): bytes [off, off + len)
 * of a parent backing shown as a backing of len bytes, so one image can
 * hold several engines (a set of parts, ftl/ftl_set.c).  Every op is the
 * parent's with @off added and the range checked against @len first
 * (-EIO past the end, as the memory backing does); the optional ops exist
 * only when the parent has them.  The window never owns the parent:
 * destroy frees the window alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nand.h"

struct win_backing {
	struct nand_backing b;
	struct nand_backing_ops ops;    /* the parent's optional ops only */
	struct nand_backing *parent;    /* not owned */
	uint64_t off;                   /* window start in the parent, bytes */
	uint64_t len;                   /* window length, bytes */
};

static struct win_backing *win(struct nand_backing *b)
{
	return (struct win_backing *)b;
}

/* Is [off, off + n) inside the window? */
static bool win_in(const struct win_backing *w, uint64_t off, uint64_t n)
{
	return off <= w->len && n <= w->len - off;
}

static uint64_t iov_bytes(const struct iovec *iov, int cnt)
{
	uint64_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

static int win_pread(struct nand_backing *b, void *buf, size_t len,
		     uint64_t off)
{
	struct win_backing *w = win(b);

	if (!win_in(w, off, len))
		return -EIO;
	return w->parent->ops->pread(w->parent, buf, len, w->off + off);
}

static int win_pwrite(struct nand_backing *b, const void *buf, size_t len,
		      uint64_t off)
{
	struct win_backing *w = win(b);

	if (!win_in(w, off, len))
		return -EIO;
	return w->parent->ops->pwrite(w->parent, buf, len, w->off + off);
}

static int win_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	struct win_backing *w = win(b);

	if (!win_in(w, off, len))
		return -EIO;
	return w->parent->ops->punch(w->parent, w->off + off, len);
}

/* The parent's sync: it covers the whole parent, this window too. */
static int win_sync(struct nand_backing *b)
{
	struct win_backing *w = win(b);

	return w->parent->ops->sync(w->parent);
}

static void win_destroy(struct nand_backing *b)
{
	free(b);                        /* never the parent */
}

/* SEEK_DATA / SEEK_HOLE inside the window: the parent's answer moved back
 * by the window's start; data past the window's end is no data (-1,
 * ENXIO), a hole past it is the window's end (its end reads as a hole, as
 * a file's end does). */
static int64_t win_seek(struct nand_backing *b, uint64_t off, int whence)
{
	struct win_backing *w = win(b);
	int64_t r;

	if (off >= w->len) {
		errno = ENXIO;
		return -1;
	}
	r = w->parent->ops->seek(w->parent, w->off + off, whence);
	if (r < 0) {
		if (errno == ENXIO && whence == SEEK_HOLE)
			return (int64_t)w->len;
		return -1;
	}
	if ((uint64_t)r < w->off + off)         /* never before the ask */
		r = (int64_t)(w->off + off);
	if ((uint64_t)r - w->off >= w->len) {
		if (whence == SEEK_DATA) {
			errno = ENXIO;
			return -1;
		}
		return (int64_t)w->len;
	}
	return r - (int64_t)w->off;
}

static int win_preadv(struct nand_backing *b, const struct iovec *iov, int cnt,
		      uint64_t off)
{
	struct win_backing *w = win(b);

	if (!win_in(w, off, iov_bytes(iov, cnt)))
		return -EIO;
	return w->parent->ops->preadv(w->parent, iov, cnt, w->off + off);
}

static int win_pwritev(struct nand_backing *b, const struct iovec *iov,
		       int cnt, uint64_t off)
{
	struct win_backing *w = win(b);

	if (!win_in(w, off, iov_bytes(iov, cnt)))
		return -EIO;
	return w->parent->ops->pwritev(w->parent, iov, cnt, w->off + off);
}

static const void *win_view(struct nand_backing *b, uint64_t off,
			    uint64_t len)
{
	struct win_backing *w = win(b);

	if (!win_in(w, off, len))
		return NULL;
	return w->parent->ops->view(w->parent, w->off + off, len);
}

static uint64_t win_resident(struct nand_backing *b, uint64_t off,
			     uint64_t len)
{
	struct win_backing *w = win(b);

	if (off >= w->len)
		return 0;
	if (len > w->len - off)
		len = w->len - off;
	return w->parent->ops->resident(w->parent, w->off + off, len);
}

static void *win_wview(struct nand_backing *b, uint64_t off, uint64_t len)
{
	struct win_backing *w = win(b);

	if (!win_in(w, off, len))
		return NULL;
	return w->parent->ops->wview(w->parent, w->off + off, len);
}

static int win_mapfault(struct nand_backing *b, uint64_t off)
{
	struct win_backing *w = win(b);

	return w->parent->ops->mapfault(w->parent, w->off + off);
}

/* A window on @parent (see nand.h). */
int nand_backing_window(struct nand_backing *parent, uint64_t off,
			uint64_t len, struct nand_backing **out)
{
	const struct nand_backing_ops *p = parent->ops;
	struct win_backing *w;

	if (off + len < off)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->parent = parent;
	w->off = off;
	w->len = len;
	w->ops = (struct nand_backing_ops){
		.pread = win_pread, .pwrite = win_pwrite, .punch = win_punch,
		.sync = win_sync, .destroy = win_destroy,
		.seek = p->seek ? win_seek : NULL,
		.preadv = p->preadv ? win_preadv : NULL,
		.pwritev = p->pwritev ? win_pwritev : NULL,
		.view = p->view ? win_view : NULL,
		.resident = p->resident ? win_resident : NULL,
		.wview = p->wview ? win_wview : NULL,
		.mapfault = p->mapfault ? win_mapfault : NULL,
	};
	w->b.ops = &w->ops;
	*out = &w->b;
	return 0;
}
