/* SPDX-License-Identifier: MIT */
/*
 * ap-map — `alignpart map` / `alignpart unmap`: kpartx-style dm-linear
 * mappings of a table's partitions.  See ap-map.h.
 */
#include "ap-map.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libfdisk.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dmstack.h"
#include "ap.h"
#include "loopdev.h"
#include "sysfs.h"

#define EXIT_USAGE AP_EXIT_USAGE
#define EXIT_IO    AP_EXIT_IO
#define EXIT_BUSY  AP_EXIT_REFUSED
#define MAX_DEPS   8

static int exit_for(int err)
{
	return err == -EEXIST || err == -EBUSY ? EXIT_BUSY : EXIT_IO;
}

/* NAME-partN for @target's basename into @buf. */
static int part_name(const char *target, unsigned partno, char *buf,
		     size_t len)
{
	const char *base = strrchr(target, '/');
	size_t blen;

	base = base ? base + 1 : target;
	blen = strlen(base);
	while (blen && base[blen - 1] == '/')
		blen--;
	if (!blen || (size_t)snprintf(buf, len, "%.*s-part%u", (int)blen, base,
				      partno) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int ap_map_partitions(const char *target, struct ap_map_part **parts,
		      size_t *n)
{
	struct fdisk_context *cxt = fdisk_new_context();
	struct fdisk_table *tb = NULL;
	struct fdisk_iter *itr = NULL;
	struct fdisk_partition *pa = NULL;
	struct ap_map_part *v = NULL, *nv;
	size_t cnt = 0;
	unsigned long ss;
	int ret;

	*parts = NULL;
	*n = 0;
	if (!cxt)
		return -ENOMEM;
	if ((ret = fdisk_assign_device(cxt, target, 1)) < 0)
		goto out;
	if (!fdisk_has_label(cxt)) {
		ret = -ENOMEDIUM;
		goto out;
	}
	ss = fdisk_get_sector_size(cxt);
	if ((ret = fdisk_get_partitions(cxt, &tb)) < 0)
		goto out;
	if (!(itr = fdisk_new_iter(FDISK_ITER_FORWARD))) {
		ret = -ENOMEM;
		goto out;
	}
	while (fdisk_table_next_partition(tb, itr, &pa) == 0) {
		struct ap_map_part *p;

		if (!fdisk_partition_is_used(pa) ||
		    fdisk_partition_is_container(pa) ||
		    !fdisk_partition_has_start(pa) ||
		    !fdisk_partition_has_size(pa) ||
		    !fdisk_partition_has_partno(pa))
			continue;
		if (!(nv = realloc(v, (cnt + 1) * sizeof(*v)))) {
			ret = -ENOMEM;
			goto out;
		}
		v = nv;
		p = &v[cnt++];
		memset(p, 0, sizeof(*p));
		p->partno = (unsigned)fdisk_partition_get_partno(pa) + 1;
		p->start_lba = fdisk_partition_get_start(pa);
		p->start_sector = p->start_lba * ss / DMSTACK_SECTOR;
		p->nr_sectors = fdisk_partition_get_size(pa) * ss /
				DMSTACK_SECTOR;
		if ((ret = part_name(target, p->partno, p->name,
				     sizeof(p->name))))
			goto out;
	}
	*parts = v;
	*n = cnt;
	v = NULL;
	ret = 0;
out:
	free(v);
	fdisk_free_iter(itr);
	fdisk_unref_table(tb);
	fdisk_unref_context(cxt);
	return ret;
}

static void usage(FILE *out, const char *cmd)
{
	bool map = !strcmp(cmd, "map");

	fprintf(out,
		"Usage: alignpart %s [--verbose]%s TARGET\n"
		"%s"
		"  TARGET is a block device or a partitioned image file (attached\n"
		"  to an auto-clearing loop device); mappings are named NAME-partN,\n"
		"  NAME = basename of TARGET, and live in /dev/mapper.\n"
		"  -v, --verbose   say more (start, kernel alignment_offset)\n"
		"%s"
		"  -h, --help      this text\n"
		"Exit 0 done, 1 verify found differences, 2 usage, 3 I/O or no\n"
		"device-mapper, 5 refused (a mapping exists / is in use).\n",
		cmd, map ? " [--verify]" : "", map ?
		"Create a dm-linear mapping for each partition and print its path.\n" :
		"Remove the partition mappings `alignpart map TARGET` made.\n",
		map ? "  --verify        create nothing: compare each existing mapping's\n"
		      "                  sysfs alignment_offset with libalign's prediction\n" :
		"");
}

/* Common option parsing; returns the target or NULL (with *rc set). */
static const char *parse_args(int argc, char **argv, const char *cmd,
			      bool *verbose, bool *verify, int *rc)
{
	static const struct option lopts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "verify", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			*verbose = true;
			break;
		case 'V':
			if (!verify)
				goto bad;   /* unmap has no --verify */
			*verify = true;
			break;
		case 'h':
			usage(stdout, cmd);
			*rc = 0;
			return NULL;
		default:
bad:
			(void)ap_cmd_fail(cmd, 0, "unknown option '%s'",
					  argv[optind - 1]);
			*rc = EXIT_USAGE;
			return NULL;
		}
	}
	if (optind != argc - 1) {
		(void)ap_cmd_fail(cmd, 0, "expected one TARGET (alignpart %s --help)",
				  cmd);
		*rc = EXIT_USAGE;
		return NULL;
	}
	return argv[optind];
}

/* `alignpart map --verify TARGET`. */
static int map_verify_cmd(const char *target)
{
	size_t mapped = 0;
	int ret;

	if ((ret = plumb_dm_available())) {
		(void)ap_cmd_fail("map", 0, "%s", plumb_dm_errmsg());
		return EXIT_IO;
	}
	ret = ap_map_verify(target, NULL, true, &mapped);
	if (ret < 0) {
		(void)ap_cmd_fail("map", 0, "%s: %s", target,
			ret == -ENOMEDIUM ? "no partition table" : strerror(-ret));
		return EXIT_IO;
	}
	if (!mapped) {
		(void)ap_cmd_fail("map", 0, "no partition of %s is mapped "
			"(alignpart map %s)", target, target);
		return EXIT_IO;
	}
	return ret ? AP_EXIT_MISALIGNED : 0;
}

int ap_cmd_map(int argc, char **argv)
{
	struct ap_map_part *parts = NULL;
	char lower[PATH_MAX], path[PATH_MAX];
	bool verbose = false, verify = false;
	size_t n = 0, made = 0;
	int lfd = -1, ret, rc = EXIT_IO;
	const char *target = parse_args(argc, argv, "map", &verbose, &verify,
					&rc);
	struct stat st;

	if (!target)
		return rc;
	if (verify)
		return map_verify_cmd(target);
	if (stat(target, &st)) {
		(void)ap_cmd_fail("map", 0, "%s: %s", target,
			strerror(errno));
		return EXIT_IO;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		(void)ap_cmd_fail("map", 0, "%s is neither a block device "
			"nor an image file", target);
		return EXIT_IO;
	}
	if ((ret = plumb_dm_available())) {
		(void)ap_cmd_fail("map", 0, "%s", plumb_dm_errmsg());
		return EXIT_IO;
	}
	ret = ap_map_partitions(target, &parts, &n);
	if (ret) {
		(void)ap_cmd_fail("map", 0, "%s: %s", target,
			ret == -ENOMEDIUM ? "no partition table" :
			ret == -ENAMETOOLONG ? "name too long for device-mapper" :
			strerror(-ret));
		return EXIT_IO;
	}
	if (n == 0) {
		(void)ap_cmd_fail("map", 0, "%s: the table has no "
			"partitions", target);
		rc = 0;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if ((ret = plumb_dm_exists(parts[i].name)) != 0) {
			if (ret > 0)
				(void)ap_cmd_fail("map", 0, "dm device '%s' "
					"already exists (alignpart unmap %s)",
					parts[i].name, target);
			else
				(void)ap_cmd_fail("map", 0, "%s",
					plumb_dm_errmsg());
			rc = ret > 0 ? EXIT_BUSY : EXIT_IO;
			goto out;
		}
	}
	if (S_ISREG(st.st_mode)) {
		char why[PATH_MAX + 128];

		if ((ret = plumb_loop_attach_file(target, lower, sizeof(lower), &lfd,
					    why, sizeof(why)))) {
			(void)ap_cmd_fail("map", 0, "%s", why);
			goto out;
		}
	} else {
		snprintf(lower, sizeof(lower), "%s", target);
	}
	for (made = 0; made < n; made++) {
		const struct ap_map_part *p = &parts[made];
		long long off = 0;

		ret = plumb_dm_linear_create(p->name, lower, p->start_sector,
					    p->nr_sectors, path, sizeof(path));
		if (ret) {
			(void)ap_cmd_fail("map", 0, "%s", plumb_dm_errmsg());
			rc = exit_for(ret);
			while (made--)
				(void)plumb_dm_remove(parts[made].name);
			goto out;
		}
		if (verbose && plumb_dm_alignment_offset(p->name, &off) == 0)
			ap_out("%s start %llu alignment_offset %lld", path,
			       (unsigned long long)p->start_lba, off);
		else
			ap_out("%s", path);
	}
	rc = 0;
out:
	if (lfd >= 0)
		close(lfd);
	free(parts);
	return rc;
}

struct unmap_ctx {
	char prefix[160];       /* NAME-part */
	char names[256][128];
	size_t n;
};

static int collect(const char *name, dev_t dev, void *arg)
{
	struct unmap_ctx *u = arg;
	size_t pl = strlen(u->prefix);
	const char *d = name + pl;

	(void)dev;
	if (strncmp(name, u->prefix, pl) || !*d || strspn(d, "0123456789") !=
	    strlen(d) || u->n >= sizeof(u->names) / sizeof(u->names[0]))
		return 0;
	snprintf(u->names[u->n++], sizeof(u->names[0]), "%s", name);
	return 0;
}

/* Does dm device @name sit on @target (its device, or its image's loop)? */
static bool maps_target(const char *name, const struct stat *st,
			const char *real)
{
	dev_t deps[MAX_DEPS];
	size_t n = 0;

	if (plumb_dm_deps(name, deps, MAX_DEPS, &n) || n != 1)
		return false;
	return S_ISBLK(st->st_mode) ? deps[0] == st->st_rdev :
	       plumb_loop_backs(deps[0], real);
}

int ap_cmd_unmap(int argc, char **argv)
{
	struct unmap_ctx *u = NULL;
	char real[PATH_MAX];
	bool verbose = false;
	int ret, rc = EXIT_IO;
	const char *target = parse_args(argc, argv, "unmap", &verbose, NULL,
					&rc);
	struct stat st;

	if (!target)
		return rc;
	if (stat(target, &st) || !realpath(target, real)) {
		(void)ap_cmd_fail("unmap", 0, "%s: %s", target,
			strerror(errno));
		return EXIT_IO;
	}
	if ((ret = plumb_dm_available())) {
		(void)ap_cmd_fail("unmap", 0, "%s", plumb_dm_errmsg());
		return EXIT_IO;
	}
	if (!(u = calloc(1, sizeof(*u))) ||
	    part_name(target, 0, u->prefix, sizeof(u->prefix))) {
		(void)ap_cmd_fail("unmap", 0, "%s: %s", target,
			u ? "name too long" : strerror(ENOMEM));
		goto out;
	}
	u->prefix[strlen(u->prefix) - 1] = '\0';   /* "NAME-part0" -> "NAME-part" */
	if ((ret = plumb_dm_foreach(collect, u))) {
		(void)ap_cmd_fail("unmap", 0, "%s", plumb_dm_errmsg());
		goto out;
	}
	rc = 0;
	for (size_t i = 0; i < u->n; i++) {
		if (!maps_target(u->names[i], &st, real)) {
			(void)ap_cmd_fail("unmap", 0, "%s does not map %s; "
				"left alone\n", u->names[i], target);
			continue;
		}
		if ((ret = plumb_dm_remove(u->names[i]))) {
			(void)ap_cmd_fail("unmap", 0, "%s", plumb_dm_errmsg());
			rc = exit_for(ret);
		} else if (verbose) {
			ap_out("removed %s/%s", plumb_dm_dir(), u->names[i]);
		}
	}
	if (u->n == 0 && verbose)
		ap_out("no mappings of %s", target);
out:
	free(u);
	return rc;
}

int ap_map_sysfs_offset(const char *dmname, long long *off)
{
	return plumb_dm_alignment_offset(dmname, off);
}

int ap_map_verify(const char *target, const struct align_topology *t,
		  bool print, size_t *nmapped)
{
	struct ap_map_part *parts = NULL;
	struct align_topology lt;
	size_t n = 0, mapped = 0;
	int ret, diffs = 0;

	if ((ret = ap_map_partitions(target, &parts, &n)))
		return ret;
	for (size_t i = 0; i < n; i++) {
		const struct ap_map_part *p = &parts[i];
		const struct align_topology *use = t;
		long long kern, pred;
		char node[PATH_MAX];
		dev_t deps[MAX_DEPS];
		size_t nd = 0;

		if (plumb_dm_alignment_offset(p->name, &kern))
			continue;   /* not mapped */
		if (!use) {
			if (plumb_dm_deps(p->name, deps, MAX_DEPS, &nd) || nd != 1 ||
			    plumb_sysfs_devname(deps[0], node, sizeof(node)) ||
			    align_topology_probe(node, &lt))
				continue;
			use = &lt;
		}
		mapped++;
		pred = align_dm_linear_offset(use, p->start_sector);
		if (pred != kern)
			diffs++;
		if (print)   /* one line, whatever the name holds (ap_out) */
			ap_out("part%u %s/%s start %llu: predicted %lld, "
			       "kernel %lld (%s)", p->partno, plumb_dm_dir(),
			       p->name, (unsigned long long)p->start_lba, pred,
			       kern, pred == kern ? "same" : "DIFFERENT");
	}
	free(parts);
	if (nmapped)
		*nmapped = mapped;
	return diffs;
}
