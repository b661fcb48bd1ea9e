/* SPDX-License-Identifier: MIT */
/*
 * A set of engines ("parts") in one image: the partitioned engine.  The
 * engine (struct ftl) serializes its writers on one lock; a multi-core SSD
 * controller partitions the logical space instead, each partition a whole
 * FTL with its own lock, GC and checkpoints.  A set does that above the
 * engine, through its public calls only: N ordinary engine images side by
 * side in one image, I/O routed to them by logical stripe.
 *
 * Layout (ftl-set-format.h): two header copies in the first MiB (bytes 0
 * and 4096), then part i, an engine image made in align 1m, at the byte
 * offset its header record gives (1 MiB aligned, in order, no overlap).
 * Each part is opened on a window backing (nand_backing_window) of its
 * bytes, so it is an engine like any other.
 *
 * Routing, in the set's flash byte space: logical byte x is flash byte
 * y = x + shift, shift 512 for an odd set (as the engine's own odd mode:
 * logical byte 0 at byte 512 of flash page 0, so the kernel's 4 KiB blocks
 * straddle pages), 0 for 1m.  Stripe k = y / stripe lives in part
 * k % nparts at part byte (k / nparts) * stripe + y % stripe; a part's
 * logical size is the stripes it owns times the stripe.  A request is cut
 * at stripe boundaries (head, whole stripes, tail) and its pieces go to
 * their parts in order; discard and write-zeroes take one call per part
 * (a part's pieces of one range are contiguous in the part).
 *
 * An image without a set header (a plain engine image) opens as a set of
 * one part spanning the image, with no shift of the set's (the engine
 * keeps its own alignment): the set API serves every image.
 *
 * Threading (ftl-set.h): no lock of the set's on the I/O path; each piece
 * is a call into one part, which has its own locks, GC thread and
 * checkpoints, so writers on different parts run in parallel.
 *
 * Crash contract: a set flush flushes every part and succeeds only when
 * all did, so every write completed before it is durable in every part.
 * After a power cut each part recovers alone (its own checkpoint and roll
 * forward); a write not covered by a flush may survive in some of its
 * stripes and not in others, which a volatile write cache allows.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ftl-int.h"
#include "ftl-set-int.h"
#include "nand.h"
#include "oct-format.h"

#define SET_PLAIN_LOG 62u              /* a plain image: one huge stripe */

uint64_t ftl_set_image_size(const struct ftl_create_opts *c, unsigned nparts,
			    uint64_t stripe)
{
	struct ftl_set_hdr h;

	if (ftl_set_hdr_layout(c, nparts, stripe, &h))
		return 0;
	return h.parts[nparts - 1].off + h.parts[nparts - 1].len;
}

/* A random uuid (time and pid when /dev/urandom fails). */
static void set_uuid(uint8_t *u)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	if (fd < 0 || read(fd, u, 16) != 16) {
		memcpy(u, &t, 8);
		memcpy(u + 8, &t, 8);
	}
	if (fd >= 0)
		close(fd);
	u[6] = (u[6] & 0x0f) | 0x40;    /* version 4 */
	u[8] = (u[8] & 0x3f) | 0x80;    /* variant */
}

int ftl_set_create_backing(struct nand_backing *b,
			   const struct ftl_create_opts *c, unsigned nparts,
			   uint64_t stripe)
{
	struct ftl_set_hdr h;
	int r;

	r = ftl_set_hdr_layout(c, nparts, stripe, &h);
	for (unsigned i = 0; !r && i < nparts; i++) {
		struct ftl_create_opts p = ftl_set_part_opts(c, &h, i);
		struct nand_backing *w;

		r = nand_backing_window(b, h.parts[i].off, h.parts[i].len, &w);
		if (r)
			break;
		r = ftl_create_backing(w, &p);
		w->ops->destroy(w);
	}
	if (r)
		return r;
	/* the header last: a set half made is no set */
	set_uuid(h.uuid);
	h.create_time = (uint64_t)time(NULL);
	ftl_set_hdr_seal(&h);
	r = b->ops->pwrite(b, &h, sizeof(h), FTL_SET_COPY0);
	if (!r)
		r = b->ops->pwrite(b, &h, sizeof(h), FTL_SET_COPY1);
	if (!r)
		r = b->ops->sync(b);
	return r;
}

/* Open part @i on the window [off, off + len) of @s->b; @len UINT64_MAX:
 * size unknown (ftl_open_backing's rule). */
static int part_open(struct ftl_set *s, unsigned i, uint64_t off,
		     uint64_t len, const struct ftl_open_opts *o)
{
	struct ftl_open_opts po = ftl_set_part_open_opts(o, i, &s->faults[i]);
	struct nand_backing *w;
	int r;

	r = nand_backing_window(s->b, off, len, &w);
	if (r)
		return r;
	r = len == UINT64_MAX ? ftl_open_backing(w, &po, &s->part[i])
			      : ftl_open_backing_sized(w, len, &po, &s->part[i]);
	if (r)
		w->ops->destroy(w);     /* not taken */
	return r;
}

/* Close the parts opened so far; the first error. */
static int parts_close(struct ftl_set *s)
{
	int r = 0, e;

	for (unsigned i = 0; i < FTL_SET_MAX_PARTS; i++) {
		e = ftl_close(s->part[i]);
		if (e && !r)
			r = e;
		s->part[i] = NULL;
	}
	return r;
}

int ftl_set_plain_fill(struct ftl_set *s)
{
	struct ftl_stats *st;

	st = malloc(sizeof(*st));
	if (!st)
		return -ENOMEM;
	ftl_stats_get(s->part[0], st);
	s->align = st->align;
	free(st);
	s->nparts = 1;
	s->stripe_log = SET_PLAIN_LOG;
	s->stripe = 1ull << SET_PLAIN_LOG;
	s->shift = 0;
	s->size = ftl_size(s->part[0]);
	return 0;
}

/* A plain engine image: one part over all of @b. */
static int open_plain(struct ftl_set *s, uint64_t size,
		      const struct ftl_open_opts *o)
{
	int r = part_open(s, 0, 0, size, o);

	return r ? r : ftl_set_plain_fill(s);
}

/* A set image of header @h. */
static int open_set(struct ftl_set *s, const struct ftl_set_hdr *h,
		    const struct ftl_open_opts *o)
{
	int r = 0;

	s->nparts = h->nparts;
	s->stripe = h->stripe;
	s->stripe_log = (unsigned)__builtin_ctzll(h->stripe);
	s->align = h->align_mode == OCT_ALIGN_ODD ? FTL_ALIGN_ODD
						  : FTL_ALIGN_1M;
	s->shift = s->align == FTL_ALIGN_ODD ? FTL_SECTOR : 0;
	s->size = h->logical_size;
	for (unsigned i = 0; !r && i < h->nparts; i++) {
		r = part_open(s, i, h->parts[i].off, h->parts[i].len, o);
		/* the part must hold every stripe routed to it */
		if (!r && ftl_size(s->part[i]) <
			  ftl_set_part_stripes(h, i) * h->stripe)
			r = -EBADMSG;
	}
	if (!r && o->unshifted) {       /* per open, as the engine's */
		s->size = FTL_SET_ROUND_UP(s->size + s->shift, h->page_size);
		s->shift = 0;
	}
	return r;
}

int ftl_set_open_backing_sized(struct nand_backing *b, uint64_t size,
			       const struct ftl_open_opts *o,
			       struct ftl_set **out)
{
	struct ftl_open_opts dflt = { 0 };
	struct ftl_set_hdr h;
	struct ftl_set *s;
	int r, bad = 0;

	if (!o)
		o = &dflt;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->b = b;
	s->fd = -1;
	s->readonly = o->readonly;
	r = ftl_set_hdr_load(b, size, &h, &bad);
	/* a writer mends a damaged header copy first (as the engine its
	 * superblock copies, ftl_open.c): else one more damage loses all */
	if (r == 1 && bad && !o->readonly) {
		int e = ftl_set_hdr_mend(b, &h, bad, true);

		if (e)
			r = e;
	}
	if (r == 0)
		r = open_plain(s, size, o);
	else if (r == 1)
		r = open_set(s, &h, o);
	if (r) {
		parts_close(s);         /* the caller keeps b */
		free(s);
		return r;
	}
	*out = s;
	return 0;
}

int ftl_set_open_backing(struct nand_backing *b, const struct ftl_open_opts *o,
			 struct ftl_set **out)
{
	uint64_t size = 0;

	if (!nand_mem_bytes(b, &size))
		size = UINT64_MAX;
	return ftl_set_open_backing_sized(b, size, o, out);
}

int ftl_set_close(struct ftl_set *s)
{
	int r;

	if (!s)
		return 0;
	r = parts_close(s);
	if (s->b)
		s->b->ops->destroy(s->b);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return r;
}

uint64_t ftl_set_size(const struct ftl_set *s)
{
	return s->size;
}

enum ftl_align_mode ftl_set_align(const struct ftl_set *s)
{
	return s->align;
}

unsigned ftl_set_parts(const struct ftl_set *s)
{
	return s->nparts;
}

struct ftl *ftl_set_part(const struct ftl_set *s, unsigned i)
{
	return i < s->nparts ? s->part[i] : NULL;
}

uint64_t ftl_set_stripe(const struct ftl_set *s)
{
	return s->nparts > 1 ? s->stripe : 0;
}

/* ---- routing ------------------------------------------------------- */

static int range_ok(const struct ftl_set *s, uint64_t off, uint64_t len)
{
	return off % FTL_SECTOR || len % FTL_SECTOR || off > s->size ||
	       len > s->size - off ? -EINVAL : 0;
}

/* Where flash byte @y lives: its part, and its byte in the part. */
static unsigned route(const struct ftl_set *s, uint64_t y, uint64_t *at)
{
	uint64_t k = y >> s->stripe_log;

	*at = (k / s->nparts << s->stripe_log) | (y & (s->stripe - 1));
	return (unsigned)(k % s->nparts);
}

/* Bytes from flash byte @y to the end of its stripe, at most @len. */
static uint64_t piece(const struct ftl_set *s, uint64_t y, uint64_t len)
{
	uint64_t n = s->stripe - (y & (s->stripe - 1));

	return n < len ? n : len;
}

int ftl_set_read(struct ftl_set *s, void *buf, uint64_t off, size_t len)
{
	uint8_t *p = buf;
	uint64_t y, at, n;
	int r = range_ok(s, off, len);

	for (y = off + s->shift; !r && len; y += n, p += n, len -= n) {
		unsigned i = route(s, y, &at);

		n = piece(s, y, len);
		r = ftl_read(s->part[i], p, at, n);
	}
	return r;
}

/* Write through @fn (ftl_write or ftl_write_try) piece by piece. */
static int write_via(struct ftl_set *s, const void *buf, uint64_t off,
		     size_t len, unsigned flags,
		     int (*fn)(struct ftl *, const void *, uint64_t, size_t,
			       unsigned))
{
	const uint8_t *p = buf;
	uint64_t y, at, n;
	int r = range_ok(s, off, len);

	for (y = off + s->shift; !r && len; y += n, p += n, len -= n) {
		unsigned i = route(s, y, &at);

		n = piece(s, y, len);
		r = fn(s->part[i], p, at, n, flags);
	}
	return r;
}

int ftl_set_write(struct ftl_set *s, const void *buf, uint64_t off,
		  size_t len, unsigned flags)
{
	return write_via(s, buf, off, len, flags, ftl_write);
}

int ftl_set_write_try(struct ftl_set *s, const void *buf, uint64_t off,
		      size_t len, unsigned flags)
{
	return write_via(s, buf, off, len, flags, ftl_write_try);
}

int ftl_set_flush(struct ftl_set *s)
{
	int r = 0, e;

	for (unsigned i = 0; i < s->nparts; i++) {
		e = ftl_flush(s->part[i]);
		if (e && !r)
			r = e;
	}
	return r;
}

/*
 * @fn on each part's share of [off, off + len): the stripes of part i
 * the range touches are consecutive in the part (stripe k at k / nparts),
 * the first cut at its head, the last at its tail, so each share is one
 * range of the part's bytes.
 */
static int per_part(struct ftl_set *s, uint64_t off, uint64_t len,
		    int (*fn)(struct ftl *, uint64_t, uint64_t))
{
	uint64_t y0 = off + s->shift, y1 = y0 + len, mask = s->stripe - 1;
	uint64_t k0 = y0 >> s->stripe_log, k1 = (y1 - 1) >> s->stripe_log;
	uint64_t np = s->nparts;
	int r = range_ok(s, off, len);

	if (r || !len)
		return r;
	for (uint64_t i = 0; i < np && !r; i++) {
		uint64_t kf = k0 + (i + np - k0 % np) % np;
		uint64_t kl, lo, hi;

		if (kf > k1)
			continue;       /* the range misses part i */
		kl = k1 - (k1 % np + np - i) % np;
		lo = (kf / np << s->stripe_log) + (kf == k0 ? (y0 & mask) : 0);
		hi = (kl / np << s->stripe_log) +
		     (kl == k1 ? ((y1 - 1) & mask) + 1 : s->stripe);
		r = fn(s->part[i], lo, hi - lo);
	}
	return r;
}

int ftl_set_discard(struct ftl_set *s, uint64_t off, uint64_t len)
{
	return per_part(s, off, len, ftl_discard);
}

int ftl_set_write_zeroes(struct ftl_set *s, uint64_t off, uint64_t len)
{
	return per_part(s, off, len, ftl_write_zeroes);
}
