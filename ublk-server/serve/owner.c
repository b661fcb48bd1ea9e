/* SPDX-License-Identifier: MIT */
/*
 * Who owns a registry entry: the proof that its server is gone, asked
 * before anything of it (its FUSE mount, loop or ublk device, its folder)
 * is touched, and the servers whose entry was removed under them.
 *
 * A server holds its entry's lock file open and flocked (LOCK_EX) for its
 * whole life, also after the file was removed with its folder (`rm -rf` of
 * the run folder): a free lock at the path then proves nothing.  So the
 * proof reads every process's descriptors (/proc/PID/fd, and fdinfo for
 * the lock) for one on a lock file of this entry -- at the path but not
 * the caller's, or removed -- flocked LOCK_EX; and the pid the entry
 * records: alive and holding a lock on the image, it serves it.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nand.h"
#include "oct-proc.h"
#include "serve.h"

#define OWNER_DELETED " (deleted)"

/* The folder @dir as the kernel names it in /proc/PID/fd links: its
 * realpath, or its base's and its own name when it is gone. */
static void owner_canon(const char *dir, char *out, size_t len)
{
	char real[PATH_MAX];
	const char *name = strrchr(dir, '/');

	if (realpath(dir, real)) {
		snprintf(out, len, "%s", real);
		return;
	}
	if (name && realpath(plumb_run_base(), real)) {
		snprintf(out, len, "%s%s", real, name);
		return;
	}
	snprintf(out, len, "%s", dir);
}

struct owner_q {
	char lock[PATH_MAX + 8]; /* "RUNDIR/lock" as /proc shows it */
	size_t n;               /* its length */
	bool cur;               /* the lock file at the path: */
	dev_t dev;              /*   its device */
	ino_t ino;              /*   and inode (the caller's to test) */
};

/* A descriptor of a lock file of the entry (at the path but another file,
 * or removed) whose open file holds LOCK_EX. */
static int owner_match(long pid, int fd, const char *target,
		       const struct stat *st, void *arg)
{
	const struct owner_q *q = arg;
	int held;

	if (strncmp(target, q->lock, q->n) != 0 ||
	    (target[q->n] && strcmp(target + q->n, OWNER_DELETED) != 0))
		return 0;
	if (q->cur && st->st_dev == q->dev && st->st_ino == q->ino)
		return 0;
	held = oct_fd_flock(pid, fd);
	return held < 0 ? held : held == 2;
}

/* Does process @pid hold a flock on the file @img? */
static bool owner_pid_locks(pid_t pid, const struct stat *img)
{
	char fdir[64], link[sizeof(fdir) + NAME_MAX + 2];
	struct dirent *de;
	struct stat st;
	bool held = false;
	DIR *d;

	snprintf(fdir, sizeof(fdir), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(fdir)))
		return false;
	while (!held && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", fdir, de->d_name);
		held = stat(link, &st) == 0 && st.st_dev == img->st_dev &&
		       st.st_ino == img->st_ino &&
		       oct_fd_flock(pid, atoi(de->d_name)) > 0;
	}
	closedir(d);
	return held;
}

int serve_entry_dead(const char *dir, pid_t *pid)
{
	struct owner_q q = { .cur = false };
	struct serve_entry e;
	struct stat st;
	char canon[PATH_MAX], p[PATH_MAX + 8];
	long holder;

	*pid = 0;
	owner_canon(dir, canon, sizeof(canon));
	q.n = (size_t)snprintf(q.lock, sizeof(q.lock), "%s/lock", canon);
	snprintf(p, sizeof(p), "%s/lock", dir);
	if (stat(p, &st) == 0) {
		q.cur = true;
		q.dev = st.st_dev;
		q.ino = st.st_ino;
	}
	holder = oct_proc_fd_find(owner_match, &q);
	if (holder < 0)
		return (int)holder;   /* no answer is no proof */
	if (holder > 0) {
		*pid = (pid_t)holder;
		return -EBUSY;
	}
	/* The pid it records, if it still runs and locks the image: a server
	 * (a pid reused by another program holds no lock on the image). */
	if (plumb_entry_load(dir, &e) == 0 && e.pid > 0 && e.pid != getpid() &&
	    (kill(e.pid, 0) == 0 || errno == EPERM) &&
	    !nand_backing_is_uri(e.image) && stat(e.image, &st) == 0 &&
	    owner_pid_locks(e.pid, &st)) {
		*pid = e.pid;
		return -EBUSY;
	}
	return 0;
}

struct holder_q {
	char lock[PATH_MAX + 8];  /* "RUNDIR/lock" as /proc shows it */
	size_t n;
	long pid;
};

/* A descriptor of @pid on a lock file of the entry, flocked LOCK_EX. */
static int holder_match(long pid, int fd, const char *target,
			const struct stat *st, void *arg)
{
	const struct holder_q *q = arg;

	(void)st;
	if (pid != q->pid || strncmp(target, q->lock, q->n) != 0 ||
	    (target[q->n] && strcmp(target + q->n, OWNER_DELETED) != 0))
		return 0;
	return oct_fd_flock(pid, fd) == 2;
}

bool serve_entry_held_by(const char *dir, pid_t pid)
{
	struct holder_q q = { .pid = pid };
	char canon[PATH_MAX];

	if (pid <= 0)
		return false;
	owner_canon(dir, canon, sizeof(canon));
	q.n = (size_t)snprintf(q.lock, sizeof(q.lock), "%s/lock", canon);
	return oct_proc_fd_find(holder_match, &q) == pid;
}

struct orphan_q {
	char prefix[PATH_MAX];  /* "BASE/img-" as /proc shows it */
	size_t n;
	char dir[PATH_MAX];     /* the entry found */
};

/* A removed lock file of some entry, flocked LOCK_EX: a server whose
 * entry folder (or run folder) was removed under it. */
static int orphan_match(long pid, int fd, const char *target,
			const struct stat *st, void *arg)
{
	struct orphan_q *q = arg;
	static const char tail[] = "/lock" OWNER_DELETED;
	size_t len = strlen(target), t = sizeof(tail) - 1;
	const char *slash;

	(void)st;
	if (len <= q->n + t || strncmp(target, q->prefix, q->n) != 0 ||
	    strcmp(target + len - t, tail) != 0)
		return 0;
	slash = strchr(target + q->n, '/');
	if (slash != target + len - t || oct_fd_flock(pid, fd) != 2)
		return 0;
	snprintf(q->dir, sizeof(q->dir), "%.*s", (int)(len - t), target);
	return 1;
}

pid_t serve_entry_orphan(char *dir, size_t len)
{
	struct orphan_q q;
	char real[PATH_MAX];
	long pid;

	if (!realpath(plumb_run_base(), real))
		snprintf(real, sizeof(real), "%s", plumb_run_base());
	q.n = (size_t)snprintf(q.prefix, sizeof(q.prefix), "%s/img-", real);
	q.dir[0] = '\0';
	pid = oct_proc_fd_find(orphan_match, &q);
	if (pid > 0 && dir)
		snprintf(dir, len, "%s", q.dir);
	return pid > 0 ? (pid_t)pid : 0;
}

int serve_entry_wait_orphans(unsigned ms)
{
	struct timespec ts = { 0, 50 * 1000000L };
	unsigned waited = 0;

	while (serve_entry_orphan(NULL, 0) > 0) {
		if (waited >= ms)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
		waited += 50;
	}
	return 0;
}
