/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: libalign's topology string parser ("LOG/PHYS[/OFFSET]"),
 * then what callers do with a parsed topology (validate, describe, the
 * calculators).  An accepted spec must validate.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "align.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct align_topology t = { .size = 1ull << 30 };
	struct align_span sp;
	char *s = malloc(n + 1), buf[256];
	const struct align_profile *const *p;

	if (!s)
		return 0;
	memcpy(s, data, n);
	s[n] = 0;
	if (align_topology_parse(s, &t) == 0) {
		if (align_topology_validate(&t))
			abort();        /* the parser accepted an invalid one */
		align_topology_describe(&t, buf, sizeof(buf));
		for (uint64_t lba = 0; lba < 4096; lba += 63) {
			align_lba_is_aligned(&t, lba);
			align_end_is_aligned(&t, lba);
			align_partition_offset(&t, lba);
			align_dm_linear_offset(&t, lba);
			align_explain(&t, lba, buf, sizeof(buf));
		}
		align_first_aligned_lba(&t, 34, 0);
		align_last_aligned_lba(&t, 1u << 20, 0);
		align_io_span(&t, 512, 4096, &sp);
		for (p = align_profile_list(); *p; p++) {
			uint64_t g = align_profile_grain(*p, &t);
			align_profile_first_lba(*p, &t, 34);
			align_explain_grain(&t, 2048, g, buf, sizeof(buf));
		}
	}
	free(s);
	return 0;
}
