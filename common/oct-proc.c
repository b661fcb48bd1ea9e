/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oct-proc.h"

bool oct_pid_holds_chr(long pid, dev_t rdev)
{
	char fdir[64], link[400];
	struct dirent *de;
	struct stat st;
	bool held = false;
	DIR *d;

	snprintf(fdir, sizeof(fdir), "/proc/%ld/fd", pid);
	d = opendir(fdir);
	if (!d)
		return false;
	while (!held && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", fdir, de->d_name);
		held = stat(link, &st) == 0 && S_ISCHR(st.st_mode) &&
		       st.st_rdev == rdev;
	}
	closedir(d);
	return held;
}

bool oct_any_holds_chr(dev_t rdev)
{
	struct dirent *de;
	bool held = false;
	DIR *d = opendir("/proc");

	if (!d)
		return false;
	while (!held && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!*end && pid > 0)
			held = oct_pid_holds_chr(pid, rdev);
	}
	closedir(d);
	return held;
}

char *oct_pid_comm(long pid, char *buf, size_t len)
{
	char p[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(p, sizeof(p), "/proc/%ld/comm", pid);
	f = fopen(p, "re");
	if (!f)
		return buf;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

int oct_fd_flock(long pid, int fd)
{
	char p[64], line[256];
	int held = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%ld/fdinfo/%d", pid, fd);
	if (!(f = fopen(p, "re")))    /* closed, or its process gone: none */
		return errno == ENOENT || errno == ESRCH || errno == EACCES ?
		       0 : -errno;
	/* "lock:\t1: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO 0 EOF" */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "lock:", 5) && strstr(line, " FLOCK ") &&
		    !strstr(line, "->"))
			held = strstr(line, " WRITE ") ? 2 : held ? held : 1;
	fclose(f);
	return held;
}

long oct_proc_fd_find(int (*fn)(long pid, int fd, const char *target,
				const struct stat *st, void *arg), void *arg)
{
	char fdir[64], link[400], target[4096];
	struct dirent *de, *fe;
	struct stat st;
	long self = (long)getpid(), hit = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while (!hit && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		DIR *fds;

		if (*end || pid <= 0 || pid == self)
			continue;
		snprintf(fdir, sizeof(fdir), "/proc/%ld/fd", pid);
		if (!(fds = opendir(fdir))) {
			/* gone, or another user's (not root): passed over;
			 * out of descriptors or memory: no answer */
			if (errno != ENOENT && errno != ESRCH && errno != EACCES) {
				hit = -errno;
				break;
			}
			continue;
		}
		while (!hit && (fe = readdir(fds))) {
			ssize_t n;
			long fd = strtol(fe->d_name, &end, 10);

			if (*end || fd < 0)
				continue;
			snprintf(link, sizeof(link), "%s/%s", fdir, fe->d_name);
			n = readlink(link, target, sizeof(target) - 1);
			if (n < 0 || stat(link, &st) < 0)
				continue;
			target[n] = '\0';
			int r = fn(pid, (int)fd, target, &st, arg);
			if (r)
				hit = r < 0 ? r : pid;
		}
		closedir(fds);
	}
	closedir(d);
	return hit;
}

struct oct_owner_q {
	dev_t dev;
	ino_t ino;
	bool write;
};

static int oct_owner_match(long pid, int fd, const char *target,
			   const struct stat *st, void *arg)
{
	const struct oct_owner_q *q = arg;
	int held;

	(void)target;
	if (st->st_dev != q->dev || st->st_ino != q->ino)
		return 0;
	held = oct_fd_flock(pid, fd);
	return held < 0 ? held : q->write ? held == 2 : held > 0;
}

long oct_flock_owner(dev_t dev, ino_t ino, bool write)
{
	struct oct_owner_q q = { dev, ino, write };

	return oct_proc_fd_find(oct_owner_match, &q);
}
