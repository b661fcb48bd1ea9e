/* SPDX-License-Identifier: MIT */
/* align_topology_probe: pick the source that fits the target. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "align-private.h"

/*
 * A block device served by ublk-flash -> its image's (ALIGN_SRC_SERVED);
 * another block device -> the kernel's topology (ALIGN_SRC_DEVICE); a regular file with a
 * valid octant superblock -> the image's (ALIGN_SRC_IMAGE); a regular file
 * carrying the octant magic but a bad crc or another version -> that error
 * (a corrupt image is never taken for a plain file); any other regular file
 * -> its size only, source ALIGN_SRC_NONE.  -ENOENT etc. from stat,
 * -EISDIR for a directory, -ENOTBLK for other file types.
 */
int align_topology_probe(const char *path, struct align_topology *t)
{
	struct stat st;
	int fd, r, magic;

	if (!path || !t)
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		r = align_topology_from_served(path, t, NULL, 0);
		if (r != -ENOENT)
			return r;
		return align_topology_from_device(path, t);
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
