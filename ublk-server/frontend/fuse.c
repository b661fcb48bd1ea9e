/* SPDX-License-Identifier: MIT */
/*
 * FUSE frontend: the engine's disk as one regular file "disk" in a private
 * libfuse3 (low-level API) mount under the server's run folder, with a
 * loop device attached to it (plumbing/loopdev.c).  Reads and writes go
 * straight to ftl_read / ftl_write; fsync and flush reach the engine as a
 * FLUSH; fallocate(PUNCH_HOLE) as a DISCARD, fallocate(ZERO_RANGE) as
 * WRITE ZEROES.
 *
 * Deadlock safety: every serving thread is an IO flusher (PR_SET_IO_FLUSHER,
 * so its allocations never recurse into block I/O), I/O buffers come from a
 * pool allocated (and locked by the serve layer's mlockall) before the
 * device goes live, the file is direct-I/O only (no FUSE page cache), and
 * loop runs in direct-I/O mode.
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "frontend.h"
#include "fuse-io.h"
#include "loopdev.h"
#include "sysfs.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

#define FE_FUSE_THREADS 8          /* serving threads, all started up front */
#define FE_FUSE_GRACE_MS 10000     /* stop: wait this long for the loop device
                                      to let go of the file, then cut it off */
#define FE_FUSE_FORCE_GRACE_MS 1000 /* the same for `stop --force` */

struct fe_fuse {
	struct fe_fuse_io io;          /* the I/O half (fuse-io.c) */
	struct fuse_session *se;
	pthread_t threads[FE_FUSE_THREADS];
	unsigned started;              /* threads created */
	atomic_uint nthreads;          /* threads still serving */
	bool mounted;
	int dead_fd;                   /* eventfd: the session loop ended */
	int backing_fd;
	int conn;                      /* fusectl connection number, -1 unknown */
	struct loop_dev loop;
	char mnt[PATH_MAX];
	char file[PATH_MAX + NAME_MAX + 2];
};

void fe_fuse_file_name(const char *image, char *name, size_t len)
{
	const char *base = strrchr(image, '/');
	bool ok;

	base = base ? base + 1 : image;
	ok = base[0] && strcmp(base, ".") && strcmp(base, "..") &&
	     strlen(base) < len && strlen(base) <= 200;
	/* no control characters (sysfs shows the path one line long), no
	 * space at the end (sysfs readers strip it) */
	for (const unsigned char *p = (const unsigned char *)base; ok && *p; p++)
		ok = *p >= 0x20 && *p != 0x7f;
	ok = ok && base[strlen(base) - 1] != ' ';
	snprintf(name, len, "%s", ok ? base : "disk");
}

/* One serving thread: its request buffer is allocated before the first
 * read blocks (and made resident by the serve layer's mlockall), so no
 * request needs a page fault that could wait on reclaim. */
static void *fe_fuse_thread(void *arg)
{
	struct fe_fuse *ff = arg;
	struct fuse_buf fbuf = { .mem = NULL };
	uint64_t one = 1;
	int res;

	fe_fuse_io_flusher();
	/* libfuse allocates fbuf.mem (its own size) in the first call, right
	 * away at thread start; mlockall(MCL_FUTURE) populates it. */
	while (!fuse_session_exited(ff->se)) {
		res = fuse_session_receive_buf(ff->se, &fbuf);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0)
			break;            /* unmounted (ENODEV) or aborted */
		fuse_session_process_buf(ff->se, &fbuf);
	}
	fuse_session_exit(ff->se);
	free(fbuf.mem);
	if (atomic_fetch_sub(&ff->nthreads, 1) == 1 &&
	    write(ff->dead_fd, &one, sizeof(one)) < 0) {
		/* run() also sees the session exit */
	}
	return NULL;
}

static int fe_fuse_probe(char *why, size_t len)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		snprintf(why, len, "/dev/fuse: %s (FUSE not available here)",
			 strerror(err));
		return err == ENOENT ? -ENODEV : -err;
	}
	close(fd);
	if (access("/dev/loop-control", R_OK | W_OK) < 0) {
		int err = errno;
		snprintf(why, len, "/dev/loop-control: %s (no loop device support)",
			 strerror(err));
		return err == ENOENT ? -ENODEV : -err;
	}
	return 0;
}

/* Abort our FUSE connection (fusectl): requests queued in the kernel fail,
 * serving threads blocked in read() wake up with ENODEV. */
static void fe_fuse_abort(struct fe_fuse *ff)
{
	if (ff->conn >= 0)
		plumb_sysfs_fuse_abort((unsigned)ff->conn);
}

/* The loop device is still open (a filesystem mounted on it): cut it off.
 * No request reaches the engine any more (each is answered EIO), then the
 * FUSE connection is aborted, so nothing the kernel sent waits forever. */
static void fe_fuse_cut(struct fe_fuse *ff)
{
	fe_fuse_io_fence(&ff->io);
	fe_fuse_abort(ff);
}

static void fe_fuse_on_nudge(int sig)
{
	(void)sig;   /* only interrupts a serving thread's read() */
}

/* Join the serving threads in bounded time: a thread idle in read() on a
 * connection that stays alive is cut off and nudged out with a signal. */
static void fe_fuse_join(struct fe_fuse *ff)
{
	struct sigaction sa;
	struct timespec ts;
	bool nudging = false;

	for (unsigned i = 0; i < ff->started; i++) {
		for (unsigned t = 0;; t++) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (pthread_timedjoin_np(ff->threads[i], NULL, &ts) == 0)
				break;
			if (t < 20 && !nudging)
				continue;     /* 2 s for the unmount to wake them */
			if (!nudging) {
				nudging = true;
				fe_fuse_cut(ff);
				memset(&sa, 0, sizeof(sa));
				sa.sa_handler = fe_fuse_on_nudge;   /* no SA_RESTART */
				sigaction(SIGUSR1, &sa, NULL);
			}
			pthread_kill(ff->threads[i], SIGUSR1);
		}
	}
	ff->started = 0;
}

static void fe_fuse_teardown(struct fe_fuse *ff, bool force)
{
	if (ff->loop.fd >= 0) {
		int n = ff->loop.number, err = plumb_loop_detach(&ff->loop);
		if (err)
			fprintf(stderr, "ublk-flash: detach %s: %s\n",
				ff->loop.path, strerror(-err));
		/* Keep serving while the kernel lets go of the file (udev may
		 * still hold the device for a moment); a device still open
		 * after that (mounted) is cut off: its I/O fails with EIO. */
		if (n >= 0 && plumb_loop_wait_released(n, force ? FE_FUSE_FORCE_GRACE_MS :
						 FE_FUSE_GRACE_MS) < 0) {
			fprintf(stderr, "ublk-flash: /dev/loop%d is still in use "
				"(mounted?): cutting it off, its I/O now fails with "
				"EIO; it detaches at its last close\n", n);
			fe_fuse_cut(ff);
		}
	}
	if (ff->backing_fd >= 0) {
		close(ff->backing_fd);
		ff->backing_fd = -1;
	}
	if (ff->se) {
		fuse_session_exit(ff->se);
		if (ff->mounted) {
			fuse_session_unmount(ff->se);
			/* libfuse leaves an aborted connection mounted (it
			 * sees POLLERR and returns): detach it ourselves. */
			if (umount2(ff->mnt, MNT_DETACH) < 0 && errno != EINVAL &&
			    errno != ENOENT)
				fprintf(stderr, "ublk-flash: warning: unmount %s: "
					"%s\n", ff->mnt, strerror(errno));
		}
		ff->mounted = false;
		fe_fuse_join(ff);
		fuse_session_destroy(ff->se);
		ff->se = NULL;
	}
	if (ff->mnt[0])
		rmdir(ff->mnt);
	if (ff->dead_fd >= 0)
		close(ff->dead_fd);
	fe_fuse_io_fini(&ff->io);
	free(ff);
}

static int fe_fuse_start(struct fe_server *s)
{
	struct fe_fuse *ff;
	int err;
	char *argv[] = { "ublk-flash", "-o",
		"fsname=ublk-flash,subtype=ublk-flash,max_read=1048576", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);

	ff = calloc(1, sizeof(*ff));
	if (!ff)
		return -ENOMEM;
	ff->dead_fd = -1;
	ff->backing_fd = -1;
	ff->conn = -1;
	ff->loop.fd = -1;
	s->priv = ff;
	err = fe_fuse_io_init(&ff->io, s->set, FE_FUSE_THREADS);
	if (err)
		goto err;
	ff->io.read_only = s->opts->read_only;
	if (s->opts->read_only)   /* a read-only mount: the VFS refuses writers */
		argv[2] = "fsname=ublk-flash,subtype=ublk-flash,max_read=1048576,ro";
	ff->dead_fd = eventfd(0, EFD_CLOEXEC);
	if (ff->dead_fd < 0) {
		err = -errno;
		goto err;
	}
	snprintf(ff->mnt, sizeof(ff->mnt), "%s/mnt", s->opts->run_dir);
	if (mkdir(ff->mnt, 0700) < 0 && errno != EEXIST) {
		err = -errno;
		ff->mnt[0] = '\0';
		goto err;
	}
	/* The loop device is bound through the file's second name, the
	 * image's, so `losetup -l` shows RUNDIR/mnt/IMAGE-NAME. */
	fe_fuse_file_name(s->opts->image, ff->io.name, sizeof(ff->io.name));
	snprintf(ff->file, sizeof(ff->file), "%s/%s", ff->mnt, ff->io.name);

	ff->se = fuse_session_new(&args, &fe_fuse_io_ops, sizeof(fe_fuse_io_ops),
				  &ff->io);
	fuse_opt_free_args(&args);
	if (!ff->se) {
		err = -EIO;
		fprintf(stderr, "ublk-flash: cannot create the FUSE session\n");
		goto err;
	}
	if (fuse_session_mount(ff->se, ff->mnt) != 0) {
		err = -EIO;
		fprintf(stderr, "ublk-flash: cannot mount FUSE on %s\n", ff->mnt);
		goto err;
	}
	ff->mounted = true;
	/* A fixed set of threads, all started (buffers allocated) before the
	 * device goes live: nothing is created or allocated while serving. */
	for (unsigned i = 0; i < FE_FUSE_THREADS; i++) {
		atomic_fetch_add(&ff->nthreads, 1);
		err = -pthread_create(&ff->threads[i], NULL, fe_fuse_thread, ff);
		if (err) {
			atomic_fetch_sub(&ff->nthreads, 1);
			goto err;
		}
		ff->started++;
	}

	ff->backing_fd = open(ff->file, (s->opts->read_only ? O_RDONLY : O_RDWR) |
			      O_DIRECT | O_CLOEXEC);
	if (ff->backing_fd < 0) {
		err = -errno;
		fprintf(stderr, "ublk-flash: open %s: %s\n", ff->file,
			strerror(errno));
		goto err;
	}
	struct stat st;
	if (fstat(ff->backing_fd, &st) == 0)   /* fusectl names it by minor */
		ff->conn = (int)minor(st.st_dev);
	err = plumb_loop_attach(&ff->loop, ff->backing_fd, s->opts->image,
			  s->opts->read_only);
	if (err) {
		if (err == -ENOSPC || err == -EBUSY || err == -ENXIO)
			fprintf(stderr, "ublk-flash: no free loop device: %s\n",
				strerror(-err));
		else
			fprintf(stderr, "ublk-flash: cannot attach a loop device: "
				"%s\n", strerror(-err));
		err = err == -ENODEV ? -ENODEV : -EBUSY;
		goto err;
	}
	/* The loop holds its own reference.  Ours must go now: a server
	 * killed with an open file on its own mount would hang in exit,
	 * flushing that file to itself. */
	close(ff->backing_fd);
	ff->backing_fd = -1;
	snprintf(s->devpath, sizeof(s->devpath), "%s", ff->loop.path);
	return 0;
err:
	fuse_opt_free_args(&args);   /* no-op once freed above */
	fe_fuse_teardown(ff, true);
	s->priv = NULL;
	return err;
}

static int fe_fuse_run(struct fe_server *s)
{
	struct fe_fuse *ff = s->priv;
	struct pollfd p[2] = { { s->stop_fd, POLLIN, 0 }, { ff->dead_fd, POLLIN, 0 } };
	int e = fe_fuse_io_flusher_error();

	/* Said once the device is live (a daemon's stderr is its log by now). */
	if (e)
		fprintf(stderr, "ublk-flash: warning: PR_SET_IO_FLUSHER: %s (serving "
			"threads may wait on reclaim under memory pressure)\n",
			strerror(e));

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents)
			return 0;
		if (p[1].revents) {
			fprintf(stderr, "ublk-flash: the FUSE session ended "
				"(unmounted from outside?)\n");
			return -ENOTCONN;
		}
	}
}

static void fe_fuse_stop(struct fe_server *s)
{
	if (s->priv)
		fe_fuse_teardown(s->priv, s->force_stop);
	s->priv = NULL;
}

/* An online resize (frontend.h). */
static void fe_fuse_hold(struct fe_server *s)
{
	struct fe_fuse *ff = s->priv;

	fe_fuse_io_hold(&ff->io);
}

static void fe_fuse_release(struct fe_server *s)
{
	struct fe_fuse *ff = s->priv;

	fe_fuse_io_release(&ff->io, s->set, s->set ? ftl_set_size(s->set) : 0);
}

/* The disk file's attributes are cached for a day: dropped first, else
 * the loop device's capacity update (plumb_loop_set_capacity) finds the old
 * size (docs/ublk.md, Resize). */
static int fe_fuse_resized(struct fe_server *s, char *why, size_t len)
{
	struct fe_fuse *ff = s->priv;
	int err;

	err = fuse_lowlevel_notify_inval_inode(ff->se, FE_FUSE_INO_DISK, -1, 0);
	if (err) {
		snprintf(why, len, "FUSE attribute invalidation: %s",
			 strerror(-err));
		return err;
	}
	err = plumb_loop_set_capacity(&ff->loop);
	if (err)
		snprintf(why, len, "%s: setting its capacity: %s", ff->loop.path,
			 strerror(-err));
	return err;
}

const struct fe_ops fe_fuse_ops = {
	.name    = "fuse",
	.probe   = fe_fuse_probe,
	.start   = fe_fuse_start,
	.run     = fe_fuse_run,
	.stop    = fe_fuse_stop,
	.hold    = fe_fuse_hold,
	.release = fe_fuse_release,
	.resized = fe_fuse_resized,
};
