/* SPDX-License-Identifier: MIT */
/*
 * What mkfs.xfs and mke2fs say about a device's topology: models of
 * xfsprogs 6.1 (libfrog/topology.c blkid_get_topology, mkfs/xfs_mkfs.c
 * calc_stripe_factors) and e2fsprogs 1.47 (misc/mke2fs.c PRS,
 * get_device_geometry) with Debian's /etc/mke2fs.conf, checked against the
 * real tools by tests/cli/alignpart-predict.bats and
 * tests/vm/guest/align-matrix.sh.
 *
 * mkfs.xfs refuses a device whose alignment_offset is not 0 unless forced
 * (-f), takes minimum / optimal I/O size as stripe unit / width unless one
 * of them is the physical sector size, ignores a geometry whose width is
 * not a multiple of its unit, and a stripe on a volume under 1 GiB.
 * mke2fs only warns about the offset and takes min / opt I/O size over the
 * block size as RAID stride / stripe width, whatever they are (a USB
 * bridge's 33553920 becomes a stripe width of 8191 blocks).
 */
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include "align-private.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define XFS_MIN_BYTES (300ull * MiB)  /* "must be larger than 300MB" */

int align_predict_mkfs_xfs(const struct align_topology *seen,
			   struct align_tool_result *r)
{
	uint64_t ss, ps, su, sw;

	if (!seen || !r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->start = r->end = UINT64_MAX;
	ss = alignp_logical(seen);
	ps = seen->physical ? seen->physical : ss;
	r->block_size = 4096;
	if (!seen->misaligned && seen->alignment_offset) {
		r->refuses = true;
		r->exit_status = 1;
		snprintf(r->says, sizeof(r->says),
			 "warning: device is not properly aligned ... "
			 "Use -f to force usage of a misaligned device");
		return 0;
	}
	if (seen->size / 4096 < 4096) {
		r->refuses = true;
		r->exit_status = 1;
		snprintf(r->says, sizeof(r->says),
			 "size %llu of data subvolume is too small, minimum 4096 blocks",
			 (unsigned long long)(seen->size / 4096));
		return 0;
	}
	if (seen->size < XFS_MIN_BYTES) {
		r->refuses = true;
		r->exit_status = 1;
		snprintf(r->says, sizeof(r->says),
			 "Filesystem must be larger than 300MB.");
		return 0;
	}
	su = seen->io_min;
	sw = seen->io_opt;
	if (su == ps || sw == ps)
		su = sw = 0;
	su = su >> 9 << 9;
	sw = sw >> 9 << 9;
	if ((su && !sw) || (!su && sw) || (su && sw % su)) {
		r->warns = true;
		snprintf(r->says, sizeof(r->says),
			 "mkfs.xfs: Volume reports invalid stripe unit (%llu) and "
			 "stripe width (%llu), ignoring.",
			 (unsigned long long)su, (unsigned long long)sw);
	} else if ((su || sw) && seen->size < GiB) {
		r->warns = true;
		snprintf(r->says, sizeof(r->says),
			 "mkfs.xfs: small data volume, ignoring data volume stripe "
			 "unit %llu and stripe width %llu",
			 (unsigned long long)(su >> 9), (unsigned long long)(sw >> 9));
	} else {
		r->stripe_unit = su;
		r->stripe_width = sw;
	}
	return 0;
}

/* mke2fs's block size for ext4 on @size bytes: the fs type's from Debian's
 * mke2fs.conf (floppy < 3 MiB, small < 512 MiB: 1024; else 4096), at least
 * the logical sector. */
static uint32_t ext4_block_size(uint64_t size, uint32_t ls)
{
	uint32_t bs = size < 512 * MiB ? 1024 : 4096;

	return bs < ls ? ls : bs;
}

int align_predict_mke2fs(const struct align_topology *seen,
			 struct align_tool_result *r)
{
	uint64_t ss, ps, min_io, opt_io, A;
	uint32_t bs;

	if (!seen || !r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->start = r->end = UINT64_MAX;
	ss = alignp_logical(seen);
	ps = seen->physical ? seen->physical : ss;
	bs = ext4_block_size(seen->size, (uint32_t)ss);
	r->block_size = bs;
	/* get_device_geometry() */
	min_io = seen->io_min;
	opt_io = seen->io_opt;
	if (!min_io && ps > bs)
		min_io = ps;
	if (!opt_io && min_io)
		opt_io = min_io;
	if (!opt_io && ps > bs)
		opt_io = ps;
	if (min_io == bs)
		min_io = 0;
	if (opt_io == bs)
		opt_io = 0;
	if (min_io > bs)
		r->stripe_unit = min_io / bs * bs;
	if (opt_io > bs)
		r->stripe_width = opt_io / bs * bs;
	A = seen->misaligned ? 0 : seen->alignment_offset;
	if (A) {
		r->warns = true;
		snprintf(r->says, sizeof(r->says),
			 "... alignment is offset by %llu bytes. This may result in "
			 "very poor performance, (re)-partitioning suggested.",
			 (unsigned long long)A);
	}
	return 0;
}
