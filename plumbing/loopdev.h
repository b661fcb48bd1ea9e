/* SPDX-License-Identifier: MIT */
/*
 * loopdev (plumbing/) — attach a regular file (the FUSE frontend's disk file) to a free
 * kernel loop device with LOOP_CONFIGURE: 512-byte logical blocks, direct
 * I/O (buffered with a warning when the kernel refuses it), partition
 * scanning, no autoclear (ublk-flash's FUSE frontend); an image file to an
 * auto-clearing one (alignpart map); what a loop device is bound to.
 * Prefix plumb_loop_ (plumbing/: plumb_), 0 / -errno returns.
 */
#ifndef OCTANT_LOOPDEV_H
#define OCTANT_LOOPDEV_H

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
int plumb_loop_attach(struct loop_dev *ld, int backing_fd, const char *name,
		bool read_only);

/* Detach (LOOP_CLR_FD) and close.  If the device is still open elsewhere
 * the kernel detaches it at the last close.  Safe on a detached loop_dev. */
int plumb_loop_detach(struct loop_dev *ld);

/* LOOP_SET_CAPACITY: the device takes its backing file's size now. */
int plumb_loop_set_capacity(struct loop_dev *ld);

/* Wait up to @ms milliseconds for /dev/loopN to let go of its backing
 * file (the deferred half of a detach).  0 once released, -EBUSY if not. */
int plumb_loop_wait_released(int number, unsigned ms);

/* What loop device @path is bound to now: the backing file's st_dev and
 * st_ino (LOOP_GET_STATUS64) and, if @file, its path as sysfs shows it.
 * -ENOENT not a loop device, -ENXIO bound to nothing. */
int plumb_loop_backing(const char *path, dev_t *dev, ino_t *ino, char *file,
		 size_t len);

/* Detach loop device @path if (and only if) its backing file is
 * @backing (a path as /sys/block/loopN/loop/backing_file shows it; one
 * ending in '/': any file directly in that folder), and take back a
 * read-only policy (BLKROSET) set on it.
 * 0 detached, -ENOENT not a loop device or not backed by @backing. */
int plumb_loop_detach_if_backed_by(const char *path, const char *backing);

/* Attach image @file (opened read-write) to a free auto-clearing loop
 * device (LOOP_SET_FD + LO_FLAGS_AUTOCLEAR): its path into @dev (@len),
 * the open loop fd into *lfd (closing it lets the kernel clear an unused
 * loop).  0, or -errno with one line saying what failed in @why (@wlen):
 * the file, /dev/loop-control, the attach or the status. */
int plumb_loop_attach_file(const char *file, char *dev, size_t len, int *lfd,
		     char *why, size_t wlen);

/* Does loop device @dev have @file (a canonical path) as backing file
 * (/sys/dev/block/M:m/loop/backing_file, exactly)? */
bool plumb_loop_backs(dev_t dev, const char *file);

/* Is the file @real (a canonical path) the backing file of an attached
 * loop device (any /sys/block/loopN/loop/backing_file, exactly)?  1 with
 * the first one's name ("loopN") in @name (@len bytes), else 0. */
int plumb_loop_find_backed_by(const char *real, char *name, size_t len);

/* Detach every loop device whose backing file lies directly in folder
 * @mnt (plumb_loop_detach_if_backed_by "@mnt/"), saying so on stderr for each
 * ("ublk-flash: detached stale /dev/loopN"): how many. */
int plumb_loop_detach_all_in(const char *mnt);

#endif
