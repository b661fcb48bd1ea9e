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
#include "sysfs.h"

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

void serve_notify_ready(const char *devpath)
{
	int err = plumb_sysfs_uevent_change(devpath);

	if (err < 0)
		fprintf(stderr, "ublk-flash: warning: udev change event for %s: "
			"%s\n", devpath, strerror(-err));
	err = serve_notify("READY=1");
	if (err < 0)
		fprintf(stderr, "ublk-flash: warning: NOTIFY_SOCKET: %s\n",
			strerror(-err));
}
