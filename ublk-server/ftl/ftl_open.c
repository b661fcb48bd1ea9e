/* SPDX-License-Identifier: MIT */
/* Opening and closing images (file, block device, or any backing). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "ftl-int.h"

/* Size of the file or block device behind @fd. */
int ftl_fd_size(int fd, uint64_t *size, bool *blkdev)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	*blkdev = S_ISBLK(st.st_mode);
	if (*blkdev)
		return ioctl(fd, BLKGETSIZE64, size) ? -errno : 0;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -ENOTBLK;        /* a character device, FIFO, socket */
	*size = (uint64_t)st.st_size;
	return 0;
}

int ftl_sb_read_fd(int fd, uint64_t *size, bool *blkdev, struct oct_sb *sb,
		   struct ftl_geom *g, int *bad, int *load)
{
	uint8_t area[OCT_SB_AREA];
	ssize_t n;
	int r;

	r = ftl_fd_size(fd, size, blkdev);
	if (r)
		return r;
	memset(area, 0, sizeof(area));
	n = pread(fd, area, sizeof(area), 0);
	if (n < 0)
		return -errno;
	*load = ftl_sb_load(area, (size_t)n, sb, g, bad);
	return 0;
}

int ftl_sb_read_uri(const char *uri, uint64_t *size, struct oct_sb *sb,
		    struct ftl_geom *g, int *bad, int *load)
{
	uint8_t area[OCT_SB_AREA];
	struct nand_backing *b;
	size_t n;
	int r;

	r = nand_backing_uri(uri, true, &b, size);
	if (r)
		return r;
	memset(area, 0, sizeof(area));
	n = *size < sizeof(area) ? (size_t)*size : sizeof(area);
	r = b->ops->pread(b, area, n, 0);
	b->ops->destroy(b);
	if (!r)
		*load = ftl_sb_load(area, n, sb, g, bad);
	return r;
}

/*
 * A superblock copy that does not check out, or checks out but differs
 * from the one in use (a resize cut between its two superblock writes,
 * ftl_grow.c steps 4 and 5), gets the one in use, synced, before anything
 * else is written: left alone, a damaged copy keeps fsck at exit 4, and
 * with one of another size, damage to the good copy would later put that
 * size in charge.  Only the
 * superblock, as fsck --repair: the bad-block tables go by their own
 * generation and the superblock's nblocks.  A copy of another format
 * version is left as it is (not ours to undo).  The image lock is held
 * (a writer's open); @area is the superblock area as read.
 */
static int sb_mend(struct nand_backing *b, const uint8_t *area,
		   const struct oct_sb *sb, int bad)
{
	static const uint64_t where[2] = { 0, OCT_SB_COPY_OFFSET };
	struct ftl_geom g;

	for (int i = 0; i < 2; i++)     /* another version's copy stays */
		if (ftl_sb_decode((const struct oct_sb *)(area + where[i]),
				  &g) == -EPROTONOSUPPORT)
			bad &= ~(1 << i);
	return nand_backing_mend(b, sb, OCT_SB_SIZE, where, bad, "superblock",
				 "damaged, or a resize cut short");
}

/* Build an engine over backing @b (ftl-int.h). */
int ftl_open_on(struct nand_backing *b, uint64_t bsize, bool blkdev,
		   const struct ftl_open_opts *o, struct ftl **out)
{
	uint8_t area[OCT_SB_AREA];
	struct oct_sb sb;
	struct ftl_geom g;
	struct nand_geom ng;
	struct nand *n = NULL;
	struct ftl *f = NULL;
	int r, bad;

	if (bsize < OCT_SB_AREA)
		return -EBADMSG;        /* truncated: not even a superblock */
	r = b->ops->pread(b, area, sizeof(area), 0);
	if (r)
		return r;
	r = ftl_sb_load(area, sizeof(area), &sb, &g, &bad);
	if (r)
		return r;
	if (!ftl_geom_size_ok(&g, bsize, blkdev))
		return -EINVAL;         /* truncated or wrong size */
	if (bad && !o->readonly) {
		r = sb_mend(b, area, &sb, bad);
		if (r)
			return r;
	}
	ng = ftl_nand_geom(&g);
	r = nand_create(b, &ng, &n);
	if (r)
		return r;
	r = ftl_alloc(&g, &f);
	if (r) {
		nand_detach(n);
		nand_destroy(n);
		return r;
	}
	f->nand = n;
	f->sb = sb;
	r = ftl_bbt_load(f, area);
	ftl_fmark_load(f, area);
	if (!r)
		r = ftl_mount(f, o);
	if (!r && o->faults) {
		/* the checkpoint area is the guaranteed-good system area */
		r = nand_set_fault_model(n, o->faults, g.ckpt_blocks);
		f->scrub.bits = nand_fault_ecc(n) * 3 / 4;
		if (!f->scrub.bits)
			f->scrub.bits = 1;
	}
	if (!r && o->bg_gc && !o->readonly)
		r = ftl_bggc_start(f);  /* last: nothing can fail after it */
	if (r) {
		nand_detach(n);         /* the caller still owns b */
		ftl_free(f);
		return r;
	}
	if (o->unshifted) {             /* per open only: never persisted */
		f->g.shift = 0;
		f->g.size = (uint64_t)f->g.nlpn * f->g.ps;
	}
	*out = f;
	return 0;
}

/* 0 if descriptors @a and @b are open on one file, else -EINVAL. */
static int ftl_same_file(int a, int b)
{
	struct stat x, y;

	if (fstat(a, &x) < 0 || fstat(b, &y) < 0)
		return -errno;
	return x.st_dev == y.st_dev && x.st_ino == y.st_ino ? 0 : -EINVAL;
}

/* The backing of the image at @path as ftl_open takes it (ftl-int.h). */
int ftl_path_backing(const char *path, const struct ftl_open_opts *o,
		     struct nand_backing **b, uint64_t *size, bool *blkdev,
		     int *fdp)
{
	int fd, r;

	*b = NULL;
	*fdp = -1;
	if (nand_backing_is_uri(path)) {
		/* a remote medium, sized like a device (at least the image):
		 * never flocked; an RBD image's exclusive lock is its image
		 * lock (-EBUSY), an NBD export's server decides who else may
		 * write it (docs/network.md) */
		*blkdev = true;
		return nand_backing_uri(path, o->readonly, b, size);
	}
	fd = open(path, (o->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = o->readonly || o->lock_fd <= 0 ? 0 : ftl_same_file(fd, o->lock_fd);
	if (r)
		goto err;
	if (!o->readonly && flock(o->lock_fd > 0 ? o->lock_fd : fd,
				  LOCK_EX | LOCK_NB)) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto err;
	}
	r = ftl_fd_size(fd, size, blkdev);
	if (r)
		goto err;
	r = nand_backing_fd(fd, b);
	if (r)
		goto err;
	*fdp = fd;
	return 0;
err:
	close(fd);
	return r;
}

/* Open the image at @path (see ftl.h). */
int ftl_open(const char *path, const struct ftl_open_opts *o,
	     struct ftl **out)
{
	struct ftl_open_opts dflt = { 0 };
	struct nand_backing *b;
	uint64_t size;
	bool blkdev;
	int fd, r;

	if (!o)
		o = &dflt;
	r = ftl_path_backing(path, o, &b, &size, &blkdev, &fd);
	if (r)
		return r;
	r = ftl_open_on(b, size, blkdev, o, out);
	if (r) {
		b->ops->destroy(b);
		if (fd >= 0)
			close(fd);
		return r;
	}
	(*out)->fd = fd;
	return 0;
}

/* Open an image on any backing (tests; the engine owns @b on success):
 * a memory backing is its size, any other (a test's wrapper) is taken to
 * be as large as the image. */
int ftl_open_backing(struct nand_backing *b, const struct ftl_open_opts *o,
		     struct ftl **out)
{
	struct ftl_open_opts dflt = { 0 };
	uint64_t size = 0;

	if (!nand_mem_bytes(b, &size))
		return ftl_open_on(b, UINT64_MAX, true, o ? o : &dflt, out);
	return ftl_open_backing_sized(b, size, o, out);
}

/* Open an image on any backing whose store is @size bytes (tests). */
int ftl_open_backing_sized(struct nand_backing *b, uint64_t size,
			   const struct ftl_open_opts *o, struct ftl **out)
{
	struct ftl_open_opts dflt = { 0 };

	return ftl_open_on(b, size, false, o ? o : &dflt, out);
}

/* Stop background GC, write a clean checkpoint (unless read-only) and
 * free everything; an error the GC thread hit and no write reported yet
 * is returned too. */
int ftl_close(struct ftl *f)
{
	int r = 0;

	if (!f)
		return 0;
	ftl_bggc_stop(f);               /* no GC after the clean checkpoint */
	if (!f->readonly) {
		ftl_lock(&f->lock);
		r = ftl_ckpt_write(f, true);
		if (!r)
			r = f->bggc.err;  /* the GC thread's, not yet reported */
		ftl_unlock(&f->lock);
	}
	if (f->fd >= 0)
		close(f->fd);
	ftl_free(f);
	return r;
}

/* Free without a checkpoint, as if the process died (tests). */
void ftl_abandon(struct ftl *f)
{
	ftl_bggc_stop(f);               /* joined: no write after the "cut" */
	if (f->fd >= 0)
		close(f->fd);
	ftl_free(f);
}

/* Exported logical size in bytes. */
uint64_t ftl_size(const struct ftl *f)
{
	return f->g.size;
}

/* How this open found the image (see ftl.h). */
enum ftl_mount_kind ftl_mount_kind(const struct ftl *f)
{
	return f->mnt.kind;
}

/* The topology to report to the kernel (same as libalign reads). */
void ftl_topo_fill(const struct ftl_geom *g, struct align_topology *t)
{
	memset(t, 0, sizeof(*t));
	t->logical = FTL_SECTOR;
	t->physical = g->ps;
	t->alignment_offset = (g->ps - g->shift) % g->ps;
	t->io_min = g->ps;
	t->io_opt = g->ps * g->ppb;
	t->erase_block = g->ps * g->ppb;
	t->size = g->size;
	t->source = ALIGN_SRC_IMAGE;
}

/* The topology of an opened image. */
void ftl_topology(const struct ftl *f, struct align_topology *t)
{
	ftl_topo_fill(&f->g, t);
}
