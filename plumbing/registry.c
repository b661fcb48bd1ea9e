/* SPDX-License-Identifier: MIT */
/* The run registry's reader (see registry.h; the writer: serve/registry.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "registry.h"

const char *plumb_run_base(void)
{
	const char *b = getenv("UBLK_FLASH_RUN_DIR");
	return b && *b ? b : "/run/octant";
}

/* Is an exclusive flock held on the file (@dev, @ino)?  Read from
 * /proc/locks, so that looking never takes the lock itself (a server
 * starting at that moment would find it busy).  -errno if unreadable. */
static int serve_flock_held(dev_t dev, ino_t ino)
{
	char line[256], type[16], mode[16];
	unsigned ma, mi;
	unsigned long long i;
	int held = 0;
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return -errno;
	while (!held && fgets(line, sizeof(line), f)) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 fe:00:10952917 0 EOF";
		 * a waiter's line has "->" where the type is */
		if (sscanf(line, "%*d: %15s %*s %15s %*d %x:%x:%llu", type, mode,
			   &ma, &mi, &i) == 5 &&
		    !strcmp(type, "FLOCK") && !strcmp(mode, "WRITE") &&
		    makedev(ma, mi) == dev && i == (unsigned long long)ino)
			held = 1;
	}
	fclose(f);
	return held;
}

/* Does a live server hold @dir/lock?  The server holds it exclusively for
 * its whole life; the lock is a regular file, never a symlink.  Asked of
 * /proc/locks (an exclusive FLOCK on its device and inode), so that
 * looking never takes the lock (a server starting at that moment would
 * find it busy); without /proc/locks, a shared try-lock, released.  (Until
 * issue 32 ublk-flash asked with the try-lock and libalign with
 * /proc/locks: this is libalign's, now the one reader of both.) */
static bool plumb_entry_held(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	bool held = false;
	int fd, r;

	snprintf(p, sizeof(p), "%s/lock", dir);
	if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	r = serve_flock_held(st.st_dev, st.st_ino);
	if (r >= 0)
		return r;
	/* no /proc/locks: a shared try-lock fails exactly while it is held */
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		held = errno == EWOULDBLOCK;
	close(fd);
	return held;
}

static int serve_entry_get(const char *dir, const char *name, char *buf,
			   size_t len)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	/* The whole file, less the one newline serve_entry_put ends it
	 * with: an image path may hold newlines itself.  A value that does
	 * not fit or holds a NUL byte reads "", never cut short: a cut image
	 * path would name another file (libalign's reader refused them; the
	 * server's cut them before issue 32). */
	size_t n = fread(buf, 1, len, f);
	bool more = n == len && fgetc(f) != EOF;
	fclose(f);
	if (!more && n && buf[n - 1] == '\n')
		n--;
	if (more || n >= len || memchr(buf, '\0', n)) {
		buf[0] = '\0';
		return more || n >= len ? -ENAMETOOLONG : -EINVAL;
	}
	buf[n] = '\0';
	return 0;
}

int plumb_entry_load(const char *dir, struct serve_entry *e)
{
	char pid[32];

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s", dir);
	if (serve_entry_get(dir, "pid", pid, sizeof(pid)) < 0)
		return -ENOENT;
	e->pid = (pid_t)atol(pid);
	serve_entry_get(dir, "image", e->image, sizeof(e->image));
	serve_entry_get(dir, "dev", e->dev, sizeof(e->dev));
	serve_entry_get(dir, "frontend", e->frontend, sizeof(e->frontend));
	serve_entry_get(dir, "dm", e->dm, sizeof(e->dm));
	serve_entry_get(dir, "backing", e->backing, sizeof(e->backing));
	char acc[8] = "";
	serve_entry_get(dir, "access", acc, sizeof(acc));
	e->read_only = !strcmp(acc, "ro");
	e->live = plumb_entry_held(dir);
	return 0;
}

static int serve_entry_cmp(const void *a, const void *b)
{
	const struct serve_entry *x = a, *y = b;
	int r = strcmp(x->dev, y->dev);
	return r ? r : strcmp(x->dir, y->dir);
}

int plumb_entry_list(struct serve_entry **out, int *unreadable)
{
	char dir[PATH_MAX];
	struct serve_entry *v = NULL, *nv;
	size_t n = 0, cap = 0;

	*out = NULL;
	*unreadable = 0;
	DIR *d = opendir(plumb_run_base());
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "img-", 4) != 0 || strchr(de->d_name, '.'))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		snprintf(dir, sizeof(dir), "%s/%s", plumb_run_base(), de->d_name);
		if (plumb_entry_load(dir, &v[n]) == 0)
			n++;
		else if (access(dir, R_OK | X_OK) < 0 && errno == EACCES)
			(*unreadable)++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), serve_entry_cmp);
	*out = v;
	return (int)n;
}
