/* SPDX-License-Identifier: MIT */
/*
 * loop — attach a regular file (the FUSE frontend's disk file) to a free
 * kernel loop device with LOOP_CONFIGURE: 512-byte logical blocks, direct
 * I/O (buffered with a warning when the kernel refuses it), partition
 * scanning, no autoclear.  Prefix loop_, 0 / -errno returns.
 */
#ifndef OCTANT_LOOP_H
#define OCTANT_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A configured loop device. */
struct loop_dev {
	int fd;             /* open /dev/loopN, -1 when not attached */
	int number;         /* N */
	bool direct_io;     /* the kernel accepted LO_FLAGS_DIRECT_IO */
	char path[64];      /* "/dev/loopN" */
};

/* Attach @backing_fd (label @name, e.g. the image path) to a free loop
 * device, read-only (LO_FLAGS_READ_ONLY) when @read_only.  -ENOSPC (or the kernel's error) when no loop device is free;
 * -ENODEV when /dev/loop-control is missing. */
int loop_attach(struct loop_dev *ld, int backing_fd, const char *name,
		bool read_only);

/* Detach (LOOP_CLR_FD) and close.  If the device is still open elsewhere
 * the kernel detaches it at the last close.  Safe on a detached loop_dev. */
int loop_detach(struct loop_dev *ld);

/* LOOP_SET_CAPACITY: the device takes its backing file's size now. */
int loop_set_capacity(struct loop_dev *ld);

/* Wait up to @ms milliseconds for /dev/loopN to let go of its backing
 * file (the deferred half of a detach).  0 once released, -EBUSY if not. */
int loop_wait_released(int number, unsigned ms);

/* What loop device @path is bound to now: the backing file's st_dev and
 * st_ino (LOOP_GET_STATUS64) and, if @file, its path as sysfs shows it.
 * -ENOENT not a loop device, -ENXIO bound to nothing. */
int loop_backing(const char *path, dev_t *dev, ino_t *ino, char *file,
		 size_t len);

/* Detach loop device @path if (and only if) its backing file is
 * @backing (a path as /sys/block/loopN/loop/backing_file shows it; one
 * ending in '/': any file directly in that folder), and take back a
 * read-only policy (BLKROSET) set on it.
 * 0 detached, -ENOENT not a loop device or not backed by @backing. */
int loop_detach_if_backed_by(const char *path, const char *backing);

#endif
