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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "holders.h"
#include "loopdev.h"
#include "sysfs.h"
#include "serve.h"

/* Abort the FUSE connection mounted on @mnt, if one still looks alive
 * (its server is gone but, e.g., stuck exiting): pending and future
 * requests then fail with ENOTCONN instead of hanging. */
static int serve_fuse_conn(dev_t dev, const char *target, const char *fstype,
			   void *arg)
{
	const char *mnt = arg;

	/* a FUSE mount's device minor is its connection number */
	return !strcmp(target, mnt) && !strncmp(fstype, "fuse", 4) ?
	       (int)minor(dev) + 1 : 0;
}

static void serve_abort_fuse(const char *mnt)
{
	int conn = plumb_mounts_foreach(serve_fuse_conn, (void *)mnt);

	if (conn > 0)
		plumb_sysfs_fuse_abort((unsigned)conn - 1);
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
	n = plumb_loop_detach_all_in(mnt);
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

	DIR *d = opendir(plumb_run_base());
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "img-", 4) != 0 || strchr(de->d_name, '.'))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", plumb_run_base(), de->d_name);
		if (self && !strcmp(dir, self))
			continue;
		if (serve_entry_trylock(dir, &fd) < 0)
			continue;         /* live (or being looked at) */
		pid_t owner;
		if (serve_entry_dead(dir, &owner) < 0) {
			close(fd);        /* live: its lock file was replaced */
			continue;
		}
		bool dead = plumb_entry_load(dir, &e) == 0;
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
