/* SPDX-License-Identifier: MIT */
/* Numbers as a person reads them (see oct-fmt.h). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "oct-fmt.h"

char *oct_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB",
					    "PiB", "EiB" };
	unsigned u = 0;
	uint64_t div = 1;

	while (u + 1 < sizeof(unit) / sizeof(unit[0]) && bytes / div >= 1024) {
		div *= 1024;
		u++;
	}
	if (bytes % div == 0)
		snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / div),
			 unit[u]);
	else
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)div, unit[u]);
	return buf;
}

char *oct_fmt_time(uint64_t unix_s, char *buf, size_t len)
{
	time_t t = (time_t)unix_s;
	struct tm tm;

	if (!unix_s || !localtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%dT%H:%M:%S%z", &tm))
		snprintf(buf, len, "%s", unix_s ? "?" : "never");
	return buf;
}

char *oct_fmt_duration(uint64_t s, char *buf, size_t len)
{
	unsigned long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;

	if (d)
		snprintf(buf, len, "%llud %02lluh", d, h);
	else if (h)
		snprintf(buf, len, "%lluh %02llum", h, m);
	else if (m)
		snprintf(buf, len, "%llum %02llus", m, (unsigned long long)(s % 60));
	else
		snprintf(buf, len, "%llus", (unsigned long long)s);
	return buf;
}

void oct_fmt_row(FILE *out, int width, const char *label, const char *fmt,
		 ...)
{
	va_list ap;

	fprintf(out, "%-*s ", width, label);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}
