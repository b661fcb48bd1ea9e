/* SPDX-License-Identifier: MIT */
/*
 * The image lock: the engine flocks (LOCK_EX) every image it opens for
 * writing (ftl_open), for as long as it is open.  Commands that write an
 * image without the engine's open (create, fsck --repair) take the same
 * lock, and name who holds it when they cannot.  A read-only serve takes
 * it shared (LOCK_SH): readers together, no writer beside them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "oct-proc.h"
#include "serve.h"

int serve_image_lock(const char *path, int *fd)
{
	struct stat st;
	int lfd;

	*fd = -1;
	if (stat(path, &st) < 0)
		return -errno;
	/* A block device: also claim it exclusively (fails while mounted
	 * or held by dm/md); the claim ends at close. */
	lfd = open(path, O_RDONLY | O_CLOEXEC |
		   (S_ISBLK(st.st_mode) ? O_EXCL : 0));
	if (lfd < 0)
		return -errno;
	if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(lfd);
		return err;
	}
	*fd = lfd;
	return 0;
}

int serve_image_share(const char *path, int *fd)
{
	int lfd;

	*fd = -1;
	lfd = open(path, O_RDONLY | O_CLOEXEC);
	if (lfd < 0)
		return -errno;
	if (flock(lfd, LOCK_SH | LOCK_NB) < 0) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(lfd);
		return err;
	}
	*fd = lfd;
	return 0;
}

/* The pid holding a write (exclusive) flock on @st's file, from
 * /proc/locks ("N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO START END"). */
static pid_t serve_lock_holder(const struct stat *st)
{
	char line[256], kind[16], mode[16];
	unsigned maj, min;
	unsigned long long ino;
	int pid;
	pid_t found = 0;

	FILE *f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');
		if (!p || strstr(p, "->"))
			continue;          /* a waiter, not a holder */
		if (sscanf(p + 1, " %15s %*s %15s %d %x:%x:%llu", kind, mode,
			   &pid, &maj, &min, &ino) != 6)
			continue;
		if (!strcmp(kind, "FLOCK") && !strcmp(mode, "WRITE") &&
		    makedev(maj, min) == st->st_dev && ino == st->st_ino)
			found = (pid_t)pid;
	}
	fclose(f);
	return found;
}

void serve_image_holder(const char *path, char *buf, size_t len)
{
	struct serve_entry e;
	struct stat st;
	char comm[64] = "";
	pid_t pid;

	/* A live entry whose recorded pid is gone is a dead server's that a
	 * `serve --recover` (this process) holds the lock of: not a server. */
	if (serve_entry_find(path, &e) == 0 && e.live && e.pid > 0 &&
	    e.pid != getpid() && (kill(e.pid, 0) == 0 || errno == EPERM)) {
		if (e.dev[0])
			snprintf(buf, len, "served on %s (pid %d)",
				 e.dm[0] ? e.dm : e.dev, (int)e.pid);
		else
			snprintf(buf, len, "being served (pid %d)", (int)e.pid);
		return;
	}
	if (stat(path, &st) == 0 && (pid = serve_lock_holder(&st)) > 0) {
		oct_pid_comm(pid, comm, sizeof(comm));
		snprintf(buf, len, "open for writing by pid %d%s%s%s", (int)pid,
			 comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
		return;
	}
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		snprintf(buf, len, "in use (mounted or held by another device)");
	else
		snprintf(buf, len, "open for writing by another process");
}
