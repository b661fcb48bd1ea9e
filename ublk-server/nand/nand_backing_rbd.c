/* SPDX-License-Identifier: MIT */
/*
 * A backing on a Ceph RBD image (librbd): the emulated flash's bytes live
 * in a RADOS pool, the fourth backing beside the file descriptor, memory
 * and NBD ones (nand.h).  URI: rbd://POOL[/NAMESPACE]/IMAGE[@SNAP]
 * [?KEY=VALUE&...] with the connection options of `rbd map` (conf=PATH,
 * id=NAME, keyring=PATH, mon_host=ADDRS, cluster=NAME), timeout=SECONDS,
 * and any other Ceph option as KEY=VALUE (rados_conf_set).
 *
 * I/O is librbd's asynchronous API (rbd_aio_*): every call issues its
 * request and waits for that one, so the engine's concurrent readers and
 * programs (nand.h, Threads) are that many requests in flight at the
 * cluster; a run of pages is one rbd_aio_readv / rbd_aio_writev.  sync is
 * rbd_aio_flush.  librbd's own cache is off unless the URI turns it on
 * (rbd_cache=true): with it, a write would return from the server's memory
 * and a killed server would lose it, against nand.h's "a program returns
 * only when it is in the backing".
 *
 * The image lock is RBD's exclusive lock: a read-write open takes it
 * (rbd_lock_acquire) and holds it, refusing every other client's request
 * for it, until the backing is destroyed; another client anywhere that
 * holds it makes the open fail with -EBUSY.  A dead holder's lock is
 * broken by the next open once the cluster sees the holder gone (its watch
 * times out: osd_client_watch_timeout, 30 s by default), and the dead
 * client is blocklisted (fenced) so it could never write again.  The
 * holder's pid and host are kept in the image's metadata (octant.owner)
 * for nand_backing_rbd_holder().
 *
 * A dead or slow cluster: every request, the connection and the monitor
 * commands time out after timeout= seconds (default 30, as a SCSI disk's),
 * and the request fails with -ETIMEDOUT (the engine reports EIO), never
 * blocking the block device forever.
 *
 * librbd is loaded (dlopen) by the first RBD backing, not linked: it pulls
 * in librados, boost and libceph-common (~30 MiB) that a server on a local
 * image would otherwise map and lock (mlockall).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#include "nand.h"

#define RB_LIB "librbd.so.1"
#define RB_TIMEOUT "30"         /* seconds, the default timeout= */
#define RB_OWNER_KEY "octant.owner"

/* The librbd / librados calls used here, resolved from RB_LIB (types
 * checked against the headers). */
#define RB_FUNCS(X) X(rbd_aio_create_completion) X(rbd_aio_discard)      \
	X(rbd_aio_flush) X(rbd_aio_get_return_value) X(rbd_aio_read)     \
	X(rbd_aio_readv) X(rbd_aio_release) X(rbd_aio_wait_for_complete) \
	X(rbd_aio_write) X(rbd_aio_write_zeroes) X(rbd_aio_writev)       \
	X(rbd_close) X(rbd_create) X(rbd_diff_iterate2) X(rbd_get_features) \
	X(rbd_get_flags) X(rbd_get_size) X(rbd_list_lockers)             \
	X(rbd_lock_acquire) X(rbd_metadata_get) X(rbd_metadata_set)      \
	X(rbd_open) X(rbd_open_read_only) X(rados_conf_get) X(rados_conf_parse_env) \
	X(rados_conf_read_file) X(rados_conf_set) X(rados_connect)       \
	X(rados_create2) X(rados_ioctx_create) X(rados_ioctx_destroy)    \
	X(rados_ioctx_set_namespace) X(rados_shutdown)
static struct {
#define RB_PTR(name) __typeof__(name) *name;
	RB_FUNCS(RB_PTR)
#undef RB_PTR
	void *dl;
	int err;                        /* 0 loaded, else -ELIBACC */
} rbl;
static pthread_once_t rbl_once = PTHREAD_ONCE_INIT;

static void rbl_load(void)
{
	rbl.dl = dlopen(RB_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!rbl.dl)
		goto fail;
#define RB_SYM(name) \
	if (!(*(void **)&rbl.name = dlsym(rbl.dl, #name))) goto fail;
	RB_FUNCS(RB_SYM)
#undef RB_SYM
	return;
fail:
	fprintf(stderr, "ublk-flash: an RBD medium needs librbd (%s; package "
		"librbd1)\n", dlerror());
	rbl.err = -ELIBACC;
}

/* What went wrong last in this thread, beyond the errno (one line). */
static _Thread_local char rb_msg[256];

#define rb_say(...) snprintf(rb_msg, sizeof(rb_msg), __VA_ARGS__)

const char *nand_backing_rbd_error(void)
{
	return rb_msg[0] ? rb_msg : NULL;
}

bool nand_backing_is_rbd(const char *path)
{
	return !strncmp(path, "rbd://", 6);
}

/* ---- the URI ---------------------------------------------------------- */

#define RB_MAXOPT 32

struct rb_uri {
	char buf[PATH_MAX];             /* the URI, cut into the pieces below */
	const char *pool, *ns, *image, *snap;
	const char *conf, *id, *cluster;
	const char *key[RB_MAXOPT], *val[RB_MAXOPT];
	int nopt;
	bool timeout_set;
};

/* rbd://POOL[/NAMESPACE]/IMAGE[@SNAP][?K=V&...]; -EINVAL when malformed. */
static int rb_parse(const char *uri, struct rb_uri *u)
{
	char *p, *q, *s1, *s2;

	memset(u, 0, sizeof(*u));
	if (!nand_backing_is_rbd(uri) ||
	    (size_t)snprintf(u->buf, sizeof(u->buf), "%s", uri + 6) >=
	    sizeof(u->buf))
		goto bad;
	q = strchr(u->buf, '?');
	if (q)
		*q++ = '\0';
	p = u->buf;
	s1 = strchr(p, '/');
	if (!s1)
		goto bad;
	*s1 = '\0';
	s2 = strchr(s1 + 1, '/');
	u->pool = p;
	if (s2) {
		*s2 = '\0';
		u->ns = s1 + 1;
		u->image = s2 + 1;
	} else {
		u->image = s1 + 1;
	}
	p = strchr(u->image, '@');
	if (p) {
		*p = '\0';
		u->snap = p + 1;
		if (!*u->snap)
			goto bad;
	}
	if (!*u->pool || !*u->image || (u->ns && !*u->ns) ||
	    strchr(u->image, '/'))
		goto bad;
	for (char *kv = q, *next; kv && *kv; kv = next) {
		char *eq;

		next = strchr(kv, '&');
		if (next)
			*next++ = '\0';
		eq = strchr(kv, '=');
		if (!eq || eq == kv)
			goto bad;
		*eq = '\0';
		if (!strcmp(kv, "conf"))
			u->conf = eq + 1;
		else if (!strcmp(kv, "id"))
			u->id = eq + 1;
		else if (!strcmp(kv, "cluster"))
			u->cluster = eq + 1;
		else if (u->nopt == RB_MAXOPT)
			goto bad;
		else {
			if (!strcmp(kv, "timeout"))
				u->timeout_set = true;
			u->key[u->nopt] = kv;
			u->val[u->nopt++] = eq + 1;
		}
	}
	return 0;
bad:
	rb_say("%s: not an RBD URI (rbd://POOL[/NAMESPACE]/IMAGE[@SNAP]"
	       "[?conf=PATH&id=NAME&keyring=PATH&...])", uri);
	return -EINVAL;
}

/* ---- connecting ------------------------------------------------------- */

struct rb_conn {
	rados_t cl;
	rados_ioctx_t io;
	bool have_cl, have_io;
};

static void rb_disconnect(struct rb_conn *c)
{
	if (c->have_io)
		rbl.rados_ioctx_destroy(c->io);
	if (c->have_cl)
		rbl.rados_shutdown(c->cl);
	c->have_io = c->have_cl = false;
}

/* Set Ceph option @k to @v; timeout= sets the three timeouts. */
static int rb_set(rados_t cl, const char *k, const char *v)
{
	static const char *const tmo[] = { "client_mount_timeout",
		"rados_osd_op_timeout", "rados_mon_op_timeout" };
	int r = 0;

	if (strcmp(k, "timeout"))
		return rbl.rados_conf_set(cl, k, v);
	for (size_t i = 0; i < sizeof(tmo) / sizeof(tmo[0]) && !r; i++)
		r = rbl.rados_conf_set(cl, tmo[i], v);
	return r;
}

/* Connect to the cluster of @u and open an I/O context on its pool. */
static int rb_connect(const char *uri, const struct rb_uri *u,
		      struct rb_conn *c)
{
	char name[128];
	int r;

	memset(c, 0, sizeof(*c));
	snprintf(name, sizeof(name), "client.%s", u->id ? u->id : "admin");
	r = rbl.rados_create2(&c->cl, u->cluster ? u->cluster : "ceph", name, 0);
	if (r) {
		rb_say("%s: rados_create2: %s", uri, strerror(-r));
		return r;
	}
	c->have_cl = true;
	/* the defaults first (a conf file or CEPH_ARGS may override them),
	 * the URI's options last */
	rb_set(c->cl, "timeout", RB_TIMEOUT);
	rbl.rados_conf_set(c->cl, "rbd_cache", "false");
	rbl.rados_conf_set(c->cl, "log_to_stderr", "false");
	rbl.rados_conf_set(c->cl, "err_to_stderr", "false");
	r = rbl.rados_conf_read_file(c->cl, u->conf);
	if (r && u->conf) {
		rb_say("%s: cannot read the Ceph configuration %s: %s", uri,
		       u->conf, strerror(-r));
		goto err;
	}
	rbl.rados_conf_parse_env(c->cl, NULL);          /* CEPH_ARGS */
	if (!u->timeout_set && getenv("OCTANT_RBD_TIMEOUT"))
		rb_set(c->cl, "timeout", getenv("OCTANT_RBD_TIMEOUT"));
	for (int i = 0; i < u->nopt; i++) {
		r = rb_set(c->cl, u->key[i], u->val[i]);
		if (r) {
			rb_say("%s: option %s=%s: %s", uri, u->key[i],
			       u->val[i], r == -ENOENT ? "no such Ceph option"
			       : strerror(-r));
			r = -EINVAL;
			goto err;
		}
	}
	char mon[8] = "";
	if (rbl.rados_conf_get(c->cl, "mon_host", mon, sizeof(mon)) != -ENAMETOOLONG &&
	    !mon[0]) {
		/* (librados would try DNS, and say so on stderr) */
		rb_say("%s: no Ceph monitor address (no ceph.conf found: conf=, "
		       "CEPH_CONF, /etc/ceph/ceph.conf, or mon_host=)", uri);
		r = -ENOENT;
		goto err;
	}
	r = rbl.rados_connect(c->cl);
	if (r) {
		rb_say("%s: cannot connect to the Ceph cluster: %s%s", uri,
		       strerror(-r), r == -ETIMEDOUT ? " (no monitor answered; "
		       "timeout= sets how long to wait)" : r == -ENOENT ?
		       " (no monitor address: conf= or mon_host=)" : "");
		goto err;
	}
	r = rbl.rados_ioctx_create(c->cl, u->pool, &c->io);
	if (r) {
		rb_say("%s: pool %s: %s", uri, u->pool, r == -ENOENT ?
		       "no such pool" : strerror(-r));
		goto err;
	}
	c->have_io = true;
	if (u->ns)
		rbl.rados_ioctx_set_namespace(c->io, u->ns);
	return 0;
err:
	rb_disconnect(c);
	return r;
}

/* ---- the backing ------------------------------------------------------ */

struct rbd_backing {
	struct nand_backing b;
	struct rb_conn c;
	rbd_image_t im;
	bool open;
	bool can_seek;          /* a valid fast-diff object map: seek() */
	uint64_t size;
	int said;               /* the last request error said on stderr
	                           (atomic; 0 none) */
	char name[128];         /* rbd://POOL/IMAGE, for messages */
};

/*
 * The request on @c was issued with result @issued (0, or -errno: then it
 * never started): wait for it and release @c.  0, or -EIO: the request
 * failed (the cluster's error, a timeout, a lost lock: said once on
 * stderr per kind) or a read returned fewer than @want bytes.  A block
 * device knows EIO only; the engine reports it to the host as such.
 */
static int rb_wait(struct rbd_backing *rb, rbd_completion_t c, int issued,
		   size_t want)
{
	ssize_t r = issued;

	if (!issued) {
		rbl.rbd_aio_wait_for_complete(c);
		r = rbl.rbd_aio_get_return_value(c);
	}
	rbl.rbd_aio_release(c);
	if (r >= 0)
		return want && (size_t)r != want ? -EIO : 0;
	if (r == -ENOMEM)
		return -ENOMEM;
	if (__atomic_exchange_n(&rb->said, (int)r, __ATOMIC_ACQ_REL) != r)
		fprintf(stderr, "ublk-flash: %s: a request failed: %s%s "
			"(reported as EIO)\n", rb->name, strerror((int)-r),
			r == -ETIMEDOUT ? " (the cluster did not answer "
			"within timeout=)" : r == -ESHUTDOWN || r == -EROFS ?
			" (the exclusive lock was taken by another client)" :
			"");
	return -EIO;
}

/* One request: what it does, where, from or into what. */
struct rb_io {
	enum { RB_READ, RB_WRITE, RB_READV, RB_WRITEV, RB_ZERO, RB_FLUSH } op;
	void *buf;                      /* READ, WRITE */
	const struct iovec *iov;        /* READV, WRITEV */
	int cnt;
	size_t len;                     /* READ, WRITE, ZERO */
	uint64_t off;
};

/* Issue @io as an rbd_aio_* request and wait for it (rb_wait). */
static int rb_do(struct rbd_backing *r, const struct rb_io *io)
{
	rbd_completion_t c;
	size_t want = 0;
	int e = rbl.rbd_aio_create_completion(NULL, NULL, &c);

	if (e)
		return e;
	switch (io->op) {
	case RB_READ:
		want = io->len;
		e = rbl.rbd_aio_read(r->im, io->off, io->len, io->buf, c);
		break;
	case RB_WRITE:
		e = rbl.rbd_aio_write(r->im, io->off, io->len, io->buf, c);
		break;
	case RB_READV:
		for (int i = 0; i < io->cnt; i++)
			want += io->iov[i].iov_len;
		e = rbl.rbd_aio_readv(r->im, io->iov, io->cnt, io->off, c);
		break;
	case RB_WRITEV:
		e = rbl.rbd_aio_writev(r->im, io->iov, io->cnt, io->off, c);
		break;
	case RB_ZERO:
		/* reads as zeroes afterwards: a discard where whole objects
		 * go, zeroes written elsewhere (a plain discard may skip
		 * partial ones) */
		e = rbl.rbd_aio_write_zeroes(r->im, io->off, io->len, c, 0, 0);
		break;
	default:
		e = rbl.rbd_aio_flush(r->im, c);
		break;
	}
	return rb_wait(r, c, e, want);
}

static int rb_pread(struct nand_backing *b, void *buf, size_t len,
		    uint64_t off)
{
	return rb_do((struct rbd_backing *)b, &(struct rb_io){ .op = RB_READ,
		     .buf = buf, .len = len, .off = off });
}

static int rb_pwrite(struct nand_backing *b, const void *buf, size_t len,
		     uint64_t off)
{
	return rb_do((struct rbd_backing *)b, &(struct rb_io){ .op = RB_WRITE,
		     .buf = (void *)buf, .len = len, .off = off });
}

static int rb_preadv(struct nand_backing *b, const struct iovec *iov,
		     int cnt, uint64_t off)
{
	return rb_do((struct rbd_backing *)b, &(struct rb_io){ .op = RB_READV,
		     .iov = iov, .cnt = cnt, .off = off });
}

static int rb_pwritev(struct nand_backing *b, const struct iovec *iov,
		      int cnt, uint64_t off)
{
	return rb_do((struct rbd_backing *)b, &(struct rb_io){ .op = RB_WRITEV,
		     .iov = iov, .cnt = cnt, .off = off });
}

static int rb_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	return rb_do((struct rbd_backing *)b, &(struct rb_io){ .op = RB_ZERO,
		     .len = len, .off = off });
}

static int rb_sync(struct nand_backing *b)
{
	return rb_do((struct rbd_backing *)b, &(struct rb_io){ .op = RB_FLUSH });
}

struct rb_seek {
	uint64_t from;
	int whence;
	uint64_t found;         /* UINT64_MAX: none */
};

/* diff_iterate2 callback: extents (whole objects) that exist, ascending. */
static int rb_seek_cb(uint64_t off, size_t len, int exists, void *arg)
{
	struct rb_seek *s = arg;
	uint64_t end = off + len;

	if (!exists)
		return 0;
	if (s->whence == SEEK_DATA) {
		s->found = off > s->from ? off : s->from;
		return -EEXIST;         /* found: stop */
	}
	/* SEEK_HOLE: data runs on while extents touch */
	if (off > s->found) {
		return -EEXIST;         /* a hole at s->found */
	}
	if (end > s->found)
		s->found = end;
	return 0;
}

/* SEEK_DATA / SEEK_HOLE from the object map (whole objects: a missing
 * object reads as zeroes, so a reported hole is one). */
static int64_t rb_seek(struct nand_backing *b, uint64_t off, int whence)
{
	struct rbd_backing *r = (struct rbd_backing *)b;
	struct rb_seek s = { .from = off, .whence = whence,
			     .found = whence == SEEK_DATA ? UINT64_MAX : off };
	int e;

	if (!r->can_seek || (whence != SEEK_DATA && whence != SEEK_HOLE)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (off >= r->size) {
		errno = ENXIO;
		return -1;
	}
	e = rbl.rbd_diff_iterate2(r->im, NULL, off, r->size - off, 1, 1,
				  rb_seek_cb, &s);
	if (e && e != -EEXIST) {
		errno = -e;
		return -1;
	}
	if (whence == SEEK_DATA && s.found == UINT64_MAX) {
		errno = ENXIO;          /* only holes from @off */
		return -1;
	}
	if (whence == SEEK_HOLE && s.found > r->size)
		s.found = r->size;
	return (int64_t)s.found;
}

static void rb_destroy(struct nand_backing *b)
{
	struct rbd_backing *r = (struct rbd_backing *)b;

	if (!r)
		return;
	if (r->open)
		rbl.rbd_close(r->im);   /* releases the exclusive lock */
	rb_disconnect(&r->c);
	free(r);
}

static const struct nand_backing_ops rbd_ops = {
	.pread = rb_pread,
	.pwrite = rb_pwrite,
	.preadv = rb_preadv,
	.pwritev = rb_pwritev,
	.punch = rb_punch,
	.sync = rb_sync,
	.destroy = rb_destroy,
	.seek = rb_seek,
};

/* Take the image's exclusive lock and say who we are in its metadata. */
static int rb_lock(const char *uri, struct rbd_backing *r)
{
	char host[128] = "?", me[256];
	uint64_t feat = 0;
	int e;

	e = rbl.rbd_get_features(r->im, &feat);
	if (e)
		return e;
	if (!(feat & RBD_FEATURE_EXCLUSIVE_LOCK)) {
		rb_say("%s: the image has no exclusive-lock feature, so nothing "
		       "keeps a second server off it (rbd feature enable IMAGE "
		       "exclusive-lock)", uri);
		return -EOPNOTSUPP;
	}
	e = rbl.rbd_lock_acquire(r->im, RBD_LOCK_MODE_EXCLUSIVE);
	if (e == -EROFS || e == -EBUSY)
		return -EBUSY;          /* another client holds it */
	if (e)
		return e;
	gethostname(host, sizeof(host) - 1);
	snprintf(me, sizeof(me), "pid %d on %s", (int)getpid(), host);
	rbl.rbd_metadata_set(r->im, RB_OWNER_KEY, me);  /* informative only */
	return 0;
}

/* What every entry point does first: forget the last message, load
 * librbd, parse @uri into @u. */
static int rb_begin(const char *uri, struct rb_uri *u)
{
	rb_msg[0] = '\0';
	pthread_once(&rbl_once, rbl_load);
	return rbl.err ? rbl.err : rb_parse(uri, u);
}

static int rb_open(const char *uri, bool readonly, struct rbd_backing **out)
{
	struct rbd_backing *r;
	struct rb_uri u;
	uint64_t feat = 0, flags = 0;
	int e;

	e = rb_begin(uri, &u);
	if (e)
		return e;
	if (u.snap && !readonly) {
		rb_say("%s: a snapshot is read-only", uri);
		return -EROFS;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->b.ops = &rbd_ops;
	snprintf(r->name, sizeof(r->name), "rbd://%s/%s%s%s%s%s", u.pool,
		 u.ns ? u.ns : "", u.ns ? "/" : "", u.image, u.snap ? "@" : "",
		 u.snap ? u.snap : "");
	e = rb_connect(uri, &u, &r->c);
	if (e)
		goto err;
	e = readonly ? rbl.rbd_open_read_only(r->c.io, u.image, &r->im, u.snap)
		     : rbl.rbd_open(r->c.io, u.image, &r->im, NULL);
	if (e) {
		rb_say("%s: %s%s: %s", uri, u.image, u.snap ? "@snap" : "",
		       e == -ENOENT ? "no such image" : strerror(-e));
		goto err;
	}
	r->open = true;
	e = rbl.rbd_get_size(r->im, &r->size);
	if (!e && !readonly)
		e = rb_lock(uri, r);
	if (e)
		goto err;
	if (!rbl.rbd_get_features(r->im, &feat) &&
	    !rbl.rbd_get_flags(r->im, &flags))
		r->can_seek = (feat & RBD_FEATURE_FAST_DIFF) &&
			      !(flags & (RBD_FLAG_OBJECT_MAP_INVALID |
					 RBD_FLAG_FAST_DIFF_INVALID));
	*out = r;
	return 0;
err:
	rb_destroy(&r->b);
	return e;
}

int nand_backing_rbd(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size)
{
	struct rbd_backing *r;
	int e = rb_open(uri, readonly, &r);

	if (e)
		return e;
	*size = r->size;
	*out = &r->b;
	return 0;
}

/* Make the image of @uri, @size bytes, unless it exists (see nand.h). */
int nand_backing_rbd_create(const char *uri, uint64_t size)
{
	struct rb_conn c;
	struct rb_uri u;
	int order = 0, e;

	e = rb_begin(uri, &u);
	if (e)
		return e;
	if (u.snap)
		return -EROFS;
	e = rb_connect(uri, &u, &c);
	if (e)
		return e;
	e = rbl.rbd_create(c.io, u.image, size, &order);
	rb_disconnect(&c);
	if (e == -EEXIST)
		return 0;
	if (e)
		rb_say("%s: cannot create the image: %s", uri, strerror(-e));
	return e ? e : 1;
}

/* Who holds the exclusive lock of @uri's image (see nand.h). */
int nand_backing_rbd_holder(const char *uri, char *buf, size_t len)
{
	char tag[128], clients[256], cookies[256], addrs[256], owner[256];
	size_t tl = sizeof(tag), cl = sizeof(clients), kl = sizeof(cookies);
	size_t al = sizeof(addrs), ol = sizeof(owner);
	struct rbd_backing *r;
	int excl = 0, e;
	ssize_t n;

	e = rb_open(uri, true, &r);
	if (e)
		return e;
	n = rbl.rbd_list_lockers(r->im, &excl, tag, &tl, clients, &cl, cookies,
				 &kl, addrs, &al);
	if (rbl.rbd_metadata_get(r->im, RB_OWNER_KEY, owner, &ol))
		owner[0] = '\0';
	rb_destroy(&r->b);
	if (n < 0)
		return (int)n;
	if (n == 0) {
		snprintf(buf, len, "not locked now (its holder just let go)");
		return 0;
	}
	/* lists of NUL-terminated strings: the first locker */
	snprintf(buf, len, "locked by %s at %s (RBD exclusive lock%s%s)",
		 clients, addrs, owner[0] ? "; last taken by ublk-flash " : "",
		 owner);
	return 0;
}
