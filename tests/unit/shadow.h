/* SPDX-License-Identifier: MIT */
/*
 * A shadow of an engine's logical disk for unit tests (tests/unit only):
 * random 4 KiB overwrites made through ftl_write and into the shadow, and
 * a whole-disk ftl_read compared with it page by page.  The tests keep
 * the shadow, the read buffer and the generator's state.
 */
#ifndef OCTANT_TEST_SHADOW_H
#define OCTANT_TEST_SHADOW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "test.h"

struct t_shadow {
	uint8_t *mem;                   /* what each page should hold */
	uint8_t *rbuf;                  /* a whole-disk read */
	uint32_t pages;                 /* 4 KiB pages of the disk */
	uint64_t *rs;                   /* the test's t_xorshift state */
};

/* @n random 4 KiB overwrites of random pages; a failed write ends the
 * test (exit with t_result()). */
static inline void t_shadow_overwrite(struct ftl *f, const struct t_shadow *s,
				      unsigned n)
{
	uint8_t w[4096];

	for (unsigned i = 0; i < n; i++) {
		uint64_t p = t_xorshift(s->rs) % s->pages;

		for (size_t k = 0; k < sizeof(w); k += 8) {
			uint64_t v = t_xorshift(s->rs);

			memcpy(w + k, &v, 8);
		}
		if (ftl_write(f, w, p * 4096, sizeof(w), 0)) {
			T_CHECK(0, "write page %llu", (unsigned long long)p);
			exit(t_result());
		}
		memcpy(s->mem + p * 4096, w, sizeof(w));
	}
}

/* Read the whole disk and compare it with the shadow: true when equal
 * (a failed check is counted, named with @when). */
static inline bool t_shadow_verify(struct ftl *f, const struct t_shadow *s,
				   const char *when)
{
	int r = ftl_read(f, s->rbuf, 0, (uint64_t)s->pages * 4096);

	T_CHECK(r == 0, "%s: read: %d", when, r);
	for (uint32_t p = 0; !r && p < s->pages; p++)
		if (memcmp(s->rbuf + (size_t)p * 4096, s->mem + (size_t)p * 4096,
			   4096)) {
			T_CHECK(0, "%s: page %u differs", when, p);
			return false;
		}
	return !r;
}

#endif
