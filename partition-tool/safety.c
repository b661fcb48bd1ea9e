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
#include <libmount/libmount.h>

#include "ap.h"
#include "loopdev.h"
#include "sysfs.h"

/* Is major:minor of @dev mounted?  libmount reads /proc/self/mountinfo and
 * unescapes the mount point ("my disk", not mountinfo's "my\\040disk"). */
static bool dev_mounted(dev_t dev, char *where, size_t len)
{
	struct libmnt_table *tb = mnt_new_table();
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs;
	bool found = false;

	if (!tb || !it || mnt_table_parse_mtab(tb, NULL) < 0)
		goto out;
	while (!found && mnt_table_next_fs(tb, it, &fs) == 0) {
		if (mnt_fs_get_devno(fs) != dev)
			continue;
		snprintf(where, len, "%s", mnt_fs_get_target(fs) ?
			 mnt_fs_get_target(fs) : "?");
		found = true;
	}
out:
	mnt_free_iter(it);
	mnt_unref_table(tb);
	return found;
}

/* Does the sysfs folder @dir have a non-empty holders/ subfolder? */
static bool has_holders(const char *dir, char *who, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/holders", dir);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(who, len, "%s", de->d_name);
		found = true;
	}
	closedir(d);
	return found;
}

static int read_dev(const char *file, dev_t *dev)
{
	unsigned int ma, mi;
	FILE *f = fopen(file, "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%u:%u", &ma, &mi);
	fclose(f);
	if (n != 2)
		return -EINVAL;
	*dev = makedev(ma, mi);
	return 0;
}

static int check_blockdev(const char *path, dev_t dev)
{
	char sys[PATH_MAX], sub[PATH_MAX + 300], what[1024];
	struct dirent *de;
	DIR *d;
	int fd;

	if (dev_mounted(dev, what, sizeof(what)))
		return ap_fail(AP_EXIT_REFUSED, "%s is mounted on %s", path, what);
	if (sysfs_devdir(dev, sys, sizeof(sys)))
		return ap_fail(AP_EXIT_IO, "%s: %s", path, strerror(ENAMETOOLONG));
	if (has_holders(sys, what, sizeof(what)))
		return ap_fail(AP_EXIT_REFUSED, "%s is held by %s", path, what);
	d = opendir(sys);
	while (d && (de = readdir(d))) {
		dev_t pdev = 0;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s/partition", sys, de->d_name);
		if (access(sub, F_OK))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s/dev", sys, de->d_name);
		if (read_dev(sub, &pdev))
			continue;
		if (dev_mounted(pdev, what, sizeof(what))) {
			closedir(d);
			return ap_fail(AP_EXIT_REFUSED, "partition %s of %s is mounted on %s",
				       de->d_name, path, what);
		}
		snprintf(sub, sizeof(sub), "%s/%s", sys, de->d_name);
		if (has_holders(sub, what, sizeof(what))) {
			closedir(d);
			return ap_fail(AP_EXIT_REFUSED, "partition %s of %s is held by %s",
				       de->d_name, path, what);
		}
	}
	if (d)
		closedir(d);
	/* the kernel's own answer: an exclusive open fails on a claimed disk */
	fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EBUSY)
			return ap_fail(AP_EXIT_REFUSED, "%s is in use (mounted, held or opened exclusively)", path);
		return ap_fail(AP_EXIT_IO, "%s: %s", path, strerror(errno));
	}
	close(fd);
	return 0;
}

/* Is the regular file @path the backing file of an attached loop device? */
static int check_file(const char *path)
{
	char real[PATH_MAX], name[72];

	if (!realpath(path, real))
		return 0;
	if (loop_find_backed_by(real, name, sizeof(name)))
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
