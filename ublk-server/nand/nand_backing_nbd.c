/* SPDX-License-Identifier: MIT */
/*
 * A backing on an NBD export (libnbd): the emulated flash's bytes live on
 * qemu-nbd, nbdkit, rbd-nbd or any NBD server.  A backing beside the file
 * descriptor, memory and RBD ones (nand.h).
 *
 * Durability carries through: nand_backing_ops.sync is NBD_CMD_FLUSH, and
 * an export that cannot flush is refused for writing (its writes could
 * never be made durable).  A failed request (the network, the server's
 * EIO) is -EIO (its cause said once on stderr); the engine turns that
 * into EIO for the host, never into lost data.
 *
 * Requests are libnbd's asynchronous ones, so the engine's concurrent
 * reads and programs (nand.h, Threads) are that many requests in flight:
 *
 * - Reads go first to a private connection: when the server allows
 *   multi-conn, up to NB_PRIV more connections are opened for reads only,
 *   and a reading thread that finds one idle takes it for its request
 *   (nbd_pread) and reads the reply from the socket itself.  One thread's
 *   wake-up per request: before, every read passed through the shared
 *   connection's dispatcher (below), and each 4K read crossed two threads
 *   of this process instead of one (docs/network.md, "Measured").  Reads
 *   only ever ask for bytes whose writes completed (the engine's map
 *   publishes a page after its program returned), and multi-conn promises
 *   that a completed write is seen on every connection.
 * - Everything else (writes, zeroes, flushes, and the reads that found no
 *   private connection idle) goes on the first, shared connection: each
 *   call issues its request (nbd_aio_*) from the engine's thread and
 *   sleeps on a semaphore its completion callback posts; one dispatcher
 *   thread moves the bytes (poll on the socket, nbd_aio_notify_read /
 *   _write) and runs the callbacks.  All writes on one connection, so the
 *   FLUSH there covers every acknowledged write whatever the server's
 *   multi-conn semantics.  A run of pages (preadv / pwritev) is one
 *   request through a bounce buffer.
 *
 * The first connection is also what makes an export's one-client limit a
 * lock: `nbdkit --filter=limit limit=1` or qemu-nbd's default --shared=1
 * refuse a second ublk-flash (-EBUSY: the server closed the connection in
 * the handshake), and the same limit refuses our own private connections,
 * so such an export is served on the shared one alone (slower reads).
 * OCTANT_NBD_CONNECTIONS=N caps the connections (1 = the shared one only;
 * default and most 1 + NB_PRIV).
 *
 * libnbd is loaded (dlopen) by the first NBD backing, not linked: it pulls
 * in gnutls and libxml2 (ICU's 30 MiB of data among them), which a server
 * on a local image would otherwise map and, under its mlockall, keep
 * resident (44 MiB of its 77 MiB RSS).
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <libnbd.h>

#include "nand.h"

#define NB_LIBNBD "libnbd.so.0"

/* The libnbd calls used here, resolved from NB_LIBNBD (types checked
 * against libnbd.h). */
#define NB_FUNCS(X) X(aio_flush) X(aio_get_direction) X(aio_get_fd)        \
	X(aio_is_dead) X(aio_notify_read) X(aio_notify_write) X(aio_pread) \
	X(aio_pwrite) X(aio_zero) X(can_flush) X(can_multi_conn) X(can_zero) \
	X(close) X(connect_uri) X(create) X(get_errno) X(get_error)        \
	X(get_size) X(is_read_only) X(pread) X(set_uri_allow_local_file)      \
	X(shutdown)
static struct {
#define NB_PTR(name) __typeof__(nbd_##name) *name;
	NB_FUNCS(NB_PTR)
#undef NB_PTR
	void *dl;
	int err;                        /* 0 loaded, else -ELIBACC */
} nbl;
static pthread_once_t nbl_once = PTHREAD_ONCE_INIT;

static void nbl_load(void)
{
	nbl.dl = dlopen(NB_LIBNBD, RTLD_NOW | RTLD_LOCAL);
	if (!nbl.dl)
		goto fail;
#define NB_SYM(name) \
	if (!(*(void **)&nbl.name = dlsym(nbl.dl, "nbd_" #name))) goto fail;
	NB_FUNCS(NB_SYM)
#undef NB_SYM
	return;
fail:
	fprintf(stderr, "ublk-flash: an NBD medium needs libnbd (%s; package "
		"libnbd0)\n", dlerror());
	nbl.err = -ELIBACC;
}

#define NBD_CHUNK (4u << 20)    /* well under every server's request limit */
#define NB_PRIV   8u            /* private read connections at most: one
				   per FUSE serving thread (fuse.c) */

/* One connection and the thread that moves its bytes. */
struct nb_conn {
	struct nbd_handle *h;
	int evfd;                       /* wakes the dispatcher: -1 none */
	pthread_t thr;
	bool running;                   /* thr started */
	atomic_bool stop;
};

struct nbd_backing {
	struct nand_backing b;
	struct nb_conn c;               /* the shared connection */
	struct nbd_handle *p[NB_PRIV];  /* private read connections: NULL none */
	atomic_uint pidle;              /* bit i: p[i] open and idle */
	bool can_zero;
	atomic_int said;                /* last request errno said (0 none) */
};

/* A request in flight: its caller sleeps on @done. */
struct nb_req {
	sem_t done;
	int err;                        /* errno the server or libnbd gave */
};

static int nb_complete(void *user_data, int *error)
{
	struct nb_req *q = user_data;

	q->err = *error;
	sem_post(&q->done);
	return 1;                       /* retire the command */
}

/* Move bytes for connection @arg until told to stop or the connection is
 * gone (libnbd then completes every request in flight with an error). */
static void *nb_dispatch(void *arg)
{
	struct nb_conn *c = arg;
	int fd = nbl.aio_get_fd(c->h);

	while (!atomic_load(&c->stop) && !nbl.aio_is_dead(c->h)) {
		unsigned dir = nbl.aio_get_direction(c->h);
		struct pollfd p[2] = {
			{ .fd = fd, .events = (dir & LIBNBD_AIO_DIRECTION_READ ?
					       POLLIN : 0) |
					      (dir & LIBNBD_AIO_DIRECTION_WRITE ?
					       POLLOUT : 0) },
			{ .fd = c->evfd, .events = POLLIN },
		};
		uint64_t v;

		if (poll(p, 2, -1) < 0)
			continue;               /* EINTR */
		if (p[1].revents && read(c->evfd, &v, sizeof(v)) < 0) {
			/* nothing to drain */
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (nbl.aio_notify_read(c->h) < 0 && nbl.aio_is_dead(c->h))
				break;
		} else if (p[0].revents & POLLOUT) {
			nbl.aio_notify_write(c->h);
		}
	}
	return NULL;
}

/* Wake @c's dispatcher when a request left bytes to send (it may be
 * polling for replies only). */
static void nb_kick(struct nb_conn *c)
{
	uint64_t one = 1;

	if ((nbl.aio_get_direction(c->h) & LIBNBD_AIO_DIRECTION_WRITE) &&
	    write(c->evfd, &one, sizeof(one)) < 0) {
		/* the counter is full: it is awake anyway */
	}
}

/* A failed request is -EIO (what a block device can say), its cause said
 * on stderr once per kind. */
static int nb_fail(struct nbd_backing *n, int err)
{
	if (err == ENOMEM)
		return -ENOMEM;
	if (atomic_exchange(&n->said, err) != err)
		fprintf(stderr, "ublk-flash: the NBD medium: a request failed: "
			"%s (reported as EIO)\n", strerror(err));
	return -EIO;
}

/* Wait for request @q, issued with result @cookie (-1: it never was). */
static int nb_wait(struct nbd_backing *n, struct nb_conn *c, int64_t cookie,
		   struct nb_req *q)
{
	int err;

	if (cookie < 0) {
		err = nbl.get_errno();
		sem_destroy(&q->done);
		return nb_fail(n, err > 0 ? err : EIO);
	}
	nb_kick(c);
	while (sem_wait(&q->done) && errno == EINTR)
		;
	sem_destroy(&q->done);
	return q->err ? nb_fail(n, q->err) : 0;
}

#define NB_CB(q) ((nbd_completion_callback){ .callback = nb_complete, \
					     .user_data = (q) })

/* Take an idle private read connection: its index, or -1 when none is
 * open and idle. */
static int nb_take(struct nbd_backing *n)
{
	unsigned m = atomic_load(&n->pidle);

	while (m) {
		int i = __builtin_ctz(m);

		if (atomic_compare_exchange_weak(&n->pidle, &m, m & ~(1u << i)))
			return i;
	}
	return -1;
}

/* Read @len bytes at @off on private connection @i, the reply read by
 * this thread (libnbd's synchronous call: send, poll, receive). */
static int nb_read_own(struct nbd_backing *n, int i, void *buf, size_t len,
		       uint64_t off)
{
	int r = 0;

	if (nbl.pread(n->p[i], buf, len, off, 0) < 0) {
		int err = nbl.get_errno();

		r = nb_fail(n, err > 0 ? err : EIO);
	}
	atomic_fetch_or(&n->pidle, 1u << i);
	return r;
}

static int nb_io(struct nbd_backing *n, bool wr, void *buf, size_t len,
		 uint64_t off)
{
	while (len) {
		size_t c = len < NBD_CHUNK ? len : NBD_CHUNK;
		struct nb_conn *k = &n->c;
		struct nb_req q = { .err = 0 };
		int64_t cookie;
		int r, i = wr ? -1 : nb_take(n);

		if (i >= 0) {
			r = nb_read_own(n, i, buf, c, off);
		} else {
			sem_init(&q.done, 0, 0);
			cookie = wr ? nbl.aio_pwrite(k->h, buf, c, off,
						     NB_CB(&q), 0)
				    : nbl.aio_pread(k->h, buf, c, off,
						    NB_CB(&q), 0);
			r = nb_wait(n, k, cookie, &q);
		}
		if (r)
			return r;
		buf = (char *)buf + c;
		off += c;
		len -= c;
	}
	return 0;
}

static int nb_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	return nb_io((struct nbd_backing *)b, false, buf, len, off);
}

static int nb_pwrite(struct nand_backing *b, const void *buf, size_t len,
		     uint64_t off)
{
	return nb_io((struct nbd_backing *)b, true, (void *)buf, len, off);
}

/* A vector is one NBD request through a bounce buffer: a page program
 * (data + inline OOB) or a run read is one round trip, not one per piece. */
static int nb_rw_vec(struct nand_backing *b, bool wr, const struct iovec *iov,
		     int cnt, uint64_t off)
{
	size_t len = 0, at = 0;
	uint8_t *bounce;
	int r;

	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	bounce = malloc(len ? len : 1);
	if (!bounce)
		return -ENOMEM;
	if (wr)
		for (int i = 0; i < cnt; at += iov[i].iov_len, i++)
			memcpy(bounce + at, iov[i].iov_base, iov[i].iov_len);
	r = nb_io((struct nbd_backing *)b, wr, bounce, len, off);
	if (!r && !wr)
		for (int i = 0; i < cnt; at += iov[i].iov_len, i++)
			memcpy(iov[i].iov_base, bounce + at, iov[i].iov_len);
	free(bounce);
	return r;
}

static int nb_preadv(struct nand_backing *b, const struct iovec *iov, int cnt,
		     uint64_t off)
{
	return nb_rw_vec(b, false, iov, cnt, off);
}

static int nb_pwritev(struct nand_backing *b, const struct iovec *iov, int cnt,
		      uint64_t off)
{
	return nb_rw_vec(b, true, iov, cnt, off);
}

/* Reads as zeroes afterwards: NBD_CMD_WRITE_ZEROES (TRIM promises
 * nothing about the bytes), else plain zero writes. */
static int nb_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	static const uint8_t zero[65536];
	struct nbd_backing *n = (struct nbd_backing *)b;
	int r;

	while (len) {
		uint64_t c;
		if (n->can_zero) {
			struct nb_req q = { .err = 0 };

			c = len < NBD_CHUNK ? len : NBD_CHUNK;
			sem_init(&q.done, 0, 0);
			r = nb_wait(n, &n->c, nbl.aio_zero(n->c.h, c, off,
							    NB_CB(&q), 0), &q);
		} else {
			c = len < sizeof(zero) ? len : sizeof(zero);
			r = nb_io(n, true, (void *)zero, (size_t)c, off);
		}
		if (r)
			return r;
		off += c;
		len -= c;
	}
	return 0;
}

static int nb_sync(struct nand_backing *b)
{
	struct nbd_backing *n = (struct nbd_backing *)b;
	struct nb_req q = { .err = 0 };

	sem_init(&q.done, 0, 0);
	return nb_wait(n, &n->c, nbl.aio_flush(n->c.h, NB_CB(&q), 0), &q);
}

static void nb_destroy(struct nand_backing *b)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	if (!n)
		return;
	struct nb_conn *c = &n->c;
	uint64_t one = 1;

	if (c->running) {
		atomic_store(&c->stop, true);
		if (write(c->evfd, &one, sizeof(one)) < 0) {
			/* full: it wakes anyway */
		}
		pthread_join(c->thr, NULL);
	}
	if (c->h) {
		nbl.shutdown(c->h, 0);
		nbl.close(c->h);
	}
	if (c->evfd >= 0)
		close(c->evfd);
	for (unsigned i = 0; i < NB_PRIV; i++)
		if (n->p[i]) {
			nbl.shutdown(n->p[i], 0);
			nbl.close(n->p[i]);
		}
	free(n);
}

static const struct nand_backing_ops nbd_ops = {
	.pread = nb_pread,
	.pwrite = nb_pwrite,
	.preadv = nb_preadv,
	.pwritev = nb_pwritev,
	.punch = nb_punch,
	.sync = nb_sync,
	.destroy = nb_destroy,
};

bool nand_backing_is_nbd(const char *path)
{
	return !strncmp(path, "nbd://", 6) || !strncmp(path, "nbds://", 7) ||
	       !strncmp(path, "nbd+unix://", 11) ||
	       !strncmp(path, "nbds+unix://", 12) ||
	       !strncmp(path, "nbd+vsock://", 12);
}

const char *nand_backing_nbd_error(void)
{
	const char *e;

	pthread_once(&nbl_once, nbl_load);
	if (nbl.err)
		return "libnbd (" NB_LIBNBD ") could not be loaded";
	e = nbl.get_error();

	return e ? e : "unknown NBD error";
}

/* Start @c's dispatcher (signals blocked: they are the server's). */
static int nb_start(struct nb_conn *c)
{
	sigset_t all, old;
	int r;

	c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->evfd < 0)
		return -errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&c->thr, NULL, nb_dispatch, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	c->running = !r;
	return r;
}

/* Connect handle @h to @uri: 0, -EBUSY when the server closed the
 * connection in the handshake (it takes one client at a time: nbdkit's
 * limit filter, qemu-nbd --shared=1), else the connection's errno. */
static int nb_connect(struct nbd_handle *h, const char *uri)
{
	const char *msg;
	int e;

	/* TLS when the URI says nbds (libnbd's default); the URI may name
	 * its certificates (tls-certificates=DIR, tls-psk-file=FILE): the
	 * user's own command line, as a path is */
	nbl.set_uri_allow_local_file(h, true);
	if (nbl.connect_uri(h, uri) == 0)
		return 0;
	e = nbl.get_errno();
	msg = nbl.get_error();
	/* the socket connected, then the server hung up before a word of
	 * the handshake (libnbd 1.14 says "server disconnected unexpectedly",
	 * or, when the hang-up comes with the connect, "invalid in state
	 * CONNECT"); a server that is not there is ECONNREFUSED / ENOENT */
	if (msg && (strstr(msg, "server disconnected") ||
		    strstr(msg, "invalid in state CONNECT")))
		return -EBUSY;
	return e > 0 ? -e : -ECONNREFUSED;
}

/* Open up to @want private read connections to @uri (the server allows
 * multi-conn): stop at the first it refuses (a client limit), keeping
 * what it took. */
static void nb_open_private(struct nbd_backing *n, const char *uri,
			    unsigned want)
{
	for (unsigned i = 0; i < want && i < NB_PRIV; i++) {
		struct nbd_handle *h = nbl.create();

		if (!h)
			return;
		if (nb_connect(h, uri)) {
			nbl.close(h);
			return;
		}
		n->p[i] = h;
		atomic_fetch_or(&n->pidle, 1u << i);
	}
}

int nand_backing_nbd(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size)
{
	struct nbd_backing *n;
	struct nbd_handle *h;
	const char *env = getenv("OCTANT_NBD_CONNECTIONS");
	unsigned want = env ? (unsigned)atoi(env) : 1 + NB_PRIV;
	int64_t sz;
	int r;

	pthread_once(&nbl_once, nbl_load);
	if (nbl.err)
		return nbl.err;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->b.ops = &nbd_ops;
	n->c.evfd = -1;
	h = n->c.h = nbl.create();
	if (!h) {
		r = nbl.get_errno() > 0 ? -nbl.get_errno() : -ENOMEM;
		goto err;
	}
	r = nb_connect(h, uri);
	if (r)
		goto err;
	r = nb_start(&n->c);
	if (r)
		goto err;
	sz = nbl.get_size(h);
	if (sz < 0) {
		r = nbl.get_errno() > 0 ? -nbl.get_errno() : -EIO;
		goto err;
	}
	if (!readonly && nbl.is_read_only(h) == 1) {
		r = -EROFS;
		goto err;
	}
	if (!readonly && nbl.can_flush(h) != 1) {
		r = -EOPNOTSUPP;        /* nothing could ever be durable */
		goto err;
	}
	n->can_zero = nbl.can_zero(h) == 1;
	/* without multi-conn a read on another connection need not see a
	 * write completed on this one */
	if (want > 1 && nbl.can_multi_conn(h) == 1)
		nb_open_private(n, uri, want - 1);
	*size = (uint64_t)sz;
	*out = &n->b;
	return 0;
err:
	nb_destroy(&n->b);
	return r;
}
