/* SPDX-License-Identifier: MIT */
/*
 * Sync the filesystems mounted on a served device (the device, its
 * partitions, devices stacked on it) before `stop --force` cuts it off, so
 * what they hold dirty in memory reaches the image while the server still
 * answers.  Done in a child process the caller waits for a bounded time: a
 * sync that cannot finish (a wedged server) must not hold up the stop.
 */
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
#include "holders.h"

#define SERVE_SYNC_MAXDEV 64

/* The devices whose mounts are synced (plumb_blockdev_family), and how
 * many mounts were. */
struct serve_devset {
	dev_t dev[SERVE_SYNC_MAXDEV];
	unsigned n, synced;
};

/* syncfs the mount @target if @dev is in the set @arg. */
static int serve_sync_one(dev_t dev, const char *target, const char *fstype,
			  void *arg)
{
	struct serve_devset *set = arg;

	(void)fstype;
	for (unsigned i = 0; i < set->n; i++) {
		if (set->dev[i] != dev)
			continue;
		int fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			if (syncfs(fd) == 0)
				set->synced++;
			close(fd);
		}
		break;
	}
	return 0;
}

/* The child: syncfs every mount of a device in @set; exit status = how
 * many (capped). */
static int serve_sync_child(struct serve_devset *set)
{
	plumb_mounts_foreach(serve_sync_one, set);
	return set->synced > 100 ? 100 : (int)set->synced;
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
	set.n = plumb_blockdev_family(st.st_rdev, set.dev, SERVE_SYNC_MAXDEV);
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
