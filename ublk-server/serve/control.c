/* SPDX-License-Identifier: MIT */
/* The control socket: live stats, health and stop for `ublk-flash
 * stats|health|stop`, and a live upgrade's handover (`ublk-flash upgrade`:
 * "options", "upgrade PID"; serve.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "zoned.h"

#define SERVE_CTL_WAITERS 32

#define SERVE_CTL_CHECK_MS 1000   /* the entry is checked this often */

struct serve_ctl {
	int lfd, quit_fd;
	pthread_mutex_t mu;               /* guards the four below */
	int waiters[SERVE_CTL_WAITERS];   /* stop requesters awaiting the result */
	unsigned nwait;
	int handover_fd;                  /* the upgrade requester until the
	                                     serve loop answers it, else -1 */
	bool stopping;                    /* a stop was asked: no upgrade */
	bool handed;                      /* quiesced for a handover */
	pthread_t thread;
	struct fe_server *s;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char dir[PATH_MAX];               /* the entry's folder */
	ino_t sock_ino;                   /* the socket file bound at @path */
	int lock_fd;                      /* the entry's lock (serve_ctl_keep) */
	_Atomic(const struct serve_record *) rec;  /* NULL until kept */
};

static int serve_ctl_addr(const char *dir, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if ((size_t)snprintf(a->sun_path, sizeof(a->sun_path), "%s/ctl.sock",
			     dir) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

static void serve_ctl_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* "upgrade PID": the server PID (the requester itself, by its socket
 * credentials) takes this server's device over.  Refused ("error: ...")
 * while a stop or another upgrade is under way or before the device is
 * live; else the serve loop is woken (handover_pid, stop_fd) and @fd kept:
 * serve_ctl_handover answers it. */
static bool serve_ctl_upgrade(struct serve_ctl *c, int fd, const char *arg)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	const char *refuse = NULL;
	uint64_t one = 1;
	char *end;
	long pid;

	errno = 0;
	pid = strtol(arg, &end, 10);
	if (errno || *end || pid <= 0 || pid > INT32_MAX)
		refuse = "error: upgrade: not a pid\n";
	else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
		 cr.pid != (pid_t)pid)
		refuse = "error: upgrade: the pid is not the requester's\n";
	pthread_mutex_lock(&c->mu);
	if (!refuse && (c->stopping || c->handover_fd >= 0 || c->handed))
		refuse = c->stopping ? "error: upgrade: the server is stopping\n" :
			 "error: upgrade: another upgrade is under way\n";
	if (!refuse && !c->s->options)
		refuse = "error: upgrade: the device is not live yet\n";
	if (!refuse) {
		c->handover_fd = fd;
		c->s->handover_pid = (int)pid;
	}
	pthread_mutex_unlock(&c->mu);
	if (refuse) {
		serve_ctl_write_all(fd, refuse, strlen(refuse));
		return false;
	}
	if (write(c->s->stop_fd, &one, sizeof(one)) < 0) {
		/* the loop is woken by the eventfd only: give up */
		pthread_mutex_lock(&c->mu);
		c->handover_fd = -1;
		c->s->handover_pid = 0;
		pthread_mutex_unlock(&c->mu);
		serve_ctl_write_all(fd, "error: upgrade: cannot wake the server\n",
				    39);
		return false;
	}
	return true;
}

/* "resize SIZE": grow the served image (serve_grow); the answer is
 * "resized SIZE\n" or "failed ERRNO MAX WHY\n" (MAX: the largest size the
 * image can grow to, with ERRNO EFBIG; else 0). */
static void serve_ctl_resize(struct serve_ctl *c, int fd, const char *arg)
{
	char why[256] = "", line[400];
	unsigned long long size;
	uint64_t max = 0;
	bool busy;
	char *end;
	int r;

	errno = 0;
	size = strtoull(arg, &end, 10);
	pthread_mutex_lock(&c->mu);
	busy = c->stopping || c->handover_fd >= 0 || c->handed;
	pthread_mutex_unlock(&c->mu);
	if (errno || *end || !size) {
		r = -EINVAL;
		snprintf(why, sizeof(why), "not a size");
	} else if (busy || !c->s->options) {
		r = -EBUSY;
		snprintf(why, sizeof(why), "the server is %s", busy ?
			 "stopping or handing over" : "not live yet");
	} else {
		r = serve_grow(c->s, size, &max, why, sizeof(why));
	}
	if (r)
		snprintf(line, sizeof(line), "failed %d %llu %s\n", -r,
			 (unsigned long long)max, why);
	else
		snprintf(line, sizeof(line), "resized %llu\n", size);
	serve_ctl_write_all(fd, line, strlen(line));
}

/* Answer one request; true if @fd was kept (a stop requester waits for
 * the outcome, sent by serve_ctl_finish). */
static bool serve_ctl_answer(struct serve_ctl *c, int fd)
{
	char cmd[64];
	ssize_t n = 0, r;
	struct timeval tv = { 2, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((size_t)n < sizeof(cmd) - 1) {
		r = recv(fd, cmd + n, sizeof(cmd) - 1 - (size_t)n, 0);
		if (r <= 0)
			break;
		n += r;
		if (memchr(cmd, '\n', (size_t)n))
			break;
	}
	cmd[n] = '\0';
	cmd[strcspn(cmd, "\n")] = '\0';

	if (!strcmp(cmd, "stats json") || !strcmp(cmd, "stats text") ||
	    !strcmp(cmd, "health json") || !strcmp(cmd, "health text")) {
		struct ftl_stats st;
		struct ftl_health h;
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		bool json = !strcmp(strchr(cmd, ' ') + 1, "json");
		if (!m) {
			serve_ctl_write_all(fd, "error: out of memory\n", 21);
			return false;
		}
		if (!c->s->set) {       /* a zoned image: zones and wear */
			static _Thread_local struct zn_stats zs;

			zn_stats_get(c->s->zn, &zs);
			(cmd[0] == 'h' ? zn_health_print : zn_stats_print)(&zs, m,
									   json);
		} else if (cmd[0] == 'h') {
			ftl_set_health_get(c->s->set, &h);
			ftl_health_print(&h, m, json);
		} else {
			ftl_set_stats_get(c->s->set, &st);
			ftl_stats_print(&st, m, json);
		}
		fclose(m);
		serve_ctl_write_all(fd, buf, len);
		free(buf);
	} else if (!strcmp(cmd, "stop") || !strcmp(cmd, "stop force")) {
		uint64_t one = 1;
		bool kept = false;
		bool upgrading;
		pthread_mutex_lock(&c->mu);
		upgrading = c->handover_fd >= 0 || c->handed;
		if (!upgrading)
			c->stopping = true;
		pthread_mutex_unlock(&c->mu);
		if (upgrading) {   /* the new server is the one to stop */
			serve_ctl_write_all(fd, "error: upgrading\n", 17);
			return false;
		}
		if (cmd[4])
			c->s->force_stop = true;
		if (write(c->s->stop_fd, &one, sizeof(one)) < 0) {
			serve_ctl_write_all(fd, "error: cannot signal stop\n", 26);
			return false;
		}
		serve_ctl_write_all(fd, "stopping\n", 9);
		pthread_mutex_lock(&c->mu);
		if (c->nwait < SERVE_CTL_WAITERS) {
			c->waiters[c->nwait++] = fd;
			kept = true;
		}
		pthread_mutex_unlock(&c->mu);
		return kept;
	} else if (!strcmp(cmd, "options")) {
		if (c->s->options)
			serve_ctl_write_all(fd, c->s->options, c->s->options_len);
		else
			serve_ctl_write_all(fd, "error: not live yet\n", 20);
	} else if (!strncmp(cmd, "upgrade ", 8)) {
		return serve_ctl_upgrade(c, fd, cmd + 8);
	} else if (!strncmp(cmd, "resize ", 7)) {
		serve_ctl_resize(c, fd, cmd + 7);
	} else {
		serve_ctl_write_all(fd, "error: unknown command\n", 23);
	}
	return false;
}

/* Listen on @c->path (a new socket file): the descriptor, or -errno. */
static int serve_ctl_listen(struct serve_ctl *c)
{
	struct sockaddr_un a;
	struct stat st;
	int fd, err = serve_ctl_addr(c->dir, &a);

	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(a.sun_path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 8) < 0 || stat(a.sun_path, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	c->sock_ino = st.st_ino;
	return fd;
}

/* The entry was removed under the server (`rm -rf` of the run folder)?
 * Write it again, the socket too, so list, stop and stats find this
 * server, and a serve of the image sees it live (serve_entry_dead proves
 * it live meanwhile: nothing of it is touched). */
static void serve_ctl_check(struct serve_ctl *c, struct pollfd *lp)
{
	const struct serve_record *r = atomic_load(&c->rec);
	struct stat st;
	int err, fd;

	if (!r)
		return;
	err = serve_entry_repair(c->dir, c->lock_fd, r);
	if (err < 0)
		return;           /* busy (a serve looking at it): next time */
	if (stat(c->path, &st) < 0 || st.st_ino != c->sock_ino) {
		fd = serve_ctl_listen(c);
		if (fd < 0)
			return;
		dup3(fd, c->lfd, O_CLOEXEC);   /* same number: lp stays right */
		close(fd);
		lp->revents = 0;
		err = 1;
	}
	if (err > 0)
		fprintf(stderr, "ublk-flash: note: the run registry entry %s was "
			"removed; it is written again\n", c->dir);
}

static void *serve_ctl_thread(void *arg)
{
	struct serve_ctl *c = arg;
	struct pollfd p[2] = { { c->lfd, POLLIN, 0 }, { c->quit_fd, POLLIN, 0 } };

	for (;;) {
		int n = poll(p, 2, SERVE_CTL_CHECK_MS);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (n == 0) {
			serve_ctl_check(c, &p[0]);
			continue;
		}
		if (p[0].revents & POLLIN) {
			int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0 && !serve_ctl_answer(c, fd))
				close(fd);
		}
	}
	return NULL;
}

int serve_ctl_start(struct serve_ctl **out, const char *dir,
		    struct fe_server *s)
{
	struct sockaddr_un a;
	struct serve_ctl *c;
	int err;

	*out = NULL;
	err = serve_ctl_addr(dir, &a);
	if (err)
		return err;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->s = s;
	c->lock_fd = -1;
	c->handover_fd = -1;
	pthread_mutex_init(&c->mu, NULL);
	atomic_init(&c->rec, NULL);
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	snprintf(c->path, sizeof(c->path), "%s", a.sun_path);
	c->quit_fd = eventfd(0, EFD_CLOEXEC);
	c->lfd = serve_ctl_listen(c);
	if (c->quit_fd < 0 || c->lfd < 0) {
		err = c->lfd < 0 && c->quit_fd >= 0 ? c->lfd : -errno;
		goto err;
	}
	err = -pthread_create(&c->thread, NULL, serve_ctl_thread, c);
	if (err)
		goto err;
	*out = c;
	return 0;
err:
	if (c->lfd >= 0)
		close(c->lfd);
	if (c->quit_fd >= 0)
		close(c->quit_fd);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return err;
}

bool serve_ctl_stopping(struct serve_ctl *c)
{
	bool stopping;

	if (!c)
		return false;
	pthread_mutex_lock(&c->mu);
	stopping = c->stopping;
	pthread_mutex_unlock(&c->mu);
	return stopping;
}

/* "quiesced\n" with @lock_fd (the entry's lock, if any) attached, and
 * "notify PATH\n" when this server tells a supervisor ($NOTIFY_SOCKET), for
 * the successor to tell it too (a systemd unit's reload runs it without
 * one: NotifyAccess=main gives none to control processes). */
static void serve_ctl_send_quiesced(int fd, int lock_fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	const char *sock = getenv("NOTIFY_SOCKET");
	char msg[PATH_MAX + 32];
	struct iovec iov = { msg, 0 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	int n = -1;

	if (sock && *sock && !strchr(sock, '\n'))
		n = snprintf(msg, sizeof(msg), "quiesced\nnotify %s\n", sock);
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = snprintf(msg, sizeof(msg), "quiesced\n");
	iov.iov_len = (size_t)n;

	if (lock_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.b;
		m.msg_controllen = sizeof(ctl.b);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &lock_fd, sizeof(int));
	}
	if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0) {
		/* the requester is gone: the device waits for a --recover */
	}
}

void serve_ctl_handover(struct serve_ctl *c, int err)
{
	char msg[256];
	int fd;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	fd = c->handover_fd;
	c->handover_fd = -1;
	c->s->handover_pid = 0;
	if (fd >= 0 && !err) {
		if (c->nwait < SERVE_CTL_WAITERS) {
			c->waiters[c->nwait++] = fd;
			c->handed = true;
		} else {
			err = -EMFILE;   /* cannot keep it: refuse instead */
		}
	}
	pthread_mutex_unlock(&c->mu);
	if (fd < 0)
		return;
	if (err) {
		snprintf(msg, sizeof(msg), "error: upgrade: %s\n",
			 err == -EOPNOTSUPP ? "this device cannot be quiesced" :
			 strerror(-err));
		serve_ctl_write_all(fd, msg, strlen(msg));
		close(fd);
	} else {
		serve_ctl_send_quiesced(fd, c->lock_fd);
	}
}

void serve_ctl_keep(struct serve_ctl *c, int lock_fd,
		    const struct serve_record *r)
{
	if (!c)
		return;
	c->lock_fd = lock_fd;
	atomic_store(&c->rec, r);
}

void serve_ctl_stop(struct serve_ctl *c)
{
	uint64_t one = 1;

	if (!c || c->lfd < 0)
		return;
	if (write(c->quit_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(c->thread, NULL);
	close(c->lfd);
	close(c->quit_fd);
	c->lfd = c->quit_fd = -1;
	unlink(c->path);
}

void serve_ctl_finish(struct serve_ctl *c, int err, const char *why)
{
	char msg[512];

	if (!c)
		return;
	serve_ctl_stop(c);
	serve_ctl_handover(c, -ECANCELED);   /* never answered: the loop ended */
	if (err)
		snprintf(msg, sizeof(msg), "failed %d %s\n", -err,
			 why && *why ? why : "see the server's log");
	else
		snprintf(msg, sizeof(msg), c->handed ? "handed-over\n" :
			 "stopped\n");
	for (unsigned i = 0; i < c->nwait; i++) {
		serve_ctl_write_all(c->waiters[i], msg, strlen(msg));
		close(c->waiters[i]);
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int serve_ctl_connect(const struct serve_entry *e)
{
	struct sockaddr_un a;
	int err = serve_ctl_addr(e->dir, &a);
	if (err)
		return err;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int serve_ctl_request(const struct serve_entry *e, const char *cmd, FILE *out)
{
	char buf[4096];
	ssize_t n;
	int fd = serve_ctl_connect(e);
	struct timeval tv = { 10, 0 };

	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(buf, sizeof(buf), "%s\n", cmd);
	serve_ctl_write_all(fd, buf, strlen(buf));
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0 ||
	       (n < 0 && errno == EINTR))
		if (out && n > 0)
			fwrite(buf, 1, (size_t)n, out);
	close(fd);
	return n < 0 ? -errno : 0;
}

static uint64_t serve_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Send "stop[ force]" and read the outcome line the server sends once it
 * has closed the engine: 0 "stopped", -EIO "failed ERRNO WHY" (@why
 * filled), -EPIPE the connection ended without one after the request was
 * taken, -ENOTCONN before, -ETIMEDOUT. */
static int serve_stop_request(const struct serve_entry *e, bool force,
			      uint64_t deadline, char *why, size_t len)
{
	char buf[1024];
	size_t got = 0;
	ssize_t n;
	int fd = serve_ctl_connect(e), err = -EPIPE;

	if (fd < 0)
		return fd;
	snprintf(buf, sizeof(buf), "%s\n", force ? "stop force" : "stop");
	serve_ctl_write_all(fd, buf, strlen(buf));
	for (;;) {
		uint64_t now = serve_now_ms();
		if (now >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		struct pollfd p = { fd, POLLIN, 0 };
		int r = poll(&p, 1, (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r == 0 ? -ETIMEDOUT : -errno;
			break;
		}
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf) - 1)
			break;
	}
	close(fd);
	buf[got] = '\0';
	if (strstr(buf, "\nstopped\n"))
		return 0;
	char *f = strstr(buf, "\nfailed ");
	if (f) {
		f = strchr(f + 8, ' ');
		snprintf(why, len, "%s", f ? f + 1 : "");
		why[strcspn(why, "\n")] = '\0';
		return -EIO;
	}
	if (!strncmp(buf, "error: unknown command", 22))
		return -EPROTO;
	if (!strncmp(buf, "error: upgrading", 16))
		return -EINPROGRESS;   /* handing its device to a new server */
	if (err == -EPIPE && !strstr(buf, "stopping\n"))
		return -ENOTCONN;     /* never taken: the server was exiting */
	return err;
}

bool serve_pid_running(pid_t pid)
{
	char p[64], buf[256];
	ssize_t n;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *c = strrchr(buf, ')');
	return !(c && c[1] == ' ' && (c[2] == 'Z' || c[2] == 'X'));
}

int serve_stop_server(const struct serve_entry *e, unsigned timeout_ms,
		      bool force, char *why, size_t len, bool *signalled)
{
	char p[PATH_MAX];
	struct timespec ts = { 0, 20 * 1000000L };
	uint64_t deadline = serve_now_ms() + timeout_ms;
	int res;

	why[0] = '\0';
	*signalled = false;
	res = serve_stop_request(e, force, deadline, why, len);
	/* Its socket file gone (removed with the entry): a live server binds
	 * it again within a second (serve_ctl_check). */
	for (int i = 0; res == -ENOENT && i < 20 && serve_pid_running(e->pid);
	     i++) {
		struct timespec w = { 0, 100 * 1000000L };

		nanosleep(&w, NULL);
		res = serve_stop_request(e, force, deadline, why, len);
	}
	if (res == -ETIMEDOUT || res == -EINPROGRESS)
		return res;
	if (res && res != -EIO && res != -EPIPE && e->pid > 0) {
		/* No answer on the control socket: SIGTERM.  The server does
		 * the same clean stop, but its outcome only shows on the image
		 * (the caller reads it there): -EPIPE once it has exited.
		 * Only to the process proven to hold the entry: a pid file
		 * can name a pid that another program has now. */
		if (!serve_entry_held_by(e->dir, e->pid))
			return -ESRCH;
		if (kill(e->pid, SIGTERM) < 0 && errno != ESRCH)
			return -errno;
		*signalled = true;
		res = -EPIPE;
	}
	/* The server is done once its lock is free (or its folder gone),
	 * and has exited once its process is gone too. */
	snprintf(p, sizeof(p), "%s/lock", e->dir);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return -errno;
	while (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0) {
		if (serve_now_ms() > deadline) {
			close(fd);
			return -ETIMEDOUT;
		}
		nanosleep(&ts, NULL);
	}
	if (fd >= 0)
		close(fd);
	while (e->pid > 0 && serve_pid_running(e->pid)) {
		if (serve_now_ms() > deadline)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	return res;
}
