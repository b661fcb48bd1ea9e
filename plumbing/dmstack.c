/* SPDX-License-Identifier: MIT */
/*
 * dmstack — dm-linear devices through libdevmapper.  See dmstack.h.
 */
#include "dmstack.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libdevmapper.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define NODE_WAIT_MS 5000

static _Thread_local char errbuf[256];
static _Thread_local char dmlog[200];    /* libdevmapper's last error line */

static void set_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
}

const char *plumb_dm_errmsg(void)
{
	return errbuf;
}

const char *plumb_dm_dir(void)
{
	return dm_dir();
}

/* libdevmapper log hook: keep the last error line, print only on request. */
static void dm_log_cb(int level, const char *file, int line, int dm_errno,
		      const char *f, ...) __attribute__((format(printf, 5, 6)));
static void dm_log_cb(int level, const char *file, int line, int dm_errno,
		      const char *f, ...)
{
	va_list ap;
	int lvl = level & 0xf;

	(void)file;
	(void)line;
	(void)dm_errno;
	if (lvl <= 3) {   /* _LOG_FATAL, _LOG_ERR */
		va_start(ap, f);
		vsnprintf(dmlog, sizeof(dmlog), f, ap);
		va_end(ap);
	}
	if (getenv("DMSTACK_DEBUG") && lvl <= 6) {
		va_start(ap, f);
		fputs("libdevmapper: ", stderr);
		vfprintf(stderr, f, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

static bool udev_running(void)
{
	return access("/run/udev/control", F_OK) == 0;
}

/* Per-call library setup: our log hook; no udev sync without udev. */
static void lib_setup(void)
{
	dm_log_with_errno_init(dm_log_cb);
	if (!udev_running())
		dm_udev_set_sync_support(0);
	dmlog[0] = '\0';
	errbuf[0] = '\0';
}

static bool name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > DMSTACK_NAME_MAX || !strcmp(name, ".") ||
	    !strcmp(name, "..") || !strcmp(name, "control"))
		return false;
	for (const char *p = name; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789#+-.:=@_", *p))
			return false;
	return true;
}

static int check_name(const char *name)
{
	if (name_ok(name))
		return 0;
	set_err("invalid dm device name '%s' (1-%u of A-Z a-z 0-9 #+-.:=@_)",
		name ? name : "", DMSTACK_NAME_MAX);
	return -EINVAL;
}

/* Does /proc/misc list device-mapper? */
static bool proc_misc_has_dm(void)
{
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/misc", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " device-mapper") != NULL;
	fclose(f);
	return found;
}

int plumb_dm_available(void)
{
	char ver[64];
	char ctl[256];

	lib_setup();
	snprintf(ctl, sizeof(ctl), "%s/control", dm_dir());
	/* Decide before libdevmapper tries to run modprobe itself. */
	if (access(ctl, F_OK) != 0 && !proc_misc_has_dm()) {
		set_err("device-mapper not available (modprobe dm_mod)");
		return -ENODEV;
	}
	if (geteuid() != 0 && access(ctl, R_OK | W_OK) != 0) {
		set_err("device-mapper needs root (no access to %s)", ctl);
		return -EACCES;
	}
	if (!dm_driver_version(ver, sizeof(ver))) {
		set_err("device-mapper not available (modprobe dm_mod)%s%s",
			dmlog[0] ? ": " : "", dmlog);
		return -ENODEV;
	}
	return 0;
}

/* Run a simple named task (INFO, DEPS); *out owns the task on success. */
static int run_named(int type, const char *name, struct dm_task **out)
{
	struct dm_task *dmt = dm_task_create(type);
	int ret;

	if (!dmt) {
		set_err("out of memory");
		return -ENOMEM;
	}
	if (name && !dm_task_set_name(dmt, name)) {
		ret = -EINVAL;
		set_err("invalid dm device name '%s'", name);
		goto err;
	}
	if (!dm_task_run(dmt)) {
		ret = dm_task_get_errno(dmt) ? -dm_task_get_errno(dmt) : -EIO;
		set_err("device-mapper query failed: %s",
			dmlog[0] ? dmlog : strerror(-ret));
		goto err;
	}
	*out = dmt;
	return 0;
err:
	dm_task_destroy(dmt);
	return ret;
}

/* INFO on @name: 1 exists (devno filled), 0 not, -errno. */
static int info(const char *name, dev_t *dev)
{
	struct dm_task *dmt = NULL;
	struct dm_info di;
	int ret = run_named(DM_DEVICE_INFO, name, &dmt);

	if (ret)
		return ret;
	if (!dm_task_get_info(dmt, &di)) {
		set_err("device-mapper: no info for '%s'", name);
		ret = -EIO;
	} else if (di.exists) {
		if (dev)
			*dev = makedev(di.major, di.minor);
		ret = 1;
	}
	dm_task_destroy(dmt);
	return ret;
}

int plumb_dm_exists(const char *name)
{
	int ret = check_name(name);

	if (ret || (ret = plumb_dm_available()))
		return ret;
	return info(name, NULL);
}

/* The kernel device number of dm device @name. */
static int plumb_dm_devno(const char *name, dev_t *dev)
{
	int ret = check_name(name);

	if (ret || (ret = plumb_dm_available()))
		return ret;
	ret = info(name, dev);
	if (ret == 0) {
		set_err("no dm device '%s'", name);
		return -ENOENT;
	}
	return ret < 0 ? ret : 0;
}

static void node_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dm_dir(), name);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Make sure @path is block device @dev and opens; without udev create it
 * ourselves if libdevmapper has not. */
static int wait_node(const char *path, dev_t dev)
{
	struct stat st;
	int fd;

	for (int waited = 0; waited < NODE_WAIT_MS; waited += 50) {
		bool good = stat(path, &st) == 0 && S_ISBLK(st.st_mode) &&
			    st.st_rdev == dev;

		if (!good && !udev_running()) {
			int e;

			(void)mkdir(dm_dir(), 0755);
			if (lstat(path, &st) == 0)
				(void)unlink(path);
			if (mknod(path, S_IFBLK | 0600, dev) &&
			    (e = errno) != EEXIST) {
				set_err("cannot create %s: %s", path,
					strerror(e));
				return -e;
			}
			good = stat(path, &st) == 0 && S_ISBLK(st.st_mode) &&
			       st.st_rdev == dev;
		}
		if (good) {
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				close(fd);
				return 0;
			}
		}
		sleep_ms(50);
	}
	set_err("%s did not become usable within %d ms", path, NODE_WAIT_MS);
	return -ETIMEDOUT;
}

/* Is block device @dev held by device-mapper tables only (they share
 * one claim, so another dm-linear may still be stacked on it)? */
static bool held_by_dm(dev_t dev)
{
	char path[96];
	struct dirent *de;
	bool dm = false, other = false;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/holders",
		 major(dev), minor(dev));
	if (!(d = opendir(path)))
		return false;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			if (!strncmp(de->d_name, "dm-", 3))
				dm = true;
			else
				other = true;
		}
	closedir(d);
	return dm && !other;
}

/* Size and device number of block device @path; with @excl, -EBUSY when
 * something (a mount, another dm table) holds it exclusively. */
static int lower_probe(const char *path, dev_t *dev, uint64_t *size,
		       bool excl)
{
	struct stat st;
	int fd, ret = 0;

	if (stat(path, &st)) {
		ret = -errno;
		set_err("%s: %s", path, strerror(errno));
		return ret;
	}
	if (!S_ISBLK(st.st_mode)) {
		set_err("%s is not a block device", path);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | (excl ? O_EXCL : 0));
	if (fd < 0 && errno == EBUSY && held_by_dm(st.st_rdev))
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EBUSY)
			set_err("%s is busy (mounted or held exclusively)",
				path);
		else
			set_err("%s: %s", path, strerror(errno));
		return ret;
	}
	if (ioctl(fd, BLKGETSIZE64, size)) {
		ret = -errno;
		set_err("%s: cannot read its size: %s", path, strerror(errno));
	}
	close(fd);
	*dev = st.st_rdev;
	return ret;
}

/* Is block device @path read-only (BLKROGET)?  A mapping over it must be
 * too: the kernel will not open it for writing (serve --read-only). */
static bool lower_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ro = 0;

	if (fd < 0)
		return false;
	if (ioctl(fd, BLKROGET, &ro))
		ro = 0;
	close(fd);
	return ro != 0;
}

int plumb_dm_linear_create(const char *name, const char *lower, uint64_t start,
			  uint64_t nr_sectors, char *path, size_t len)
{
	struct dm_task *dmt = NULL;
	struct dm_info di;
	uint32_t cookie = 0;
	uint64_t lsize;
	dev_t ldev, dev;
	char params[64], node[256];
	int ret = check_name(name);

	if (ret || (ret = plumb_dm_available()))
		return ret;
	ret = info(name, NULL);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		set_err("dm device '%s' already exists", name);
		return -EEXIST;
	}
	if ((ret = lower_probe(lower, &ldev, &lsize, true)))
		return ret;
	if (nr_sectors == 0 || start > lsize / DMSTACK_SECTOR ||
	    nr_sectors > lsize / DMSTACK_SECTOR - start) {
		set_err("dm-linear %s: sectors %" PRIu64 "+%" PRIu64
			" do not fit in %s (%" PRIu64 " sectors)", name, start,
			nr_sectors, lower, lsize / DMSTACK_SECTOR);
		return nr_sectors ? -ENOSPC : -EINVAL;
	}
	ret = -ENOMEM;
	if (!(dmt = dm_task_create(DM_DEVICE_CREATE)))
		goto err_msg;
	snprintf(params, sizeof(params), "%u:%u %" PRIu64, major(ldev),
		 minor(ldev), start);
	if (!dm_task_set_name(dmt, name) ||
	    !dm_task_add_target(dmt, 0, nr_sectors, "linear", params) ||
	    !dm_task_set_add_node(dmt, DM_ADD_NODE_ON_CREATE) ||
	    (lower_ro(lower) && !dm_task_set_ro(dmt)) ||
	    !dm_task_set_cookie(dmt, &cookie, 0))
		goto err_msg;
	if (!dm_task_run(dmt)) {
		int e = dm_task_get_errno(dmt);

		(void)dm_udev_wait(cookie);
		if (e == EBUSY && info(name, NULL) == 1) {
			set_err("dm device '%s' already exists", name);
			ret = -EEXIST;
		} else {
			ret = e ? -e : strstr(dmlog, strerror(EBUSY)) ? -EBUSY :
			      -EIO;
			set_err("cannot create dm device '%s' over %s: %s", name,
				lower, ret == -EBUSY ? "the lower device is busy "
				"(mounted or held exclusively)" :
				dmlog[0] ? dmlog : strerror(-ret));
		}
		goto err;
	}
	(void)dm_udev_wait(cookie);
	if (!dm_task_get_info(dmt, &di) || !di.exists) {
		ret = -EIO;
		set_err("dm device '%s' vanished after create", name);
		goto err;
	}
	dev = makedev(di.major, di.minor);
	node_path(name, node, sizeof(node));
	if ((ret = wait_node(node, dev))) {
		char why[sizeof(errbuf)];

		snprintf(why, sizeof(why), "%s", errbuf);
		(void)plumb_dm_remove(name);
		set_err("%s", why);
		goto err;
	}
	if (path)
		snprintf(path, len, "%s", node);
	dm_task_destroy(dmt);
	return 0;
err_msg:
	set_err("libdevmapper: cannot build the task for '%s'%s%s", name,
		dmlog[0] ? ": " : "", dmlog);
err:
	if (dmt)
		dm_task_destroy(dmt);
	return ret;
}

int plumb_dm_remove(const char *name)
{
	struct dm_task *dmt = NULL;
	uint32_t cookie = 0;
	struct stat st;
	char node[256];
	dev_t dev = 0;
	int ret = check_name(name);

	if (ret || (ret = plumb_dm_available()))
		return ret;
	ret = info(name, &dev);
	if (ret <= 0) {
		if (ret == 0)
			set_err("no dm device '%s'", name);
		return ret ? ret : -ENOENT;
	}
	ret = -ENOMEM;
	if (!(dmt = dm_task_create(DM_DEVICE_REMOVE)) ||
	    !dm_task_set_name(dmt, name) || !dm_task_retry_remove(dmt) ||
	    !dm_task_set_cookie(dmt, &cookie, 0)) {
		set_err("libdevmapper: cannot build the task for '%s'", name);
		goto err;
	}
	if (!dm_task_run(dmt)) {
		int e = dm_task_get_errno(dmt);

		(void)dm_udev_wait(cookie);
		ret = e == ENXIO ? -ENOENT : e ? -e : -EIO;
		if (e == EBUSY)
			set_err("dm device '%s' is in use (mounted or open)",
				name);
		else
			set_err("cannot remove dm device '%s': %s", name,
				dmlog[0] ? dmlog : strerror(-ret));
		goto err;
	}
	(void)dm_udev_wait(cookie);
	node_path(name, node, sizeof(node));
	if (!udev_running() && stat(node, &st) == 0 && S_ISBLK(st.st_mode) &&
	    st.st_rdev == dev)
		(void)unlink(node);
	ret = 0;
err:
	if (dmt)
		dm_task_destroy(dmt);
	return ret;
}

/* The kernel's encoding of a dev_t in dm ioctl results. */
static dev_t decode_dev(uint64_t d)
{
	return makedev((unsigned)((d & 0xfff00) >> 8),
		       (unsigned)((d & 0xff) | ((d >> 12) & 0xfff00)));
}

int plumb_dm_deps(const char *name, dev_t *deps, size_t max, size_t *n)
{
	struct dm_task *dmt = NULL;
	struct dm_deps *d;
	int ret = check_name(name);

	if (ret || (ret = plumb_dm_available()))
		return ret;
	if ((ret = info(name, NULL)) <= 0) {
		if (ret == 0)
			set_err("no dm device '%s'", name);
		return ret ? ret : -ENOENT;
	}
	if ((ret = run_named(DM_DEVICE_DEPS, name, &dmt)))
		return ret;
	if (!(d = dm_task_get_deps(dmt))) {
		set_err("device-mapper: no dependencies for '%s'", name);
		ret = -EIO;
		goto out;
	}
	for (uint32_t i = 0; i < d->count && i < max; i++)
		deps[i] = decode_dev(d->device[i]);
	*n = d->count;
out:
	dm_task_destroy(dmt);
	return ret;
}

int plumb_dm_foreach(int (*fn)(const char *name, dev_t dev, void *arg),
		    void *arg)
{
	struct dm_task *dmt = NULL;
	struct dm_names *nm;
	unsigned next = 0;
	int ret = plumb_dm_available();

	if (ret || (ret = run_named(DM_DEVICE_LIST, NULL, &dmt)))
		return ret;
	nm = dm_task_get_names(dmt);
	if (!nm) {
		set_err("device-mapper: cannot list devices");
		ret = -EIO;
		goto out;
	}
	if (!nm->dev)
		goto out;   /* no devices */
	do {
		nm = (struct dm_names *)((char *)nm + next);
		next = nm->next;
		ret = fn(nm->name, decode_dev(nm->dev), arg);
	} while (!ret && next);
out:
	dm_task_destroy(dmt);
	return ret;
}

/* Read sysfs attribute @attr (e.g. "alignment_offset",
 * "queue/physical_block_size") of block device @dev as an integer. */
static int plumb_dm_sysfs_read(dev_t dev, const char *attr, long long *val)
{
	char path[256], buf[64], *end;
	ssize_t n;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s", major(dev),
		 minor(dev), attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		set_err("%s: %s", path, strerror(errno));
		return ret;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		ret = -errno;
	close(fd);
	if (ret) {
		set_err("%s: %s", path, strerror(-ret));
		return ret;
	}
	buf[n] = '\0';
	errno = 0;
	*val = strtoll(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n')) {
		set_err("%s: not a number: %s", path, buf);
		return -EINVAL;
	}
	return 0;
}

int plumb_dm_alignment_offset(const char *name, long long *off)
{
	dev_t dev;
	int ret = plumb_dm_devno(name, &dev);

	return ret ? ret : plumb_dm_sysfs_read(dev, "alignment_offset", off);
}

/* Is dm device @name exactly one linear target 0+@nr over @ldev from
 * @start?  1 yes, 0 no, -errno. */
static int table_is(const char *name, dev_t ldev, uint64_t start,
		    uint64_t nr)
{
	struct dm_task *dmt = NULL;
	uint64_t tstart, tlen;
	char *type = NULL, *params = NULL, want[64];
	void *next;
	int ret = run_named(DM_DEVICE_TABLE, name, &dmt);

	if (ret)
		return ret;
	next = dm_get_next_target(dmt, NULL, &tstart, &tlen, &type, &params);
	snprintf(want, sizeof(want), "%u:%u %" PRIu64, major(ldev),
		 minor(ldev), start);
	ret = !next && type && params && tstart == 0 && tlen == nr &&
	      !strcmp(type, "linear") && !strcmp(params, want);
	dm_task_destroy(dmt);
	return ret;
}

int plumb_dm_serve_attach(const char *name, const char *lower_dev,
			 unsigned align_shift_bytes, uint64_t size_bytes,
			 char *dmpath, size_t len)
{
	uint64_t start = align_shift_bytes / DMSTACK_SECTOR;
	uint64_t nr = size_bytes / DMSTACK_SECTOR, lsize;
	char node[256];
	dev_t ldev, dev;
	int ret;

	errbuf[0] = '\0';
	if (align_shift_bytes % DMSTACK_SECTOR || size_bytes % DMSTACK_SECTOR ||
	    size_bytes == 0) {
		set_err("--dm %s: the shift (%u) must be a multiple of 512 "
			"and the size (%" PRIu64 ") a non-zero one",
			name ? name : "", align_shift_bytes, size_bytes);
		return -EINVAL;
	}
	ret = plumb_dm_linear_create(name, lower_dev, start, nr, dmpath, len);
	if (ret != -EEXIST)
		return ret;
	/* --recover: the mapping outlived the server; keep it if it is ours. */
	if (lower_probe(lower_dev, &ldev, &lsize, false) ||
	    table_is(name, ldev, start, nr) != 1 || info(name, &dev) != 1) {
		set_err("dm device '%s' already exists", name);
		return -EEXIST;
	}
	node_path(name, node, sizeof(node));
	if ((ret = wait_node(node, dev)))
		return ret;
	if (dmpath)
		snprintf(dmpath, len, "%s", node);
	return 0;
}

int plumb_dm_detach(const char *name)
{
	return plumb_dm_remove(name);
}
