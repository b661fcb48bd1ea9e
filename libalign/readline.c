/* SPDX-License-Identifier: MIT */
/* One line of a small file (sysfs attributes, run-registry entries). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "align-private.h"

int alignp_read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char p[PATH_MAX];
	FILE *f;
	int r = 0;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	f = fopen(p, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		r = -ENODATA;
	fclose(f);
	if (!r)
		buf[strcspn(buf, "\n")] = '\0';
	return r;
}
