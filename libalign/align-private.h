/* SPDX-License-Identifier: MIT */
/*
 * libalign internals shared between its source files.  Nothing here is
 * exported from libalign.so: the names use the alignp_ prefix (the version
 * script exports align_* only) and hidden visibility.
 */
#ifndef OCTANT_ALIGN_PRIVATE_H
#define OCTANT_ALIGN_PRIVATE_H

#include <stdint.h>
#include "align.h"

#define ALIGNP_HIDDEN __attribute__((visibility("hidden")))

__extension__ typedef unsigned __int128 alignp_u128;

/* LIBALIGN_DEBUG mask (read once from the environment). */
ALIGNP_HIDDEN unsigned alignp_debug_mask(void);

/* Print "libalign: ..." on stderr when @bit is set in the debug mask. */
ALIGNP_HIDDEN void alignp_dbg(unsigned bit, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define ALIGNP_DBG(bit, ...) do {                         \
	if (alignp_debug_mask() & (bit))                  \
		alignp_dbg((bit), __VA_ARGS__);           \
} while (0)

/* Logical sector size, never 0 (512 when unknown). */
static inline uint32_t alignp_logical(const struct align_topology *t)
{
	return t->logical ? t->logical : 512;
}

/*
 * The medium shift: the byte of the physical medium at which logical byte 0
 * sits, modulo the alignment granularity.  The kernel's alignment_offset A
 * is the first logical byte that is on a granularity boundary, so logical
 * byte x lives at medium byte x + (gran - A % gran) % gran.
 */
ALIGNP_HIDDEN uint64_t alignp_shift(const struct align_topology *t);

/* Is @v a power of two (and non-zero)? */
static inline int alignp_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Read the octant superblock from an open file: 0 and fill *t, or
 * -EBADMSG / -EPROTONOSUPPORT / -errno.  @magic_seen tells whether any copy
 * carried the octant magic. */
ALIGNP_HIDDEN int alignp_image_read(int fd, struct align_topology *t,
				    int *magic_seen);

/* The first line of file @dir/@name into @buf (@len bytes), without its
 * newline: 0, -errno when it cannot be opened, -ENODATA when empty. */
ALIGNP_HIDDEN int alignp_read_line(const char *dir, const char *name,
				   char *buf, size_t len);

/* Greatest common divisor (0 with 0 gives 0). */
static inline uint64_t alignp_gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

#endif /* OCTANT_ALIGN_PRIVATE_H */
