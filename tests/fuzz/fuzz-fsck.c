/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: ftl_fsck (check, and --repair) on a patched image in a
 * memfd (the fsck API takes a path: /proc/self/fd/N), then the offline
 * readers (ftl_info_read, libalign's image probe) and an open of the
 * result.  OCTANT_FUZZ_STRICT=1: see strict().  Input: see fuzz-img.h; byte 2 below.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz-img.h"

#define FL_REPAIR 0x01u
#define FL_JSON   0x02u
#define FL_OPEN   0x04u   /* open read-write after fsck */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* OCTANT_FUZZ_STRICT=1: also abort when fsck --repair claims success and
 * fsck then finds problems (not only on crashes and sanitizer reports). */
static bool strict(void)
{
	static int v = -1;

	if (v < 0) {
		const char *s = getenv("OCTANT_FUZZ_STRICT");
		v = s && *s && *s != '0';
	}
	return v;
}

static int mfd = -1;
static FILE *devnull;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct align_topology t;
	struct ftl_info info;
	struct fz_image im;
	struct ftl *f;
	int r, r2;

	if (mfd < 0) {
		mfd = memfd_create("octant-fuzz-fsck", MFD_CLOEXEC);
		devnull = fopen("/dev/null", "w");
		if (mfd < 0 || !devnull)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	}
	if (fz_apply(data, n, &im))
		return 0;
	if (ftruncate(mfd, 0) || ftruncate(mfd, (off_t)im.size) ||
	    pwrite(mfd, im.img, im.size, 0) != (ssize_t)im.size)
		abort();
	free(im.img);
	(void)ftl_info_read(path, &info);
	(void)align_topology_probe(path, &t);
	r = ftl_fsck(path, im.flags & FL_REPAIR, devnull, im.flags & FL_JSON);
	if (im.flags & FL_REPAIR) {
		r2 = ftl_fsck(path, false, devnull, im.flags & FL_JSON);
		/* repair said clean (0) or repaired (1): fsck must agree */
		if ((r == 0 || r == 1) && r2 != 0 && strict()) {
			fprintf(stderr, "fuzz-fsck: fsck --repair gave %d, then "
				"fsck %d\n", r, r2);
			abort();
		}
	}
	if ((im.flags & FL_OPEN) && ftl_open(path, NULL, &f) == 0)
		(void)ftl_close(f);
	return 0;
}
