/* SPDX-License-Identifier: MIT */
/*
 * Growing an image in place (ublk-flash resize): new erase blocks after
 * the last one, the checkpoint slots unchanged (sized for the superblock's
 * ckpt_sectors, create --max-size).
 *
 * Order, each step synced before the next (a power cut anywhere leaves
 * the old image or the new one, every flushed byte intact):
 *  1. a clean open and close at the old size (recovery, a clean base);
 *  2. the file extended (zeroes: blocks as create leaves them; a block
 *     device's new range zeroed) — the old superblock ignores the tail
 *     (an image opens on a larger file, as on a larger device);
 *  3. the old state loaded into an engine of the new geometry and written
 *     as a clean base checkpoint of it, after the old one's mount marker
 *     (header nlpn / nblocks of the new size: the old superblock keeps
 *     its own, ftl_ckpt_load.c; a cut here is an unclean shutdown of it,
 *     no damage);
 *  4. superblock copy 1 with its bad-block table (copy 0 still old: the
 *     old image);
 *  5. superblock copy 0 (the new image: copy 1's table), then copy 0's
 *     table (the old superblock needs it until then);
 *  6. bases of the new size in the other checkpoint slots (until then
 *     they hold older checkpoints of the old size: superseded, not
 *     damaged, ftl_ckpt_load.c), each after the mount marker of the one
 *     before (a cut: an unclean shutdown, as in step 3).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"

/* Steps 3 to 5 on backing @b (not taken), holding a clean image of
 * geometry @g0 (superblock area @area) and at least g1->image_size bytes. */
static int grow_write(struct nand_backing *b, uint8_t *area,
		      const struct oct_sb *sb0, const struct ftl_geom *g0,
		      const struct ftl_geom *g1)
{
	struct ftl_open_opts ro = { .readonly = true };
	struct nand_geom ng = ftl_nand_geom(g1);
	struct nand *n = NULL;
	struct ftl *f = NULL;
	struct oct_sb sb1 = *sb0;
	int r;

	r = nand_create(b, &ng, &n);
	if (r)
		return r;
	r = ftl_alloc(g1, &f);      /* arrays of the new size ... */
	if (r) {
		nand_detach(n);
		nand_destroy(n);
		return r;
	}
	f->nand = n;
	f->sb = *sb0;
	f->g = *g0;                 /* ... loaded at the old one */
	r = ftl_bbt_load(f, area);
	ftl_fmark_load(f, area);
	if (!r)
		r = ftl_mount(f, &ro);
	if (!r && f->mnt.kind != FTL_MOUNT_CLEAN)
		r = -EAGAIN;            /* step 1 left it clean */
	if (r)
		goto out;
	/* the new blocks: free, erase count 0, unmapped (ftl_alloc) */
	f->g = *g1;
	f->readonly = f->o.readonly = false;
	ftl_bb_relimit(f);
	ftl_lock(&f->lock);
	ftl_rebuild_lists(f);
	ftl_ckpt_blk_dirty_all(f);
	ftl_ckpt_force_base(f);
	/* the mount marker first, as any writer's first write after a clean
	 * open: a base cut short after a clean checkpoint with no marker
	 * would look like damage (closed cleanly: never torn,
	 * ftl_ckpt_find), fsck exit 4 after a kill -9 of a resize */
	r = ftl_ckpt_marker_write(f);
	if (!r)
		r = ftl_ckpt_write(f, true);    /* synced */
	ftl_unlock(&f->lock);
	if (r)
		goto out;
	sb1.logical_sectors = g1->size / FTL_SECTOR;
	sb1.nblocks = g1->nblocks;
	sb1.oob_offset = g1->oob_off;
	sb1.ckpt_sectors = g1->room > g1->size ? g1->room / FTL_SECTOR : 0;
	sb1.crc = 0;
	sb1.crc = oct_crc32c(0, &sb1, OCT_SB_SIZE);
	f->sb = sb1;
	memcpy(area, &sb1, OCT_SB_SIZE);
	memcpy(area + OCT_SB_COPY_OFFSET, &sb1, OCT_SB_SIZE);
	ftl_bbt_encode(f, area);
	r = b->ops->pwrite(b, area + OCT_SB_COPY_OFFSET,
			   OCT_SB_AREA - OCT_SB_COPY_OFFSET, OCT_SB_COPY_OFFSET);
	if (!r)
		r = b->ops->sync(b);
	/* copy 0's superblock alone first: until it is written, the old
	 * one needs its table in copy 0 (copy 1's is the new size's) */
	if (!r)
		r = b->ops->pwrite(b, area, OCT_SB_SIZE, 0);
	if (!r)
		r = b->ops->sync(b);
	if (!r)
		r = b->ops->pwrite(b, area + OCT_SB_SIZE,
				   OCT_SB_COPY_OFFSET - OCT_SB_SIZE, OCT_SB_SIZE);
	if (!r)
		r = b->ops->sync(b);
	/* 6. the other slots still hold checkpoints of the old size (taken
	 * for superseded, ftl_ckpt_load.c): bases of the new size in all of
	 * them, so that every slot is of this size */
	ftl_lock(&f->lock);
	for (uint32_t i = 1; i < FTL_CKPT_SLOTS && !r; i++) {
		ftl_ckpt_force_base(f);
		r = ftl_ckpt_marker_write(f);   /* as in step 3 */
		if (!r)
			r = ftl_ckpt_write(f, true);
	}
	ftl_unlock(&f->lock);
out:
	nand_detach(n);
	ftl_free(f);
	return r;
}

/* Steps 2 to 5 on backing @b (not taken) of @bsize bytes (a file when
 * @fd >= 0 and !@blkdev: extended through @fd). */
static int grow_on(struct nand_backing *b, uint64_t bsize, bool blkdev,
		   int fd, uint64_t size, uint64_t *max)
{
	uint8_t area[OCT_SB_AREA];
	struct ftl_geom g0, g1;
	struct oct_sb sb;
	int r, bad;

	if (bsize < OCT_SB_AREA)
		return -EBADMSG;
	r = b->ops->pread(b, area, sizeof(area), 0);
	if (r)
		return r;
	r = ftl_sb_load(area, sizeof(area), &sb, &g0, &bad);
	if (r)
		return r;
	if (bsize < g0.image_size)
		return -EINVAL;
	if (size == g0.size)
		return 0;
	r = ftl_geom_grow(&g0, size, &g1);
	if (r == -EFBIG && max)
		*max = ftl_geom_grow_max(&g0);
	if (r)
		return r;
	if (fd >= 0 && !blkdev) {       /* exactly (a longer tail: a grow
					   to more cut short) */
		if (bsize != g1.image_size &&
		    ftruncate(fd, (off_t)g1.image_size))
			return -errno;
	} else if (bsize < g1.image_size) {
		return -ENOSPC;
	} else if (blkdev) {            /* a reused medium: zeroes, as create */
		r = b->ops->punch(b, g0.image_size,
				  g1.image_size - g0.image_size);
		if (r)
			return r;
	}
	r = b->ops->sync(b);
	return r ? r : grow_write(b, area, &sb, &g0, &g1);
}

/* The checks first, so that nothing is written for a size that cannot
 * be: a clean open and close only then (step 1).  1: the size it has. */
static int grow_check(struct nand_backing *b, uint64_t size, uint64_t *max)
{
	uint8_t area[OCT_SB_AREA];
	struct ftl_geom g0, g1;
	struct oct_sb sb;
	int r, bad;

	r = b->ops->pread(b, area, sizeof(area), 0);
	if (!r)
		r = ftl_sb_load(area, sizeof(area), &sb, &g0, &bad);
	if (r)
		return r;
	if (size == g0.size)
		return 1;
	r = ftl_geom_grow(&g0, size, &g1);
	if (r == -EFBIG && max)
		*max = ftl_geom_grow_max(&g0);
	return r;
}

/* Steps 1 to 6 on @fd, a descriptor of @path on which the image lock
 * (flock LOCK_EX) is held (a no-op when it already is). */
static int grow_held(const char *path, int fd, uint64_t size, uint64_t *max)
{
	struct ftl_open_opts oo = { 0 };
	struct nand_backing *b = NULL;
	struct ftl *f = NULL;
	uint64_t bsize;
	bool blkdev;
	int r;

	if (flock(fd, LOCK_EX | LOCK_NB))
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	r = ftl_fd_size(fd, &bsize, &blkdev);
	if (!r)
		r = nand_backing_fd(fd, &b);
	if (!r)
		r = grow_check(b, size, max);
	if (r)
		goto out;       /* 1: nothing to do */
	oo.lock_fd = fd;
	r = ftl_open(path, &oo, &f);    /* step 1 */
	if (!r)
		r = ftl_close(f);
	if (!r)
		r = ftl_fd_size(fd, &bsize, &blkdev);
	if (!r)
		r = grow_on(b, bsize, blkdev, fd, size, max);
out:
	if (b)
		b->ops->destroy(b);
	return r == 1 ? 0 : r;
}

/* Grow the image at @path (see ftl.h). */
int ftl_grow(const char *path, uint64_t size, uint64_t *max)
{
	int fd, r;

	if (nand_backing_is_uri(path))
		return -EOPNOTSUPP;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = grow_held(path, fd, size, max);
	close(fd);
	return r;
}

/* Grow through @lock_fd, on which the caller holds the lock (see ftl.h). */
int ftl_grow_locked(const char *path, int lock_fd, uint64_t size,
		    uint64_t *max)
{
	struct stat a, b;

	if (nand_backing_is_uri(path))
		return -EOPNOTSUPP;
	if (fstat(lock_fd, &a) || stat(path, &b))
		return -errno;
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return -EINVAL;
	return grow_held(path, lock_fd, size, max);
}

/* Could @path grow to @size (see ftl.h)?  Reads its superblock only. */
int ftl_grow_check(const char *path, uint64_t size, uint64_t *max)
{
	struct nand_backing *b = NULL;
	int fd, r;

	if (nand_backing_is_uri(path))
		return -EOPNOTSUPP;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = nand_backing_fd(fd, &b);
	if (!r) {
		r = grow_check(b, size, max);
		b->ops->destroy(b);
	}
	close(fd);
	return r;
}

/* A dup of the descriptor holding @f's image lock (see ftl.h). */
int ftl_lock_dup(const struct ftl *f)
{
	int fd = f->o.lock_fd > 0 ? f->o.lock_fd : f->fd;

	if (fd < 0 || f->readonly)
		return -EBADF;
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return fd < 0 ? -errno : fd;
}

/* The same on a memory backing (tests; @b is not taken, at least as large
 * as the grown image). */
int ftl_test_grow_backing(struct nand_backing *b, uint64_t size,
			  uint64_t *max)
{
	struct ftl *f = NULL;
	uint64_t bsize = 0;
	int r;

	if (!nand_mem_bytes(b, &bsize))
		return -EINVAL;
	r = grow_check(b, size, max);
	if (r)
		return r == 1 ? 0 : r;
	nand_mem_hold(b);               /* the close drops this reference */
	r = ftl_open_backing_sized(b, bsize, NULL, &f);
	if (r) {
		b->ops->destroy(b);
		return r;
	}
	r = ftl_close(f);
	return r ? r : grow_on(b, bsize, false, -1, size, max);
}
