/* SPDX-License-Identifier: MIT */
/* Loop devices over the FUSE disk file (LOOP_CONFIGURE, direct I/O). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "loopdev.h"

static void loop_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Read /sys/block/loopN/loop/ATTR into @buf without the newline. */
static int loop_sysfs(int number, const char *attr, char *buf, size_t len)
{
	char p[128];
	snprintf(p, sizeof(p), "/sys/block/loop%d/loop/%s", number, attr);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

static int loop_configure(int fd, int backing_fd, const char *name, bool dio,
			  bool ro)
{
	struct loop_config cfg;
	int rw = 0;
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned)backing_fd;
	cfg.block_size = 512;
	cfg.info.lo_flags = LO_FLAGS_PARTSCAN | (dio ? LO_FLAGS_DIRECT_IO : 0) |
			    (ro ? LO_FLAGS_READ_ONLY : 0);
	snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name),
		 "%s", name ? name : "ublk-flash");
	if (ioctl(fd, LOOP_CONFIGURE, &cfg) < 0)
		return -errno;
	/* a read-only policy (BLKROSET) outlives a binding: one a killed
	 * server (or anyone) left must not make this device read-only */
	if (!ro && ioctl(fd, BLKROSET, &rw) < 0)
		fprintf(stderr, "ublk-flash: warning: BLKROSET 0: %s\n",
			strerror(errno));
	return 0;
}

int plumb_loop_attach(struct loop_dev *ld, int backing_fd, const char *name,
		bool read_only)
{
	int ctl = -1, fd = -1, err = 0, n = -1;
	char dio[16];

	memset(ld, 0, sizeof(*ld));
	ld->fd = -1;
	ld->number = -1;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		err = errno == ENOENT ? -ENODEV : -errno;
		goto err;
	}
	/* Another process may grab the device between GET_FREE and CONFIGURE. */
	for (int tries = 0; tries < 20; tries++) {
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			err = -errno;
			goto err;
		}
		snprintf(ld->path, sizeof(ld->path), "/dev/loop%d", n);
		for (int w = 0; w < 100; w++) {   /* devtmpfs may lag a moment */
			fd = open(ld->path, O_RDWR | O_CLOEXEC);
			if (fd >= 0 || errno != ENOENT)
				break;
			loop_sleep_ms(10);
		}
		if (fd < 0) {
			err = -errno;
			goto err;
		}
		ld->direct_io = true;
		err = loop_configure(fd, backing_fd, name, true, read_only);
		if (err == -EINVAL) {
			fprintf(stderr, "ublk-flash: warning: %s refused direct I/O; "
				"using buffered I/O (slower, less deadlock-safe)\n",
				ld->path);
			ld->direct_io = false;
			err = loop_configure(fd, backing_fd, name, false,
					     read_only);
		}
		if (err != -EBUSY)
			break;
		close(fd);
		fd = -1;
	}
	if (err)
		goto err;
	if (ld->direct_io && loop_sysfs(n, "dio", dio, sizeof(dio)) == 0 &&
	    strcmp(dio, "1") != 0) {
		fprintf(stderr, "ublk-flash: warning: %s runs without direct I/O\n",
			ld->path);
		ld->direct_io = false;
	}
	close(ctl);
	ld->fd = fd;
	ld->number = n;
	return 0;
err:
	if (fd >= 0)
		close(fd);
	if (ctl >= 0)
		close(ctl);
	ld->path[0] = '\0';
	return err;
}

int plumb_loop_detach(struct loop_dev *ld)
{
	int err = 0;

	if (ld->fd < 0)
		return 0;
	for (int tries = 0; tries < 50; tries++) {
		err = ioctl(ld->fd, LOOP_CLR_FD, 0) < 0 ? -errno : 0;
		if (err != -EBUSY)
			break;
		loop_sleep_ms(20);
	}
	close(ld->fd);
	ld->fd = -1;
	return err == -ENXIO ? 0 : err;
}

int plumb_loop_set_capacity(struct loop_dev *ld)
{
	if (ld->fd < 0)
		return -EBADF;
	return ioctl(ld->fd, LOOP_SET_CAPACITY, 0) < 0 ? -errno : 0;
}

int plumb_loop_wait_released(int number, unsigned ms)
{
	char buf[4096];

	for (unsigned t = 0;; t += 10) {
		if (loop_sysfs(number, "backing_file", buf, sizeof(buf)) < 0)
			return 0;   /* no loop/ folder: nothing attached */
		if (t >= ms)
			return -EBUSY;
		loop_sleep_ms(10);
	}
}

int plumb_loop_backing(const char *path, dev_t *dev, ino_t *ino, char *file,
		 size_t len)
{
	struct loop_info64 li;
	struct stat st;
	int fd, err = 0;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode) || major(st.st_rdev) != 7)   /* LOOP_MAJOR */
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, LOOP_GET_STATUS64, &li) < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	*dev = (dev_t)li.lo_device;
	*ino = (ino_t)li.lo_inode;
	if (file && loop_sysfs((int)li.lo_number, "backing_file", file,
			       len) < 0)
		file[0] = '\0';
	return 0;
}

/* Is @file (sysfs's backing_file) @backing, or with @backing ending in
 * '/' a file directly in that folder?  A lazily unmounted backing file
 * may show " (deleted)" after it. */
static bool loop_backing_matches(const char *file, const char *backing)
{
	size_t n = strlen(backing);
	const char *rest = file + n;

	if (strncmp(file, backing, n) != 0)
		return false;
	if (n && backing[n - 1] == '/') {
		size_t m = strlen(rest);
		if (m > 10 && !strcmp(rest + m - 10, " (deleted)"))
			m -= 10;
		return m > 0 && !memchr(rest, '/', m);
	}
	return *rest == '\0' || !strcmp(rest, " (deleted)");
}

int plumb_loop_detach_if_backed_by(const char *path, const char *backing)
{
	struct loop_info64 li;
	char buf[4096];
	int number, fd, err, rw = 0;

	if (sscanf(path, "/dev/loop%d", &number) != 1)
		return -ENOENT;
	/* Open first: while we hold the device, its binding cannot change
	 * under us (a detach by anyone else is deferred to the last close,
	 * a bound device cannot be configured again), so what we check below
	 * is what LOOP_CLR_FD detaches: never a number someone else reused
	 * between the check and the detach. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENXIO ? -ENOENT : -errno;
	if (ioctl(fd, LOOP_GET_STATUS64, &li) < 0 ||
	    loop_sysfs((int)li.lo_number, "backing_file", buf, sizeof(buf)) < 0 ||
	    !loop_backing_matches(buf, backing)) {
		close(fd);
		return -ENOENT;
	}
	/* a read-only policy (BLKROSET) its server set (the engine worn out:
	 * serve/rowatch.c) outlives the binding: taken back here, for a
	 * server killed before its stop could, so that the next user of the
	 * number (losetup, any tool) does not inherit it */
	if (ioctl(fd, BLKROSET, &rw) < 0)
		fprintf(stderr, "ublk-flash: warning: %s: BLKROSET 0: %s\n",
			path, strerror(errno));
	err = ioctl(fd, LOOP_CLR_FD, 0) < 0 ? -errno : 0;
	close(fd);
	if (err == -ENXIO)
		err = 0;
	if (!err)
		plumb_loop_wait_released(number, 2000);
	return err;
}

int plumb_loop_attach_file(const char *file, char *dev, size_t len, int *lfd,
		     char *why, size_t wlen)
{
	struct loop_info64 li;
	int ctl = -1, ffd, fd = -1, ret = 0;

	if ((ffd = open(file, O_RDWR | O_CLOEXEC)) < 0) {
		ret = -errno;
		snprintf(why, wlen, "%s: %s", file, strerror(errno));
		return ret;
	}
	if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) < 0) {
		ret = -errno;
		snprintf(why, wlen, "no loop devices "
			 "(/dev/loop-control: %s)", strerror(errno));
		goto out;
	}
	for (int tries = 0; tries < 16; tries++) {
		int nr = ioctl(ctl, LOOP_CTL_GET_FREE);

		if (nr < 0 || (snprintf(dev, len, "/dev/loop%d", nr),
			       (fd = open(dev, O_RDWR | O_CLOEXEC)) < 0))
			break;
		if (ioctl(fd, LOOP_SET_FD, ffd) == 0)
			break;
		ret = -errno;
		close(fd);
		fd = -1;
		if (ret != -EBUSY)
			break;
	}
	if (fd < 0) {
		ret = ret ? ret : -errno;
		snprintf(why, wlen, "cannot attach %s to a loop "
			 "device: %s", file, strerror(-ret));
		goto out;
	}
	memset(&li, 0, sizeof(li));
	li.lo_flags = LO_FLAGS_AUTOCLEAR;
	snprintf((char *)li.lo_file_name, sizeof(li.lo_file_name), "%s", file);
	if (ioctl(fd, LOOP_SET_STATUS64, &li)) {
		ret = -errno;
		snprintf(why, wlen, "%s: %s", dev, strerror(errno));
		(void)ioctl(fd, LOOP_CLR_FD, 0);
		close(fd);
		goto out;
	}
	*lfd = fd;
	ret = 0;
out:
	if (ctl >= 0)
		close(ctl);
	close(ffd);
	return ret;
}

bool plumb_loop_backs(dev_t dev, const char *file)
{
	char path[128], buf[PATH_MAX + 16];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/loop/backing_file",
		 major(dev), minor(dev));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return !strcmp(buf, file);
}

int plumb_loop_find_backed_by(const char *real, char *name, size_t len)
{
	char file[PATH_MAX], back[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int found = 0;

	d = opendir("/sys/block");
	while (d && !found && (de = readdir(d))) {
		FILE *f;

		if (strncmp(de->d_name, "loop", 4))
			continue;
		snprintf(file, sizeof(file), "/sys/block/%.64s/loop/backing_file", de->d_name);
		f = fopen(file, "re");
		if (!f)
			continue;
		if (fgets(back, sizeof(back), f)) {
			back[strcspn(back, "\n")] = 0;
			if (!strcmp(back, real)) {
				snprintf(name, len, "%s", de->d_name);
				found = 1;
			}
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

int plumb_loop_detach_all_in(const char *mnt)
{
	char backing[PATH_MAX + 8], dev[300];
	int n = 0;

	snprintf(backing, sizeof(backing), "%s/", mnt);   /* any name in it */
	DIR *d = opendir("/sys/block");
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
		if (plumb_loop_detach_if_backed_by(dev, backing) == 0) {
			fprintf(stderr, "ublk-flash: detached stale %s\n", dev);
			n++;
		}
	}
	closedir(d);
	return n;
}
