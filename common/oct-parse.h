/* SPDX-License-Identifier: MIT */
/*
 * Strict parsing of the numbers given on octant's command lines: the one
 * place both tools (ublk-flash, alignpart) turn an option value into a
 * number.  Sizes with units are libalign's align_parse_size().
 */
#ifndef OCTANT_OCT_PARSE_H
#define OCTANT_OCT_PARSE_H

#include <stdint.h>

/*
 * Parse @s as a plain decimal number with at most @frac fraction digits
 * ("7", "7.5" with @frac 1) and store it scaled by 10^@frac in *v ("7.5",
 * frac 1 -> 75).  Only digits and one '.': no sign, space, base prefix or
 * unit.  Returns 0; -EINVAL when @s is not such a number (*v untouched);
 * -ERANGE when it is one but outside [@min, @max] (scaled) or overflows.
 */
int oct_parse_fixed(const char *s, unsigned frac, uint64_t min, uint64_t max,
		    uint64_t *v);

/* oct_parse_fixed() without a fraction: a whole number in [@min, @max]. */
int oct_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v);

#endif /* OCTANT_OCT_PARSE_H */
