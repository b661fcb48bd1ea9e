/* SPDX-License-Identifier: MIT */
/* sd_notify without libsystemd, and a udev change event (notify.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

int serve_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n, len = strlen(state);
	socklen_t salen;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';   /* abstract namespace */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
			    (path[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, len, MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   salen) != (ssize_t)len)
		err = -errno;
	close(fd);
	return err ? err : 1;
}

/* "change" to the device's uevent file: udev runs its rules again. */
static int serve_notify_udev(const char *devpath)
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

void serve_notify_ready(const char *devpath)
{
	int err = serve_notify_udev(devpath);

	if (err < 0)
		fprintf(stderr, "ublk-flash: warning: udev change event for %s: "
			"%s\n", devpath, strerror(-err));
	err = serve_notify("READY=1");
	if (err < 0)
		fprintf(stderr, "ublk-flash: warning: NOTIFY_SOCKET: %s\n",
			strerror(-err));
}
