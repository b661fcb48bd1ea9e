/* SPDX-License-Identifier: MIT */
/*
 * oct-fmt: numbers as a person reads them, for ublk-flash's tables (the
 * raw numbers stay in --json).  Each writes into @buf (always terminated)
 * and returns @buf.  Prefix oct_fmt_.
 */
#ifndef OCTANT_OCT_FMT_H
#define OCTANT_OCT_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "512 B", "4 KiB", "1.5 MiB", "64 GiB" (binary units, one decimal when
 * the value is not whole). */
char *oct_fmt_size(uint64_t bytes, char *buf, size_t len);

/* Unix seconds as ISO 8601 in local time, "2026-12-03T13:15:05+0000";
 * 0 as "never". */
char *oct_fmt_time(uint64_t unix_s, char *buf, size_t len);

/* A duration: "45s", "12m 05s", "3h 02m", "4d 03h". */
char *oct_fmt_duration(uint64_t secs, char *buf, size_t len);

/* One row of a report table: @label padded to @width, a space, the value
 * as printf formats it, a newline. */
void oct_fmt_row(FILE *out, int width, const char *label, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));

#endif /* OCTANT_OCT_FMT_H */
