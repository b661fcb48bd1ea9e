/* SPDX-License-Identifier: MIT */
/*
 * sysfs (plumbing/) — where the kernel's /sys files of a block device and
 * of a FUSE connection are: no code outside plumbing/ spells a /sys path
 * (tests/cli/plumbing-only.bats).  Prefix plumb_sysfs_ (plumbing/:
 * plumb_), 0 / -errno returns.
 */
#ifndef OCTANT_SYSFS_H
#define OCTANT_SYSFS_H

#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

/* The sysfs folder of block device @dev, "/sys/dev/block/MAJ:MIN", into
 * @buf (@len bytes): 0, or -ENAMETOOLONG when it does not fit. */
int plumb_sysfs_devdir(dev_t dev, char *buf, size_t len);

/* Abort FUSE connection @conn (fusectl's
 * /sys/fs/fuse/connections/CONN/abort, fusectl mounted first when that
 * file is missing): requests queued in the kernel fail, serving threads
 * blocked in read() wake up with ENODEV.  Quiet: a connection already gone
 * is no error. */
void plumb_sysfs_fuse_abort(unsigned conn);

/* The device node of block device @dev, "/dev/" and the DEVNAME of its
 * sysfs uevent, into @buf: 0, -ENOENT without a DEVNAME, -errno. */
int plumb_sysfs_devname(dev_t dev, char *buf, size_t len);

/* Write "change" to the uevent file of block device NAME (the last part
 * of @devpath, e.g. /dev/loop3): udev runs its rules again.  0 (also when
 * there is no such device in sysfs), or -errno. */
int plumb_sysfs_uevent_change(const char *devpath);

/* opendir of device class @cls's folder, /sys/class/CLS (e.g.
 * "ublk-char": one ublkcN per ublk device); NULL with errno when the
 * class is not there. */
DIR *plumb_sysfs_class_open(const char *cls);

#endif
