/* SPDX-License-Identifier: MIT */
/*
 * An online resize (serve.h, serve_grow; docs/ublk.md, Resize): the
 * served image grows through the same power-cut-safe writes as an offline
 * `resize` (ftl_grow_locked), between a close and an open of the engine
 * while the frontend holds requests; the image lock is never dropped (a
 * descriptor of its own, ftl_lock_dup); the kernel is told last, so it
 * never sends a request past what the engine has.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"

/* What cannot grow here, before anything changes: -errno and @why. */
static int grow_refuse(struct fe_server *s, char *why, size_t len)
{
	if (!s->set) {
		snprintf(why, len, "a zoned image cannot grow");
		return -EOPNOTSUPP;
	}
	if (ftl_set_parts(s->set) > 1) {
		snprintf(why, len, "a set of %u parts cannot grow (not built)",
			 ftl_set_parts(s->set));
		return -EOPNOTSUPP;
	}
	if (!s->ops || !s->ops->hold) {
		snprintf(why, len, "online resize over %s is not built (stop, "
			 "resize, serve again)", s->ops ? s->ops->name : "?");
		return -EOPNOTSUPP;
	}
	if (s->opts->dm_name) {
		snprintf(why, len, "served with --dm: the dm table would not "
			 "follow (stop, resize, serve again)");
		return -EOPNOTSUPP;
	}
	if (s->opts->read_only) {
		snprintf(why, len, "served read-only");
		return -EROFS;
	}
	return s->ops->can_resize ? s->ops->can_resize(s, why, len) : 0;
}

int serve_grow(struct fe_server *s, uint64_t size, uint64_t *max,
	       char *why, size_t len)
{
	const char *img = s->opts->image;
	struct ftl_open_opts oo;
	int r, ro;

	why[0] = '\0';
	r = grow_refuse(s, why, len);
	if (r)
		return r;
	r = ftl_grow_check(img, size, max);
	if (r == 1)
		return 0;
	if (r)
		return r;
	if (s->grow_lock_fd < 0) {
		r = ftl_set_lock_dup(s->set);
		if (r < 0) {
			snprintf(why, len, "the image lock: %s", strerror(-r));
			return r == -EBADF ? -EOPNOTSUPP : r;
		}
		s->grow_lock_fd = r;
	}
	oo = *s->open_opts;
	oo.lock_fd = s->grow_lock_fd;
	serve_ro_pause(s->ro);
	s->ops->hold(s);
	r = ftl_set_close(s->set);          /* a clean checkpoint */
	s->set = NULL;
	if (!r)
		r = ftl_grow_locked(img, s->grow_lock_fd, size, max);
	ro = ftl_set_open(img, &oo, &s->set);
	if (ro)
		s->set = NULL;
	s->ops->release(s);
	serve_ro_resume(s->ro, s->set);
	if (ro) {
		snprintf(why, len, "the engine could not open the image again "
			 "(%s): every request fails EIO; stop the server and "
			 "serve it again", strerror(-ro));
		return ro;
	}
	if (r) {
		if (!why[0] && r != -ERANGE && r != -EFBIG && r != -ENOSPC)
			snprintf(why, len, "%s (served on at %llu bytes)",
				 strerror(-r),
				 (unsigned long long)ftl_set_size(s->set));
		return r;
	}
	return s->ops->resized(s, why, len);
}
