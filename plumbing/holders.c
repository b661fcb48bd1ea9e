/* SPDX-License-Identifier: MIT */
/* Mounts and holders of block devices (see holders.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "holders.h"
#include "plumb-private.h"
#include "sysfs.h"

/* Undo mountinfo's octal escapes (\040 for a space ...) in place. */
static void plumb_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int plumb_mounts_foreach(int (*fn)(dev_t dev, const char *target,
				   const char *fstype, void *arg), void *arg)
{
	char line[PATH_MAX * 2], mp[PATH_MAX], type[64];
	unsigned maj, min;
	int r = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -errno;
	while (!r && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) != 3)
			continue;
		if (!sep || sscanf(sep + 3, "%63s", type) != 1)
			type[0] = '\0';
		plumb_unescape(mp);
		r = fn(makedev(maj, min), mp, type, arg);
	}
	fclose(f);
	return r;
}

struct plumb_where {
	dev_t dev;
	char *buf;
	size_t len;
};

static int plumb_where_fn(dev_t dev, const char *target, const char *fstype,
			  void *arg)
{
	struct plumb_where *w = arg;

	(void)fstype;
	if (dev != w->dev)
		return 0;
	snprintf(w->buf, w->len, "%s", target);
	return 1;
}

/* Is @dev mounted?  Its first mount point into @where. */
static bool plumb_mounted(dev_t dev, char *where, size_t len)
{
	struct plumb_where w = { dev, where, len };

	return plumb_mounts_foreach(plumb_where_fn, &w) == 1;
}

/* Does the sysfs folder @dir have a non-empty holders/ subfolder?  The
 * first holder into @who. */
static bool plumb_held(const char *dir, char *who, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/holders", dir);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(who, len, "%s", de->d_name);
		found = true;
	}
	closedir(d);
	return found;
}

/* Call @fn for each partition of the device whose sysfs folder is @sys:
 * its name, its sysfs folder and its number.  Stops at and returns the
 * first non-zero value @fn returns. */
static int plumb_parts_foreach(const char *sys,
			       int (*fn)(const char *name, const char *dir,
					 dev_t dev, void *arg), void *arg)
{
	char sub[PATH_MAX + 300];
	struct dirent *de;
	int r = 0;
	DIR *d = opendir(sys);

	while (!r && d && (de = readdir(d))) {
		dev_t pdev = 0;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s/partition", sys, de->d_name);
		if (access(sub, F_OK))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s/dev", sys, de->d_name);
		if (plumbp_read_devno(sub, &pdev))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", sys, de->d_name);
		r = fn(de->d_name, sub, pdev, arg);
	}
	if (d)
		closedir(d);
	return r;
}

struct plumb_family {
	dev_t *devs;
	unsigned n, max;
};

static void plumb_family_add(struct plumb_family *f, dev_t d)
{
	for (unsigned i = 0; i < f->n; i++)
		if (f->devs[i] == d)
			return;
	if (f->n < f->max)
		f->devs[f->n++] = d;
}

static int plumb_family_part(const char *name, const char *dir, dev_t dev,
			     void *arg)
{
	(void)name;
	(void)dir;
	plumb_family_add(arg, dev);
	return 0;
}

unsigned plumb_blockdev_family(dev_t dev, dev_t *devs, unsigned max)
{
	struct plumb_family f = { devs, 0, max };
	char p[PATH_MAX], q[PATH_MAX + 600];
	struct dirent *de;
	DIR *dir;

	plumb_family_add(&f, dev);
	if (plumb_sysfs_devdir(dev, p, sizeof(p)))
		return f.n;
	plumb_parts_foreach(p, plumb_family_part, &f);
	snprintf(q, sizeof(q), "%s/holders", p);
	if ((dir = opendir(q))) {
		while ((de = readdir(dir))) {
			dev_t h;

			if (de->d_name[0] == '.')
				continue;
			snprintf(q, sizeof(q), "%s/holders/%s/dev", p, de->d_name);
			if (plumbp_read_devno(q, &h) == 0)
				plumb_family_add(&f, h);
		}
		closedir(dir);
	}
	return f.n;
}

/* A partition mounted or held: -EBUSY with *u (arg). */
static int plumb_part_busy(const char *name, const char *dir, dev_t dev,
			   void *arg)
{
	struct plumb_use *u = arg;

	if (plumb_mounted(dev, u->what, sizeof(u->what)))
		u->kind = PLUMB_USE_MOUNTED;
	else if (plumb_held(dir, u->what, sizeof(u->what)))
		u->kind = PLUMB_USE_HELD;
	else
		return 0;
	snprintf(u->part, sizeof(u->part), "%s", name);
	return -EBUSY;
}

int plumb_blockdev_in_use(const char *path, dev_t dev, struct plumb_use *u)
{
	char sys[PATH_MAX];
	int fd, r;

	memset(u, 0, sizeof(*u));
	if (plumb_mounted(dev, u->what, sizeof(u->what))) {
		u->kind = PLUMB_USE_MOUNTED;
		return -EBUSY;
	}
	r = plumb_sysfs_devdir(dev, sys, sizeof(sys));
	if (r)
		return r;
	if (plumb_held(sys, u->what, sizeof(u->what))) {
		u->kind = PLUMB_USE_HELD;
		return -EBUSY;
	}
	r = plumb_parts_foreach(sys, plumb_part_busy, u);
	if (r)
		return r;
	fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EBUSY)
			u->kind = PLUMB_USE_CLAIMED;
		return -errno;
	}
	close(fd);
	return 0;
}
