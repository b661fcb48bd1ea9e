/* SPDX-License-Identifier: MIT */
/*
 * The set's calls a frontend makes beside I/O (ftl-set.h): for a set of
 * one part (a plain image) each is its engine's call, exactly; for N
 * parts they combine the parts' answers as ftl-set.h says.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "ftl-set-int.h"

enum ftl_mount_kind ftl_set_mount_kind(const struct ftl_set *s)
{
	enum ftl_mount_kind k = FTL_MOUNT_CLEAN, p;

	for (unsigned i = 0; i < s->nparts; i++) {
		p = ftl_mount_kind(s->part[i]);
		if (p == FTL_MOUNT_SCAN ||
		    (p == FTL_MOUNT_ROLL_FORWARD && k == FTL_MOUNT_CLEAN))
			k = p;
	}
	return k;
}

void ftl_set_topology(const struct ftl_set *s, struct align_topology *t)
{
	ftl_topology(s->part[0], t);
	if (s->nparts == 1)
		return;
	/* the parts' page geometry, the set's size and shift */
	t->size = s->size;
	t->alignment_offset = (t->physical - s->shift % t->physical) %
			      t->physical;
}

bool ftl_set_read_only(struct ftl_set *s)
{
	for (unsigned i = 0; i < s->nparts; i++)
		if (ftl_read_only(s->part[i]))
			return true;
	return false;
}

bool ftl_set_on_read_only(struct ftl_set *s, void (*fn)(void *ctx),
			  void *ctx)
{
	bool ro = false;

	for (unsigned i = 0; i < s->nparts; i++)
		if (ftl_on_read_only(s->part[i], fn, ctx))
			ro = true;
	return ro;
}

int ftl_set_lock_dup(const struct ftl_set *s)
{
	int fd;

	if (s->nparts == 1 && s->fd < 0)
		return ftl_lock_dup(s->part[0]);
	if (s->readonly || s->fd < 0)
		return -EBADF;
	fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

bool ftl_set_has_pi(const struct ftl_set *s)
{
	return s->nparts == 1 && ftl_has_pi(s->part[0]);
}

int ftl_set_read_pi(struct ftl_set *s, void *buf, void *pi, uint64_t off,
		    size_t len)
{
	if (s->nparts != 1)
		return -EOPNOTSUPP;
	return ftl_read_pi(s->part[0], buf, pi, off, len);
}

int ftl_set_write_pi(struct ftl_set *s, const void *buf, const void *pi,
		     uint64_t off, size_t len, unsigned flags)
{
	if (s->nparts != 1)
		return -EOPNOTSUPP;
	return ftl_write_pi(s->part[0], buf, pi, off, len, flags);
}
