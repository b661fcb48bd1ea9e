/* SPDX-License-Identifier: MIT */
/*
 * libalign: align_topology_from_served believes a ublk-flash run registry
 * entry only when it is live and really describes the device.  Every entry
 * here is wrong in one way (garbage files, no lock holder, a lock that is a
 * symlink, a live lock but a device that is not the entry's loop / ublk /
 * dm device, an image that is not the folder's file), so each lookup must
 * fail and align_topology_probe must keep the kernel's report: -ENOENT when
 * no live entry names the device, -ESTALE (with the recorded image path,
 * read whole: it may hold a newline) when a live one names it but does not
 * check out, so that the caller can say the kernel's topology is used.
 * (The positive cases need root and a loop device:
 * tests/integration/alignpart-served.bats.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "align.h"
#include "test.h"

static char base[] = "/tmp/align-served-XXXXXX";
static char dev[300];

/* A block device node whose number sysfs lists; with @any false not a
 * loop or nbd device (whose backing file may belong to a hung server). */
static int find_blockdev(bool any)
{
	struct dirent *de;
	DIR *d = opendir("/sys/dev/block");
	int found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		char p[600], line[300];
		unsigned ma, mi;
		struct stat st;
		FILE *f;

		if (sscanf(de->d_name, "%u:%u", &ma, &mi) != 2)
			continue;
		snprintf(p, sizeof(p), "/sys/dev/block/%s/uevent", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "DEVNAME=", 8)) {
				line[strcspn(line, "\n")] = '\0';
				if (!any && (!strncmp(line + 8, "loop", 4) ||
					     !strncmp(line + 8, "nbd", 3)))
					continue;
				snprintf(dev, sizeof(dev), "/dev/%s", line + 8);
				found = stat(dev, &st) == 0 && S_ISBLK(st.st_mode) &&
					st.st_rdev == makedev(ma, mi);
			}
		fclose(f);
	}
	closedir(d);
	return found;
}

static void put(const char *dir, const char *name, const char *value)
{
	char p[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "we");
	if (!f) {
		perror(p);
		exit(T_EXIT_FAIL);
	}
	fputs(value, f);
	fclose(f);
}

/* An entry folder named after @image's numbers (or @name if given). */
static void entry(char *dir, size_t len, const char *image, const char *name)
{
	struct stat st;

	if (name) {
		snprintf(dir, len, "%s/%s", base, name);
	} else {
		if (stat(image, &st) < 0) {
			perror(image);
			exit(T_EXIT_FAIL);
		}
		snprintf(dir, len, "%s/img-%llx-%llu", base,
			 (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
	}
	mkdir(dir, 0700);
}

/* The lookup of dev fails with @want (-ENOENT: no live entry names it,
 * image untouched; -ESTALE: a live one names it but does not check out,
 * image the one it records, @image); the probe keeps the kernel's. */
static void expect_refused(const char *what, int want, const char *image)
{
	struct align_topology t;
	char img[600] = "untouched";
	int r = align_topology_from_served(dev, &t, img, sizeof(img));

	T_CHECK(r == want, "%s: %d (%s), want %d", what, r, strerror(-r), want);
	if (want == -ENOENT)
		T_CHECK(!strcmp(img, "untouched"), "%s: image set to %s", what, img);
	else
		T_CHECK(!strcmp(img, image), "%s: image '%s', want '%s'", what,
			img, image);
	r = align_topology_probe(dev, &t);
	T_CHECK(r < 0 || t.source == ALIGN_SRC_DEVICE, "%s: probe source %d",
		what, (int)t.source);
	/* the one probe a command makes says the same (issue 32 item 4) */
	static struct align_probe p;
	r = align_probe(dev, &p);
	T_CHECK(r < 0 || p.t.source == ALIGN_SRC_DEVICE, "%s: align_probe "
		"source %d", what, (int)p.t.source);
	T_CHECK(p.served == want, "%s: align_probe served %d, want %d", what,
		p.served, want);
	T_CHECK(!strcmp(p.image, want == -ENOENT ? "" : image), "%s: "
		"align_probe image '%s'", what, p.image);
}

static void expect_not_served(const char *what)
{
	expect_refused(what, -ENOENT, NULL);
}

static void expect_unverified(const char *what, const char *image)
{
	expect_refused(what, -ESTALE, image);
}

int main(void)
{
	char e1[600], e2[600], e3[600], e4[600], image[600], other[600];
	char nl[600], lock[700], longline[6000], buf[700];
	struct align_topology t;
	int lfd, fd, fd4;

	if (!find_blockdev(false) && !find_blockdev(true))
		T_SKIP("no block device node found in /dev");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return T_EXIT_FAIL;
	}
	fprintf(stderr, "block device %s, registry %s\n", dev, base);

	T_CHECK(align_topology_from_served(NULL, &t, NULL, 0) == -EINVAL, "NULL");
	T_CHECK(align_topology_from_served(dev, &t, NULL, 8) == -EINVAL,
		"NULL image with a length");
	T_CHECK(align_topology_from_served(base, &t, NULL, 0) == -ENOTBLK,
		"a directory");
	{
		static struct align_probe p;

		T_CHECK(align_probe(NULL, &p) == -EINVAL, "align_probe NULL");
		T_CHECK(align_probe(base, &p) == -EISDIR &&
			p.served == -ENOTBLK && !p.image[0],
			"align_probe of a directory: served %d", p.served);
	}

	setenv("UBLK_FLASH_RUN_DIR", "/nonexistent/octant-run", 1);
	expect_not_served("missing registry");
	setenv("UBLK_FLASH_RUN_DIR", base, 1);
	expect_not_served("empty registry");

	/* the image: a plain regular file the folder is named after */
	snprintf(image, sizeof(image), "%s/a.img", base);
	fd = open(image, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	T_CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "image file");
	if (fd >= 0)
		close(fd);

	/* garbage, no lock holder */
	entry(e1, sizeof(e1), image, NULL);
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	put(e1, "lock", "");
	put(e1, "pid", "abc\n");
	put(e1, "image", longline);
	snprintf(buf, sizeof(buf), "%s\n", dev);
	put(e1, "dev", buf);
	put(e1, "frontend", "fuse\n");
	expect_not_served("garbage, no lock");
	put(e1, "pid", "-5\n");
	expect_not_served("negative pid");
	put(e1, "pid", "1234\n");
	snprintf(buf, sizeof(buf), "%s\n", image);
	put(e1, "image", buf);
	expect_not_served("well-formed, no lock holder");

	/* the lock held (by this process, through another descriptor: to
	 * the reader exactly like a live server) */
	snprintf(lock, sizeof(lock), "%s/lock", e1);
	lfd = open(lock, O_RDWR | O_CLOEXEC);
	T_CHECK(lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) == 0, "take the lock");
	expect_unverified("live, fuse, device not backed by its mnt/disk", image);
	put(e1, "frontend", "ublk\n");
	expect_unverified("live, ublk, device is not /dev/ublkbN", image);
	put(e1, "frontend", "nosuch\n");
	expect_unverified("live, unknown frontend", image);
	put(e1, "frontend", "fuse\n");
	put(e1, "dev", "/dev/null\n");
	snprintf(buf, sizeof(buf), "%s\n", dev);
	put(e1, "dm", buf);
	expect_unverified("live, the device recorded as dm, not on dev", image);
	put(e1, "dev", "");
	expect_not_served("live, empty dev");
	put(e1, "dev", "/dev/null\n");
	put(e1, "dm", "");
	expect_not_served("live, another device");
	snprintf(buf, sizeof(buf), "%s\n", dev);
	put(e1, "dev", buf);
	put(e1, "image", longline);
	expect_not_served("live, an image path longer than PATH_MAX");
	snprintf(buf, sizeof(buf), "%s\n", image);
	put(e1, "image", buf);
	put(e1, "dev", "");      /* from here on e1 names no device */

	/* an image whose path holds a newline: the registry file is the
	 * path and one newline, and it is read whole (the first line alone
	 * names another file, and the entry did not check out silently) */
	snprintf(nl, sizeof(nl), "%s/a\nb.img", base);
	fd = open(nl, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	T_CHECK(fd >= 0, "image with a newline in its name");
	if (fd >= 0)
		close(fd);
	entry(e4, sizeof(e4), nl, NULL);
	put(e4, "lock", "");
	put(e4, "pid", "1234\n");
	snprintf(buf, sizeof(buf), "%s\n", nl);
	put(e4, "image", buf);
	snprintf(buf, sizeof(buf), "%s\n", dev);
	put(e4, "dev", buf);
	put(e4, "frontend", "fuse\n");
	snprintf(lock, sizeof(lock), "%s/lock", e4);
	fd4 = open(lock, O_RDWR | O_CLOEXEC);
	T_CHECK(fd4 >= 0 && flock(fd4, LOCK_EX | LOCK_NB) == 0, "take lock 4");
	expect_unverified("live, newline in the image path, device not its own",
			  nl);
	snprintf(buf, sizeof(buf), "%s\n\n", nl);
	put(e4, "image", buf);
	snprintf(buf, sizeof(buf), "%s\n", nl);
	expect_unverified("live, image path ending in a newline", buf);
	put(e4, "image", "");
	expect_not_served("live, empty image file");
	if (fd4 >= 0)
		close(fd4);

	/* a live lock, but the folder is not the image's */
	entry(e2, sizeof(e2), NULL, "img-1-2");
	put(e2, "lock", "");
	put(e2, "pid", "1234\n");
	snprintf(buf, sizeof(buf), "%s\n", image);
	put(e2, "image", buf);
	snprintf(buf, sizeof(buf), "%s\n", dev);
	put(e2, "dev", buf);
	put(e2, "frontend", "fuse\n");
	snprintf(lock, sizeof(lock), "%s/lock", e2);
	fd = open(lock, O_RDWR | O_CLOEXEC);
	T_CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "take lock 2");
	expect_unverified("live, folder named after another file", image);
	if (fd >= 0)
		close(fd);            /* e2's server is gone */
	expect_not_served("e2's lock released");

	/* the lock is a symlink to a held lock: not a server's lock */
	snprintf(other, sizeof(other), "%s/b.img", base);
	fd = open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	T_CHECK(fd >= 0, "second image");
	entry(e3, sizeof(e3), other, NULL);
	snprintf(lock, sizeof(lock), "%s/lock", e3);
	snprintf(buf, sizeof(buf), "%s/lock", e1);
	T_CHECK(symlink(buf, lock) == 0, "symlink lock");
	put(e3, "pid", "1234\n");
	snprintf(buf, sizeof(buf), "%s\n", other);
	put(e3, "image", buf);
	snprintf(buf, sizeof(buf), "%s\n", dev);
	put(e3, "dev", buf);
	put(e3, "frontend", "fuse\n");
	expect_not_served("lock is a symlink");

	if (!t_failures) {
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", base);
	}
	return t_result();
}
