/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: open + recovery of a patched image on a memory backing
 * (superblock, checkpoint header and payload, OOB records, data pages; see
 * fuzz-img.h for the input).  Then read everything, write, flush, trim,
 * close or crash, and open again.  Any crash or sanitizer report is a bug;
 * errors are fine (with OCTANT_FUZZ_STRICT=1, a clean close that cannot be
 * opened again is one too).
 *
 * Input byte 2 (harness flags): see FL_* below.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-img.h"

#define FL_READONLY  0x01u
#define FL_SCAN      0x02u
#define FL_WRITE     0x04u   /* write / trim / flush after the open */
#define FL_CLOSE     0x08u   /* close cleanly (else: crash, ftl_abandon) */
#define FL_REOPEN    0x10u   /* open the result again and read it */
#define FL_UNSHIFTED 0x20u
#define FL_COSTBEN   0x40u   /* cost-benefit GC */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* OCTANT_FUZZ_STRICT=1: also abort on a clean close that cannot be
 * reopened (not only on crashes and sanitizer reports). */
static bool strict(void)
{
	static int v = -1;

	if (v < 0) {
		const char *s = getenv("OCTANT_FUZZ_STRICT");
		v = s && *s && *s != '0';
	}
	return v;
}

static uint8_t rbuf[1 << 20], wbuf[16384];

static void read_all(struct ftl *f)
{
	uint64_t size = ftl_size(f);
	struct ftl_stats st;

	if (size > sizeof(rbuf))
		size = sizeof(rbuf);
	(void)ftl_read(f, rbuf, 0, size);
	ftl_stats_get(f, &st);
}

static void exercise(struct ftl *f, const uint8_t *d, size_t n)
{
	uint64_t size = ftl_size(f), h = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 0x100000001b3ull;
	for (int i = 0; i < 12; i++) {
		uint64_t len = i % 3 ? 4096 : 512 * (1 + h % 8), off;

		h = h * 6364136223846793005ull + 1442695040888963407ull;
		if (len > size)
			len = size;
		off = ((h >> 11) % ((size - len) / 512 + 1)) * 512;
		memset(wbuf, i + 1, len);
		switch (i % 6) {
		case 4:
			(void)ftl_discard(f, off, len);
			break;
		case 5:
			(void)ftl_flush(f);
			break;
		default:
			(void)ftl_write(f, wbuf, off, len, i % 5 == 1 ? FTL_FUA : 0);
			break;
		}
	}
	(void)ftl_write_zeroes(f, 0, 512);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct ftl_open_opts o = { 0 }, plain = { 0 };
	struct nand_backing *b = NULL;
	struct fz_image im;
	struct ftl *f = NULL;
	bool closed = false;
	int r;

	if (fz_apply(data, n, &im))
		return 0;
	o.readonly = im.flags & FL_READONLY;
	o.scan = im.flags & FL_SCAN;
	o.unshifted = im.flags & FL_UNSHIFTED;
	o.gc = im.flags & FL_COSTBEN ? FTL_GC_COST_BENEFIT : FTL_GC_GREEDY;
	if (fz_backing(im.img, im.size, &b))
		goto out;
	nand_mem_hold(b);               /* the engine's destroy drops it */
	if (ftl_open_backing(b, &o, &f)) {
		b->ops->destroy(b);
		goto out;
	}
	read_all(f);
	if (im.flags & FL_WRITE)
		exercise(f, data, n);
	read_all(f);
	if (im.flags & FL_CLOSE)
		closed = ftl_close(f) == 0 && !o.readonly;
	else
		ftl_abandon(f);
	if (im.flags & FL_REOPEN) {
		nand_mem_hold(b);
		r = ftl_open_backing(b, &plain, &f);
		if (r == 0) {
			read_all(f);
			(void)ftl_close(f);
		} else {
			b->ops->destroy(b);
			/* a clean close that cannot be opened again loses data */
			if (closed && strict()) {
				fprintf(stderr, "fuzz-image: closed cleanly, reopen "
					"fails: %d\n", r);
				abort();
			}
		}
	}
out:
	if (b)
		b->ops->destroy(b);
	free(im.img);
	return 0;
}
