/* SPDX-License-Identifier: MIT */
/* Small files: one line of a sysfs attribute, a whole run-registry file. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
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

int alignp_read_file(const char *dir, const char *name, char *buf, size_t len)
{
	bool more;
	size_t n;
	FILE *f;
	int r;

	if (len < 2)
		return -EINVAL;
	f = alignp_open(dir, name, &r);
	if (!f)
		return r;
	/* a file longer than @buf is refused, never cut short */
	n = fread(buf, 1, len, f);
	more = n == len && fgetc(f) != EOF;
	if (ferror(f))
		r = -EIO;
	fclose(f);
	if (r)
		return r;
	if (!more && n && buf[n - 1] == '\n')
		n--;
	if (more || n >= len)
		return -ENAMETOOLONG;
	if (memchr(buf, '\0', n))
		return -EINVAL;
	buf[n] = '\0';
	return n ? 0 : -ENODATA;
}
