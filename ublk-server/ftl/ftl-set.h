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
#include "ftl-set-format.h"

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
 * Create a set image at @path: @nparts 1 is ftl_create exactly; else the
 * same medium handling as ftl_create (a file made or truncated to
 * ftl_set_image_size bytes, a block device or remote medium at least
 * that large and zeroed, -EEXIST an octant image or signature there
 * unless @c->force, -ENOSPC too small), formatted by
 * ftl_set_create_backing (its errors; -EOPNOTSUPP integrity or a max_size
 * above size before anything is touched).
 */
int ftl_set_create(const char *path, const struct ftl_create_opts *c,
		   unsigned nparts, uint64_t stripe);

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
 * destroy the backing and close the descriptor ftl_set_open kept (the
 * image lock goes last); the first error of a part.  NULL: 0. */
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

/* Write as ftl_set_write but each piece with ftl_write_try: -EAGAIN when
 * a piece would wait (the pieces before it are written, on the map: the
 * caller's ftl_set_write of the same request writes them again, the same
 * data); a 1-part set: ftl_write_try exactly. */
int ftl_set_write_try(struct ftl_set *s, const void *buf, uint64_t off,
		      size_t len, unsigned flags);

/* The parts' stats combined (ftl_set_stats.c says how each field is); a
 * 1-part set: its engine's ftl_stats_get exactly. */
void ftl_set_stats_get(struct ftl_set *s, struct ftl_stats *st);

/*
 * Health (ftl.h's struct ftl_health) of a 1-part set: its engine's
 * exactly.  Of N parts, the worst part's: critical_warning (the OR),
 * available_spare (the lowest), percentage_used, erase_max (the highest),
 * read_only (any); the highest (each part counts every open of the set):
 * power_cycles, power_on_seconds / hours, unsafe_shutdowns; erase_mean the
 * mean of the parts' (their data blocks are within one stripe of equal);
 * every other count summed (data units from the summed sectors).
 */
void ftl_set_health_get(struct ftl_set *s, struct ftl_health *h);

/*
 * Open the image at @path as ftl_open does (the same file handling: NBD /
 * RBD URIs, O_RDONLY for @o->readonly, the image lock through @o->lock_fd
 * or the file, block devices, the backing for tmpfs and regular files;
 * the same errors).  A plain engine image opens exactly as ftl_open opens
 * it and is wrapped as a set of one part; a set image opens its parts on
 * that backing (ftl_set_open_backing's errors too), the set holding the
 * descriptor and its lock.
 */
int ftl_set_open(const char *path, const struct ftl_open_opts *o,
		 struct ftl_set **out);

/* How this open found the image (ftl_mount_kind): a 1-part set its
 * engine's; N parts the worst part's (scan > roll-forward > clean). */
enum ftl_mount_kind ftl_set_mount_kind(const struct ftl_set *s);
/* The topology to report (ftl_topology): a 1-part set its engine's; N
 * parts the parts' page geometry (logical, physical, io_min, io_opt,
 * erase block) with the set's size and alignment offset (its shift). */
void ftl_set_topology(const struct ftl_set *s, struct align_topology *t);
/* Writes fail with EROFS on any part (ftl_read_only). */
bool ftl_set_read_only(struct ftl_set *s);
/* ftl_on_read_only on every part (@fn may then be called once per part
 * that runs out; NULL forgets it on all): true if any part is read-only
 * already. */
bool ftl_set_on_read_only(struct ftl_set *s, void (*fn)(void *ctx),
			  void *ctx);
/* A descriptor sharing the image lock (ftl_lock_dup): a plain image's
 * engine's; a set opened by path read-write, its descriptor duplicated
 * (close-on-exec).  -EBADF read-only or no file. */
int ftl_set_lock_dup(const struct ftl_set *s);
/* PI (ftl.h's ftl_has_pi / _read_pi / _write_pi): a 1-part set its
 * engine's; a set of N parts has none (create refuses it): false and
 * -EOPNOTSUPP. */
bool ftl_set_has_pi(const struct ftl_set *s);
int ftl_set_read_pi(struct ftl_set *s, void *buf, void *pi, uint64_t off,
		    size_t len);
int ftl_set_write_pi(struct ftl_set *s, const void *buf, const void *pi,
		     uint64_t off, size_t len, unsigned flags);

/* ---- offline inspection (no mount) ---- */

/* What a set image's header and its parts' superblocks say. */
struct ftl_set_info {
	struct ftl_info set;         /* the image as one: a plain image's
	                                ftl_info_read; a set's align,
	                                logical_size, image_size (the end of
	                                the last part), uuid (the header's),
	                                topo (its size and alignment) and part
	                                0's page geometry and flags */
	unsigned nparts;             /* 1: a plain image */
	uint64_t stripe;             /* bytes; 0 a plain image */
	uint64_t part_off[FTL_SET_MAX_PARTS]; /* bytes into the image */
	uint64_t part_len[FTL_SET_MAX_PARTS];
	struct ftl_info part[FTL_SET_MAX_PARTS]; /* each part's superblock
	                                (a plain image: part[0] = set) */
	int part_err[FTL_SET_MAX_PARTS]; /* its ftl_info_read_backing's */
};
/* Fill @si from the image at @path (never writes, no lock).  A plain
 * image: ftl_info_read's result and errors exactly.  A set: the header's
 * errors (ftl_set_open_backing), else 0 with each part's info and error
 * in part[] / part_err[] (si->set.pi false), or the first part's error
 * when a part has none (@si filled as far as it goes). */
int ftl_set_info_read(const char *path, struct ftl_set_info *si);
/* Print @si: a plain image exactly as ftl_info_print; a set its header
 * (parts, stripe, size, align, image size, uuid) then each part's
 * ftl_info_print under "part I" (JSON: one object, "parts" an array). */
void ftl_set_info_print(const struct ftl_set_info *si, const char *image,
			FILE *out, bool json);

/* Check the image at @path (ftl_fsck): a plain image exactly as ftl_fsck;
 * a set each part with ftl_fsck_backing, its report under "part I:"
 * (JSON: {"parts": [...]}), with @repair under the image lock (-EBUSY
 * held elsewhere).  The worst of the parts' results: a -errno of a part
 * (the parts after it are still checked), else the highest of 0 / 1 / 4. */
int ftl_set_fsck(const char *path, bool repair, FILE *out, bool json);

#endif
