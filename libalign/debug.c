/* SPDX-License-Identifier: MIT */
/* LIBALIGN_DEBUG: a mask of ALIGN_DEBUG_* bits, a number or "all". */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "align-private.h"

static unsigned debug_mask;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void debug_init(void)
{
	const char *s = getenv("LIBALIGN_DEBUG");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return;
	if (!strcmp(s, "all")) {
		debug_mask = 0xffff;
		return;
	}
	v = strtoul(s, &end, 0);
	debug_mask = *end ? 0xffff : (unsigned)v;  /* junk: be verbose */
}

unsigned alignp_debug_mask(void)
{
	pthread_once(&debug_once, debug_init);
	return debug_mask;
}

void alignp_dbg(unsigned bit, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!(alignp_debug_mask() & bit))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "libalign: %s\n", buf);
}

/* libalign version string, e.g. "0.1.0". */
const char *align_version(void)
{
	return OCTANT_VERSION;
}
