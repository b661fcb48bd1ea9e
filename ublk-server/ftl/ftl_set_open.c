/* SPDX-License-Identifier: MIT */
/*
 * Opening a set by path (ftl-set.h: ftl_set_open): the engine's own file
 * handling (ftl_path_backing: URIs, open flags, the image lock, sizing,
 * the backing for tmpfs / regular files / block devices), then a plain
 * image is built exactly as ftl_open builds it (ftl_open_on, its
 * descriptor the engine's) and wrapped as a set of one part, and a set
 * image opens on that backing with the descriptor the set's.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "ftl-int.h"
#include "ftl-set-int.h"

/* @f, an engine opened by path, as a set of one part. */
static int wrap_plain(struct ftl *f, const struct ftl_open_opts *o,
		      struct ftl_set **out)
{
	struct ftl_set *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->readonly = o->readonly;
	s->part[0] = f;
	r = ftl_set_plain_fill(s);
	if (r) {
		free(s);
		return r;
	}
	*out = s;
	return 0;
}

int ftl_set_open(const char *path, const struct ftl_open_opts *o,
		 struct ftl_set **out)
{
	struct ftl_open_opts dflt = { 0 };
	struct nand_backing *b;
	struct ftl_set_hdr h;
	struct ftl *f = NULL;
	uint64_t size;
	bool blkdev;
	int fd, r;

	if (!o)
		o = &dflt;
	r = ftl_path_backing(path, o, &b, &size, &blkdev, &fd);
	if (r)
		return r;
	r = ftl_set_hdr_load(b, size, &h, NULL);
	if (r == 0) {                   /* a plain image: ftl_open's engine */
		r = ftl_open_on(b, size, blkdev, o, &f);
		if (r)
			goto err;
		f->fd = fd;
		r = wrap_plain(f, o, out);
		if (r)
			ftl_close(f);   /* closes fd and b: nothing left */
		return r;
	}
	if (r == 1)
		r = ftl_set_open_backing_sized(b, size, o, out);
	if (r)
		goto err;
	(*out)->fd = fd;
	return 0;
err:
	b->ops->destroy(b);
	if (fd >= 0)
		close(fd);
	return r;
}
