/* SPDX-License-Identifier: MIT */
/* Topology of an octant flash image, from its superblock (oct-format.h). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include "align-private.h"
#include "crc32c.h"
#include "oct-format.h"

/* Check one copy; 0 and fill *t, or -EBADMSG / -EPROTONOSUPPORT. */
static int sb_check(const unsigned char *raw, struct align_topology *t,
		    int *magic_seen)
{
	struct oct_sb sb;
	uint32_t crc, ls, page, shift, ppb, mode;
	uint64_t nsect;

	memcpy(&sb, raw, sizeof(sb));
	if (memcmp(sb.magic, OCT_SB_MAGIC, sizeof(sb.magic)))
		return -EBADMSG;
	*magic_seen = 1;
	/* another version may lay out (and checksum) its header differently */
	if (le32toh(sb.version) != OCT_SB_VERSION)
		return -EPROTONOSUPPORT;
	crc = le32toh(sb.crc);
	sb.crc = 0;
	if (oct_crc32c(0, &sb, OCT_SB_SIZE) != crc)
		return -EBADMSG;
	ls = le32toh(sb.logical_size);
	page = le32toh(sb.page_size);
	shift = le32toh(sb.align_shift);
	ppb = le32toh(sb.pages_per_block);
	mode = le32toh(sb.align_mode);
	nsect = le64toh(sb.logical_sectors);
	if (le32toh(sb.sb_size) != OCT_SB_SIZE || !alignp_pow2(ls) || ls < 512 ||
	    !alignp_pow2(page) || page < ls || !ppb ||
	    (uint64_t)page * ppb > UINT32_MAX || shift >= page || shift % ls ||
	    (mode != OCT_ALIGN_ODD && mode != OCT_ALIGN_1M) ||
	    nsect > UINT64_MAX / ls)
		return -EBADMSG;
	memset(t, 0, sizeof(*t));
	t->logical = ls;
	t->physical = page;
	t->alignment_offset = (page - shift) % page;
	t->io_min = page;
	t->io_opt = page * ppb;
	t->erase_block = page * ppb;
	t->size = nsect * ls;
	t->source = ALIGN_SRC_IMAGE;
	if (le32toh(sb.flags) & OCT_SB_F_ZONED) {
		/* zn-format.h, struct zn_sb_ext at the start of reserved:
		 * version, then zone_blocks (erase blocks a zone) */
		uint32_t zb;

		memcpy(&zb, sb.reserved + 4, sizeof(zb));
		t->zone_size = (uint64_t)le32toh(zb) * page * ppb;
	}
	return 0;
}

int alignp_image_read(int fd, struct align_topology *t, int *magic_seen)
{
	static const uint64_t where[2] = { 0, OCT_SB_COPY_OFFSET };
	unsigned char raw[OCT_SB_SIZE];
	int r, first = -EBADMSG, i;
	ssize_t n;

	*magic_seen = 0;
	for (i = 0; i < 2; i++) {
		n = pread(fd, raw, sizeof(raw), (off_t)where[i]);
		if (n < 0)
			return -errno;
		r = n == (ssize_t)sizeof(raw) ? sb_check(raw, t, magic_seen)
					      : -EBADMSG;
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "superblock copy %d: %s", i,
			   r == 0 ? "valid" : r == -EPROTONOSUPPORT ?
			   "other version" : "invalid");
		if (!r)
			return 0;
		/* copy 0's error, unless copy 1 knows better */
		if (i == 0 || (first == -EBADMSG && r != -EBADMSG))
			first = r;
	}
	return first;
}

/* Fill *t from an octant flash image's superblock (copy 0, else copy 1). */
int align_topology_from_image(const char *path, struct align_topology *t)
{
	int fd, r, magic;

	if (!path || !t)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = alignp_image_read(fd, t, &magic);
	close(fd);
	if (r == 0)
		ALIGNP_DBG(ALIGN_DEBUG_PROBE, "%s: image %u/%u/%u size %" PRIu64,
			   path, t->logical, t->physical, t->alignment_offset,
			   t->size);
	return r;
}
