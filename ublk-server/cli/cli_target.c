/* SPDX-License-Identifier: MIT */
/*
 * What a command's IMG|DEV argument names: an image path, a served block
 * device, a partition of one, a --dm device (/dev/mapper/NAME or NAME).
 * The registry (serve_entry_find) then checks the device is still the
 * server's: a loop device by its backing file's device and inode, a ublk
 * device by who holds its /dev/ublkcN, so a reused number never matches.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "commands.h"
#include "nand.h"
#include "serve.h"
#include "sysfs.h"

/* The whole disk of partition @rdev as /dev/NAME into @out: 0, or
 * -ENOENT when @rdev is no partition (or its disk has no node). */
static int cli_part_parent(dev_t rdev, char *out, size_t len)
{
	char dir[96], p[128], real[PATH_MAX], node[PATH_MAX + 8];
	char attr[PATH_MAX + 8];
	struct stat st;
	const char *base;

	if (plumb_sysfs_devdir(rdev, dir, sizeof(dir)))
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/partition", dir);
	if (access(p, F_OK) < 0)
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/..", dir);
	if (!realpath(p, real) || !(base = strrchr(real, '/')))
		return -ENOENT;
	snprintf(node, sizeof(node), "/dev/%s", base + 1);
	/* the node must be that disk, not a name that happens to match */
	snprintf(attr, sizeof(attr), "%s/dev", real);
	FILE *f = fopen(attr, "re");
	unsigned maj, min;
	int ok = f && fscanf(f, "%u:%u", &maj, &min) == 2;
	if (f)
		fclose(f);
	if (!ok || stat(node, &st) < 0 || !S_ISBLK(st.st_mode) ||
	    st.st_rdev != makedev(maj, min))
		return -ENOENT;
	if ((size_t)snprintf(out, len, "%s", node) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* The entry whose --dm device is @mapper (/dev/mapper/NAME) into @e:
 * 0, or -ENOENT when no entry records it. */
static int cli_find_dm_entry(const char *mapper, struct serve_entry *e)
{
	struct serve_entry *v;
	int n, unreadable, err = -ENOENT;

	n = plumb_entry_list(&v, &unreadable);
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].dm, mapper)) {
			*e = v[i];
			err = 0;
			break;
		}
	if (n >= 0)
		free(v);
	return err;
}

static int cli_find_once(const char *arg, struct serve_entry *e, bool *blk,
			 char *path, size_t len);

int cli_find(const char *arg, struct serve_entry *e, bool *blk, char *path,
	     size_t len)
{
	int err = cli_find_once(arg, e, blk, path, len);

	/* Its entry removed under a live server (rm -rf of the run folder)?
	 * The server writes it again within a second: look once more. */
	if (err == -ENOENT && serve_entry_orphan(NULL, 0) > 0 &&
	    serve_entry_wait_orphans(3000) == 0)
		err = cli_find_once(arg, e, blk, path, len);
	return err;
}

static int cli_find_once(const char *arg, struct serve_entry *e, bool *blk,
			 char *path, size_t len)
{
	char mapper[PATH_MAX], parent[PATH_MAX];
	struct stat st;
	int err;

	*blk = false;
	memset(e, 0, sizeof(*e));
	if ((size_t)snprintf(path, len, "%s", arg) >= len)
		return -ENAMETOOLONG;
	if (nand_backing_is_uri(arg))   /* an image on a remote medium */
		return serve_entry_find(arg, e);
	if (stat(arg, &st) < 0) {
		err = -errno;
		if (err != -ENOENT || !arg[0])
			return err;
		if (!strchr(arg, '/'))           /* a --dm NAME given bare */
			snprintf(mapper, sizeof(mapper), "/dev/mapper/%s", arg);
		else if (!strncmp(arg, "/dev/mapper/", 12))
			snprintf(mapper, sizeof(mapper), "%s", arg);
		else
			return err;
		if (stat(mapper, &st) < 0 || !S_ISBLK(st.st_mode)) {
			/* no such dm device: whose --dm device it was, if
			 * the registry says; a bare NAME: what was looked for */
			if (cli_find_dm_entry(mapper, e) == 0 ||
			    !strchr(arg, '/'))
				return -ENODEV;
			return err;
		}
		if ((size_t)snprintf(path, len, "%s", mapper) >= len)
			return -ENAMETOOLONG;
	}
	*blk = S_ISBLK(st.st_mode);
	err = serve_entry_find(path, e);
	/* a partition of a served device: its whole disk's server (an image
	 * that is itself a partition was found above) */
	if (err == -ENOENT && *blk &&
	    cli_part_parent(st.st_rdev, parent, sizeof(parent)) == 0)
		err = serve_entry_find(parent, e);
	return err;
}

int cli_no_dm(const char *cmd, const char *arg, const struct serve_entry *e)
{
	if (!e->dm[0]) {
		fprintf(stderr, "ublk-flash: %s: %s: no such file, and no "
			"device-mapper device /dev/mapper/%s (a bare NAME is a "
			"--dm NAME)\n", cmd, arg, arg);
		return EXIT_IO;
	}
	fprintf(stderr, "ublk-flash: %s: %s: %s does not exist: it was the --dm "
		"device of the server of %s (pid %d, %s) on %s; name the image "
		"or that device\n", cmd, arg, e->dm, e->image, (int)e->pid,
		e->live ? "running" : "gone", e->dev[0] ? e->dev : "no device");
	return EXIT_IO;
}

int cli_stale(const char *cmd, const char *arg, const struct serve_entry *e)
{
	fprintf(stderr, "ublk-flash: %s: %s is not served by ublk-flash now: the "
		"server of %s (pid %d, %s) had it, but it is no longer bound to "
		"that server (the number was reused)\n", cmd, arg, e->image,
		(int)e->pid, e->live ? "running" : "gone");
	return EXIT_IO;
}
