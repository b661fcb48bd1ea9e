/* SPDX-License-Identifier: MIT */
/* Small files: one line of a sysfs attribute. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "align-private.h"

static FILE *alignp_open(const char *dir, const char *name, int *r)
{
	char p[PATH_MAX];
	FILE *f;

	*r = 0;
	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p)) {
		*r = -ENAMETOOLONG;
		return NULL;
	}
	f = fopen(p, "re");
	if (!f)
		*r = -errno;
	return f;
}

int alignp_read_line(const char *dir, const char *name, char *buf, size_t len)
{
	FILE *f;
	int r;

	f = alignp_open(dir, name, &r);
	if (!f)
		return r;
	if (!fgets(buf, (int)len, f))
		r = -ENODATA;
	fclose(f);
	if (!r)
		buf[strcspn(buf, "\n")] = '\0';
	return r;
}
