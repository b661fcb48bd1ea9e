/* SPDX-License-Identifier: MIT */
/* Size strings: "4096", "64K", "1MiB", "1.5GiB", "1MB", "100s". */
#include <errno.h>
#include <string.h>
#include <strings.h>
#include "align-private.h"

struct unit {
	const char *suffix;   /* compared case-insensitively */
	uint64_t mult;
};

static const struct unit units[] = {
	{ "",    1 }, { "b", 1 },
	{ "k",   1ull << 10 }, { "kib", 1ull << 10 }, { "kb", 1000ull },
	{ "m",   1ull << 20 }, { "mib", 1ull << 20 }, { "mb", 1000000ull },
	{ "g",   1ull << 30 }, { "gib", 1ull << 30 }, { "gb", 1000000000ull },
	{ "t",   1ull << 40 }, { "tib", 1ull << 40 }, { "tb", 1000000000000ull },
	{ "p",   1ull << 50 }, { "pib", 1ull << 50 }, { "pb", 1000000000000000ull },
};

/* Parse a size (see align.h).  Binary K/M/G/T/P and KiB..PiB, decimal
 * KB..PB (as util-linux), "s" = sectors of @sector bytes, an optional
 * decimal fraction that must come out a whole number of bytes (and whole
 * sectors with "s": "2.0s" is fine, "1.5s" is not).  -EINVAL on junk,
 * zero, overflow. */
int align_parse_size(const char *s, uint32_t sector, uint64_t *bytes)
{
	uint64_t ip = 0, fnum = 0, fden = 1, mult = 0, v, g;
	const char *p = s;
	int digits = 0;
	size_t i;

	if (!s || !bytes)
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (ip > (UINT64_MAX - d) / 10)
			return -EINVAL;
		ip = ip * 10 + d;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
			if (fden > UINT64_MAX / 100)  /* > 18 fraction digits */
				return -EINVAL;
			fnum = fnum * 10 + (uint64_t)(*p - '0');
			fden *= 10;
		}
	}
	if (!digits)
		return -EINVAL;
	if (!strcasecmp(p, "s")) {
		if (!sector)
			return -EINVAL;
		mult = sector;
	} else {
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcasecmp(p, units[i].suffix))
				mult = units[i].mult;
		if (!mult)
			return -EINVAL;
	}
	if (ip > UINT64_MAX / mult)
		return -EINVAL;
	v = ip * mult;
	if (fnum) {
		/* fnum / fden * mult must be a whole number of bytes */
		g = alignp_gcd64(mult, fden);
		if (fnum % (fden / g))
			return -EINVAL;
		fnum /= fden / g;
		if (fnum > UINT64_MAX / (mult / g))
			return -EINVAL;
		fnum *= mult / g;
		if (v > UINT64_MAX - fnum)
			return -EINVAL;
		v += fnum;
	}
	if (!v || (!strcasecmp(p, "s") && v % sector))
		return -EINVAL;
	*bytes = v;
	return 0;
}
