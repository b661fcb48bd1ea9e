/* SPDX-License-Identifier: MIT */
/* create --zoned, and loading a zoned image from its backing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zn-format.h"

int zn_format_backing(struct nand_backing *b, const struct zn_create_opts *o)
{
	struct nand_geom ng;
	struct zn_geom g;
	struct oct_sb sb;
	char why[160];
	int r;

	r = zn_create_geom(o, &g, &ng, why, sizeof(why));
	if (r)
		return r;
	zn_sb_build(&sb, &g, &ng, o->pe_cycles);
	r = b->ops->punch(b, 0, OCT_SB_AREA);
	if (!r)
		r = b->ops->pwrite(b, &sb, sizeof(sb), 0);
	if (!r)
		r = b->ops->pwrite(b, &sb, sizeof(sb), OCT_SB_COPY_OFFSET);
	return r ? r : b->ops->sync(b);
}

int zn_create_backing(struct nand_backing *b, const struct zn_create_opts *o,
		      bool reused)
{
	struct nand_geom ng;
	struct zn_geom g;
	char why[160];
	int r = 0;

	if (reused) {
		/* no stale OOB records: the old superblocks first, synced,
		 * then the rest (nand_backing_wipe) */
		r = zn_create_geom(o, &g, &ng, why, sizeof(why));
		if (!r)
			r = nand_backing_wipe(b, OCT_SB_AREA, zn_image_size(&ng));
	}
	return r ? r : zn_format_backing(b, o);
}

int zn_load(struct nand_backing *b, bool readonly, struct zn **out)
{
	struct nand_geom ng;
	struct zn_geom g;
	struct oct_sb sb;
	struct nand *n;
	int r, bad = 0;

	r = zn_sb_read(b, &sb, &g, &ng, &bad);
	/* a writer mends a damaged copy first (as the engine, ftl_open.c) */
	if (!r && bad && !readonly)
		r = zn_sb_mend(b, &sb, bad, true);
	if (r) {
		b->ops->destroy(b);
		return r;
	}
	r = nand_create(b, &ng, &n);
	if (r) {
		b->ops->destroy(b);
		return r;
	}
	r = zn_open(n, &g, readonly, out);
	if (r)
		nand_destroy(n);
	return r;
}

/* Refuse a medium holding something (an octant superblock or any other
 * byte in its first OCT_SB_AREA bytes: most signatures are there) unless
 * forced. */
static int check_empty(int fd)
{
	uint8_t area[OCT_SB_AREA];
	ssize_t n = pread(fd, area, sizeof(area), 0);

	if (n < 0)
		return -errno;
	for (ssize_t i = 0; i < n; i++)
		if (area[i])
			return -EEXIST;
	return 0;
}

int zn_create(const char *path, const struct zn_create_opts *o, char *why,
	      size_t len)
{
	struct nand_backing *b = NULL;
	struct nand_geom ng;
	struct zn_geom g;
	uint64_t size = 0, isz;
	struct stat st;
	int fd, r;

	r = zn_create_geom(o, &g, &ng, why, len);
	if (r)
		return r;
	if (nand_backing_is_uri(path)) {
		snprintf(why, len, "a zoned image on an NBD export is not supported");
		return -EOPNOTSUPP;
	}
	isz = zn_image_size(&ng);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		r = -errno;
		goto out;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size)) {
			r = -errno;
			goto out;
		}
	} else {
		size = (uint64_t)st.st_size;
	}
	if (size && !o->force) {
		r = check_empty(fd);
		if (r)
			goto out;
	}
	if (S_ISBLK(st.st_mode) && size < isz) {
		r = -ENOSPC;
		goto out;
	}
	if (!S_ISBLK(st.st_mode) &&
	    (ftruncate(fd, 0) || ftruncate(fd, (off_t)isz))) {
		r = -errno;
		goto out;
	}
	r = nand_backing_fd(fd, &b);     /* of the file at its new size */
	if (!r)
		r = zn_create_backing(b, o, S_ISBLK(st.st_mode));
out:
	if (b)
		b->ops->destroy(b);
	close(fd);
	return r;
}
