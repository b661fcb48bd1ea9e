/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: alignpart convert's sfdisk-dump rewriter (ap_convert_dump).
 * Byte 0 picks the direction (512 -> 4096, 4096 -> 512, 512 -> 512, 4096
 * -> 1024); the rest is the dump.  A dump converted once converts back, and
 * every start= and size= comes back as it was: the byte range is kept.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* The start= and size= values of @s, as one string of decimal numbers
 * (02048 and 2048 are the same sector). */
static char *numbers(const char *s)
{
	size_t len = strlen(s) * 2 + 32, k = 0;
	char *o = malloc(len);

	if (!o)
		abort();
	for (const char *p = s; *p; p++) {
		if ((!strncasecmp(p, "start=", 6) || !strncasecmp(p, "size=", 5)) &&
		    (p == s || strchr(" ,\t:\n\r", p[-1]))) {
			char *end;
			unsigned long long v;

			p = strchr(p, '=') + 1;
			v = strtoull(p, &end, 10);
			k += (size_t)snprintf(o + k, len - k, "%llu ", v);
			if (!*end || k >= len - 24)
				break;
			p = end;        /* the loop's p++ skips the separator */
		}
	}
	o[k] = 0;
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static const uint64_t dir[4][2] = { { 512, 4096 }, { 4096, 512 },
					    { 512, 512 }, { 4096, 1024 } };
	char *in, *orig, *out = NULL, *back = NULL, *a, *b;
	uint64_t from, to;

	if (n < 1)
		return 0;
	from = dir[data[0] & 3][0];
	to = dir[data[0] & 3][1];
	in = malloc(n);
	if (!in)
		return 0;
	memcpy(in, data + 1, n - 1);
	in[n - 1] = 0;
	if (strlen(in) != n - 1) {      /* a NUL byte: convert refuses such a file */
		free(in);
		return 0;
	}
	orig = strdup(in);
	if (orig && ap_convert_dump(in, from, to, &out) == 0) {
		char *again = strdup(out);

		if (!again || ap_convert_dump(again, to, from, &back) != 0)
			abort();        /* what was converted converts back */
		a = numbers(orig);
		b = numbers(back);
		if (strcmp(a, b))
			abort();        /* ... to the same sectors */
		free(a);
		free(b);
		free(again);
	}
	free(out);
	free(back);
	free(orig);
	free(in);
	return 0;
}
