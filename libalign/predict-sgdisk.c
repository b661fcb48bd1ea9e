/* SPDX-License-Identifier: MIT */
/*
 * What `sgdisk -n 1:0:0 DEV` does on a blank disk: a model of GPT fdisk
 * 1.0.9 (gpt.cc GPTData::ComputeAlignment, Align), checked against the real
 * sgdisk by tests/cli/alignpart-predict.bats and tests/vm/guest/align-matrix.sh.
 * gdisk aligns starts to 1 MiB counted in LBAs (2048 sectors of 512 bytes,
 * 256 of 4096) and never reads the alignment offset: on a disk whose LBA 0
 * is 512 bytes into a physical sector (offset 3584) it puts the partition at
 * 2048, which is not physically aligned, and says nothing.
 */
#include <errno.h>
#include <string.h>
#include "align-private.h"

#define DEFAULT_ALIGNMENT 2048ull   /* sectors of 512 bytes */
#define GPT_ENTRIES_BYTES (128ull * 128ull)

int align_predict_sgdisk(const struct align_topology *seen,
			 struct align_tool_result *r)
{
	uint64_t ss, total, es, first, last, align, start;

	if (!seen || !r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	ss = alignp_logical(seen);
	total = seen->size / ss;
	es = (GPT_ENTRIES_BYTES + ss - 1) / ss;
	if (total < 2 * es + 4)
		return -ENOSPC;
	first = 2 + es;
	last = total - 2 - es;
	align = DEFAULT_ALIGNMENT * 512 / ss;
	if (!align)
		align = 1;
	start = (first + align - 1) / align * align;
	if (start > last)
		start = first;          /* no aligned sector fits: unaligned */
	r->start = start;
	r->end = UINT64_MAX;
	r->grain = align;
	r->grain_offset = 0;
	return 0;
}
