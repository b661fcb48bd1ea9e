/* SPDX-License-Identifier: MIT */
/*
 * Engine tests on memory images with tagged 4 KiB pages (ftl-ckpt-*.c):
 * logical page l holds its number and a tag in every 16 bytes, and
 * tt_tags[l] is the newest tag written to it (0: never written, reads as
 * zeroes).  Include after ftl-int.h and test.h.
 */
#ifndef OCTANT_FTL_TAGGED_H
#define OCTANT_FTL_TAGGED_H

#include <string.h>

#define TT_SPAN 4096u                   /* logical pages tracked */
static uint64_t tt_tags[TT_SPAN] __attribute__((unused));

/* Create a 1m-mode image of @size bytes, @ppb pages per block, on a memory
 * backing (@powercut: the crash model) and open it; exits the test on
 * failure. */
static inline struct ftl *tt_create(struct nand_backing **bp, uint64_t size,
				    uint32_t ppb, bool powercut)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
		.pages_per_block = ppb };
	struct nand_backing *b;
	struct ftl *f = NULL;

	if (nand_backing_mem(ftl_test_image_size(&c), powercut, &b) ||
	    ftl_create_backing(b, &c)) {
		T_CHECK(0, "create %llu", (unsigned long long)size);
		exit(t_result());
	}
	nand_mem_hold(b);
	if (ftl_open_backing(b, NULL, &f)) {
		T_CHECK(0, "open");
		exit(t_result());
	}
	*bp = b;
	return f;
}

/* Page @lpn's content: its number and @tag in every 16 bytes. */
static inline void tt_stamp(uint8_t *p, uint64_t lpn, uint64_t tag)
{
	for (size_t i = 0; i < 4096; i += 16) {
		memcpy(p + i, &lpn, 8);
		memcpy(p + i + 8, &tag, 8);
	}
}

/* Write pages [lo, lo + n) with @tag, one 4 KiB write each, then flush. */
static inline void tt_write_range(struct ftl *f, uint64_t lo, uint64_t n,
				  uint64_t tag)
{
	static uint8_t buf[4096];

	for (uint64_t l = lo; l < lo + n; l++) {
		tt_stamp(buf, l, tag);
		T_CHECK(ftl_write(f, buf, l * 4096, 4096, 0) == 0, "write %llu",
			(unsigned long long)l);
		tt_tags[l] = tag;
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
}

/* Read every tracked page; the number of pages that fail or hold other
 * data than tt_tags says (the first one is reported as @what). */
static inline int tt_verify(struct ftl *f, const char *what)
{
	static uint8_t buf[4096], want[4096];
	int bad = 0;

	for (uint64_t l = 0; l < TT_SPAN; l++) {
		int r = ftl_read(f, buf, l * 4096, 4096);

		if (tt_tags[l])
			tt_stamp(want, l, tt_tags[l]);
		else
			memset(want, 0, sizeof(want));
		if ((r || memcmp(buf, want, sizeof(buf))) && !bad++)
			T_CHECK(0, "%s: page %llu: rc %d, %s", what,
				(unsigned long long)l, r,
				r ? "" : "wrong data (older or zeroes)");
	}
	if (bad)
		fprintf(stderr, "%s: %d pages wrong\n", what, bad);
	return bad;
}

/* Open @b again (the test keeps it) expecting a roll-forward mount in
 * which every tracked page reads back (as @what); the engine, or NULL
 * when the open failed. */
static inline struct ftl *tt_reopen_rolled(struct nand_backing *b,
					   const char *what)
{
	struct ftl *g = NULL;
	int r;

	nand_mem_hold(b);
	r = ftl_open_backing(b, NULL, &g);
	T_CHECK(r == 0, "%s: open %d", what, r);
	if (r)
		return NULL;
	T_CHECK(ftl_mount_kind(g) == FTL_MOUNT_ROLL_FORWARD,
		"%s: mount kind %d", what, ftl_mount_kind(g));
	(void)tt_verify(g, what);
	return g;
}

#endif
