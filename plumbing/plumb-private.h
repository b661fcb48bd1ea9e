/* SPDX-License-Identifier: MIT */
/*
 * What plumbing/'s files share among themselves and nobody else calls:
 * prefix plumbp_.  The public headers (loopdev.h, sysfs.h, registry.h,
 * dmstack.h, holders.h) name plumb_ only (tests/cli/plumbing-only.bats).
 */
#ifndef OCTANT_PLUMB_PRIVATE_H
#define OCTANT_PLUMB_PRIVATE_H

#include <sys/types.h>

/* A "MAJ:MIN" device number file (sysfs' dev) into *dev: 0, -errno when
 * it cannot be opened, -EINVAL when it holds no device number. */
int plumbp_read_devno(const char *file, dev_t *dev);

#endif
