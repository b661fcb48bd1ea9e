/* SPDX-License-Identifier: MIT */
/*
 * Topology of a block device: libblkid's topology probe (the kernel's
 * queue limits through ioctls), plus sysfs for what libblkid hides: the
 * kernel's -1 "misaligned" alignment_offset (libblkid reports 0; a
 * partition's sysfs file prints it unsigned, 4294967295) and the discard
 * granularity used as an erase-block hint.
 */
#include <blkid.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "align-private.h"
#include "sysfs.h"

/* Read one integer from a sysfs file; 0 or -errno. */
static int sysfs_read(const char *dir, const char *name, long long *v)
{
	char buf[64], *end;
	int r = alignp_read_line(dir, name, buf, sizeof(buf));

	if (r)
		return r;
	errno = 0;
	*v = strtoll(buf, &end, 10);
	if (errno || end == buf || *end)
		r = -EINVAL;
	return r;
}

static uint32_t clamp32(long long v)
{
	return v > 0 && v < UINT32_MAX ? (uint32_t)v : 0;
}

/* A host-managed zoned device (queue/zoned; host-aware ones take
 * partitions and are treated as regular disks by Linux): its zone size,
 * queue/chunk_sectors in 512-byte sectors, into t->zone_size. */
static void zoned_apply(const char *qdir, struct align_topology *t)
{
	char model[32];
	long long v;

	if (alignp_read_line(qdir, "zoned", model, sizeof(model)) ||
	    strcmp(model, "host-managed"))
		return;
	if (sysfs_read(qdir, "chunk_sectors", &v) == 0 && v > 0)
		t->zone_size = (uint64_t)v * 512;
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s/zoned: host-managed, zone %" PRIu64
		   " bytes", qdir, t->zone_size);
}

/* Overlay what sysfs knows for device @rdev onto *t: the -1 offset and the
 * discard granularity always; with @full (libblkid could not open the
 * device) the sizes and the capacity too.  0 or -errno (no sysfs entry). */
static int sysfs_apply(dev_t rdev, struct align_topology *t, bool full)
{
	char dir[128], qdir[160];
	long long v;
	int r;

	if (plumb_sysfs_devdir(rdev, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	/* a partition has a "partition" file and its parent's queue */
	snprintf(qdir, sizeof(qdir), "%s/%s", dir,
		 sysfs_read(dir, "partition", &v) == 0 ? "../queue" : "queue");
	r = sysfs_read(dir, "alignment_offset", &v);
	if (r == 0) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s/alignment_offset: %lld", dir, v);
		if (v == -1 || v == 4294967295LL) {
			t->misaligned = true;
			t->alignment_offset = 0;
		} else {
			t->alignment_offset = clamp32(v);
		}
	}
	zoned_apply(qdir, t);
	if (sysfs_read(qdir, "discard_granularity", &v) == 0 && v > 0) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s/discard_granularity: %lld",
			   qdir, v);
		t->erase_block = clamp32(v);
	}
	if (!full)
		return 0;
	if (r < 0)
		return r;
	if (sysfs_read(qdir, "logical_block_size", &v) == 0)
		t->logical = clamp32(v);
	if (sysfs_read(qdir, "physical_block_size", &v) == 0)
		t->physical = clamp32(v);
	if (sysfs_read(qdir, "minimum_io_size", &v) == 0)
		t->io_min = clamp32(v);
	if (sysfs_read(qdir, "optimal_io_size", &v) == 0)
		t->io_opt = clamp32(v);
	if (sysfs_read(dir, "size", &v) == 0 && v > 0)
		t->size = (uint64_t)v * 512;   /* always 512-byte sectors */
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: sysfs %u/%u io_min %u io_opt %u "
		   "size %" PRIu64, dir, t->logical, t->physical, t->io_min,
		   t->io_opt, t->size);
	return 0;
}

/* Fill *t from a block device: libblkid's topology probe, plus sysfs for
 * the kernel's -1 and the discard granularity.  A device libblkid may not
 * open (permissions) is described from sysfs alone.  -ENOTBLK if @path is
 * not a block device. */
int align_topology_from_device(const char *path, struct align_topology *t)
{
	blkid_probe pr = NULL;
	blkid_topology tp;
	struct stat st;
	int r;

	if (!path || !t)
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	memset(t, 0, sizeof(*t));
	t->source = ALIGN_SRC_DEVICE;
	errno = 0;
	pr = blkid_new_probe_from_filename(path);
	if (!pr) {
		r = errno ? -errno : -EIO;
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: libblkid: %s; trying sysfs",
			   path, strerror(-r));
		if ((r != -EACCES && r != -EPERM) ||
		    sysfs_apply(st.st_rdev, t, true) < 0 || !t->logical)
			goto err;
		goto done;
	}
	tp = blkid_probe_get_topology(pr);
	if (!tp) {
		r = -EIO;
		goto err;
	}
	t->logical = (uint32_t)blkid_topology_get_logical_sector_size(tp);
	t->physical = (uint32_t)blkid_topology_get_physical_sector_size(tp);
	t->alignment_offset = (uint32_t)blkid_topology_get_alignment_offset(tp);
	t->io_min = (uint32_t)blkid_topology_get_minimum_io_size(tp);
	t->io_opt = (uint32_t)blkid_topology_get_optimal_io_size(tp);
	t->size = (uint64_t)blkid_probe_get_size(pr);
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: blkid %u/%u offset %u io_min %u "
		   "io_opt %u size %" PRIu64, path, t->logical, t->physical,
		   t->alignment_offset, t->io_min, t->io_opt, t->size);
	sysfs_apply(st.st_rdev, t, false);
done:
	if (!t->logical)
		t->logical = 512;
	if (!t->physical)
		t->physical = t->logical;
	blkid_free_probe(pr);
	return 0;
err:
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: probe failed: %s", path, strerror(-r));
	memset(t, 0, sizeof(*t));
	blkid_free_probe(pr);
	return r;
}
