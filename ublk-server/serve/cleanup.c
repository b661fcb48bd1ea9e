/* SPDX-License-Identifier: MIT */
/*
 * After a dead server: what it left (loop devices backed by its FUSE file,
 * its FUSE mount, the registry files), once owner.c proved it gone, and
 * the sweep of every stale entry (serve.h).  Above the registry
 * (registry.c) and the proof (owner.c), which it uses.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "loopdev.h"
#include "sysfs.h"
#include "serve.h"

/* Abort the FUSE connection mounted on @mnt, if one still looks alive
 * (its server is gone but, e.g., stuck exiting): pending and future
 * requests then fail with ENOTCONN instead of hanging. */
static void serve_abort_fuse(const char *mnt)
{
	char line[PATH_MAX * 2];
	unsigned maj, min;
	bool found = false;

	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX];
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) == 3 &&
		    !strcmp(mp, mnt) && strstr(line, " - fuse")) {
			found = true;
			break;
		}
	}
	fclose(f);
	if (!found)
		return;
	sysfs_fuse_abort(min);
}

int serve_entry_cleanup(const char *dir)
{
	char mnt[PATH_MAX];
	pid_t owner;
	int n;

	int err = serve_entry_dead(dir, &owner);

	if (err)
		return err;           /* a live server's, or not proven: touch nothing */
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	serve_abort_fuse(mnt);
	n = loop_detach_all_in(mnt);
	/* A dead server's FUSE mount answers ENOTCONN; detach it lazily. */
	if (umount2(mnt, MNT_DETACH) == 0) {
		fprintf(stderr, "ublk-flash: unmounted stale FUSE mount %s\n", mnt);
		n++;
	}
	rmdir(mnt);
	serve_entry_clear(dir);
	return n;
}

int serve_sweep(const char *self)
{
	char dir[PATH_MAX];
	struct serve_entry e;
	int n = 0, fd;

	DIR *d = opendir(serve_base());
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "img-", 4) != 0 || strchr(de->d_name, '.'))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", serve_base(), de->d_name);
		if (self && !strcmp(dir, self))
			continue;
		if (serve_entry_trylock(dir, &fd) < 0)
			continue;         /* live (or being looked at) */
		pid_t owner;
		if (serve_entry_dead(dir, &owner) < 0) {
			close(fd);        /* live: its lock file was replaced */
			continue;
		}
		bool dead = serve_entry_load(dir, &e) == 0;
		/* A dead ublk server's device waits for `serve --recover`;
		 * its entry stays until then (or `stop`). */
		if (!dead || strcmp(e.frontend, "ublk") != 0) {
			if (dead)
				serve_entry_cleanup(dir);
			serve_entry_remove(dir, false);
			n++;
		}
		close(fd);
	}
	closedir(d);
	return n;
}
