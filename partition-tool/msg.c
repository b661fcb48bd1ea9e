/* SPDX-License-Identifier: MIT */
/* alignpart's messages: every error, warning and note line is shaped here
 * (apart from main.c so that the fuzz harnesses link alignpart's parsers). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ap.h"

/* A byte ap_escape shows as \xHH. */
static bool ap_unsafe(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '\\';
}

/* HEAD MSG\n on @out: the one place alignpart's lines that name a path are
 * shaped (its errors, warnings and notes on stderr, map / unmap's lines on
 * stdout).  One line, whatever a path in MSG holds: its control characters
 * and backslashes as \xHH (ap_escape). */
static void ap_vmsg(FILE *out, const char *head, const char *fmt, va_list ap)
{
	char *m = NULL;
	const char *s;

	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	fputs(head, out);
	for (s = m ? m : fmt; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (ap_unsafe(c))
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('\n', out);
	free(m);
}

/* "alignpart CMD: MSG" on stderr (map / unmap's errors and notes); @code. */
int ap_cmd_fail(const char *cmd, int code, const char *fmt, ...)
{
	char head[32];
	va_list ap;

	snprintf(head, sizeof(head), "alignpart %s: ", cmd);
	va_start(ap, fmt);
	ap_vmsg(stderr, head, fmt, ap);
	va_end(ap);
	return code;
}

/* "MSG" on stdout, one line (\xHH as above). */
void ap_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ap_vmsg(stdout, "", fmt, ap);
	va_end(ap);
}

/* Print "alignpart: MSG" on stderr and return @code (one line per error). */
int ap_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ap_vmsg(stderr, "alignpart: ", fmt, ap);
	va_end(ap);
	return code;
}

/* Print "alignpart: warning: MSG" on stderr. */
void ap_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ap_vmsg(stderr, "alignpart: warning: ", fmt, ap);
	va_end(ap);
}

/* Print "alignpart: MSG" on stderr (informational). */
void ap_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ap_vmsg(stderr, "alignpart: ", fmt, ap);
	va_end(ap);
}

/* Format @bytes as "512B", "4KiB", "1MiB", "1.5GiB" into @buf. */
const char *ap_human_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned int u = 0;
	uint64_t whole = bytes, rem = 0;

	while (whole >= 1024 && u < 5) {
		rem = whole % 1024;
		whole /= 1024;
		u++;
	}
	if (rem == 0 || u == 0)
		snprintf(buf, len, "%llu%s", (unsigned long long)whole, unit[u]);
	else
		snprintf(buf, len, "%.1f%s",
			 (double)bytes / (double)(1ULL << (10 * u)), unit[u]);
	return buf;
}

/* @s for one line of text, as util-linux's raw output shows it: control
 * characters (a newline in an image path) and the backslash itself as
 * \xHH, so that the line cannot be split and the escape is unambiguous.
 * Into @buf (AP_ESCAPED_LEN(strlen(s)) bytes hold all of it; a shorter
 * @buf holds a prefix, never half an escape). */
const char *ap_escape(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return "";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (ap_unsafe(c)) {
			if (n + 4 >= len)
				break;
			n += (size_t)snprintf(buf + n, len - n, "\\x%02x", c);
		} else {
			if (n + 1 >= len)
				break;
			buf[n++] = (char)c;
		}
	}
	buf[n] = '\0';
	return buf;
}
