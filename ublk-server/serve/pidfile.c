/* SPDX-License-Identifier: MIT */
/* serve --pidfile FILE (pidfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oct-parse.h"
#include "oct-proc.h"
#include "pidfile.h"

/* The pid @path holds, 0 if none (missing, empty, not a number). */
static pid_t serve_pidfile_read(const char *path)
{
	char buf[32];
	uint64_t v;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (oct_parse_uint(buf, 1, INT_MAX, &v))
		return 0;
	return (pid_t)v;
}

int serve_pidfile_check(const char *path, char *abs, size_t len, pid_t *live,
			char *why, size_t wlen)
{
	char dir[PATH_MAX], real[PATH_MAX], comm[64] = "";
	const char *base, *slash = strrchr(path, '/');
	struct stat st;
	pid_t pid;

	*live = 0;
	why[0] = '\0';
	if (!*path || (slash && !slash[1]))
		return -EISDIR;
	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + (slash == path)),
			 path);
		base = slash + 1;
	} else {
		snprintf(dir, sizeof(dir), ".");
		base = path;
	}
	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (!realpath(dir, real))
		return -errno;
	if (access(real, W_OK) < 0)
		return -errno;
	if ((size_t)snprintf(abs, len, "%s/%s", strcmp(real, "/") ? real : "",
			     base) >= len)
		return -ENAMETOOLONG;
	if (lstat(abs, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	pid = serve_pidfile_read(abs);
	if (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)) {
		oct_pid_comm(pid, comm, sizeof(comm));
		*live = pid;
		snprintf(why, wlen, "it names pid %d%s%s%s, which is running",
			 (int)pid, comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
		return -EEXIST;
	}
	return 0;   /* absent or stale: replaced once the device is live */
}

int serve_pidfile_write(const char *abs, pid_t pid)
{
	char tmp[PATH_MAX + 16], line[32];
	int fd, err = 0, n;

	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", abs);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(line, sizeof(line), "%d\n", (int)pid);
	if (fchmod(fd, 0644) < 0 || write(fd, line, (size_t)n) != n ||
	    fsync(fd) < 0)
		err = errno ? -errno : -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, abs) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

void serve_pidfile_remove(const char *abs, pid_t pid)
{
	if (abs && serve_pidfile_read(abs) == pid)
		unlink(abs);
}
