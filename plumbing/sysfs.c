/* SPDX-License-Identifier: MIT */
/* /sys paths of block devices and FUSE connections (see sysfs.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sysfs.h"

int sysfs_devdir(dev_t dev, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "/sys/dev/block/%u:%u", major(dev),
			     minor(dev)) >= len)
		return -ENAMETOOLONG;
	return 0;
}

void sysfs_fuse_abort(unsigned conn)
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
