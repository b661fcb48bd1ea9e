/* SPDX-License-Identifier: MIT */
/*
 * ap-map — kpartx-style partition mappings for alignpart:
 *   alignpart map TARGET     dm-linear NAME-partN for each partition
 *   alignpart unmap TARGET   remove them
 * NAME is the basename of TARGET (a block device, or an image file that
 * is first attached to an auto-clearing loop device).  The mappings are
 * made through libdevmapper (plumbing/dmstack.h), never dmsetup.
 *
 * Exit codes of the commands (alignpart's, ap.h): 0 success; 2 usage;
 * 3 I/O or system error (no device-mapper, no partition table); 5 refused
 * (a mapping of that name exists, a mapping is in use).
 */
#ifndef OCTANT_AP_MAP_H
#define OCTANT_AP_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "align.h"

/* One partition as its dm-linear mapping covers it. */
struct ap_map_part {
	unsigned partno;          /* 1-based, as in NAME-partN */
	uint64_t start_lba;       /* in TARGET's logical sectors */
	uint64_t start_sector;    /* 512-byte sectors (the dm table unit) */
	uint64_t nr_sectors;      /* 512-byte sectors */
	char name[128];           /* dm name NAME-partN */
};

/* `alignpart map [--verbose] TARGET`: create the mappings, print each path. */
int ap_cmd_map(int argc, char **argv);

/* `alignpart unmap TARGET`: remove the mappings of TARGET. */
int ap_cmd_unmap(int argc, char **argv);

/* The partitions of @target read with libfdisk, as a malloc'd array in
 * *parts (free() it) of *n entries.  -ENOMEDIUM when there is no table. */
int ap_map_partitions(const char *target, struct ap_map_part **parts,
		      size_t *n);

/* The kernel's alignment_offset of the mapped dm device @dmname (sysfs);
 * -ENOENT when it is not mapped. */
int ap_map_sysfs_offset(const char *dmname, long long *off);

/*
 * For `alignpart check`: for each partition of @target that is mapped
 * (alignpart map), compare the predicted alignment_offset of a dm-linear
 * at its start on topology @t (align_dm_linear_offset(); @t NULL = probe
 * the device the mapping sits on, a device ublk-flash serves by its image's
 * topology) with what sysfs reports.  On a served loop device the kernel
 * says 0 for every mapping: a difference there is a mapping that is
 * misaligned on the medium.  With @print, one line per partition on stdout
 * (ap_out: control characters and backslashes of the name as \xHH):
 *   "part1 /dev/mapper/X-part1 start 2048: predicted 0, kernel 0 (same)"
 * Returns the number of differences (0 = all agree), or -errno; *nmapped
 * (may be NULL) gets how many partitions were mapped.
 */
int ap_map_verify(const char *target, const struct align_topology *t,
		  bool print, size_t *nmapped);

#endif /* OCTANT_AP_MAP_H */
