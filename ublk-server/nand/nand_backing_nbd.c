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
 * Requests are libnbd's asynchronous ones, several in flight on each
 * connection (as fio's nbd engine keeps them), so the engine's concurrent
 * reads and programs (nand.h, Threads; the FUSE frontend's 8 serving
 * threads) are that many requests in flight:
 *
 * - Every write, zero and flush goes on the first connection, so the FLUSH
 *   there covers every acknowledged write whatever the server's multi-conn
 *   semantics.  Reads go on the other connections (when the server allows
 *   multi-conn: up to NB_CONNS - 1 more, NB_CONNS_DEFAULT in all unless
 *   OCTANT_NBD_CONNECTIONS=N says otherwise; 1 = the first alone), each
 *   read on an idle one, else behind the fewest in flight (nb_pick).  Reads only ever ask for
 *   bytes whose writes completed (the engine's map publishes a page after
 *   its program returned), and multi-conn promises that a completed write
 *   is seen on every connection.
 * - No thread of our own moves the bytes: the engine's thread issues its
 *   request (nbd_aio_*) and, while no other does, polls the connection's
 *   socket itself (nbd_aio_notify_read / _write), running the completions
 *   of everyone's replies; the others sleep until theirs completes or the
 *   poller, its own reply in, hands the socket over (nb_await).  A reply
 *   the poller receives for itself costs no wake-up; before, a dispatcher
 *   thread received every reply and woke its caller, or a private
 *   connection held one request at a time (docs/network.md, "Measured").
 * - A run of pages (preadv / pwritev: a page with its inline OOB, a run
 *   read) is one request through the thread's bounce buffer.
 * - A dead server (or connection) completes every request in flight and
 *   queued with ENOTCONN (libnbd), and refuses new ones: EIO at once.
 *
 * The first connection is also what makes an export's one-client limit a
 * lock: `nbdkit --filter=limit limit=1` or qemu-nbd's default --shared=1
 * refuse a second ublk-flash (-EBUSY: the server closed the connection in
 * the handshake), and the same limit refuses our own read connections,
 * so such an export is served on the first alone (its reads pipelined
 * there with the writes).
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
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
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
#define NB_CONNS  9u            /* connections at most (the first + reads) */
#define NB_CONNS_DEFAULT NB_CONNS /* a read connection per FUSE thread */

/* A request in flight: its caller waits for NB_DONE in @word, a futex
 * word (a completion touches the request with one atomic operation and
 * may then only wake the address: its caller may be gone by then). */
struct nb_req {
	atomic_uint word;               /* NB_DONE | NB_ASLEEP | kicks */
	int err;                        /* errno the server or libnbd gave */
	struct nb_req *next;            /* in nb_conn.sleepers */
};
#define NB_DONE   1u                /* completed: @err is set */
#define NB_ASLEEP 2u                /* its caller sleeps (wake it) */
#define NB_KICK   4u                /* added by a hand-over */

static void nb_futex_wake(atomic_uint *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * One connection and its requests in flight.  No thread of its own: a
 * thread waiting for a reply polls the socket for everyone (the poller,
 * one at a time), running libnbd's completions, which wake the waiters
 * whose replies came; when its own reply is in it hands the socket to a
 * sleeper still waiting.  A request whose reply the poller receives costs
 * its thread one wake-up; the poller's own, none.
 */
struct nb_conn {
	struct nbd_handle *h;
	int evfd;                       /* wakes the poller: -1 none */
	pthread_mutex_t mu;             /* guards polling, sleepers */
	bool polling;                   /* a thread polls the socket */
	struct nb_req *sleepers;        /* waiters asleep on their wake */
	atomic_uint inflight;           /* requests issued, not yet waited */
};

struct nbd_backing {
	struct nand_backing b;
	struct nb_conn c[NB_CONNS];     /* c[0] every write and flush; reads
					   on c[1..nc-1], else on c[0] */
	unsigned nc;                    /* connections open (>= 1) */
	bool can_zero;
	atomic_int said;                /* last request errno said (0 none) */
};

static int nb_complete(void *user_data, int *error)
{
	struct nb_req *q = user_data;

	q->err = *error;
	if (atomic_fetch_or(&q->word, NB_DONE) & NB_ASLEEP)
		nb_futex_wake(&q->word);
	return 1;                       /* retire the command */
}

#define NB_CB(q) ((nbd_completion_callback){ .callback = nb_complete, \
					     .user_data = (q) })

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

/* Move @c's bytes until @q completed or the connection is dead (libnbd
 * then completes every request in flight, with ENOTCONN). */
static void nb_poll_until(struct nb_conn *c, struct nb_req *q)
{
	int fd = nbl.aio_get_fd(c->h);

	while (!(atomic_load(&q->word) & NB_DONE) && !nbl.aio_is_dead(c->h)) {
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
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			nbl.aio_notify_read(c->h);
		else if (p[0].revents & POLLOUT)
			nbl.aio_notify_write(c->h);
	}
}

/* With @c->mu held and nobody polling: wake a sleeper whose request is
 * still in flight, to poll. */
static void nb_handover(struct nb_conn *c)
{
	for (struct nb_req *w = c->sleepers; w; w = w->next)
		if (!(atomic_load(&w->word) & NB_DONE)) {
			atomic_fetch_add(&w->word, NB_KICK);
			nb_futex_wake(&w->word);
			return;
		}
}

/* Wait for request @q on @c: poll for everyone while nobody does, else
 * sleep until the poller completes @q or hands the socket over. */
static void nb_await(struct nb_conn *c, struct nb_req *q)
{
	pthread_mutex_lock(&c->mu);
	while (!(atomic_load(&q->word) & NB_DONE)) {
		unsigned v;

		if (!c->polling) {
			c->polling = true;
			pthread_mutex_unlock(&c->mu);
			nb_poll_until(c, q);
			pthread_mutex_lock(&c->mu);
			c->polling = false;
			if (!(atomic_load(&q->word) & NB_DONE)) {
				/* dead, yet @q not completed: libnbd
				 * completes it; do not spin meanwhile */
				pthread_mutex_unlock(&c->mu);
				usleep(1000);
				pthread_mutex_lock(&c->mu);
			}
			continue;
		}
		q->next = c->sleepers;
		c->sleepers = q;
		v = atomic_fetch_or(&q->word, NB_ASLEEP) | NB_ASLEEP;
		pthread_mutex_unlock(&c->mu);
		if (!(v & NB_DONE))     /* returns at once if @word moved */
			syscall(SYS_futex, &q->word, FUTEX_WAIT_PRIVATE, v,
				NULL, NULL, 0);
		pthread_mutex_lock(&c->mu);
		atomic_fetch_and(&q->word, ~NB_ASLEEP);
		for (struct nb_req **pp = &c->sleepers; *pp; pp = &(*pp)->next)
			if (*pp == q) {
				*pp = q->next;
				break;
			}
	}
	if (!c->polling)
		nb_handover(c);
	pthread_mutex_unlock(&c->mu);
}

/* Wake @c's poller when a request left bytes to send (it may be polling
 * for replies only). */
static void nb_kick(struct nb_conn *c)
{
	uint64_t one = 1;

	if ((nbl.aio_get_direction(c->h) & LIBNBD_AIO_DIRECTION_WRITE) &&
	    write(c->evfd, &one, sizeof(one)) < 0) {
		/* the counter is full: it is awake anyway */
	}
}

/* Issue one request on @c (@kind 'r' read, 'w' write, 'z' zeroes, 'f'
 * flush) and wait for it: 0 or -errno.  The caller counted it in
 * @c->inflight (nb_claim). */
static int nb_req(struct nbd_backing *n, struct nb_conn *c, char kind,
		  void *buf, size_t len, uint64_t off)
{
	struct nb_req q = { .err = 0, .next = NULL };
	int64_t cookie;

	atomic_init(&q.word, 0);
	switch (kind) {
	case 'r':
		cookie = nbl.aio_pread(c->h, buf, len, off, NB_CB(&q), 0);
		break;
	case 'w':
		cookie = nbl.aio_pwrite(c->h, buf, len, off, NB_CB(&q), 0);
		break;
	case 'z':
		cookie = nbl.aio_zero(c->h, len, off, NB_CB(&q), 0);
		break;
	default:
		cookie = nbl.aio_flush(c->h, NB_CB(&q), 0);
		break;
	}
	if (cookie < 0) {
		int err = nbl.get_errno();

		atomic_fetch_sub(&c->inflight, 1);
		return nb_fail(n, err > 0 ? err : EIO);
	}
	nb_kick(c);
	nb_await(c, &q);
	atomic_fetch_sub(&c->inflight, 1);
	return q.err ? nb_fail(n, q.err) : 0;
}

/* Count a request in @c's flight. */
static struct nb_conn *nb_claim(struct nb_conn *c)
{
	atomic_fetch_add(&c->inflight, 1);
	return c;
}

/* The connection for a read, counted in its flight (nb_claim): an idle
 * read connection (taken atomically: two readers do not share one while
 * another is idle, a large read's reply then received by the other's
 * thread), else the one with the fewest in flight; c[0] when there is no
 * read connection. */
static struct nb_conn *nb_pick(struct nbd_backing *n)
{
	unsigned first = n->nc > 1 ? 1 : 0, low = ~0u;
	struct nb_conn *best = &n->c[first];

	for (unsigned i = first; i < n->nc; i++) {
		unsigned f = 0;

		if (atomic_compare_exchange_strong(&n->c[i].inflight, &f, 1))
			return &n->c[i];
		if (f < low) {
			low = f;
			best = &n->c[i];
		}
	}
	return nb_claim(best);
}

static int nb_io(struct nbd_backing *n, bool wr, void *buf, size_t len,
		 uint64_t off)
{
	while (len) {
		size_t c = len < NBD_CHUNK ? len : NBD_CHUNK;
		int r = wr ? nb_req(n, nb_claim(&n->c[0]), 'w', buf, c, off)
			   : nb_req(n, nb_pick(n), 'r', buf, c, off);

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

/* Each thread's bounce buffer for vectors, kept between calls (a malloc
 * of a run's megabyte is an mmap, every page faulted in under the
 * server's mlockall), freed when the thread ends. */
static pthread_key_t nb_bounce_key;
static pthread_once_t nb_bounce_once = PTHREAD_ONCE_INIT;
static __thread struct { uint8_t *p; size_t len; } nb_bounce;
#define NB_BOUNCE_KEEP ((1u << 20) + (64u << 10))  /* a 1 MiB run + OOB */

static void nb_bounce_init(void)
{
	if (pthread_key_create(&nb_bounce_key, free))
		abort();
}

static uint8_t *nb_bounce_get(size_t len)
{
	if (len > NB_BOUNCE_KEEP)
		return malloc(len);     /* freed by nb_bounce_put */
	if (nb_bounce.len < len) {
		uint8_t *p = malloc(len);

		if (!p)
			return NULL;
		free(nb_bounce.p);
		nb_bounce.p = p;
		nb_bounce.len = len;
		pthread_once(&nb_bounce_once, nb_bounce_init);
		pthread_setspecific(nb_bounce_key, p);
	}
	return nb_bounce.p;
}

static void nb_bounce_put(uint8_t *p)
{
	if (p != nb_bounce.p)
		free(p);
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
	bounce = nb_bounce_get(len ? len : 1);
	if (!bounce)
		return -ENOMEM;
	if (wr)
		for (int i = 0; i < cnt; at += iov[i].iov_len, i++)
			memcpy(bounce + at, iov[i].iov_base, iov[i].iov_len);
	r = nb_io((struct nbd_backing *)b, wr, bounce, len, off);
	if (!r && !wr)
		for (int i = 0; i < cnt; at += iov[i].iov_len, i++)
			memcpy(iov[i].iov_base, bounce + at, iov[i].iov_len);
	nb_bounce_put(bounce);
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
			c = len < NBD_CHUNK ? len : NBD_CHUNK;
			r = nb_req(n, nb_claim(&n->c[0]), 'z', NULL,
				   (size_t)c, off);
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

	return nb_req(n, nb_claim(&n->c[0]), 'f', NULL, 0, 0);
}

static void nb_destroy(struct nand_backing *b)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	if (!n)
		return;
	for (unsigned i = 0; i < NB_CONNS; i++) {
		struct nb_conn *c = &n->c[i];

		if (c->h) {
			nbl.shutdown(c->h, 0);
			nbl.close(c->h);
		}
		if (c->evfd >= 0)
			close(c->evfd);
		pthread_mutex_destroy(&c->mu);
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

/* Open connection @c to @uri: 0 or -errno (nb_connect). */
static int nb_open(struct nb_conn *c, const char *uri)
{
	c->h = nbl.create();
	if (!c->h)
		return nbl.get_errno() > 0 ? -nbl.get_errno() : -ENOMEM;
	c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->evfd < 0)
		return -errno;
	return nb_connect(c->h, uri);
}

int nand_backing_nbd(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size)
{
	struct nbd_backing *n;
	struct nbd_handle *h;
	const char *env = getenv("OCTANT_NBD_CONNECTIONS");
	unsigned want = env ? (unsigned)atoi(env) : NB_CONNS_DEFAULT;
	int64_t sz;
	int r;

	pthread_once(&nbl_once, nbl_load);
	if (nbl.err)
		return nbl.err;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->b.ops = &nbd_ops;
	for (unsigned i = 0; i < NB_CONNS; i++) {
		n->c[i].evfd = -1;
		pthread_mutex_init(&n->c[i].mu, NULL);
	}
	n->nc = 1;
	r = nb_open(&n->c[0], uri);
	if (r)
		goto err;
	h = n->c[0].h;
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
	/* more connections for reads, when the server allows multi-conn
	 * (without it a read on another connection need not see a write
	 * completed on this one); stop at the first it refuses (a client
	 * limit), keeping what it took */
	if (nbl.can_multi_conn(h) == 1)
		while (n->nc < want && n->nc < NB_CONNS) {
			struct nb_conn *c = &n->c[n->nc];

			if (nb_open(c, uri)) {
				if (c->h)
					nbl.close(c->h);
				c->h = NULL;
				break;
			}
			n->nc++;
		}
	*size = (uint64_t)sz;
	*out = &n->b;
	return 0;
err:
	nb_destroy(&n->b);
	return r;
}
