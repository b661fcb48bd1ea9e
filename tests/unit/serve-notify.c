/* SPDX-License-Identifier: MIT */
/*
 * serve_notify (ublk-server/serve/notify.c): the sd_notify datagram reaches
 * a real unix socket named by $NOTIFY_SOCKET, a path one and an abstract
 * ('@') one, exactly as systemd reads it; no $NOTIFY_SOCKET is a no-op;
 * a relative or overlong name is refused; serve_notify_ready with no
 * device still sends READY=1.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"
#include "test.h"

/* A datagram socket bound at @name ('@' = abstract); the fd or -1. */
static int listen_at(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	if (bind(fd, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
			     (name[0] == '/'))) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The next datagram on @fd (waits up to 2 s) into @buf; its length or -1. */
static ssize_t recv_one(int fd, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, 2000) != 1)
		return -1;
	n = recv(fd, buf, len - 1, MSG_DONTWAIT);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

int main(void)
{
	char dir[] = "/tmp/octant-notify-XXXXXX", path[128], abs[64], buf[64];
	int fd, r;

	if (!mkdtemp(dir))
		T_SKIP("mkdtemp: %s", strerror(errno));

	/* nobody to tell */
	unsetenv("NOTIFY_SOCKET");
	T_EQ_U64(serve_notify("READY=1"), 0, "no NOTIFY_SOCKET: nothing sent");
	setenv("NOTIFY_SOCKET", "", 1);
	T_EQ_U64(serve_notify("READY=1"), 0, "empty NOTIFY_SOCKET: nothing sent");

	/* a path socket, as systemd sets it (/run/systemd/notify) */
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = listen_at(path);
	T_CHECK(fd >= 0, "bind %s: %s", path, strerror(errno));
	if (fd >= 0) {
		setenv("NOTIFY_SOCKET", path, 1);
		r = serve_notify("READY=1");
		T_EQ_U64(r, 1, "path socket: sent");
		T_CHECK(recv_one(fd, buf, sizeof(buf)) == 7 &&
			!strcmp(buf, "READY=1"), "path socket got '%s'", buf);
		r = serve_notify("STOPPING=1");
		T_EQ_U64(r, 1, "second message");
		T_CHECK(recv_one(fd, buf, sizeof(buf)) == 10 &&
			!strcmp(buf, "STOPPING=1"), "got '%s'", buf);
		/* serve_notify_ready without a device: only READY=1 */
		serve_notify_ready(NULL);
		T_CHECK(recv_one(fd, buf, sizeof(buf)) == 7 &&
			!strcmp(buf, "READY=1"), "ready got '%s'", buf);
		close(fd);
		unlink(path);
	}

	/* an abstract socket ('@' first, as systemd --user and containers use) */
	snprintf(abs, sizeof(abs), "@octant-notify-%d", (int)getpid());
	fd = listen_at(abs);
	T_CHECK(fd >= 0, "bind %s: %s", abs, strerror(errno));
	if (fd >= 0) {
		setenv("NOTIFY_SOCKET", abs, 1);
		T_EQ_U64(serve_notify("READY=1"), 1, "abstract socket: sent");
		T_CHECK(recv_one(fd, buf, sizeof(buf)) == 7 &&
			!strcmp(buf, "READY=1"), "abstract socket got '%s'", buf);
		close(fd);
	}

	/* nobody listening: an error, not a crash or a hang */
	setenv("NOTIFY_SOCKET", path, 1);
	r = serve_notify("READY=1");
	T_CHECK(r < 0, "no listener: %d", r);

	/* names systemd never sets */
	setenv("NOTIFY_SOCKET", "relative/sock", 1);
	T_EQ_U64(serve_notify("READY=1"), (uint64_t)-EINVAL, "relative name");
	char longp[200];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longp, 1);
	T_EQ_U64(serve_notify("READY=1"), (uint64_t)-EINVAL, "overlong name");

	rmdir(dir);
	return t_result();
}
