/* SPDX-License-Identifier: MIT */
/*
 * ftl_set — a partitioned engine: one image holding N ordinary engines
 * ("parts", 2..16), the logical space striped over them, each part with
 * its own lock, GC thread and checkpoints, so N writers on N parts run in
 * parallel (ftl_set.c has the layout and the routing).  Prefix ftl_set_,
 * 0 / -errno returns.
 *
 * Threading: as ftl.h's engine: any number of threads may call read /
 * write / flush / discard / write_zeroes / stats_get concurrently (the set
 * has no lock of its own: each piece is a call into one part, which
 * serializes with its own locks).  create / open / close are not
 * concurrent with anything on the same set.  A request that crosses
 * stripes is cut into pieces done in order, one part after another, so two
 * concurrent overlapping writes may leave some stripes with one's data and
 * others with the other's (as on any disk: overlapping writes in flight
 * have no order).
 *
 * Block-layer contract, as ftl.h's: a volatile write cache; ftl_set_flush
 * makes every write that completed before it durable (it flushes every
 * part and succeeds only when they all did); a write with FTL_FUA is
 * durable when it returns.  After a power cut each part recovers alone: a
 * write that was not flushed may be found in some of its stripes and not
 * in others.
 */
#ifndef OCTANT_FTL_SET_H
#define OCTANT_FTL_SET_H

#include <stdint.h>

#include "ftl.h"

struct nand_backing;
struct ftl_set;

/* The image bytes a set of @nparts parts and stripe @stripe (0: 1 MiB) with
 * @c's options needs (header area, the parts 1 MiB aligned); 0 when they
 * are out of range (as ftl_set_create_backing would refuse them). */
uint64_t ftl_set_image_size(const struct ftl_create_opts *c, unsigned nparts,
			    uint64_t stripe);

/*
 * Format backing @b (not taken; it reads as zeroes where an engine's
 * create needs it, as ftl_create_backing's) as a set of @nparts parts of
 * stripe @stripe bytes (0: FTL_SET_STRIPE, 1 MiB; a power of two, a
 * multiple of the page size, at most 1 GiB) exporting @c->size bytes in
 * @c->align's mode: each part an engine image made by ftl_create_backing
 * in align 1m with @c's page geometry, OOB, over-provisioning, endurance
 * and factory bad blocks (part i drawn with bad_block_seed + i), then the
 * two header copies, then a sync.  @b must hold ftl_set_image_size bytes.
 * -EINVAL bad geometry, @nparts outside 2..16 or a bad stripe;
 * -EOPNOTSUPP options a set cannot carry yet: integrity (PI), max_size
 * above size (grow); else the backing's or the engine's error.
 */
int ftl_set_create_backing(struct nand_backing *b,
			   const struct ftl_create_opts *c, unsigned nparts,
			   uint64_t stripe);

/*
 * Open the set on backing @b (taken on success: ftl_set_close destroys it;
 * on failure the caller keeps it).  A memory backing is its size, any
 * other is taken to be large enough (as ftl_open_backing); _sized: @b
 * holds @size bytes.  Every part is opened with ftl_open_backing on a
 * window of @b with @o (a GC thread per part with bg_gc, ...).  An image
 * without a set header (a plain engine image) opens as a set of one part
 * spanning @b, with the engine's own alignment and no shift of the set's.
 * -EBADMSG a set header with no valid copy (or a field out of range:
 * parts overlapping, past the end of @b, too small for their stripes),
 * -EPROTONOSUPPORT a header of another version; else the error of the
 * part that failed (the parts opened before it are closed).
 */
int ftl_set_open_backing(struct nand_backing *b, const struct ftl_open_opts *o,
			 struct ftl_set **out);
int ftl_set_open_backing_sized(struct nand_backing *b, uint64_t size,
			       const struct ftl_open_opts *o,
			       struct ftl_set **out);

/* Close every part (ftl_close: each writes its clean checkpoint), then
 * destroy the backing; the first error of a part.  NULL: 0. */
int ftl_set_close(struct ftl_set *s);

/* Exported bytes. */
uint64_t ftl_set_size(const struct ftl_set *s);
/* The set's alignment mode (a plain image's: its engine's). */
enum ftl_align_mode ftl_set_align(const struct ftl_set *s);
/* Number of parts (1 for a plain image). */
unsigned ftl_set_parts(const struct ftl_set *s);
/* Part @i's engine (tests, per-part reporting); NULL past the last. */
struct ftl *ftl_set_part(const struct ftl_set *s, unsigned i);
/* Stripe bytes (a plain image: 0, no striping). */
uint64_t ftl_set_stripe(const struct ftl_set *s);

/*
 * I/O as ftl.h's: @off and @len multiples of FTL_SECTOR, inside the set
 * (else -EINVAL, nothing done).  A request is cut at stripe boundaries
 * and the pieces go to their parts one after another; the first error
 * ends it and is returned (pieces before it are done).  @flags of write
 * as ftl_write's (FTL_FUA: every piece durable on return).  Flush: every
 * part's, all of them even after an error; the first error.
 */
int ftl_set_read(struct ftl_set *s, void *buf, uint64_t off, size_t len);
int ftl_set_write(struct ftl_set *s, const void *buf, uint64_t off,
		  size_t len, unsigned flags);
int ftl_set_flush(struct ftl_set *s);
int ftl_set_discard(struct ftl_set *s, uint64_t off, uint64_t len);
int ftl_set_write_zeroes(struct ftl_set *s, uint64_t off, uint64_t len);

/* The parts' stats combined (ftl_set_stats.c says how each field is). */
void ftl_set_stats_get(struct ftl_set *s, struct ftl_stats *st);

#endif
