/* SPDX-License-Identifier: MIT */
/*
 * A backing on an NBD export (libnbd): the emulated flash's bytes live on
 * qemu-nbd, nbdkit, rbd-nbd or any NBD server.  The third backing beside
 * the file descriptor and memory ones (nand.h).
 *
 * Durability carries through: nand_backing_ops.sync is NBD_CMD_FLUSH, and
 * an export that cannot flush is refused for writing (its writes could
 * never be made durable).  A failed request (the network, the server's
 * EIO) comes back as its errno, EIO when the server named none; the
 * engine turns that into EIO for the host, never into lost data.
 *
 * Threads: libnbd serialises the synchronous calls on one handle.  When
 * the server allows several connections to one export (NBD multi-conn),
 * NB_CONNS handles are opened (OCTANT_NBD_CONNECTIONS=1..4 overrides):
 * the first carries every write, zero and flush (so a FLUSH covers all
 * writes on any server), the others the reads, round-robin, so the
 * concurrent reads nand.h allows run in parallel.  Reads only ever ask
 * for bytes whose writes completed (the engine's map publishes a page
 * after its program returned), so a read on another connection sees them.
 *
 * libnbd is loaded (dlopen) by the first NBD backing, not linked: it pulls
 * in gnutls and libxml2 (ICU's 30 MiB of data among them), which a server
 * on a local image would otherwise map and, under its mlockall, keep
 * resident (44 MiB of its 77 MiB RSS).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <libnbd.h>

#include "nand.h"

#define NB_LIBNBD "libnbd.so.0"

/* The libnbd calls used here, resolved from NB_LIBNBD (types checked
 * against libnbd.h). */
#define NB_FUNCS(X) X(can_flush) X(can_multi_conn) X(can_zero) X(close) \
	X(connect_uri) X(create) X(flush) X(get_errno) X(get_error)     \
	X(get_size) X(is_read_only) X(pread) X(pwrite) X(shutdown) X(zero)
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
#define NB_CONNS  4u

struct nbd_backing {
	struct nand_backing b;
	struct nbd_handle *hs[NB_CONNS];
	unsigned nh;                    /* handles open */
	atomic_uint next;               /* round-robin */
	bool can_zero;
};

/* Reads spread over the handles after the first (round-robin); writes,
 * zeroes and flushes all go to the first, so a FLUSH there covers every
 * write whatever the server's multi-conn semantics. */
static struct nbd_handle *nb_rh(struct nbd_backing *n)
{
	if (n->nh == 1)
		return n->hs[0];
	return n->hs[1 + atomic_fetch_add(&n->next, 1) % (n->nh - 1)];
}

static struct nbd_handle *nb_wh(struct nbd_backing *n)
{
	return n->hs[0];
}

static int nbd_err(void)
{
	int e = nbl.get_errno();

	return e > 0 ? -e : -EIO;
}

static int nb_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	while (len) {
		size_t c = len < NBD_CHUNK ? len : NBD_CHUNK;
		if (nbl.pread(nb_rh(n), buf, c, off, 0) < 0)
			return nbd_err();
		buf = (char *)buf + c;
		off += c;
		len -= c;
	}
	return 0;
}

static int nb_pwrite(struct nand_backing *b, const void *buf, size_t len,
		     uint64_t off)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	while (len) {
		size_t c = len < NBD_CHUNK ? len : NBD_CHUNK;
		if (nbl.pwrite(nb_wh(n), buf, c, off, 0) < 0)
			return nbd_err();
		buf = (const char *)buf + c;
		off += c;
		len -= c;
	}
	return 0;
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
	r = wr ? nb_pwrite(b, bounce, len, off) : nb_pread(b, bounce, len, off);
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

	while (len) {
		uint64_t c;
		if (n->can_zero) {
			c = len < NBD_CHUNK ? len : NBD_CHUNK;
			if (nbl.zero(nb_wh(n), c, off, 0) < 0)
				return nbd_err();
		} else {
			c = len < sizeof(zero) ? len : sizeof(zero);
			if (nbl.pwrite(nb_wh(n), zero, (size_t)c, off, 0) < 0)
				return nbd_err();
		}
		off += c;
		len -= c;
	}
	return 0;
}

static int nb_sync(struct nand_backing *b)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	return nbl.flush(nb_wh(n), 0) < 0 ? nbd_err() : 0;
}

static void nb_destroy(struct nand_backing *b)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	if (!n)
		return;
	for (unsigned i = 0; i < NB_CONNS; i++)
		if (n->hs[i]) {
			nbl.shutdown(n->hs[i], 0);
			nbl.close(n->hs[i]);
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

int nand_backing_nbd(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size)
{
	struct nbd_backing *n;
	struct nbd_handle *h;
	int64_t sz = 0;
	int r;

	pthread_once(&nbl_once, nbl_load);
	if (nbl.err)
		return nbl.err;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->b.ops = &nbd_ops;
	const char *env = getenv("OCTANT_NBD_CONNECTIONS");
	unsigned want = env ? (unsigned)atoi(env) : NB_CONNS;

	if (want < 1 || want > NB_CONNS)
		want = NB_CONNS;
	for (unsigned i = 0; i < want; i++) {
		h = n->hs[i] = nbl.create();
		if (!h) {
			r = nbd_err();
			goto err;
		}
		/* TLS when the URI says nbds (libnbd's default) */
		if (nbl.connect_uri(h, uri) < 0) {
			r = nbl.get_errno() > 0 ? -nbl.get_errno() : -ECONNREFUSED;
			if (i == 0)
				goto err;
			nbl.close(h);   /* the server takes fewer: use what we have */
			n->hs[i] = NULL;
			break;
		}
		n->nh = i + 1;
		if (i > 0)
			continue;
		sz = nbl.get_size(h);
		if (sz < 0) {
			r = nbd_err();
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
		if (nbl.can_multi_conn(h) != 1)
			break;          /* a FLUSH would cover one connection only */
	}
	*size = (uint64_t)sz;
	*out = &n->b;
	return 0;
err:
	nb_destroy(&n->b);
	return r;
}
