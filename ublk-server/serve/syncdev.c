/* SPDX-License-Identifier: MIT */
/*
 * Sync the filesystems mounted on a served device (the device, its
 * partitions, devices stacked on it) before `stop --force` cuts it off, so
 * what they hold dirty in memory reaches the image while the server still
 * answers.  Done in a child process the caller waits for a bounded time: a
 * sync that cannot finish (a wedged server) must not hold up the stop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "sysfs.h"

#define SERVE_SYNC_MAXDEV 64

struct serve_devset {
	dev_t dev[SERVE_SYNC_MAXDEV];
	unsigned n;
};

static void serve_devset_add(struct serve_devset *s, dev_t d)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->dev[i] == d)
			return;
	if (s->n < SERVE_SYNC_MAXDEV)
		s->dev[s->n++] = d;
}

/* Add the device whose sysfs "dev" file is @path ("MAJ:MIN"). */
static void serve_devset_add_file(struct serve_devset *s, const char *path)
{
	unsigned maj, min;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%u:%u", &maj, &min) == 2)
		serve_devset_add(s, makedev(maj, min));
	fclose(f);
}

/* @d, its partitions and the devices stacked on it (holders), one level. */
static void serve_devset_fill(struct serve_devset *s, dev_t d)
{
	char p[PATH_MAX], q[PATH_MAX + 300];
	struct dirent *de;
	DIR *dir;

	serve_devset_add(s, d);
	if (sysfs_devdir(d, p, sizeof(p)))
		return;
	if ((dir = opendir(p))) {
		while ((de = readdir(dir))) {
			snprintf(q, sizeof(q), "%s/%s/partition", p, de->d_name);
			if (de->d_name[0] == '.' || access(q, F_OK) < 0)
				continue;
			snprintf(q, sizeof(q), "%s/%s/dev", p, de->d_name);
			serve_devset_add_file(s, q);
		}
		closedir(dir);
	}
	snprintf(q, sizeof(q), "%s/holders", p);
	if ((dir = opendir(q))) {
		while ((de = readdir(dir))) {
			char r[PATH_MAX + 600];
			if (de->d_name[0] == '.')
				continue;
			snprintf(r, sizeof(r), "%s/holders/%s/dev", p, de->d_name);
			serve_devset_add_file(s, r);
		}
		closedir(dir);
	}
}

/* Undo mountinfo's octal escapes (\040 for a space ...) in place. */
static void serve_unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* The child: syncfs every mount of a device in @set; exit status = how
 * many (capped). */
static int serve_sync_child(const struct serve_devset *set)
{
	char line[PATH_MAX * 2], mp[PATH_MAX];
	unsigned maj, min, n = 0;

	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) != 3)
			continue;
		for (unsigned i = 0; i < set->n; i++) {
			if (set->dev[i] != makedev(maj, min))
				continue;
			serve_unescape(mp);
			int fd = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0) {
				if (syncfs(fd) == 0)
					n++;
				close(fd);
			}
			break;
		}
	}
	fclose(f);
	return n > 100 ? 100 : (int)n;
}

int serve_sync_mounts(const char *dev, unsigned timeout_ms)
{
	struct serve_devset set = { .n = 0 };
	struct timespec ts = { 0, 20 * 1000000L };
	struct stat st;
	int status;
	pid_t child;

	if (stat(dev, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	serve_devset_fill(&set, st.st_rdev);
	fflush(NULL);
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0)
		_exit(serve_sync_child(&set));
	for (unsigned t = 0; t <= timeout_ms; t += 20) {
		pid_t r = waitpid(child, &status, WNOHANG);
		if (r == child)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -EIO;
		if (r < 0)
			return -errno;
		nanosleep(&ts, NULL);
	}
	/* Still syncing (the server does not answer?): leave it; it ends
	 * once the device is cut off and its I/O fails. */
	return -ETIMEDOUT;
}
