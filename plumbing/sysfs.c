/* SPDX-License-Identifier: MIT */
/* /sys paths of block devices and FUSE connections (see sysfs.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "plumb-private.h"
#include "sysfs.h"

int plumb_sysfs_devdir(dev_t dev, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "/sys/dev/block/%u:%u", major(dev),
			     minor(dev)) >= len)
		return -ENAMETOOLONG;
	return 0;
}

void plumb_sysfs_fuse_abort(unsigned conn)
{
	char p[96];
	int fd;

	snprintf(p, sizeof(p), "/sys/fs/fuse/connections/%u/abort", conn);
	if (access(p, F_OK) < 0)
		mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) < 0) {
		/* already gone */
	}
	close(fd);
}

int plumb_sysfs_devname(dev_t dev, char *buf, size_t len)
{
	char path[128], line[256];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major(dev),
		 minor(dev));
	if (!(f = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "DEVNAME=", 8)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "/dev/%s", line + 8);
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

int plumb_sysfs_uevent_change(const char *devpath)
{
	const char *name = devpath ? strrchr(devpath, '/') : NULL;
	char p[256];
	int fd, err = 0;

	name = name ? name + 1 : devpath;
	if (!name || !*name)
		return 0;
	if ((size_t)snprintf(p, sizeof(p), "/sys/class/block/%s/uevent", name)
	    >= sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (write(fd, "change", 6) != 6)
		err = -errno;
	close(fd);
	return err;
}

DIR *plumb_sysfs_class_open(const char *cls)
{
	char p[128];

	if ((size_t)snprintf(p, sizeof(p), "/sys/class/%s", cls) >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return opendir(p);
}

int plumbp_read_devno(const char *file, dev_t *dev)
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
