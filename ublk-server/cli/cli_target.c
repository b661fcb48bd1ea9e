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

/* The whole disk of partition @rdev as /dev/NAME into @out: 0, or
 * -ENOENT when @rdev is no partition (or its disk has no node). */
static int cli_part_parent(dev_t rdev, char *out, size_t len)
{
	char p[128], real[PATH_MAX], node[PATH_MAX + 8], attr[PATH_MAX + 8];
	struct stat st;
	const char *base;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(rdev),
		 minor(rdev));
	if (access(p, F_OK) < 0)
		return -ENOENT;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/..", major(rdev),
		 minor(rdev));
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

int cli_find(const char *arg, struct serve_entry *e, bool *blk)
{
	char mapper[PATH_MAX], parent[PATH_MAX];
	const char *path = arg;
	struct stat st;
	int err;

	*blk = false;
	if (nand_backing_is_uri(arg))   /* an image on an NBD export */
		return serve_entry_find(arg, e);
	if (stat(arg, &st) < 0) {
		err = -errno;
		/* a --dm NAME given bare */
		if (err != -ENOENT || strchr(arg, '/') || !arg[0])
			return err;
		snprintf(mapper, sizeof(mapper), "/dev/mapper/%s", arg);
		if (stat(mapper, &st) < 0 || !S_ISBLK(st.st_mode))
			return err;
		path = mapper;
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

int cli_stale(const char *cmd, const char *arg, const struct serve_entry *e)
{
	fprintf(stderr, "ublk-flash: %s: %s is not served by ublk-flash now: the "
		"server of %s (pid %d, %s) had it, but it is no longer bound to "
		"that server (the number was reused)\n", cmd, arg, e->image,
		(int)e->pid, e->live ? "running" : "gone");
	return EXIT_IO;
}
