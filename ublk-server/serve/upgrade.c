/* SPDX-License-Identifier: MIT */
/*
 * A live upgrade (`ublk-flash upgrade`, `serve --upgrade`): the new
 * server's side -- which live server it takes the device from, what it
 * prepares, the handover conversation on that server's control socket --
 * and the old server's (serve_handover, and the options a server gives its
 * successor; control.c answers "options" and "upgrade PID").  docs/ublk.md,
 * "Live upgrade".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "nand-fault.h"
#include "serve.h"

#define UPGRADE_QUIESCE_MS 90000u    /* the old server's QUIESCE_DEV: 60 s */
#define UPGRADE_HANDED_MS  600000u   /* ... its clean checkpoint and exit */

/* Descriptors serve --upgrade holds from before the handover until the
 * old server is done: what the engine open (the image, its mapping), the
 * control socket, the read-only watch, the registry and /dev/ublkcN take
 * after it, with room to spare. */
#define UPGRADE_SPARE_FDS 16

uint64_t serve_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int serve_upgrade_target(struct fe_serve_opts *o, const char *dir)
{
	struct serve_entry e;
	unsigned id;

	if (plumb_entry_load(dir, &e) < 0 || !e.live) {
		fprintf(stderr, "ublk-flash: serve --upgrade: %s is not served "
			"by a live server: nothing to upgrade\n", o->image);
		return -ESRCH;
	}
	if (strcmp(e.frontend, "ublk") ||
	    sscanf(e.dev, "/dev/ublkb%u", &id) != 1) {
		fprintf(stderr, "ublk-flash: serve --upgrade: %s is served over "
			"%s on %s: a live upgrade needs the ublk frontend; "
			"nothing changed\n", o->image,
			strcmp(e.frontend, "fuse") ? e.frontend : "FUSE + loop",
			e.dev[0] ? e.dev : "?");
		return -EOPNOTSUPP;
	}
	if (!serve_entry_held_by(dir, e.pid)) {
		fprintf(stderr, "ublk-flash: serve --upgrade: pid %d that the "
			"entry of %s names is not the process holding it; "
			"nothing changed\n", (int)e.pid, o->image);
		return -ESRCH;
	}
	o->upgrade_pid = (int)e.pid;
	o->dev_id = (int)id;
	return 0;
}

/* Append the word @w (with its NUL) to @buf: false when it does not fit. */
static bool upgrade_word(char *buf, size_t len, size_t *used, const char *w)
{
	size_t n = strlen(w) + 1;

	if (*used + n > len)
		return false;
	memcpy(buf + *used, w, n);
	*used += n;
	return true;
}

int serve_options_record(const struct fe_serve_opts *o,
			 const struct ftl_open_opts *oo, char *buf, size_t len,
			 size_t *used)
{
	char num[32], spec[256];
	bool ok = true;

	*used = 0;
	ok &= upgrade_word(buf, len, used, "--frontend");
	ok &= upgrade_word(buf, len, used, o->frontend ? o->frontend : "ublk");
	if (o->read_only)
		ok &= upgrade_word(buf, len, used, "--read-only");
	if (o->pidfile) {
		ok &= upgrade_word(buf, len, used, "--pidfile");
		ok &= upgrade_word(buf, len, used, o->pidfile);
	}
	/* where its messages went: a foreground server's default is its
	 * stderr, and its successor is a daemon */
	if (o->log || o->foreground) {
		ok &= upgrade_word(buf, len, used, "--log");
		ok &= upgrade_word(buf, len, used, o->log ? o->log : "stderr");
	}
	ok &= upgrade_word(buf, len, used, "--gc");
	ok &= upgrade_word(buf, len, used, oo->gc == FTL_GC_COST_BENEFIT ?
			   "cost-benefit" : "greedy");
	ok &= upgrade_word(buf, len, used, "--gc-thread");
	ok &= upgrade_word(buf, len, used, oo->bg_gc ? "on" : "off");
	if (oo->streams) {
		ok &= upgrade_word(buf, len, used, "--streams");
		ok &= upgrade_word(buf, len, used, "on");
	}
	if (oo->wl_threshold) {
		snprintf(num, sizeof(num), "%u", (unsigned)oo->wl_threshold);
		ok &= upgrade_word(buf, len, used, "--wl-threshold");
		ok &= upgrade_word(buf, len, used, num);
	}
	if (oo->faults) {
		nand_fault_format(oo->faults, spec, sizeof(spec));
		ok &= upgrade_word(buf, len, used, "--faults");
		ok &= upgrade_word(buf, len, used, spec);
	}
	if (o->dm_name) {
		ok &= upgrade_word(buf, len, used, "--dm");
		ok &= upgrade_word(buf, len, used, o->dm_name);
	}
	return ok ? 0 : -ENAMETOOLONG;
}

/* Read from @u->fd until a whole line is in @u->buf (taking any file
 * descriptor passed with it into @u->lock_fd) or @ms passed: the line's
 * length, 0 the connection ended first, -ETIMEDOUT, -errno. */
static int upgrade_line(struct serve_upgrade *u, unsigned ms)
{
	uint64_t deadline = serve_now_ns() + (uint64_t)ms * 1000000u;

	for (;;) {
		char *nl = memchr(u->buf, '\n', u->got);
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} ctl;
		struct iovec iov;
		struct msghdr m;
		struct cmsghdr *c;
		ssize_t n;
		int r;

		if (nl)
			return (int)(nl - u->buf) + 1;
		if (u->got >= sizeof(u->buf) - 1)
			return -EPROTO;
		uint64_t now = serve_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		struct pollfd p = { u->fd, POLLIN, 0 };
		r = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		iov.iov_base = u->buf + u->got;
		iov.iov_len = sizeof(u->buf) - 1 - u->got;
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl.b;
		m.msg_controllen = sizeof(ctl.b);
		n = recvmsg(u->fd, &m, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len == CMSG_LEN(sizeof(int))) {
				int fd;
				memcpy(&fd, CMSG_DATA(c), sizeof(fd));
				if (u->lock_fd < 0)
					u->lock_fd = fd;
				else
					close(fd);
			}
		}
		if (n == 0)
			return 0;
		u->got += (size_t)n;
		u->buf[u->got] = '\0';
	}
}

/* Take the first line (@n bytes) out of @u->buf into @line. */
static void upgrade_take(struct serve_upgrade *u, int n, char *line, size_t len)
{
	snprintf(line, len, "%.*s", n - 1, u->buf);
	memmove(u->buf, u->buf + n, u->got - (size_t)n);
	u->got -= (size_t)n;
	u->buf[u->got] = '\0';
}

int serve_upgrade_ask(const char *dir, struct serve_upgrade *u, char *why,
		      size_t len)
{
	struct serve_entry e;
	char req[64], line[sizeof(u->buf)];
	int n;

	memset(&e, 0, sizeof(e));
	snprintf(e.dir, sizeof(e.dir), "%s", dir);
	u->got = 0;
	u->fd = serve_ctl_connect(&e);
	if (u->fd < 0) {
		snprintf(why, len, "its control socket: %s", strerror(-u->fd));
		return u->fd;
	}
	snprintf(req, sizeof(req), "upgrade %d\n", (int)getpid());
	u->t_ask = serve_now_ns();
	if (send(u->fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		snprintf(why, len, "its control socket: %s", strerror(errno));
		return -EPIPE;
	}
	n = upgrade_line(u, UPGRADE_QUIESCE_MS);
	if (n <= 0) {
		snprintf(why, len, "%s", n ? strerror(-n) :
			 "it closed its control socket without an answer");
		return n ? n : -EPIPE;
	}
	upgrade_take(u, n, line, sizeof(line));
	if (strcmp(line, "quiesced")) {
		/* "error: upgrade: WHY", or an older server's "error: unknown
		 * command": it refused, nothing changed */
		snprintf(why, len, "%s", !strcmp(line, "error: unknown command") ?
			 "it is older than live upgrade" :
			 !strncmp(line, "error: upgrade: ", 16) ? line + 16 : line);
		return -EPERM;
	}
	u->t_quiesced = serve_now_ns();
	return 0;
}

int serve_upgrade_done(struct serve_upgrade *u, char *why, size_t len)
{
	char line[sizeof(u->buf)];
	int n, err = 0;

	why[0] = '\0';
	/* "notify PATH": the old server's supervisor socket, then the end */
	while ((n = upgrade_line(u, UPGRADE_HANDED_MS)) > 0) {
		upgrade_take(u, n, line, sizeof(line));
		if (strncmp(line, "notify ", 7))
			break;
		if (strlen(line + 7) < sizeof(u->notify))
			memcpy(u->notify, line + 7, strlen(line + 7) + 1);
	}
	if (n > 0) {
		if (!strncmp(line, "failed ", 7)) {
			char *w = strchr(line + 7, ' ');
			snprintf(why, len, "%s", w ? w + 1 : line + 7);
			err = -EIO;
		} else if (strcmp(line, "handed-over")) {
			snprintf(why, len, "it said '%s'", line);
			err = -EPROTO;
		}
	} else {
		snprintf(why, len, "%s", n ? strerror(-n) :
			 "it exited without saying how it closed the image");
		err = n ? n : -EPIPE;
	}
	u->t_handed = serve_now_ns();
	close(u->fd);
	u->fd = -1;
	return err;
}

int serve_upgrade_lock(const char *dir, pid_t old, int *lock_fd)
{
	struct timespec ts = { 0, 5 * 1000000L };
	pid_t owner;
	int err = -EBUSY;

	/* The old server holds the lock until it has exited. */
	for (unsigned ms = 0; ms < UPGRADE_QUIESCE_MS; ms += 5) {
		if (kill(old, 0) < 0 && errno == ESRCH &&
		    (err = serve_entry_lock(dir, lock_fd)) != -EBUSY)
			break;
		nanosleep(&ts, NULL);
	}
	if (err)
		return err;
	err = serve_entry_dead(dir, &owner);
	if (err) {
		close(*lock_fd);
		*lock_fd = -1;
	}
	return err;
}

void serve_upgrade_summary(const struct serve_upgrade *u, const char *dev,
			   bool clean, char *buf, size_t len)
{
#define UPG_S(a, b) ((double)((b) - (a)) / 1e9)
	snprintf(buf, len, "upgraded %s from pid %d to pid %d: paused %.3f s "
		 "(quiesce %.3f, old server's close %.3f, open %.3f%s, recovery "
		 "%.3f), prepared in %.3f s", dev, (int)u->old, (int)getpid(),
		 UPG_S(u->t_ask, u->t_live), UPG_S(u->t_ask, u->t_quiesced),
		 UPG_S(u->t_quiesced, u->t_handed), UPG_S(u->t_handed, u->t_opened),
		 clean ? " clean" : ", rolled forward",
		 UPG_S(u->t_opened, u->t_live), UPG_S(u->t_start, u->t_ask));
#undef UPG_S
}

/* The old server's side of a live upgrade: run() returned because "upgrade
 * PID" came on the control socket.  Quiesce the device unless a stop was
 * asked too, and answer the requester.  true: hand the device over (stop
 * it serving, leave the device); false: serve on (or stop, when a stop
 * came meanwhile: *stop). */
bool serve_handover(struct fe_server *s, const struct fe_ops *ops,
			   struct serve_ctl *ctl, bool *stop)
{
	int pid = s->handover_pid, err;
	uint64_t n = 0;

	err = serve_ctl_stopping(ctl) ? -ECANCELED :
	      ops->quiesce ? ops->quiesce(s) : -EOPNOTSUPP;
	serve_ctl_handover(ctl, err);   /* clears s->handover_pid */
	if (!err) {
		s->handover_pid = pid;
		return true;
	}
	fprintf(stderr, "ublk-flash: upgrade to pid %d refused: %s; serving on\n",
		pid, err == -ECANCELED ? "a stop was asked" : strerror(-err));
	/* the eventfd counts its writers: more than the upgrade's one is a
	 * stop (signal, control socket) */
	*stop = read(s->stop_fd, &n, sizeof(n)) == sizeof(n) && n > 1;
	return false;
}

/* serve --upgrade, before the engine opens: prepare what the device needs
 * (takeover), ask the live server for it and wait until it has closed the
 * device and the image.  0, or -errno after one line (*handed_in:
 * the old server had quiesced the device: it waits for a --recover). */
int serve_upgrade_begin(struct fe_serve_opts *o, const struct fe_ops *ops,
			       struct fe_server *s, struct serve_upgrade *u,
			       bool *handed_in)
{
	int spare[UPGRADE_SPARE_FDS], n = 0;
	char why[256];
	int err;

	err = ops->takeover ? ops->takeover(s) : -EOPNOTSUPP;
	if (err)
		return err == -EOPNOTSUPP ? err : serve_err_io(err, true);
	/* What the engine, the control socket and the registry take after the
	 * handover is held now, as descriptors given back once the old server
	 * is done: a server short of them fails while the old one serves. */
	while (n < UPGRADE_SPARE_FDS &&
	       (spare[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	if (n < UPGRADE_SPARE_FDS) {
		err = -errno;
		fprintf(stderr, "ublk-flash: serve --upgrade: descriptors for the "
			"engine and the registry: %s\n", strerror(-err));
		while (n > 0)
			close(spare[--n]);
		return serve_err_io(err, false);
	}
	err = serve_upgrade_ask(o->run_dir, u, why, sizeof(why));
	if (err) {
		fprintf(stderr, "ublk-flash: serve --upgrade: the server of %s "
			"(pid %d) did not hand its device over: %s\n", o->image,
			(int)u->old, why);
		if (u->fd >= 0)
			close(u->fd);
		u->fd = -1;
		while (n > 0)
			close(spare[--n]);
		return err == -EPERM && strstr(why, "older than") ?
		       -EOPNOTSUPP : serve_err_io(err, false);
	}
	*handed_in = true;
	err = serve_upgrade_done(u, why, sizeof(why));
	while (n > 0)
		close(spare[--n]);
	/* its supervisor is ours now (systemd: MAINPID= names us) */
	if (u->notify[0] && !getenv("NOTIFY_SOCKET"))
		setenv("NOTIFY_SOCKET", u->notify, 1);
	if (err)
		fprintf(stderr, "ublk-flash: serve --upgrade: warning: the server "
			"of %s (pid %d) handed its device over but %s%s; the "
			"image is rolled forward as after a crash\n", o->image,
			(int)u->old, err == -EIO ? "could not close the image "
			"cleanly: " : "", why);
	/* Its image lock goes when it closes the engine or exits. */
	if (err && u->lock_fd < 0)
		for (int i = 0; i < 6000 && kill(u->old, 0) == 0; i++) {
			struct timespec ts = { 0, 5 * 1000000L };
			nanosleep(&ts, NULL);
		}
	return 0;
}
