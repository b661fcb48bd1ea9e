/* SPDX-License-Identifier: MIT */
/*
 * byteio — byte-granular writes and zeroing over the sector-granular
 * engine, for frontends whose clients may send any offset and length (a
 * FUSE file, an NBD export).  Prefix fe_byteio_, 0 / -errno returns.
 *
 * A range is split nbdkit-style into head / body / tail: whole sectors go
 * to the engine as they are, a partial edge sector is read, patched and
 * written back.  Ordering rule: every read-modify-write of the same device
 * holds the one @rmw_lock the caller passes, so two patches of one sector
 * never lose each other's bytes.  (An aligned write racing a patch of the
 * same sector is the client's own race, as on a disk.)
 */
#ifndef OCTANT_BYTEIO_H
#define OCTANT_BYTEIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl-set.h"

/* Write @size bytes of @data (NULL: zeroes) at byte @o, which need not be
 * sector-aligned: the covering sectors are read, patched and written back
 * under @rmw_lock, through @buf (@buflen bytes) or the heap when @buf is
 * NULL or too small.  @flags as for ftl_write. */
int fe_byteio_rmw(struct ftl_set *f, pthread_mutex_t *rmw_lock, void *buf,
		  size_t buflen, const void *data, uint64_t o, size_t size,
		  unsigned flags);

/* Zero [o, o+len) (unmap it when @punch): whole sectors go to the engine
 * as one DISCARD / WRITE ZEROES, partial edge sectors by fe_byteio_rmw
 * (with @flags).  @buf, @buflen as for fe_byteio_rmw. */
int fe_byteio_zero(struct ftl_set *f, pthread_mutex_t *rmw_lock, void *buf,
		   size_t buflen, uint64_t o, uint64_t len, bool punch,
		   unsigned flags);

#endif
