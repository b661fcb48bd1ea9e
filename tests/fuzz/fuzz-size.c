/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: libalign's size parser ("64K", "1.5GiB", "100s"...).  An
 * accepted size is non-zero, and a whole number of sectors with "s".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "align.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static const uint32_t sectors[] = { 0, 512, 4096, 520 };
	char *s;
	uint64_t v;

	if (!n)
		return 0;
	s = malloc(n);
	if (!s)
		return 0;
	memcpy(s, data + 1, n - 1);     /* byte 0 picks the sector size */
	s[n - 1] = 0;
	if (align_parse_size(s, sectors[data[0] % 4], &v) == 0) {
		size_t l = strlen(s);
		bool sect = l && (s[l - 1] == 's' || s[l - 1] == 'S');

		if (!v || (sect && v % sectors[data[0] % 4]))
			abort();
	}
	free(s);
	return 0;
}
