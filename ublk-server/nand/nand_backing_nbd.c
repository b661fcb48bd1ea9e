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
 * Threads: one libnbd handle; libnbd serialises the synchronous calls on
 * it, so the concurrent reads nand.h allows are safe (not parallel).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

#include "nand.h"

#define NBD_CHUNK (4u << 20)    /* well under every server's request limit */

struct nbd_backing {
	struct nand_backing b;
	struct nbd_handle *h;
	bool can_zero;
};

static int nbd_err(void)
{
	int e = nbd_get_errno();

	return e > 0 ? -e : -EIO;
}

static int nb_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	while (len) {
		size_t c = len < NBD_CHUNK ? len : NBD_CHUNK;
		if (nbd_pread(n->h, buf, c, off, 0) < 0)
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
		if (nbd_pwrite(n->h, buf, c, off, 0) < 0)
			return nbd_err();
		buf = (const char *)buf + c;
		off += c;
		len -= c;
	}
	return 0;
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
			if (nbd_zero(n->h, c, off, 0) < 0)
				return nbd_err();
		} else {
			c = len < sizeof(zero) ? len : sizeof(zero);
			if (nbd_pwrite(n->h, zero, (size_t)c, off, 0) < 0)
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

	return nbd_flush(n->h, 0) < 0 ? nbd_err() : 0;
}

static void nb_destroy(struct nand_backing *b)
{
	struct nbd_backing *n = (struct nbd_backing *)b;

	if (!n)
		return;
	if (n->h) {
		nbd_shutdown(n->h, 0);
		nbd_close(n->h);
	}
	free(n);
}

static const struct nand_backing_ops nbd_ops = {
	.pread = nb_pread,
	.pwrite = nb_pwrite,
	.punch = nb_punch,
	.sync = nb_sync,
	.destroy = nb_destroy,
};

bool nand_backing_is_uri(const char *path)
{
	return !strncmp(path, "nbd://", 6) || !strncmp(path, "nbds://", 7) ||
	       !strncmp(path, "nbd+unix://", 11) ||
	       !strncmp(path, "nbds+unix://", 12) ||
	       !strncmp(path, "nbd+vsock://", 12);
}

const char *nand_backing_nbd_error(void)
{
	const char *e = nbd_get_error();

	return e ? e : "unknown NBD error";
}

int nand_backing_nbd(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size)
{
	struct nbd_backing *n = calloc(1, sizeof(*n));
	int64_t sz;
	int r;

	if (!n)
		return -ENOMEM;
	n->b.ops = &nbd_ops;
	n->h = nbd_create();
	if (!n->h) {
		r = nbd_err();
		goto err;
	}
	/* TLS when the URI says nbds (libnbd's default: if the server offers) */
	if (nbd_connect_uri(n->h, uri) < 0) {
		r = nbd_get_errno() > 0 ? -nbd_get_errno() : -ECONNREFUSED;
		goto err;
	}
	sz = nbd_get_size(n->h);
	if (sz < 0) {
		r = nbd_err();
		goto err;
	}
	if (!readonly && (nbd_is_read_only(n->h) == 1)) {
		r = -EROFS;
		goto err;
	}
	if (!readonly && nbd_can_flush(n->h) != 1) {
		r = -EOPNOTSUPP;        /* nothing could ever be made durable */
		goto err;
	}
	n->can_zero = nbd_can_zero(n->h) == 1;
	*size = (uint64_t)sz;
	*out = &n->b;
	return 0;
err:
	nb_destroy(&n->b);
	return r;
}
