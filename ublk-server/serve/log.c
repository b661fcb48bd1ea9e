/* SPDX-License-Identifier: MIT */
/* serve --log syslog|stderr|FILE (log.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

static enum serve_log_kind serve_log_kind;   /* as asked */
static int serve_log_fd = -1;                /* FILE, or the syslog socket */
static enum serve_log_kind serve_log_active = SERVE_LOG_STDERR;
static char serve_log_line[1024];            /* a partial syslog line */
static size_t serve_log_have;
static char serve_log_created[PATH_MAX];       /* FILE made by serve_log_open */

const char *serve_log_socket(void)
{
	const char *s = getenv("UBLK_FLASH_SYSLOG_SOCKET");
	return s && *s ? s : "/dev/log";
}

int serve_log_parse(const char *arg, enum serve_log_kind *kind)
{
	if (!strcmp(arg, "syslog"))
		*kind = SERVE_LOG_SYSLOG;
	else if (!strcmp(arg, "stderr"))
		*kind = SERVE_LOG_STDERR;
	else if (strchr(arg, '/') && arg[strlen(arg) - 1] != '/')
		*kind = SERVE_LOG_FILE;
	else
		return -EINVAL;
	return 0;
}

/* A datagram socket connected to the syslog socket, or -errno. */
static int serve_log_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = serve_log_socket();
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int serve_log_open(enum serve_log_kind kind, const char *arg, char *why,
		   size_t len)
{
	struct stat st;
	int fd;

	serve_log_kind = kind;
	why[0] = '\0';
	if (kind == SERVE_LOG_SYSLOG) {
		fd = serve_log_connect();
		if (fd < 0) {
			snprintf(why, len, "no syslog socket %s (%s): no syslog "
				 "daemon or journald here", serve_log_socket(),
				 strerror(-fd));
			return fd;
		}
		serve_log_fd = fd;
	} else if (kind == SERVE_LOG_FILE) {
		if (lstat(arg, &st) < 0 && errno == ENOENT)
			snprintf(serve_log_created, sizeof(serve_log_created),
				 "%s", arg);
		fd = open(arg, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
			  O_NOCTTY, 0600);
		if (fd < 0) {
			int err = -errno;
			serve_log_created[0] = '\0';
			snprintf(why, len, "%s", strerror(errno));
			return err;
		}
		if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) &&
		    !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
			close(fd);
			serve_log_created[0] = '\0';
			snprintf(why, len, "not a file");
			return -EINVAL;
		}
		serve_log_fd = fd;
	}
	return 0;
}

/* One line to syslog at @prio (the "ublk-flash: " prefix dropped: the tag
 * says it). */
static void serve_log_send(int prio, const char *msg, size_t n)
{
	char d[sizeof(serve_log_line) + 64];
	int h;

	if (n >= 12 && !strncmp(msg, "ublk-flash: ", 12)) {
		msg += 12;
		n -= 12;
	}
	h = snprintf(d, sizeof(d), "<%d>ublk-flash[%d]: ", LOG_DAEMON | prio,
		     (int)getpid());
	if (n > sizeof(d) - (size_t)h)
		n = sizeof(d) - (size_t)h;
	memcpy(d + h, msg, n);
	if (send(serve_log_fd, d, (size_t)h + n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* syslog gone or full: the line is lost, serving goes on */
	}
}

static int serve_log_prio(const char *msg, size_t n)
{
	if (memmem(msg, n, "warning:", 8))
		return LOG_WARNING;
	if (memmem(msg, n, "note:", 5))
		return LOG_NOTICE;
	return LOG_ERR;
}

/* stderr's write function under syslog: whole lines become datagrams. */
static ssize_t serve_log_cookie_write(void *c, const char *buf, size_t size)
{
	(void)c;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n' || serve_log_have == sizeof(serve_log_line)) {
			serve_log_send(serve_log_prio(serve_log_line, serve_log_have),
				       serve_log_line, serve_log_have);
			serve_log_have = 0;
			if (buf[i] == '\n')
				continue;
		}
		serve_log_line[serve_log_have++] = buf[i];
	}
	return (ssize_t)size;
}

void serve_log_abandon(void)
{
	if (serve_log_created[0])
		unlink(serve_log_created);
	serve_log_created[0] = '\0';
}

void serve_log_info(const char *msg)
{
	if (serve_log_active == SERVE_LOG_SYSLOG)
		serve_log_send(LOG_INFO, msg, strlen(msg));
	else if (serve_log_active == SERVE_LOG_FILE)
		fprintf(stderr, "%s\n", msg);
}

enum serve_log_kind serve_log_start(bool daemon, const char *rundir,
				    const char *started)
{
	enum serve_log_kind k = serve_log_kind;
	int fd;

	if (daemon) {
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			close(fd);
		}
	}
	if (k == SERVE_LOG_DEFAULT && daemon) {
		fd = serve_log_connect();
		if (fd >= 0) {
			serve_log_fd = fd;
			k = SERVE_LOG_SYSLOG;
		} else {      /* no syslog here: RUNDIR.log */
			char log[PATH_MAX + 8];
			snprintf(log, sizeof(log), "%s.log", rundir);
			serve_log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC |
					    O_CLOEXEC, 0600);
			k = SERVE_LOG_FILE;
			started = NULL;   /* as before: errors only */
		}
	} else if (k == SERVE_LOG_DEFAULT) {
		k = SERVE_LOG_STDERR;
	}
	fflush(stderr);
	if (k == SERVE_LOG_FILE && serve_log_fd >= 0) {
		dup2(serve_log_fd, 2);
		close(serve_log_fd);
		serve_log_fd = -1;
	} else if (k == SERVE_LOG_SYSLOG) {
		static const cookie_io_functions_t io = {
			.write = serve_log_cookie_write,
		};
		static char buf[1024];   /* nothing allocated while serving */
		FILE *f = fopencookie(NULL, "w", io);

		if (f) {
			setvbuf(f, buf, _IOLBF, sizeof(buf));
			stderr = f;
		}
		/* a library writing to fd 2 itself goes nowhere */
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
	}
	serve_log_active = k;
	serve_log_created[0] = '\0';   /* in use: a later failure keeps it */
	if (started)
		serve_log_info(started);
	return k;
}
