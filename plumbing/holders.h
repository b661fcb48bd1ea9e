/* SPDX-License-Identifier: MIT */
/*
 * holders (plumbing/) — mounts and holders of block devices: what is
 * mounted (/proc/self/mountinfo, its mount points unescaped), what is
 * stacked on a device (its sysfs holders/: a dm or md device), its
 * partitions; is a device in use.  alignpart's refusal to write a disk in
 * use, ublk-flash's syncfs before a forced stop and its abort of a dead
 * server's FUSE connection ask here.  Prefix
 * plumb_, 0 / -errno returns; the caller words the refusal.
 */
#ifndef OCTANT_HOLDERS_H
#define OCTANT_HOLDERS_H

#include <limits.h>
#include <sys/types.h>

/* Call @fn for each mount of /proc/self/mountinfo, in its order: the
 * device number, the mount point (unescaped: "my disk", not
 * "my\040disk") and the filesystem type ("ext4", "fuse", "" unknown).
 * Stops at and returns the first non-zero value @fn returns; 0 after the
 * last; -errno when mountinfo cannot be read. */
int plumb_mounts_foreach(int (*fn)(dev_t dev, const char *target,
				   const char *fstype, void *arg), void *arg);

/* Block device @dev, its partitions and the devices stacked on it (its
 * holders), one level, without duplicates: up to @max into @devs (@dev
 * first).  How many. */
unsigned plumb_blockdev_family(dev_t dev, dev_t *devs, unsigned max);

enum plumb_use_kind {
	PLUMB_USE_MOUNTED = 1,   /* mounted on u->what */
	PLUMB_USE_HELD,          /* held by u->what (a holders/ entry) */
	PLUMB_USE_CLAIMED,       /* an exclusive open says EBUSY (u->what "") */
};

/* Why a block device is in use (plumb_blockdev_in_use). */
struct plumb_use {
	enum plumb_use_kind kind;
	char part[NAME_MAX + 1];  /* the partition in use ("loop3p1"), "" the
	                             device itself */
	char what[1024];          /* the mount point or the holder, else "" */
};

/* Is block device @path (device number @dev) in use, in this order: the
 * device mounted, held; a partition mounted, held; claimed (the kernel's
 * own answer: an exclusive open fails on a claimed disk)?  0 free; -EBUSY
 * with *u; -ENAMETOOLONG its sysfs folder; another -errno the exclusive
 * open's (@path cannot be opened). */
int plumb_blockdev_in_use(const char *path, dev_t dev, struct plumb_use *u);

#endif
