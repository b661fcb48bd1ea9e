/* SPDX-License-Identifier: MIT */
/*
 * align_partitions_sync: make the kernel's partitions of a disk those of
 * its partition table, from userspace (BLKPG), as `partx -u` does.
 *
 * A kernel built without the DOS / EFI partition parsers (this project's
 * test machines) answers BLKRRPART, and a loop device's partition scan,
 * with no partitions at all: /dev/loopNp1 never appears after a table is
 * written or a disk is served again.  libblkid reads the table (dos, gpt
 * and the others it knows); sysfs tells what the kernel has; the
 * difference is applied with BLKPG_DEL_PARTITION / BLKPG_ADD_PARTITION.
 * On a kernel that parsed the table itself there is no difference and
 * nothing is done.
 */
#include <blkid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/blkpg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "align-private.h"
#include "sysfs.h"

#define PS_MAX 256

struct ps_part {
	int partno;
	uint64_t start, size;      /* 512-byte sectors */
	char name[256];            /* kernel name (sysfs), "" if unknown */
};

static int ps_read_u64(const char *dir, const char *name, uint64_t *v)
{
	char buf[32], *end;
	int r = alignp_read_line(dir, name, buf, sizeof(buf));

	if (r)
		return r;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

/* The kernel's partitions of disk @rdev (sysfs). */
static int ps_kernel(dev_t rdev, struct ps_part *k, size_t *n)
{
	char dir[96], sub[400];
	struct dirent *de;
	uint64_t no;
	DIR *d;

	*n = 0;
	if (plumb_sysfs_devdir(rdev, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && *n < PS_MAX) {
		struct ps_part *p = &k[*n];

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (ps_read_u64(sub, "partition", &no) < 0 ||
		    ps_read_u64(sub, "start", &p->start) < 0 ||
		    ps_read_u64(sub, "size", &p->size) < 0)
			continue;
		p->partno = (int)no;
		snprintf(p->name, sizeof(p->name), "%s", de->d_name);
		(*n)++;
	}
	closedir(d);
	return 0;
}

/* The table's partitions (libblkid), in 512-byte sectors; an extended
 * partition as the kernel shows it (its first 1 KiB). */
static int ps_table(int fd, struct ps_part *t, size_t *n)
{
	blkid_probe pr = blkid_new_probe();
	blkid_partlist ls;
	int r = 0, nparts;

	*n = 0;
	if (!pr)
		return -ENOMEM;
	if (blkid_probe_set_device(pr, fd, 0, 0) < 0) {
		r = -EIO;
		goto out;
	}
	blkid_probe_enable_superblocks(pr, 0);
	blkid_probe_enable_partitions(pr, 1);
	ls = blkid_probe_get_partitions(pr);
	if (!ls)
		goto out;            /* no table: the kernel should have none */
	nparts = blkid_partlist_numof_partitions(ls);
	for (int i = 0; i < nparts && *n < PS_MAX; i++) {
		blkid_partition par = blkid_partlist_get_partition(ls, i);
		struct ps_part *p = &t[*n];
		long long start, size;

		if (!par)
			continue;
		start = (long long)blkid_partition_get_start(par);
		size = (long long)blkid_partition_get_size(par);
		p->partno = blkid_partition_get_partno(par);
		if (start < 0 || size <= 0 || p->partno <= 0)
			continue;
		p->start = (uint64_t)start;
		p->size = (uint64_t)size;
		if (blkid_partition_is_extended(par) && p->size > 2)
			p->size = 2;
		p->name[0] = '\0';
		(*n)++;
	}
out:
	blkid_free_probe(pr);
	return r;
}

static int ps_blkpg(int fd, int op, const struct ps_part *p)
{
	struct blkpg_partition bp;
	struct blkpg_ioctl_arg arg;

	memset(&bp, 0, sizeof(bp));
	memset(&arg, 0, sizeof(arg));
	bp.pno = p->partno;
	bp.start = (long long)(p->start * 512);
	bp.length = (long long)(p->size * 512);
	arg.op = op;
	arg.datalen = sizeof(bp);
	arg.data = &bp;
	return ioctl(fd, BLKPG, &arg) < 0 ? -errno : 0;
}

static const struct ps_part *ps_find(const struct ps_part *v, size_t n,
				     int partno)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].partno == partno)
			return &v[i];
	return NULL;
}

/* Wait (up to ~2 s) for the nodes of the kernel's partitions in /dev. */
static void ps_wait_nodes(dev_t rdev)
{
	struct ps_part *k = calloc(PS_MAX, sizeof(*k));
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	char node[272];
	size_t n = 0, missing;

	if (!k)
		return;
	for (int tries = 0; tries < 100; tries++) {
		if (ps_kernel(rdev, k, &n) < 0)
			break;
		missing = 0;
		for (size_t i = 0; i < n; i++) {
			snprintf(node, sizeof(node), "/dev/%s", k[i].name);
			if (access(node, F_OK) != 0)
				missing++;
		}
		if (!missing)
			break;
		nanosleep(&ts, NULL);
	}
	free(k);
}

/*
 * Make the kernel's partitions of block device @path those of its table:
 * stale ones are deleted, changed ones re-added, missing ones added
 * (BLKPG, as `partx -u`).  Returns how many partitions changed (>= 0), or
 * -errno: -ENOTBLK for a non-device, -EBUSY when a partition that must go
 * is in use (mounted), -EINVAL/-ENOTTY when the device has no partitions
 * (device-mapper, a loop device without partscan on old kernels).
 */
int align_partitions_sync(const char *path)
{
	struct ps_part *k = NULL, *t = NULL;
	size_t nk = 0, nt = 0;
	struct stat st;
	int fd = -1, r, changed = 0;

	if (!path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode)) {
		r = -ENOTBLK;
		goto out;
	}
	k = calloc(PS_MAX, sizeof(*k));
	t = calloc(PS_MAX, sizeof(*t));
	if (!k || !t) {
		r = -ENOMEM;
		goto out;
	}
	r = ps_table(fd, t, &nt);
	if (r < 0)
		goto out;
	r = ps_kernel(st.st_rdev, k, &nk);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < nk; i++) {
		const struct ps_part *want = ps_find(t, nt, k[i].partno);

		if (want && want->start == k[i].start && want->size == k[i].size)
			continue;
		r = ps_blkpg(fd, BLKPG_DEL_PARTITION, &k[i]);
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: delete partition %d (%s): %s",
			   path, k[i].partno, k[i].name, r ? strerror(-r) : "ok");
		if (r < 0)
			goto out;
		changed++;
	}
	for (size_t i = 0; i < nt; i++) {
		const struct ps_part *have = ps_find(k, nk, t[i].partno);

		if (have && have->start == t[i].start && have->size == t[i].size)
			continue;
		r = ps_blkpg(fd, BLKPG_ADD_PARTITION, &t[i]);
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: add partition %d at %" PRIu64
			   " (+%" PRIu64 "): %s", path, t[i].partno, t[i].start,
			   t[i].size, r ? strerror(-r) : "ok");
		if (r < 0)
			goto out;
		changed++;
	}
	if (changed)
		ps_wait_nodes(st.st_rdev);
	r = changed;
out:
	free(k);
	free(t);
	if (fd >= 0)
		close(fd);
	return r;
}
