/* SPDX-License-Identifier: MIT */
/*
 * The tools' fsck of an image held in memory, for the crash tests (what a
 * kill -9 leaves must pass it): fsck takes a path, so the bytes go to a
 * memfd, one per process, reused.
 */
#ifndef OCTANT_TEST_IMAGE_FSCK_H
#define OCTANT_TEST_IMAGE_FSCK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ftl.h"
#include "ftl-set.h"
#include "zoned.h"

enum t_fsck_kind { T_FSCK_ENGINE, T_FSCK_SET, T_FSCK_ZONED };

/* fsck (check only) of the @size bytes at @img as an image of @kind: its
 * exit code (0 clean, 4 problems...), or -errno when the memfd cannot
 * hold them; its report in *@rep (free it; NULL when none). */
static inline int t_fsck_image(enum t_fsck_kind kind, const uint8_t *img,
			       uint64_t size, char **rep)
{
	static int fd = -1;
	char path[64];
	size_t len = 0;
	FILE *out;
	int r;

	*rep = NULL;
	if (fd < 0 && (fd = memfd_create("octant-test-image", MFD_CLOEXEC)) < 0)
		return -errno;
	if (ftruncate(fd, 0) || ftruncate(fd, (off_t)size))
		return -errno;
	if (pwrite(fd, img, size, 0) != (ssize_t)size)
		return -EIO;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	out = open_memstream(rep, &len);
	if (!out)
		return -ENOMEM;
	r = kind == T_FSCK_SET ? ftl_set_fsck(path, false, out, false) :
	    kind == T_FSCK_ZONED ? zn_fsck(path, false, out, false) :
	    ftl_fsck(path, false, out, false);
	fclose(out);
	return r;
}

#endif
