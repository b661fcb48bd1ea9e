/* SPDX-License-Identifier: MIT */
/*
 * The kernel learns when the engine turns read-only.  When the spare
 * blocks are used up, writes fail with EROFS; a kernel device that still
 * says writable lets a filesystem mount read-write and fail on its first
 * write ("can't read superblock").  So the served block device (and a
 * --dm device on top) is made read-only with BLKROSET (bdev_read_only: a
 * read-write mount is refused as write-protected, a read-only one works;
 * the same ioctl for loop and ublk), and one log line says why: at start
 * when the image is worn out already (before the device is reported),
 * else from a small thread the engine wakes (ftl_on_read_only: the writer
 * that hit it only writes an eventfd; the device is opened and the ioctl
 * issued here, never in the I/O path).  BLKROSET sets a policy of the
 * block device that outlives a loop device's binding: it is taken back
 * (BLKROSET 0) when the server stops, before the device is removed, so the
 * next user of /dev/loopN does not inherit it; for a killed server, by the
 * cleanup of its entry (`stop`, the sweep: plumb_loop_detach_if_backed_by, on
 * the loop device proven its), and plumb_loop_attach clears any left anyway.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "serve.h"

struct serve_ro {
	pthread_mutex_t mu;      /* ftl and the hook: the thread's apply
	                            against an online resize's swap */
	struct ftl_set *fs;          /* NULL: none (a failed reopen) */
	int efd;                 /* eventfd: turned read-only, or quit */
	bool quit;               /* set before efd is written by stop */
	bool thread;             /* started */
	bool set[2];             /* BLKROSET 1 done on dev[i] */
	pthread_t tid;
	char dev[2][128];        /* served device, --dm device ("" none) */
};

/* The engine's hook: the writer that used up the spares (f->lock held). */
static void serve_ro_wake(void *ctx)
{
	struct serve_ro *w = ctx;
	uint64_t one = 1;

	if (write(w->efd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow with one write per engine */
	}
}

/* BLKROSET @ro on @dev: 0 or an errno. */
static int serve_ro_set(const char *dev, int ro)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r = 0;

	if (fd < 0 || ioctl(fd, BLKROSET, &ro) < 0)
		r = errno;
	if (fd >= 0)
		close(fd);
	return r;
}

/* BLKROSET on every device of @w; one log line (why, and what failed). */
static void serve_ro_apply(struct serve_ro *w)
{
	struct ftl_stats st;
	char done[300] = "", err[300] = "";
	uint64_t bad;

	for (int i = 0; i < 2; i++) {
		int r;
		char *to = NULL;

		if (!w->dev[i][0])
			continue;
		r = serve_ro_set(w->dev[i], 1);
		w->set[i] = !r;
		to = r ? err : done;
		snprintf(to + strlen(to), sizeof(done) - strlen(to), "%s%s%s%s",
			 *to ? ", " : "", w->dev[i], r ? ": " : "",
			 r ? strerror(r) : "");
	}
	if (!w->fs)
		return;
	ftl_set_stats_get(w->fs, &st);
	bad = st.bad_blocks_factory + st.bad_blocks_grown;
	fprintf(stderr, "ublk-flash: %s%s%s%s: the flash's spare blocks are "
		"used up (%llu bad blocks, the spare area absorbs %llu%s); "
		"writes fail, data stays readable\n",
		*done ? done : "", *done ? " set read-only" : "",
		*err ? (*done ? "; could not set " : "could not set ") : "",
		err, (unsigned long long)bad,
		(unsigned long long)st.bad_block_limit,
		bad > st.bad_block_limit ? "" :
		": the table's read-only flag, fsck --repair clears it");
}

static void *serve_ro_thread(void *arg)
{
	struct serve_ro *w = arg;
	uint64_t v;

	while (read(w->efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&w->mu);
	if (!__atomic_load_n(&w->quit, __ATOMIC_ACQUIRE))
		serve_ro_apply(w);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int serve_ro_start(struct serve_ro **out, struct ftl_set *f)
{
	struct serve_ro *w = calloc(1, sizeof(*w));
	int err;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->fs = f;
	w->efd = eventfd(0, EFD_CLOEXEC);
	if (w->efd < 0) {
		err = -errno;
		free(w);
		return err;
	}
	pthread_mutex_init(&w->mu, NULL);
	err = -pthread_create(&w->tid, NULL, serve_ro_thread, w);
	if (err) {
		pthread_mutex_destroy(&w->mu);
		close(w->efd);
		free(w);
		return err;
	}
	w->thread = true;
	*out = w;
	return 0;
}

void serve_ro_arm(struct serve_ro *w, const char *dev, const char *dm)
{
	if (!w)
		return;
	/* the paths before the hook: the engine calls it under its lock,
	 * which ftl_on_read_only takes too (the thread reads them after) */
	snprintf(w->dev[0], sizeof(w->dev[0]), "%s", dev ? dev : "");
	snprintf(w->dev[1], sizeof(w->dev[1]), "%s", dm ? dm : "");
	if (ftl_set_on_read_only(w->fs, serve_ro_wake, w))
		serve_ro_apply(w);      /* worn out at open: now, before live */
}

void serve_ro_stop(struct serve_ro *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	if (w->fs)
		ftl_set_on_read_only(w->fs, NULL, NULL);
	if (w->thread) {
		__atomic_store_n(&w->quit, true, __ATOMIC_RELEASE);
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* cannot happen: the counter is far from full */
		}
		pthread_join(w->tid, NULL);
	}
	for (int i = 0; i < 2; i++)
		if (w->set[i])
			serve_ro_set(w->dev[i], 0);
	pthread_mutex_destroy(&w->mu);
	close(w->efd);
	free(w);
}

void serve_ro_pause(struct serve_ro *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	if (w->fs)
		ftl_set_on_read_only(w->fs, NULL, NULL);
}

void serve_ro_resume(struct serve_ro *w, struct ftl_set *f)
{
	if (!w)
		return;
	w->fs = f;
	/* armed (the device known): the hook on the new engine, and now if
	 * it is worn out already */
	if (f && w->dev[0][0] && ftl_set_on_read_only(f, serve_ro_wake, w))
		serve_ro_apply(w);
	pthread_mutex_unlock(&w->mu);
}
