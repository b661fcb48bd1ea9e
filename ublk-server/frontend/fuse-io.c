/* SPDX-License-Identifier: MIT */
/* FUSE request handlers: one directory, one file backed by the engine, named
 * "disk" and after the image (io->name): two names of one inode. */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/falloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "byteio.h"
#include "fuse-io.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

#define FE_INO_DISK FE_FUSE_INO_DISK
#define FE_TIMEOUT  86400.0

static __thread bool fe_tls_flusher;
static atomic_int fe_flusher_errno;
static __thread void *fe_tls_buf;

void fe_fuse_io_flusher(void)
{
	if (fe_tls_flusher)
		return;
	fe_tls_flusher = true;
	/* Needs CAP_SYS_RESOURCE and Linux >= 5.6: best effort. */
	if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) < 0)
		atomic_store(&fe_flusher_errno, errno);
}

int fe_fuse_io_flusher_error(void)
{
	return atomic_load(&fe_flusher_errno);
}

int fe_fuse_io_init(struct fe_fuse_io *io, struct ftl_set *ftl, unsigned nbuf)
{
	int err;

	memset(io, 0, sizeof(*io));
	io->set = ftl;
	io->size = ftl_set_size(ftl);
	pthread_mutex_init(&io->rmw_lock, NULL);
	pthread_mutex_init(&io->pool_lock, NULL);
	io->mutexes_made = true;
	io->pool = calloc(nbuf, sizeof(*io->pool));
	if (!io->pool)
		return -ENOMEM;
	for (unsigned i = 0; i < nbuf; i++) {
		err = -posix_memalign(&io->pool[i], 4096, FE_FUSE_BUF);
		if (err)
			return err;
		memset(io->pool[i], 0, FE_FUSE_BUF);
		io->npool++;
	}
	io->nfree = io->npool;
	return 0;
}

void fe_fuse_io_fini(struct fe_fuse_io *io)
{
	for (unsigned i = 0; i < io->npool; i++)
		free(io->pool[i]);
	free(io->pool);
	if (io->mutexes_made) {
		pthread_mutex_destroy(&io->rmw_lock);
		pthread_mutex_destroy(&io->pool_lock);
	}
	memset(io, 0, sizeof(*io));
}

/* Enter the engine, unless fenced (then the caller answers EIO); wait
 * while it is held. */
static bool fe_enter(struct fe_fuse_io *io)
{
	struct timespec ts = { 0, 1000000L };

	for (;;) {
		atomic_fetch_add(&io->inflight, 1);
		if (atomic_load(&io->fenced)) {
			atomic_fetch_sub(&io->inflight, 1);
			return false;
		}
		if (!atomic_load(&io->held))
			return true;
		atomic_fetch_sub(&io->inflight, 1);
		nanosleep(&ts, NULL);
	}
}

static void fe_leave(struct fe_fuse_io *io)
{
	atomic_fetch_sub(&io->inflight, 1);
}

void fe_fuse_io_fence(struct fe_fuse_io *io)
{
	struct timespec ts = { 0, 1000000L };

	atomic_store(&io->fenced, true);
	while (atomic_load(&io->inflight) > 0)
		nanosleep(&ts, NULL);
}

void fe_fuse_io_hold(struct fe_fuse_io *io)
{
	struct timespec ts = { 0, 1000000L };

	atomic_store(&io->held, true);
	while (atomic_load(&io->inflight) > 0)
		nanosleep(&ts, NULL);
}

void fe_fuse_io_release(struct fe_fuse_io *io, struct ftl_set *ftl,
			uint64_t size)
{
	atomic_store(&io->set, ftl);
	if (!ftl)
		atomic_store(&io->fenced, true);
	else
		atomic_store(&io->size, size);
	atomic_store(&io->held, false);
}

/* The calling thread's preallocated buffer; taken from the pool on the
 * thread's first request and kept (libfuse never reaps our workers: idle
 * threads = max threads).  Buffers outlive the threads (freed at fini). */
static void *fe_buf(struct fe_fuse_io *io)
{
	if (fe_tls_buf)
		return fe_tls_buf;
	fe_fuse_io_flusher();
	pthread_mutex_lock(&io->pool_lock);
	if (io->nfree > 0)
		fe_tls_buf = io->pool[--io->nfree];
	pthread_mutex_unlock(&io->pool_lock);
	return fe_tls_buf;   /* NULL: pool empty, the caller uses the heap */
}

static void fe_attr(struct fe_fuse_io *io, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0700;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (io->read_only ? 0400 : 0600);
		st->st_nlink = 1;
		st->st_size = (off_t)io->size;
		st->st_blksize = 4096;
		st->st_blocks = (blkcnt_t)(io->size / 512);
	}
}

static void fe_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || (strcmp(name, "disk") != 0 &&
					 (!io->name[0] || strcmp(name, io->name) != 0))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = FE_INO_DISK;
	e.attr_timeout = FE_TIMEOUT;
	e.entry_timeout = FE_TIMEOUT;
	fe_attr(io, FE_INO_DISK, &e.attr);
	fuse_reply_entry(req, &e);
}

static void fe_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != FE_INO_DISK) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fe_attr(io, ino, &st);
	fuse_reply_attr(req, &st, FE_TIMEOUT);
}

static void fe_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	if (io->read_only && (to_set & FUSE_SET_ATTR_SIZE)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* The disk has a fixed size; times and modes are not kept. */
	if ((to_set & FUSE_SET_ATTR_SIZE) &&
	    (ino != FE_INO_DISK || (uint64_t)attr->st_size != io->size)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fe_attr(io, ino, &st);
	fuse_reply_attr(req, &st, FE_TIMEOUT);
}

static void fe_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);

	if (ino != FE_INO_DISK) {
		fuse_reply_err(req, ino == FUSE_ROOT_ID ? EISDIR : ENOENT);
		return;
	}
	if (io->read_only && (fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->direct_io = 1;     /* no FUSE page cache: every I/O reaches us */
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static void fe_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);
	const char *names[] = { ".", "..", "disk", io->name };
	off_t n_names = io->name[0] && strcmp(io->name, "disk") ? 4 : 3;
	char buf[1024];
	size_t used = 0;
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (off_t i = off; i < n_names; i++) {
		fe_attr(io, i >= 2 ? FE_INO_DISK : FUSE_ROOT_ID, &st);
		size_t n = fuse_add_direntry(req, buf + used, size - used,
					     names[i], &st, i + 1);
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

/* Clamp [off, off+*len) to the disk; false if it starts at or past the end. */
static bool fe_clamp(struct fe_fuse_io *io, uint64_t off, size_t *len)
{
	if (off >= io->size)
		return false;
	if (*len > io->size - off)
		*len = (size_t)(io->size - off);
	return true;
}

static void fe_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);
	uint64_t o = (uint64_t)off, a0, a1;
	void *buf, *heap = NULL;
	int err;

	(void)ino;
	(void)fi;
	if (off < 0 || !fe_clamp(io, o, &size) || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	a0 = o & ~(uint64_t)(FTL_SECTOR - 1);
	a1 = (o + size + FTL_SECTOR - 1) & ~(uint64_t)(FTL_SECTOR - 1);
	buf = fe_buf(io);
	if (!buf || a1 - a0 > FE_FUSE_BUF) {
		/* Only if the kernel sent more than max_read: rare. */
		if (posix_memalign(&heap, 4096, (size_t)(a1 - a0))) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		buf = heap;
	}
	if (fe_enter(io)) {
		err = ftl_set_read(io->set, buf, a0, (size_t)(a1 - a0));
		fe_leave(io);
	} else {
		err = -EIO;
	}
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, (char *)buf + (o - a0), size);
	free(heap);
}

/* Write [o, o+size) when it is not sector-aligned (byteio.h). */
static int fe_write_unaligned(struct fe_fuse_io *io, const char *data,
			      uint64_t o, size_t size, unsigned flags)
{
	return fe_byteio_rmw(io->set, &io->rmw_lock, fe_buf(io), FE_FUSE_BUF,
			     data, o, size, flags);
}

static void fe_write(fuse_req_t req, fuse_ino_t ino, const char *data,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);
	uint64_t o = (uint64_t)off;
	unsigned flags = (fi->flags & (O_SYNC | O_DSYNC)) ? FTL_FUA : 0;
	int err;

	(void)ino;
	if (io->read_only) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (off < 0 || size == 0) {
		fuse_reply_write(req, 0);
		return;
	}
	if (!fe_clamp(io, o, &size)) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (!fe_enter(io)) {
		fuse_reply_err(req, EIO);
		return;
	}
	if ((o | size) & (FTL_SECTOR - 1))
		err = fe_write_unaligned(io, data, o, size, flags);
	else
		err = ftl_set_write(io->set, data, o, size, flags);
	fe_leave(io);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_write(req, size);
}

static void fe_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);

	(void)ino;
	(void)fi;
	if (!fe_enter(io)) {
		fuse_reply_err(req, EIO);
		return;
	}
	int err = ftl_set_flush(io->set);
	fe_leave(io);
	fuse_reply_err(req, -err);
}

static void fe_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)datasync;
	fe_flush(req, ino, fi);
}

/* Zero (discard when @punch) [o, o+len) (byteio.h). */
static int fe_zero_range(struct fe_fuse_io *io, uint64_t o, uint64_t len,
			 bool punch)
{
	return fe_byteio_zero(io->set, &io->rmw_lock, fe_buf(io), FE_FUSE_BUF,
			      o, len, punch, 0);
}

static void fe_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	struct fe_fuse_io *io = fuse_req_userdata(req);
	uint64_t o = (uint64_t)off, l = (uint64_t)len;
	int err = 0;

	(void)ino;
	(void)fi;
	if (io->read_only) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (o >= io->size || l > io->size - o) {
		/* Growing the disk is impossible; trim the range to it. */
		if (!(mode & (FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))) {
			fuse_reply_err(req, EFBIG);
			return;
		}
		l = o >= io->size ? 0 : io->size - o;
	}
	if (!fe_enter(io)) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
		if (l)
			err = fe_zero_range(io, o, l, true);
	} else if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE) {
		if (l)
			err = fe_zero_range(io, o, l, false);
	} else if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE) {
		err = 0;      /* every sector of the disk exists already */
	} else {
		err = -EOPNOTSUPP;
	}
	fe_leave(io);
	fuse_reply_err(req, -err);
}

static void fe_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = FE_FUSE_MAX_IO;
	conn->max_read = FE_FUSE_MAX_IO;     /* must match -o max_read */
	conn->max_readahead = 0;
	conn->max_background = 128;
	conn->congestion_threshold = 96;
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_AUTO_INVAL_DATA |
				  FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE);
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
}

const struct fuse_lowlevel_ops fe_fuse_io_ops = {
	.init      = fe_init,
	.lookup    = fe_lookup,
	.getattr   = fe_getattr,
	.setattr   = fe_setattr,
	.open      = fe_open,
	.read      = fe_read,
	.write     = fe_write,
	.flush     = fe_flush,
	.fsync     = fe_fsync,
	.readdir   = fe_readdir,
	.fallocate = fe_fallocate,
};
