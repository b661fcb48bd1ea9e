/* SPDX-License-Identifier: MIT */
/* The run registry: one folder per served image (see serve.h). */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "loopdev.h"
#include "oct-proc.h"
#include "crc32c.h"
#include "frontend.h"
#include "nand.h"
#include "serve.h"
#include "sysfs.h"

static const char *const serve_files[] = { "pid", "image", "dev", "frontend",
					   "access", "dm", "backing", "ctl.sock", NULL };

int serve_entry_dir(const char *image, char *dir, size_t len)
{
	struct stat st;

	if (nand_backing_is_uri(image)) {
		/* a remote medium has no inode: the URI (two CRCs of it)
		 * names it */
		size_t n = strlen(image);
		uint32_t a = oct_crc32c(0, image, n), b = oct_crc32c(a, image, n);

		if ((size_t)snprintf(dir, len, "%s/img-%s-%08x%08x", plumb_run_base(),
				     nand_backing_is_rbd(image) ? "rbd" : "nbd",
				     a, b) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (stat(image, &st) < 0)
		return -errno;
	if ((size_t)snprintf(dir, len, "%s/img-%llx-%llu", plumb_run_base(),
			     (unsigned long long)st.st_dev,
			     (unsigned long long)st.st_ino) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static void serve_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Open and flock @dir/lock (exclusive, non-blocking, @tries attempts
 * 20 ms apart while another holder has it).  The lock file is removed with
 * its folder by the last holder (serve_entry_remove), so a lock taken on a
 * file that is no longer at the path is worthless: then start again. */
static int serve_lock_take(const char *dir, bool create, int tries, int *fd)
{
	char p[PATH_MAX];
	struct stat a, b;
	int err = -EBUSY;

	*fd = -1;
	snprintf(p, sizeof(p), "%s/lock", dir);
	for (int round = 0; round < 20; round++) {
		if (create && mkdir(plumb_run_base(), 0755) < 0 && errno != EEXIST)
			return -errno;
		if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		int lfd = open(p, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
		if (lfd < 0) {
			if (errno == ENOENT && create)
				continue;     /* removed meanwhile: again */
			return -errno;
		}
		/* A stats/stop client may hold it (shared) for a moment. */
		for (int i = 0; i < tries; i++) {
			err = flock(lfd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
			if (err != -EWOULDBLOCK)
				break;
			if (i + 1 < tries)
				serve_sleep_ms(20);
		}
		if (err) {
			close(lfd);
			return err == -EWOULDBLOCK ? -EBUSY : err;
		}
		if (fstat(lfd, &a) == 0 && stat(p, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			*fd = lfd;
			return 0;
		}
		close(lfd);           /* its holder removed it: again */
		if (!create)
			return -ENOENT;
	}
	return -EBUSY;
}

int serve_entry_lock(const char *dir, int *fd)
{
	return serve_lock_take(dir, true, 25, fd);
}

int serve_entry_trylock(const char *dir, int *fd)
{
	return serve_lock_take(dir, false, 1, fd);
}

void serve_entry_remove(const char *dir, bool log)
{
	char p[PATH_MAX + 8];

	serve_entry_clear(dir);
	snprintf(p, sizeof(p), "%s/mnt", dir);
	rmdir(p);
	if (log) {
		snprintf(p, sizeof(p), "%s.log", dir);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/lock", dir);
	unlink(p);
	rmdir(dir);
}

int serve_entry_put(const char *dir, const char *name, const char *value)
{
	char p[PATH_MAX], tmp[PATH_MAX + 8];
	int err = 0;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", value);
	if (fclose(f) != 0)
		err = -errno;
	if (!err && rename(tmp, p) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* @r's registry files as (name, value) pairs, "pid" last; how many. */
static size_t serve_record_files(const struct serve_record *r,
				 const char *f[][2])
{
	const char *const all[][2] = { { "image", r->image }, { "dev", r->dev },
		{ "frontend", r->frontend }, { "access", r->access },
		{ "dm", r->dm }, { "backing", r->backing }, { "pid", r->pid } };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i][1][0]) {
			f[n][0] = all[i][0];
			f[n++][1] = all[i][1];
		}
	return n;
}

int serve_entry_publish(const char *dir, const struct serve_record *r)
{
	const char *f[8][2];
	size_t n = serve_record_files(r, f);
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = serve_entry_put(dir, f[i][0], f[i][1]);
	return err;
}

int serve_entry_repair(const char *dir, int lock_fd,
		       const struct serve_record *r)
{
	char p[PATH_MAX];
	struct stat a, b;
	bool whole = true;
	int fd, err;

	snprintf(p, sizeof(p), "%s/lock", dir);
	if (fstat(lock_fd, &a) < 0)
		return -errno;
	if (stat(p, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		err = serve_lock_take(dir, true, 1, &fd);
		if (err)
			return err;
		/* the old lock (on the removed file) goes with the dup */
		err = dup3(fd, lock_fd, O_CLOEXEC) < 0 ? -errno : 0;
		close(fd);
		if (err)
			return err;
		whole = false;
	}
	const char *f[8][2];
	size_t n = serve_record_files(r, f);

	for (size_t i = 0; i < n && whole; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, f[i][0]);
		whole = access(p, F_OK) == 0;
	}
	if (whole)
		return 0;
	serve_entry_publish(dir, r);
	/* "pid" dates the start (list's STARTED, UPTIME): keep it */
	struct timespec t[2] = { r->started, r->started };
	snprintf(p, sizeof(p), "%s/pid", dir);
	utimensat(AT_FDCWD, p, t, 0);
	return 1;
}

/* Is ublk device @e->dev (/dev/ublkbN) still @e's?  A live server holds
 * its /dev/ublkcN open.  A dead server's device (left for `serve
 * --recover`) must prove it is the one the entry recorded, as `stop` asks
 * before removing it (fe_ublk_left_is: the image's tag and the dead
 * server's pid, held by nobody): its number may have gone to another
 * server since, dead too.  Without access to /dev/ublk-control only
 * "held by nobody" can be told. */
static bool serve_entry_ublk_ok(const struct serve_entry *e)
{
	char cpath[64];
	struct stat cst;
	unsigned id;
	int err;

	if (sscanf(e->dev, "/dev/ublkb%u", &id) != 1)
		return true;          /* neither loop nor ublk: nothing to check */
	snprintf(cpath, sizeof(cpath), "/dev/ublkc%u", id);
	if (stat(cpath, &cst) < 0 || !S_ISCHR(cst.st_mode))
		return false;
	if (e->live)
		return oct_pid_holds_chr(e->pid, cst.st_rdev);
	err = fe_ublk_left_is(e->dev, e->image, (int)e->pid);
	if (err == 0 || err == -ESTALE || err == -EBUSY || err == -ENOENT)
		return err == 0;
	return !oct_any_holds_chr(cst.st_rdev);
}

/* Is @e->dev still @e's device?  A loop device: is it bound to @e's FUSE file?  Checked by the
 * backing file's device and inode (recorded at serve time) and its path
 * (the entry's own mnt/NAME, NAME the image's file name or "disk": see
 * fe_fuse_file_name; a FUSE connection number can be reused once the old
 * one is gone, the entry's folder cannot). */
static bool serve_entry_dev_ok(const struct serve_entry *e)
{
	char file[PATH_MAX], want[PATH_MAX + 16], rec[64], real[PATH_MAX];
	char name[NAME_MAX + 1];
	dev_t dev;
	ino_t ino;
	size_t n;
	int err = plumb_loop_backing(e->dev, &dev, &ino, file, sizeof(file));

	if (err == -ENOENT)
		return serve_entry_ublk_ok(e);   /* not a loop device */
	if (err)
		return false;         /* bound to nothing, or unreadable */
	if (e->backing[0]) {
		snprintf(rec, sizeof(rec), "%u:%u:%llu", major(dev), minor(dev),
			 (unsigned long long)ino);
		if (strcmp(rec, e->backing) != 0)
			return false;
	}
	fe_fuse_file_name(e->image, name, sizeof(name));
	n = (size_t)snprintf(want, sizeof(want), "%s/mnt/%s",
			     realpath(e->dir, real) ? real : e->dir, name);
	/* A lazily unmounted backing file may show " (deleted)" after it. */
	return !strncmp(file, want, n) && (file[n] == '\0' || file[n] == ' ');
}

bool serve_entry_verify(const struct serve_entry *e)
{
	return !e->dev[0] || serve_entry_dev_ok(e);
}

/* Does --dm device @dm (device number @rdev) sit on @e->dev? */
static bool serve_entry_dm_ok(const struct serve_entry *e, dev_t rdev)
{
	char dir[96], p[PATH_MAX];
	const char *base = strrchr(e->dev, '/');

	if (plumb_sysfs_devdir(rdev, dir, sizeof(dir)))
		return false;
	snprintf(p, sizeof(p), "%s/slaves/%s", dir, base ? base + 1 : e->dev);
	return access(p, F_OK) == 0 && serve_entry_dev_ok(e);
}

int serve_entry_find(const char *arg, struct serve_entry *e)
{
	char dir[PATH_MAX];
	struct serve_entry cand;
	struct stat st, dst;
	bool named = false;
	int err;

	if (nand_backing_is_uri(arg) || stat(arg, &st) < 0 ||
	    !S_ISBLK(st.st_mode)) {
		if (!nand_backing_is_uri(arg) && stat(arg, &st) < 0)
			return -errno;
		err = serve_entry_dir(arg, dir, sizeof(dir));
		return err ? err : plumb_entry_load(dir, e);
	}
	DIR *d = opendir(plumb_run_base());
	if (!d)
		return -ENOENT;
	struct dirent *de;
	err = -ENOENT;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "img-", 4) != 0 ||
		    strchr(de->d_name, '.'))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", plumb_run_base(), de->d_name);
		if (plumb_entry_load(dir, &cand) < 0 || !cand.dev[0])
			continue;
		bool is_dev = stat(cand.dev, &dst) == 0 && S_ISBLK(dst.st_mode) &&
			      dst.st_rdev == st.st_rdev;
		bool is_dm = !is_dev && cand.dm[0] && stat(cand.dm, &dst) == 0 &&
			     S_ISBLK(dst.st_mode) && dst.st_rdev == st.st_rdev;
		if (!is_dev && !is_dm)
			continue;
		if (is_dev ? serve_entry_dev_ok(&cand) :
			     serve_entry_dm_ok(&cand, st.st_rdev)) {
			*e = cand;
			err = 0;
			break;
		}
		if (!named) {         /* names the number, not the device now */
			*e = cand;
			named = true;
			err = -ESTALE;
		}
	}
	closedir(d);
	if (err == -ENOENT) {
		/* An image that is itself a block device. */
		if (serve_entry_dir(arg, dir, sizeof(dir)) == 0 &&
		    plumb_entry_load(dir, e) == 0)
			return 0;
	}
	return err;
}

bool serve_entry_recorded(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/pid", dir);
	return stat(p, &st) == 0 || errno != ENOENT;
}

bool serve_entry_waits(const char *dir)
{
	struct serve_entry e;
	struct stat st;

	if (!serve_entry_recorded(dir))
		return false;
	if (plumb_entry_load(dir, &e) < 0)
		return true;          /* unreadable now (no descriptor left?) */
	return !strcmp(e.frontend, "ublk") && e.dev[0] &&
	       stat(e.dev, &st) == 0 && S_ISBLK(st.st_mode);
}

void serve_entry_clear(const char *dir)
{
	char p[PATH_MAX];
	for (int i = 0; serve_files[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, serve_files[i]);
		unlink(p);
	}
}
