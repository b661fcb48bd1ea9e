/* SPDX-License-Identifier: MIT */
/* Offline inspection: what the superblock says (never writes). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"

/*
 * Fill @info from the superblock of @path.  -EBADMSG corrupt (or too short
 * to hold a superblock), -EPROTONOSUPPORT another version; -EINVAL when
 * the image's size does not match (info is filled then); -EISDIR /
 * -ENOTBLK when @path is a directory / not a file or block device.
 */
int ftl_info_read(const char *path, struct ftl_info *info)
{
	struct oct_sb sb;
	struct ftl_geom g;
	uint64_t size;
	bool blkdev;
	int fd, r, bad, load;

	memset(info, 0, sizeof(*info));
	if (nand_backing_is_uri(path)) {
		fd = -1;
		blkdev = true;          /* sized like a device */
		r = ftl_sb_read_uri(path, &size, &sb, &g, &bad, &load);
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		r = ftl_sb_read_fd(fd, &size, &blkdev, &sb, &g, &bad, &load);
	}
	if (!r)
		r = load;
	if (r)
		goto out;
	info->align = g.align;
	info->page_size = g.ps;
	info->pages_per_block = g.ppb;
	info->oob_size = g.oob;
	info->nblocks = g.nblocks;
	info->op_permille = g.op;
	info->logical_size = g.size;
	info->flash_size = (uint64_t)g.nblocks * g.ppb * g.ps;
	info->image_size = g.image_size;
	memcpy(info->uuid, sb.uuid, 16);
	ftl_topo_fill(&g, &info->topo);
	if (size < g.image_size || (!blkdev && size != g.image_size))
		r = -EINVAL;
out:
	if (fd >= 0)
		close(fd);
	return r;
}

/* Print @info as one JSON object or as "key: value" lines. */
void ftl_info_print(const struct ftl_info *i, FILE *out, bool json)
{
	char uuid[40];
	const uint8_t *u = i->uuid;

	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	if (json) {
		fprintf(out, "{\"align\":\"%s\",\"page_size\":%u,"
			"\"pages_per_block\":%u,\"oob_size\":%u,\"nblocks\":%u,"
			"\"op_permille\":%u,\"logical_size\":%llu,"
			"\"flash_size\":%llu,\"image_size\":%llu,\"uuid\":\"%s\","
			"\"logical_block_size\":%u,\"physical_block_size\":%u,"
			"\"alignment_offset\":%u,\"io_min\":%u,\"io_opt\":%u}\n",
			i->align == FTL_ALIGN_ODD ? "odd" : "1m", i->page_size,
			i->pages_per_block, i->oob_size, i->nblocks,
			i->op_permille, (unsigned long long)i->logical_size,
			(unsigned long long)i->flash_size,
			(unsigned long long)i->image_size, uuid, i->topo.logical,
			i->topo.physical, i->topo.alignment_offset,
			i->topo.io_min, i->topo.io_opt);
		return;
	}
	fprintf(out,
		"align:               %s (logical sector 0 at medium byte %u)\n"
		"logical size:        %llu bytes (%llu sectors of 512)\n"
		"page size:           %u\n"
		"pages per block:     %u\n"
		"oob size:            %u\n"
		"erase blocks:        %u\n"
		"over-provisioning:   %.1f %%\n"
		"flash size:          %llu bytes\n"
		"image size:          %llu bytes\n"
		"uuid:                %s\n"
		"logical block size:  %u\n"
		"physical block size: %u\n"
		"alignment_offset:    %u\n"
		"io_min:              %u\n"
		"io_opt:              %u\n",
		i->align == FTL_ALIGN_ODD ? "odd" : "1m",
		i->align == FTL_ALIGN_ODD ? 512 : 0,
		(unsigned long long)i->logical_size,
		(unsigned long long)(i->logical_size / FTL_SECTOR), i->page_size,
		i->pages_per_block, i->oob_size, i->nblocks,
		i->op_permille / 10.0, (unsigned long long)i->flash_size,
		(unsigned long long)i->image_size, uuid, i->topo.logical,
		i->topo.physical, i->topo.alignment_offset, i->topo.io_min,
		i->topo.io_opt);
}
