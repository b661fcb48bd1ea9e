/* SPDX-License-Identifier: MIT */
/*
 * The image lock: the engine flocks (LOCK_EX) every image it opens for
 * writing (ftl_open), for as long as it is open.  Commands that write an
 * image without the engine's open (create, fsck --repair) take the same
 * lock, and name who holds it when they cannot.  A read-only serve takes
 * it shared (LOCK_SH): readers together, no writer beside them.  An RBD
 * medium's lock is its exclusive lock, taken by the backing itself
 * (nand_backing_rbd): held across hosts, named here.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nand.h"
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
	/* an RBD image: whoever holds its exclusive lock, on any host */
	if (nand_backing_is_rbd(path) &&
	    nand_backing_rbd_holder(path, buf, len) == 0)
		return;
	if (nand_backing_is_nbd(path)) {    /* its server's one-client limit */
		snprintf(buf, len, "in use: its NBD server closed our connection "
			 "in the handshake (it takes one client at a time and "
			 "has one)");
		return;
	}
	/* Who holds it now, by descriptor: a daemon that inherited the lock
	 * (nbdkit takes it before it forks) is named, not its parent. */
	if (stat(path, &st) == 0) {
		bool write = true;

		pid = (pid_t)oct_flock_owner(st.st_dev, st.st_ino, true);
		if (pid <= 0) {
			write = false;
			pid = (pid_t)oct_flock_owner(st.st_dev, st.st_ino, false);
		}
		if (pid > 0) {
			oct_pid_comm(pid, comm, sizeof(comm));
			snprintf(buf, len, "%s by pid %d%s%s%s", write ?
				 "open for writing" :
				 "open read-only (a shared lock)", (int)pid,
				 comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
			return;
		}
	}
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		snprintf(buf, len, "in use (mounted or held by another device)");
	else
		snprintf(buf, len, "open for writing by another process");
}

int serve_image_closed_clean(const struct serve_entry *e)
{
	struct ftl_open_opts o = { .readonly = true };
	struct ftl_set *f;
	int fd = -1, err;

	if (e->read_only)
		return 0;       /* it never writes the image: nothing to write */
	/* shared: no writer (a restarted server) opens it meanwhile and
	 * programs its mount marker; an NBD medium has no lock */
	if (!nand_backing_is_uri(e->image)) {
		err = serve_image_share(e->image, &fd);
		if (err)
			return err;
	}
	err = ftl_set_open(e->image, &o, &f);
	if (!err) {
		err = ftl_set_mount_kind(f) == FTL_MOUNT_CLEAN ? 0 : -EUCLEAN;
		ftl_set_close(f);
	}
	if (fd >= 0)
		close(fd);
	return err;
}
