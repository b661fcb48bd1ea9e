/* SPDX-License-Identifier: MIT */
/* Strict decimal numbers for command-line options (see oct-parse.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "oct-parse.h"

static int all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

int oct_parse_fixed(const char *s, unsigned frac, uint64_t min, uint64_t max,
		    uint64_t *v)
{
	const char *dot;
	size_t ilen, flen = 0;
	uint64_t x, f = 0;
	char *end;

	if (!s || !v || frac > 9)
		return -EINVAL;
	dot = strchr(s, '.');
	ilen = dot ? (size_t)(dot - s) : strlen(s);
	/* strtoull alone would take "  7", "+7", "-7" (as 2^64-7) and "0x7" */
	if (!all_digits(s, ilen))
		return -EINVAL;
	if (dot) {
		flen = strlen(dot + 1);
		if (!all_digits(dot + 1, flen) || flen > frac)
			return -EINVAL;
	}
	errno = 0;
	x = strtoull(s, &end, 10);
	if (end != s + ilen)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (dot) {
		f = strtoull(dot + 1, &end, 10);
		if (*end)
			return -EINVAL;
	}
	for (unsigned i = 0; i < frac; i++) {
		if (x > UINT64_MAX / 10)
			return -ERANGE;
		x *= 10;
		if (i >= flen)
			f *= 10;
	}
	if (x > UINT64_MAX - f)
		return -ERANGE;
	x += f;
	if (x < min || x > max)
		return -ERANGE;
	*v = x;
	return 0;
}

int oct_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	return oct_parse_fixed(s, 0, min, max, v);
}
