/* SPDX-License-Identifier: MIT */
/* Creating images: geometry, superblocks, the first checkpoints. */
#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "ftl-set-format.h"

/* Geometry for create options, defaults filled in. */
int ftl_create_opts_geom(const struct ftl_create_opts *o, struct ftl_geom *g)
{
	int r;

	/* new images hold the flush record (older ones may have less) */
	if (o->oob_size && o->oob_size < FTL_OOB_FLUSH_MIN)
		return -EINVAL;
	if (o->pe_cycles > FTL_PE_MAX)
		return -EINVAL;
	r = ftl_geom_compute(g, o->size, o->align,
			     o->page_size ? o->page_size : 4096,
			     o->pages_per_block ? o->pages_per_block : 64,
			     o->oob_size ? o->oob_size : 64,
			     o->op_permille ? o->op_permille : 70);
	if (o->pe_cycles)
		g->pe_cycles = o->pe_cycles;
	if (!r && o->max_size > o->size) {     /* room to grow in place */
		g->room = o->max_size;
		r = ftl_geom_ckpt(g, true);
	}
	return r;
}

/* Image size for create options, 0 if they are bad (tests). */
uint64_t ftl_test_image_size(const struct ftl_create_opts *o)
{
	struct ftl_geom g;

	return ftl_create_opts_geom(o, &g) ? 0 : g.image_size;
}

/* Largest size for @o's geometry: the layout limits grow with the size
 * (logical pages, erase blocks), so the sizes that fit are a prefix. */
uint64_t ftl_create_max_size(const struct ftl_create_opts *o)
{
	struct ftl_create_opts t = *o;
	struct ftl_geom g;
	uint64_t lo = 0, hi = (1ull << 50) / FTL_SECTOR, mid;

	while (lo < hi) {               /* in sectors: lo fits (or is 0) */
		mid = lo + (hi - lo + 1) / 2;
		t.size = mid * FTL_SECTOR;
		if (ftl_create_opts_geom(&t, &g) == 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo * FTL_SECTOR;
}

/*
 * Format a backing whose bytes read as zeroes where it matters (OOB area,
 * checkpoint area): two superblock copies, then two checkpoints of the
 * empty state (so two valid copies exist from the start).  @b is not taken.
 */
static int create_backing(struct nand_backing *b,
			  const struct ftl_create_opts *o, bool delta,
			  bool stamp, bool fsum, bool copen)
{
	uint8_t area[OCT_SB_AREA];
	struct nand_geom ng;
	struct ftl_geom g;
	struct nand *n = NULL;
	struct ftl *f = NULL;
	int r;

	r = ftl_create_opts_geom(o, &g);
	if (!r && !delta)
		r = ftl_geom_ckpt(&g, false);
	if (r)
		return r;
	g.oob_stamp = g.oob_stamp && stamp;
	g.flush_sum = g.flush_sum && fsum;
	g.ckpt_open = copen;
	g.pi = o->integrity;
	if (g.pi && !ftl_pi_fits(&g))
		return -EINVAL;
	r = ftl_alloc(&g, &f);
	if (r)
		return r;
	ftl_sb_build(&f->sb, &g);
	memset(area, 0, sizeof(area));
	memcpy(area, &f->sb, OCT_SB_SIZE);
	memcpy(area + OCT_SB_COPY_OFFSET, &f->sb, OCT_SB_SIZE);
	ng = ftl_nand_geom(&g);
	r = nand_create(b, &ng, &n);
	if (r)
		goto out;
	f->nand = n;
	for (uint32_t blk = 0; blk < g.nblocks; blk++)
		nand_set_block(n, blk, blk < g.ckpt_blocks ? g.ppb : 0, 0);
	r = ftl_bb_factory(f, o->bad_block_rate, o->bad_block_seed);
	if (r)
		goto out;
	ftl_bbt_encode(f, area);
	ftl_lock(&f->lock);             /* not shared: for what asserts it */
	ftl_rebuild_lists(f);
	r = ftl_ckpt_write(f, true);
	ftl_ckpt_force_base(f);         /* two bases: two copies */
	if (!r)
		r = ftl_ckpt_write(f, true);
	ftl_unlock(&f->lock);
	/* superblock last: an interrupted create leaves no valid image */
	if (!r)
		r = b->ops->pwrite(b, area, sizeof(area), 0);
	if (!r)
		r = b->ops->sync(b);
out:
	if (n)
		nand_detach(n);
	ftl_free(f);
	return r;
}

int ftl_create_backing(struct nand_backing *b, const struct ftl_create_opts *o)
{
	return create_backing(b, o, true, true, true, true);
}

/* The same in the older format: checkpoint slots without delta records
 * (no OCT_SB_F_CKPT_DELTA, no OCT_SB_F_OOB_STAMP; tests of images made
 * before them). */
int ftl_test_create_backing_full(struct nand_backing *b,
				 const struct ftl_create_opts *o)
{
	return create_backing(b, o, false, false, false, false);
}

/* Format 1.1 with delta checkpoints, without erase stamps (no
 * OCT_SB_F_OOB_STAMP: images made before them, which erase by zeroing). */
int ftl_test_create_backing_nostamp(struct nand_backing *b,
				    const struct ftl_create_opts *o)
{
	return create_backing(b, o, true, false, false, false);
}

/* Layout 1.2 without flush summaries (no OCT_SB_F_FLUSH_SUM: images made
 * before them, revision 2); same image size. */
int ftl_test_create_backing_nofsum(struct nand_backing *b,
				   const struct ftl_create_opts *o)
{
	return create_backing(b, o, true, true, false, false);
}

/* Revision 3 with checkpoint version 5: no OCT_SB_F_CKPT_OPEN (images made
 * before it, whose checkpoints name two open blocks); same image size. */
int ftl_test_create_backing_noopen(struct nand_backing *b,
				   const struct ftl_create_opts *o)
{
	return create_backing(b, o, true, true, true, false);
}

uint64_t ftl_test_image_size_full(const struct ftl_create_opts *o)
{
	struct ftl_geom g;

	return ftl_create_opts_geom(o, &g) || ftl_geom_ckpt(&g, false) ? 0 :
	       g.image_size;
}

/* Does @fd hold an octant image or a signature libblkid knows? */
static int has_signature(int fd, const char *path)
{
	uint8_t area[OCT_SB_AREA];
	blkid_probe pr;
	ssize_t n;
	int r;

	n = pread(fd, area, sizeof(area), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n >= 8 && !memcmp(area, OCT_SB_MAGIC, 8))
		return 1;
	if ((size_t)n >= OCT_SB_COPY_OFFSET + 8 &&
	    !memcmp(area + OCT_SB_COPY_OFFSET, OCT_SB_MAGIC, 8))
		return 1;
	/* a set of engines' header (ftl-set-format.h) */
	if ((size_t)n >= 8 && !memcmp(area + FTL_SET_COPY0, FTL_SET_MAGIC, 8))
		return 1;
	if ((size_t)n >= FTL_SET_COPY1 + 8 &&
	    !memcmp(area + FTL_SET_COPY1, FTL_SET_MAGIC, 8))
		return 1;
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return 0;               /* too small to probe */
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_enable_partitions(pr, 1);
	r = blkid_do_safeprobe(pr);
	blkid_free_probe(pr);
	return r == 0 || r == -2;       /* found, or ambiguous */
}

/* Zero what must read as zeroes on a reused medium (a block device or an
 * NBD export): superblocks, checkpoint area, OOB (spread over the whole
 * flash in the inline layout); the superblocks first, synced
 * (nand_backing_wipe): a create cut short after that leaves no image that
 * opens (the new superblock is written last), never the old one half
 * zeroed (it opened and read EIO where the zeroing got to:
 * tests/unit/ftl-create-cut.c). */
static int zero_meta(struct nand_backing *b, const struct ftl_geom *g)
{
	int r;

	if (g->oob_inline)      /* the OOB is spread over the whole flash */
		return nand_backing_wipe(b, OCT_SB_AREA, g->image_size);
	r = nand_backing_wipe(b, OCT_SB_AREA, g->flash_off +
			      (uint64_t)g->ckpt_blocks * g->ppb * g->ps);
	return r ? r : b->ops->punch(b, g->oob_off, g->image_size - g->oob_off);
}

/* Open the remote medium @uri (an NBD export, an RBD image) for a create
 * of @image_size bytes (ftl_create_medium): like a block device (at least
 * the image size); anything but zeroes in its first bytes counts as a
 * signature, since libblkid cannot probe a remote medium.  An RBD image
 * that does not exist is made, the image's size (all zeroes: *@reused
 * false, nothing to check or zero). */
static int uri_medium(const char *uri, bool force, uint64_t image_size,
		      struct nand_backing **bp, bool *reused)
{
	uint8_t area[OCT_SB_AREA];
	struct nand_backing *b;
	uint64_t size;
	bool fresh = false;
	int r;

	if (nand_backing_is_rbd(uri)) {
		r = nand_backing_rbd_create(uri, image_size);
		if (r < 0)
			return r;
		fresh = r == 1;
	}
	r = nand_backing_uri(uri, false, &b, &size);
	if (r)
		return r;
	r = size < image_size ? -ENOSPC :
	    b->ops->pread(b, area, sizeof(area), 0);
	for (size_t i = 0; !r && i < sizeof(area) && !force && !fresh; i++)
		if (area[i])
			r = -EEXIST;
	if (r) {
		b->ops->destroy(b);
		return r;
	}
	*bp = b;
	*reused = !fresh;
	return 0;
}

int ftl_create_medium(const char *path, bool force, uint64_t image_size,
		      int (*make)(struct nand_backing *b, bool reused,
				  void *ctx),
		      void *ctx)
{
	struct nand_backing *b = NULL;
	uint64_t size;
	bool blkdev;
	int fd, r;

	if (nand_backing_is_uri(path)) {
		r = uri_medium(path, force, image_size, &b, &blkdev);
		if (r)
			return r;
		r = make(b, blkdev, ctx);
		b->ops->destroy(b);
		return r;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = ftl_fd_size(fd, &size, &blkdev);
	if (r)
		goto out;
	if (size) {
		r = has_signature(fd, path);
		if (r < 0)
			goto out;
		if (r && !force) {
			r = -EEXIST;
			goto out;
		}
	}
	if (blkdev) {
		if (size < image_size) {
			r = -ENOSPC;
			goto out;
		}
	} else if (ftruncate(fd, 0) || ftruncate(fd, (off_t)image_size)) {
		r = -errno;
		goto out;
	}
	r = nand_backing_fd(fd, &b);
	if (!r)
		r = make(b, blkdev, ctx);
out:
	if (b)
		b->ops->destroy(b);
	close(fd);
	return r;
}

struct engine_make {
	const struct ftl_create_opts *o;
	const struct ftl_geom *g;
};

/* ftl_create's make: zero the metadata of a reused medium, format. */
static int engine_make(struct nand_backing *b, bool reused, void *ctx)
{
	const struct engine_make *m = ctx;
	int r = reused ? zero_meta(b, m->g) : 0;

	return r ? r : ftl_create_backing(b, m->o);
}

int ftl_test_create_reused(struct nand_backing *b,
			   const struct ftl_create_opts *o)
{
	struct ftl_geom g;
	struct engine_make m = { .o = o, .g = &g };
	int r = ftl_create_opts_geom(o, &g);

	return r ? r : engine_make(b, true, &m);
}

/* Create a fresh image at @path (see ftl.h). */
int ftl_create(const char *path, const struct ftl_create_opts *o)
{
	struct ftl_geom g;
	struct engine_make m = { .o = o, .g = &g };
	int r;

	r = ftl_create_opts_geom(o, &g);
	if (!r)                 /* too many factory bad blocks: touch nothing */
		r = ftl_bb_factory_check(&g, o->bad_block_rate,
					 o->bad_block_seed);
	if (r)
		return r;
	return ftl_create_medium(path, o->force, g.image_size, engine_make, &m);
}
