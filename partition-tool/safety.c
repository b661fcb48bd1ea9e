/* SPDX-License-Identifier: MIT */
/*
 * Safety checks: is the target in use (mounted, held, attached to a loop
 * device), does it carry data (libblkid signatures), and wiping of the old
 * signatures that a new table leaves behind (done only after the new table
 * was written, so a failed write leaves the old one intact).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <blkid/blkid.h>

#include "ap.h"
#include "holders.h"
#include "loopdev.h"
#include "sysfs.h"

/* Refuse a block device in use (plumbing/holders.c finds why). */
static int check_blockdev(const char *path, dev_t dev)
{
	struct plumb_use u;
	int r = plumb_blockdev_in_use(path, dev, &u);

	if (r != -EBUSY)
		return r ? ap_fail(AP_EXIT_IO, "%s: %s", path, strerror(-r)) : 0;
	if (u.kind == PLUMB_USE_CLAIMED)
		return ap_fail(AP_EXIT_REFUSED, "%s is in use (mounted, held or opened exclusively)", path);
	if (u.part[0])
		return ap_fail(AP_EXIT_REFUSED, "partition %s of %s is %s %s",
			       u.part, path, u.kind == PLUMB_USE_MOUNTED ?
			       "mounted on" : "held by", u.what);
	return ap_fail(AP_EXIT_REFUSED, "%s is %s %s", path,
		       u.kind == PLUMB_USE_MOUNTED ? "mounted on" : "held by",
		       u.what);
}

/* Is the regular file @path the backing file of an attached loop device? */
static int check_file(const char *path)
{
	char real[PATH_MAX], name[72];

	if (!realpath(path, real))
		return 0;
	if (plumb_loop_find_backed_by(real, name, sizeof(name)))
		return ap_fail(AP_EXIT_REFUSED,
			       "%s is attached to /dev/%s: partition the loop device instead",
			       path, name);
	return 0;
}

/* 0 if @path may be written: not mounted, not held, not claimed, not a
 * loop device's backing file; else AP_EXIT_REFUSED (message printed). */
int ap_check_not_in_use(const char *path, bool is_blockdev)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return ap_fail(AP_EXIT_IO, "%s: %s", path, strerror(errno));
	return is_blockdev ? check_blockdev(path, st.st_rdev) : check_file(path);
}

/*
 * List the partition-table and filesystem signatures libblkid finds on
 * @path into @what ("dos partition table, ext4").  Returns how many, or a
 * negative errno.
 */
int ap_probe_signatures(const char *path, char *what, size_t len)
{
	blkid_probe pr;
	const char *v;
	size_t used = 0;
	int n = 0;

	*what = 0;
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_MAGIC);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	while (blkid_do_probe(pr) == 0) {
		const char *kind = " signature";

		if (!blkid_probe_lookup_value(pr, "PTTYPE", &v, NULL))
			kind = " partition table";
		else if (blkid_probe_lookup_value(pr, "TYPE", &v, NULL))
			continue;
		used += (size_t)snprintf(what + used, used < len ? len - used : 0,
					 "%s%s%s", n ? ", " : "", v, kind);
		if (used >= len)
			used = len;
		n++;
	}
	blkid_free_probe(pr);
	return n;
}

/* Zero the "EFI PART" magic of a GPT header at @lba if one is there. */
static int wipe_gpt_header(int fd, uint64_t lba, uint32_t ls)
{
	static const char magic[8] = "EFI PART";
	char buf[8];
	off_t off = (off_t)(lba * ls);

	if (pread(fd, buf, 8, off) != 8 || memcmp(buf, magic, 8))
		return 0;
	memset(buf, 0, sizeof(buf));
	if (pwrite(fd, buf, 8, off) != 8)
		return -errno;
	ap_note("wiped an old GPT header at LBA %llu", (unsigned long long)lba);
	return 1;
}

/*
 * After a new @label table was written through @fd: wipe the signatures of
 * what was there before and is now stale — filesystem superblocks of the
 * whole device (libblkid) and, under a new dos table, the GPT headers at
 * LBA 1 and at the last LBA.  0 or AP_EXIT_IO.
 */
int ap_wipe_leftovers(int fd, const struct ap_topo *tp, const char *label)
{
	blkid_probe pr;
	int rc = 0;

	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, 0)) {
		rc = ap_fail(AP_EXIT_IO, "cannot probe for old signatures");
		goto out;
	}
	blkid_probe_enable_partitions(pr, 0);
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_MAGIC);
	while (blkid_do_probe(pr) == 0) {
		const char *type = "?";

		blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
		ap_note("wiping the old %s signature", type);
		if (blkid_do_wipe(pr, 0)) {
			rc = ap_fail(AP_EXIT_IO, "cannot wipe the old %s signature", type);
			goto out;
		}
	}
	if (!strcmp(label, "dos") && tp->nsectors > 2) {
		if (wipe_gpt_header(fd, 1, tp->t.logical) < 0 ||
		    wipe_gpt_header(fd, tp->nsectors - 1, tp->t.logical) < 0)
			rc = ap_fail(AP_EXIT_IO, "cannot wipe the old GPT headers: %s",
				     strerror(errno));
	}
out:
	if (pr)
		blkid_free_probe(pr);
	return rc;
}
