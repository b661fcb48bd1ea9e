/* SPDX-License-Identifier: MIT */
/* common/oct-parse: the strict number parser behind every CLI option. */
#include <errno.h>
#include <stdint.h>
#include "oct-parse.h"
#include "test.h"

int main(void)
{
	static const struct {
		const char *s; unsigned frac; uint64_t min, max; int rc; uint64_t v;
	} c[] = {
		{ "0",     0, 0, 10, 0, 0 },
		{ "10",    0, 0, 10, 0, 10 },
		{ "007",   0, 0, 10, 0, 7 },
		{ "11",    0, 0, 10, -ERANGE },
		{ "0",     0, 1, 10, -ERANGE },
		{ "",      0, 0, 10, -EINVAL },
		{ "abc",   0, 0, 10, -EINVAL },
		{ "3G5",   0, 0, 10, -EINVAL },
		{ "5x",    0, 0, 10, -EINVAL },
		{ "-1",    0, 0, UINT64_MAX, -EINVAL },
		{ "+1",    0, 0, 10, -EINVAL },
		{ " 1",    0, 0, 10, -EINVAL },
		{ "1 ",    0, 0, 10, -EINVAL },
		{ "0x10",  0, 0, 100, -EINVAL },
		{ "1.5",   0, 0, 10, -EINVAL },
		{ "18446744073709551615", 0, 0, UINT64_MAX, 0, UINT64_MAX },
		{ "18446744073709551616", 0, 0, UINT64_MAX, -ERANGE },
		{ "99999999999999999999999", 0, 0, UINT64_MAX, -ERANGE },
		{ "7.5",   1, 10, 10000, 0, 75 },
		{ "7",     1, 10, 10000, 0, 70 },
		{ "12.5",  2, 0, 100000, 0, 1250 },
		{ "7.05",  2, 0, 100000, 0, 705 },
		{ "7.55",  1, 0, 10000, -EINVAL },
		{ "7.",    1, 0, 10000, -EINVAL },
		{ ".5",    1, 0, 10000, -EINVAL },
		{ "1.2.3", 1, 0, 10000, -EINVAL },
		{ "nan",   1, 0, 10000, -EINVAL },
		{ "inf",   1, 0, 10000, -EINVAL },
		{ "1e3",   1, 0, 10000, -EINVAL },
		{ "0.5",   1, 10, 10000, -ERANGE },
		{ "1844674407370955161.6", 1, 0, UINT64_MAX, -ERANGE },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t v = 12345;
		int rc = oct_parse_fixed(c[i].s, c[i].frac, c[i].min, c[i].max, &v);

		T_CHECK(rc == c[i].rc, "'%s': rc %d, want %d", c[i].s, rc, c[i].rc);
		if (!c[i].rc)
			T_EQ_U64(v, c[i].v, "'%s'", c[i].s);
		else
			T_EQ_U64(v, 12345, "'%s': *v untouched on error", c[i].s);
	}
	uint64_t v;
	T_CHECK(oct_parse_uint("64", 1, 64, &v) == 0 && v == 64, "uint");
	T_CHECK(oct_parse_uint(NULL, 0, 1, &v) == -EINVAL, "NULL");
	return t_result();
}
