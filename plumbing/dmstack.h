/* SPDX-License-Identifier: MIT */
/*
 * dmstack (plumbing/) — dm-linear devices through libdevmapper (never by
 * running dmsetup), so the kernel sees the true topology of a stack: a dm-linear
 * target that starts one 512-byte sector into a 4096-physical device is
 * reported with alignment_offset 3584, which a ublk device alone cannot say.
 *
 * Prefix plumb_dm_ (plumbing/: plumb_), 0 / -errno returns.  Sectors are
 * always 512 bytes (the unit of device-mapper tables).  Every failing call leaves a one-line
 * message for plumb_dm_errmsg(); libdevmapper's own log lines are kept quiet
 * (set DMSTACK_DEBUG=1 in the environment to see them on stderr).
 *
 * Errors worth knowing:
 *   -ENODEV  no device-mapper driver ("device-mapper not available
 *            (modprobe dm_mod)")
 *   -EEXIST  a dm device of that name exists already
 *   -ENOENT  no dm device of that name / lower device missing
 *   -EBUSY   the dm device is open (mounted, held) and cannot be removed
 *   -ENOSPC  the mapping would run past the end of the lower device
 *   -EINVAL  bad name, sizes not multiples of 512, lower not a block device
 *   -EACCES  not permitted (device-mapper needs root)
 *
 * Without udev (the qemu guest, containers) udev synchronisation is turned
 * off and libdevmapper creates /dev/mapper/NAME itself; dmstack makes sure
 * the node exists and opens before a create returns.
 */
#ifndef OCTANT_DMSTACK_H
#define OCTANT_DMSTACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DMSTACK_SECTOR   512u
#define DMSTACK_NAME_MAX 127u    /* DM_NAME_LEN - 1 */

/* The calling thread's last error message ("" if none). */
const char *plumb_dm_errmsg(void);

/* Where dm device nodes live: "/dev/mapper". */
const char *plumb_dm_dir(void);

/* 0 if the kernel's device-mapper can be used here, else -ENODEV or
 * -EACCES with the message set. */
int plumb_dm_available(void);

/* 1 if a dm device @name exists, 0 if not, -errno if it cannot be told. */
int plumb_dm_exists(const char *name);

/* Create dm-linear @name mapping @nr_sectors of block device @lower from
 * sector @start, wait until /dev/mapper/@name is usable and write that path
 * to @path (may be NULL).  Nothing is left behind on failure.  A read-only
 * @lower gets a read-only mapping (dm_task_set_ro). */
int plumb_dm_linear_create(const char *name, const char *lower, uint64_t start,
			  uint64_t nr_sectors, char *path, size_t len);

/* Remove dm device @name (retrying briefly while something like blkid
 * holds it) and its /dev/mapper node. -ENOENT if there is none. */
int plumb_dm_remove(const char *name);

/* The devices dm device @name sits on: up to @max into @deps, the count
 * (possibly > max) into *n. */
int plumb_dm_deps(const char *name, dev_t *deps, size_t max, size_t *n);

/* Call @fn for every dm device (name and device number); stops at and
 * returns the first non-zero value @fn returns. */
int plumb_dm_foreach(int (*fn)(const char *name, dev_t dev, void *arg),
		    void *arg);

/* The kernel's alignment_offset of dm device @name (sysfs; -1 means the
 * kernel found the stack misaligned). */
int plumb_dm_alignment_offset(const char *name, long long *off);

/* For `ublk-flash serve IMG --dm NAME`: stack dm-linear @name over the
 * served device @lower_dev, starting @align_shift_bytes into it (odd mode:
 * 512, with the server exposing the flash un-shifted; 1m mode: 0) and
 * @size_bytes long; /dev/mapper/NAME goes to @dmpath.  Both byte counts
 * must be multiples of 512 and fit in the lower device.  A mapping of that
 * name with exactly this table over @lower_dev is kept (serve --recover:
 * it outlived the server) and 0 returned; any other -> -EEXIST. */
int plumb_dm_serve_attach(const char *name, const char *lower_dev,
			 unsigned align_shift_bytes, uint64_t size_bytes,
			 char *dmpath, size_t len);

/* Undo plumb_dm_serve_attach (`stop` calls it before deleting the served
 * device).  0 when removed, -ENOENT when there was no such device. */
int plumb_dm_detach(const char *name);

#endif /* OCTANT_DMSTACK_H */
