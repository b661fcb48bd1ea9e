/* SPDX-License-Identifier: MIT */
/* align_probe, align_topology_probe: pick the source that fits the target. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "align-private.h"

/*
 * A block device that holds an octant image itself (a loop device over the
 * image file, an image written to a partition): the image's topology
 * (ALIGN_SRC_IMAGE), so that nobody takes it for a blank disk and writes a
 * partition table over its superblock.  One with the magic but a bad crc
 * or another version: that error.  Unreadable (permissions): the device's.
 */
static int blockdev_image(const char *path, struct align_topology *t)
{
	struct align_topology it;
	int fd, r, magic;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = alignp_image_read(fd, &it, &magic);
	close(fd);
	if (r == 0) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: holds an octant image", path);
		*t = it;
		return 0;
	}
	if (!magic)
		return 0;
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: octant magic, %s", path,
		   strerror(-r));
	memset(t, 0, sizeof(*t));
	return r;
}

/*
 * A block device served by ublk-flash -> its image's (ALIGN_SRC_SERVED);
 * a block device holding an octant image -> the image's (ALIGN_SRC_IMAGE);
 * another block device -> the kernel's topology (ALIGN_SRC_DEVICE); a regular file with a
 * valid octant superblock -> the image's (ALIGN_SRC_IMAGE); a regular file
 * carrying the octant magic but a bad crc or another version -> that error
 * (a corrupt image is never taken for a plain file); any other regular file
 * -> its size only, source ALIGN_SRC_NONE.  -ENOENT etc. from stat,
 * -EISDIR for a directory, -ENOTBLK for other file types.
 */
int align_probe(const char *path, struct align_probe *p)
{
	struct align_topology *t = p ? &p->t : NULL;
	struct stat st;
	int fd, r, magic;

	if (!path || !p)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->served = -ENOTBLK;
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		r = align_topology_from_served(path, t, p->image,
					       sizeof(p->image));
		p->served = r;
		if (r != -ESTALE && r)
			p->image[0] = '\0';
		/* -ESTALE: an entry names it but does not check out; the
		 * caller says so (p->image) */
		if (r != -ENOENT && r != -ESTALE)
			return r;
		r = align_topology_from_device(path, t);
		return r < 0 ? r : blockdev_image(path, t);
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -ENOTBLK;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = alignp_image_read(fd, t, &magic);
	close(fd);
	if (r == 0 || magic) {
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: octant image: %s", path,
			   r ? strerror(-r) : "valid");
		return r;
	}
	if (r != -EBADMSG)
		return r;
	memset(t, 0, sizeof(*t));
	t->size = (uint64_t)st.st_size;
	t->source = ALIGN_SRC_NONE;
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: plain file, %" PRIu64 " bytes", path,
		   t->size);
	return 0;
}

int align_topology_probe(const char *path, struct align_topology *t)
{
	struct align_probe *p;
	int r;

	if (!path || !t)
		return -EINVAL;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	r = align_probe(path, p);
	*t = p->t;
	free(p);
	return r;
}
