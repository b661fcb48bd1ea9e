/* SPDX-License-Identifier: MIT */
/*
 * fuse-io — the FUSE frontend's request handlers (libfuse3 low-level ops)
 * and their preallocated per-thread I/O buffers.  Private to the FUSE
 * frontend (fuse.c); prefix fe_fuse_io_.
 */
#ifndef OCTANT_FUSE_IO_H
#define OCTANT_FUSE_IO_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ftl-set.h"

#define FE_FUSE_MAX_IO (1u << 20)          /* max_read / max_write */
#define FE_FUSE_BUF    (FE_FUSE_MAX_IO + 2 * FTL_SECTOR)
#define FE_FUSE_INO_DISK 2                 /* the disk file's inode */

struct fe_fuse_io {
	struct ftl_set *_Atomic set;       /* NULL: fenced (a failed reopen) */
	_Atomic uint64_t size;         /* disk file size, bytes (grows: an
	                                  online resize) */
	pthread_mutex_t rmw_lock;      /* serialises unaligned read-modify-writes */
	pthread_mutex_t pool_lock;
	void **pool;                   /* free FE_FUSE_BUF buffers */
	unsigned npool, nfree;
	bool mutexes_made;
	bool read_only;                /* serve --read-only: mode 0400, every
	                                  write, open for writing, resize or
	                                  fallocate fails EROFS */
	atomic_bool fenced;            /* answer every request EIO, engine untouched */
	atomic_bool held;              /* requests wait outside the engine
	                                  (an online resize swaps it) */
	atomic_uint inflight;          /* requests inside the engine now */
	char name[NAME_MAX + 1];       /* the disk file's second name, the
	                                  image's (fe_fuse_file_name); "" none */
};

struct fuse_lowlevel_ops;

/* The low-level operations table; userdata is a struct fe_fuse_io. */
extern const struct fuse_lowlevel_ops fe_fuse_io_ops;

/* Prepare @io for @ftl with @nbuf preallocated buffers (touched, so the
 * serve layer's mlockall keeps them resident). */
int fe_fuse_io_init(struct fe_fuse_io *io, struct ftl_set *ftl, unsigned nbuf);

/* Free what fe_fuse_io_init allocated (after the session ended). */
void fe_fuse_io_fini(struct fe_fuse_io *io);

/* Fence the engine off: from now on every request is answered with EIO
 * without reaching the engine; returns once no request is inside it. */
void fe_fuse_io_fence(struct fe_fuse_io *io);

/* Hold requests outside the engine (they wait, 1 ms polls); returns once
 * none is inside it.  Then the engine may be closed and replaced. */
void fe_fuse_io_hold(struct fe_fuse_io *io);

/* Let held requests in again, on engine @ftl (NULL: fence, every request
 * EIO) of @size bytes. */
void fe_fuse_io_release(struct fe_fuse_io *io, struct ftl_set *ftl,
			uint64_t size);

/* Mark the calling thread an IO flusher (PR_SET_IO_FLUSHER), once. */
void fe_fuse_io_flusher(void);

/* The errno of a PR_SET_IO_FLUSHER that failed in some thread, else 0. */
int fe_fuse_io_flusher_error(void);

#endif
