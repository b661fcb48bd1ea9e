/* SPDX-License-Identifier: MIT */
/*
 * Topology of a block device served by ublk-flash: the image's, not the
 * kernel's.  A FUSE + loop device reports 512/512 offset 0 whatever the
 * image is (a loop device cannot express 4 KiB physical sectors with an
 * offset), so the kernel's figures are wrong for an odd image.
 *
 * libalign does not link the server: it reads the run registry with the
 * reader ublk-flash uses (plumbing/registry.c; the layout:
 * ublk-server/serve/serve.h).  $UBLK_FLASH_RUN_DIR (default
 * /run/octant) holds one folder per image, "img-<st_dev hex>-<st_ino>",
 * with "lock" (flock'ed exclusively by the live server for its whole life)
 * and the files "pid", "image", "dev", "frontend" and, with --dm, "dm",
 * each its value and one newline (read whole: an image path may hold
 * newlines itself).  An entry is believed only when
 *   - its lock is held (a live server: an exclusive FLOCK in /proc/locks,
 *     so that looking never takes the lock),
 *   - the image's st_dev/st_ino are those the folder is named after,
 *   - the target is the recorded device (or the dm device stacked on it)
 *     by device number, and that device really is this server's:
 *       fuse:  the loop device's backing file (plumb_loop_backing: device
 *              and inode) is the entry's FUSE file mnt/disk;
 *       ublk:  the recorded pid holds /dev/ublkcN open;
 *       dm:    the dm device's only slave is the recorded device;
 *   - and the device's size is the image's exported size.
 * A partition of such a device takes the same geometry with the offset
 * its start gives.
 * No live entry names the device: -ENOENT, and the caller keeps the
 * kernel's report.  A live entry names it (its dev or dm device has that
 * number) but does not check out: -ESTALE, with the image it records, so
 * that the caller can say it keeps the kernel's report (LIBALIGN_DEBUG=1
 * prints why).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "align-private.h"
#include "loopdev.h"
#include "registry.h"
#include "sysfs.h"
#include "oct-proc.h"

#define SRV_PATH 4096

/* What a registry scan found: the verified entry, or else whether a live
 * entry named the device without checking out (and its image). */
struct srv_find {
	struct serve_entry e;
	bool unverified;
	char unverified_image[SRV_PATH];
};

/* The entry in @dir, if it records what a probe needs: a pid, the image,
 * the device and the frontend (the registry's one reader: plumbing/). */
static int srv_load(const char *dir, struct serve_entry *e)
{
	if (plumb_entry_load(dir, e) < 0 || e->pid <= 0 || !e->dev[0] ||
	    !e->image[0] || !e->frontend[0])
		return -ENOENT;
	return 0;
}

/* Is the image still the file the folder is named after? */
static bool srv_image_matches(const struct serve_entry *e, const char *name)
{
	char want[96];
	struct stat st;

	if (stat(e->image, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	snprintf(want, sizeof(want), "img-%llx-%llu",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	return !strcmp(want, name);
}

static int srv_rdev(const char *path, dev_t *rdev)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	*rdev = st.st_rdev;
	return 0;
}

/* fuse: the loop device's backing file is the entry's mnt/disk, by device
 * and inode number (not by a path or a loop number, both reusable). */
static bool srv_loop_is_ours(const struct serve_entry *e)
{
	char disk[SRV_PATH + 64];
	struct stat st;
	dev_t ldev;
	ino_t lino;

	if (plumb_loop_backing(e->dev, &ldev, &lino, NULL, 0) < 0)
		return false;
	snprintf(disk, sizeof(disk), "%s/mnt/disk", e->dir);
	if (stat(disk, &st) < 0)
		return false;
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: backing dev %llx ino %llu; %s: "
		   "dev %llx ino %llu", e->dev, (unsigned long long)ldev,
		   (unsigned long long)lino, disk,
		   (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	return ldev == st.st_dev && lino == st.st_ino;
}

/* ublk: the recorded server holds /dev/ublkcN (N of /dev/ublkbN) open. */
static bool srv_ublk_is_ours(const struct serve_entry *e)
{
	char cpath[64];
	struct stat cst;
	unsigned id;

	if (sscanf(e->dev, "/dev/ublkb%u", &id) != 1)
		return false;
	snprintf(cpath, sizeof(cpath), "/dev/ublkc%u", id);
	if (stat(cpath, &cst) < 0 || !S_ISCHR(cst.st_mode))
		return false;
	return oct_pid_holds_chr(e->pid, cst.st_rdev);
}

/* dm: the dm device's only slave is device @lower. */
static bool srv_dm_on(dev_t dm, dev_t lower)
{
	char dir[96], p[400], buf[32];
	struct dirent *de;
	unsigned ma, mi, n = 0;
	bool ok = false;
	FILE *f;
	DIR *d;

	if (plumb_sysfs_devdir(dm, dir, sizeof(dir) - 7))
		return false;
	strcat(dir, "/slaves");
	d = opendir(dir);
	if (!d)
		return false;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		snprintf(p, sizeof(p), "%s/%s/dev", dir, de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%u:%u", &ma, &mi) == 2 &&
		    makedev(ma, mi) == lower)
			ok = true;
		fclose(f);
	}
	closedir(d);
	return ok && n == 1;
}

/* Does entry @e name device @rdev (by number)?  1 as the device it
 * serves (its number in *dev), 2 as its dm device, 0 not. */
static int srv_names(const struct serve_entry *e, dev_t rdev, dev_t *dev)
{
	dev_t dm = 0;

	if (srv_rdev(e->dev, dev) < 0)
		*dev = 0;             /* then no dm device sits on it */
	else if (*dev == rdev)
		return 1;
	if (e->dm[0] && srv_rdev(e->dm, &dm) == 0 && dm == rdev)
		return 2;
	return 0;
}

/* Does entry @e, which names @rdev @as (srv_names, its device @dev),
 * really serve it: the device is that server's, a dm device sits on it,
 * and the image is the file the folder @name was made for? */
static bool srv_serves(const struct serve_entry *e, const char *name, int as,
		       dev_t dev, dev_t rdev)
{
	bool fuse = !strcmp(e->frontend, "fuse");
	bool ublk = !strcmp(e->frontend, "ublk");

	if (as == 2 && !srv_dm_on(rdev, dev)) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: recorded by %s as its dm "
			   "device, but not stacked on %s; ignored", e->dm,
			   e->dir, e->dev);
		return false;
	}
	if (!(fuse && srv_loop_is_ours(e)) && !(ublk && srv_ublk_is_ours(e))) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: recorded by %s but not its %s "
			   "device; ignored", e->dev, e->dir, e->frontend);
		return false;
	}
	if (!srv_image_matches(e, name)) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: image %s is not the file the "
			   "entry was made for; ignored", e->dir, e->image);
		return false;
	}
	return true;
}

/* The live, verified entry serving device @rdev into @f->e: 1 as the
 * device served, 2 as its --dm device; 0 if none (and then
 * f->unverified if a live entry named the device all the same). */
static int srv_lookup(dev_t rdev, struct srv_find *f)
{
	struct serve_entry *e = &f->e;
	struct dirent *de;
	int as = 0, named;
	dev_t dev = 0;
	DIR *d = opendir(plumb_run_base());

	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "run registry %s: an entry for %u:%u?",
		   plumb_run_base(), major(rdev), minor(rdev));
	if (!d)
		return 0;
	while (!as && (de = readdir(d))) {
		char dir[SRV_PATH];

		if (strncmp(de->d_name, "img-", 4))
			continue;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", plumb_run_base(),
				     de->d_name) >= sizeof(dir))
			continue;
		if (srv_load(dir, e) < 0 || !e->live)
			continue;
		named = srv_names(e, rdev, &dev);
		if (!named)
			continue;
		if (srv_serves(e, de->d_name, named, dev, rdev)) {
			as = named;
		} else if (!f->unverified) {
			f->unverified = true;
			snprintf(f->unverified_image,
				 sizeof(f->unverified_image), "%s", e->image);
		}
	}
	closedir(d);
	return as;
}

/* Is @rdev a partition?  Its disk's number and its start (512-byte
 * sectors) then.  0 or -ENOENT. */
static int srv_partition(dev_t rdev, dev_t *disk, uint64_t *start)
{
	char dir[96], p[160], buf[64];
	unsigned ma, mi;
	FILE *f;
	int ok;

	if (plumb_sysfs_devdir(rdev, dir, sizeof(dir)))
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/start", dir);
	f = fopen(p, "re");
	if (!f)
		return -ENOENT;
	ok = fgets(buf, sizeof(buf), f) &&
	     sscanf(buf, "%" SCNu64, start) == 1;
	fclose(f);
	snprintf(p, sizeof(p), "%s/partition", dir);
	if (!ok || access(p, F_OK) != 0)
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/../dev", dir);
	f = fopen(p, "re");
	if (!f)
		return -ENOENT;
	ok = fgets(buf, sizeof(buf), f) && sscanf(buf, "%u:%u", &ma, &mi) == 2;
	fclose(f);
	if (!ok)
		return -ENOENT;
	*disk = makedev(ma, mi);
	return 0;
}

/*
 * Fill *t from a block device served by a live ublk-flash server: the
 * device's logical sector size and size, the served image's physical
 * geometry.  A partition of a served device: the same, with the offset the
 * partition's start gives.  @image (if @len) gets the image path.  -ENOENT
 * if no live registry entry names @path (or its disk); -ESTALE if one does
 * but it does not check out (@image then gets the image it records).
 */
int align_topology_from_served(const char *path, struct align_topology *t,
			       char *image, size_t len)
{
	struct align_topology dt, it, pt;
	struct srv_find *f;
	struct serve_entry *e;
	dev_t rdev = 0, disk = 0;
	uint64_t pstart = 0;
	int r, as;
	bool unshifted, part = false;

	if (!path || !t || (!image && len))
		return -EINVAL;
	r = srv_rdev(path, &rdev);
	if (r < 0)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	e = &f->e;
	as = srv_lookup(rdev, f);
	if (!as && srv_partition(rdev, &disk, &pstart) == 0) {
		as = srv_lookup(disk, f);
		part = as != 0;
	}
	if (!as) {
		r = f->unverified ? -ESTALE : -ENOENT;
		if (r == -ESTALE && len)
			snprintf(image, len, "%s", f->unverified_image);
		goto out;
	}
	/* the size check is the whole served device's */
	r = align_topology_from_device(as == 2 ? e->dm : e->dev, &dt);
	if (r < 0)
		goto out;
	r = align_topology_from_image(e->image, &it);
	if (r < 0)
		goto out;
	/* the raw device under --dm exposes the medium un-shifted, its size
	 * rounded up to whole pages; every other device is the image's size */
	unshifted = as == 1 && e->dm[0];
	if ((unshifted ? dt.size < it.size || dt.size - it.size > it.physical
		       : dt.size != it.size) ||
	    it.logical % dt.logical || it.physical < dt.logical) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: size %" PRIu64 " / %u-byte "
			   "sectors, image %s: %" PRIu64 " / %u: ignored", path,
			   dt.size, dt.logical, e->image, it.size, it.logical);
		r = -ESTALE;
		goto unverified;
	}
	*t = it;
	t->logical = dt.logical;
	t->size = dt.size;
	/* with --dm the engine is un-shifted: the dm device carries the
	 * shift, the device under it starts on a page */
	if (unshifted)
		t->alignment_offset = 0;
	if (t->alignment_offset % t->logical) {
		r = -ESTALE;
		goto unverified;
	}
	if (part) {
		/* as the kernel stacks a partition's limits on its disk's */
		r = align_topology_from_device(path, &pt);
		if (r < 0)
			goto out;
		t->alignment_offset = align_partition_offset(t,
					pstart * 512 / t->logical);
		if (t->alignment_offset == UINT32_MAX) {
			t->alignment_offset = 0;
			t->misaligned = true;
		}
		t->size = pt.size;
	}
	t->source = ALIGN_SRC_SERVED;
	if (len)
		snprintf(image, len, "%s", e->image);
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: served by pid %ld from %s (%s%s): "
		   "%u/%u offset %u", path, (long)e->pid, e->image, e->frontend,
		   part ? ", a partition" : "", t->logical, t->physical,
		   t->alignment_offset);
	r = 0;
	goto out;
unverified:
	memset(t, 0, sizeof(*t));
	if (len)
		snprintf(image, len, "%s", e->image);
out:
	free(f);
	return r;
}
