/* SPDX-License-Identifier: MIT */
/*
 * dmstack-tool — drives plumbing/dmstack.c directly, for the guest
 * tests (tests/vm/guest/dm-*.sh) and by hand:
 *   dmstack-tool available
 *   dmstack-tool create NAME LOWER START NR_SECTORS
 *   dmstack-tool attach NAME LOWER SHIFT_BYTES SIZE_BYTES   (serve --dm)
 *   dmstack-tool remove NAME          (also: detach NAME)
 *   dmstack-tool exists NAME          (exit 0 yes, 1 no)
 *   dmstack-tool offset NAME          (prints sysfs alignment_offset)
 * Errors: "dmstack-tool: MESSAGE [ENAME]" on stderr, exit 1 (2 usage).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmstack.h"

static int fail(int err)
{
	fprintf(stderr, "dmstack-tool: %s [%s]\n", plumb_dm_errmsg(),
		strerrorname_np(-err) ? strerrorname_np(-err) : "?");
	return 1;
}

static int num(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

int main(int argc, char **argv)
{
	char path[256];
	uint64_t a, b;
	long long off;
	int ret;

	if (argc == 2 && !strcmp(argv[1], "available"))
		return (ret = plumb_dm_available()) ? fail(ret) : 0;
	if (argc == 3 && (!strcmp(argv[1], "remove") ||
			  !strcmp(argv[1], "detach")))
		return (ret = plumb_dm_detach(argv[2])) ? fail(ret) : 0;
	if (argc == 3 && !strcmp(argv[1], "exists")) {
		ret = plumb_dm_exists(argv[2]);
		if (ret < 0)
			return fail(ret);
		printf("%s\n", ret ? "yes" : "no");
		return ret ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "offset")) {
		if ((ret = plumb_dm_alignment_offset(argv[2], &off)))
			return fail(ret);
		printf("%lld\n", off);
		return 0;
	}
	if (argc == 6 && (!strcmp(argv[1], "create") ||
			  !strcmp(argv[1], "attach"))) {
		if (num(argv[4], &a) || num(argv[5], &b) ||
		    (argv[1][0] == 'a' && a > 0xffffffffu)) {
			fprintf(stderr, "dmstack-tool: bad number\n");
			return 2;
		}
		ret = argv[1][0] == 'c' ?
		      plumb_dm_linear_create(argv[2], argv[3], a, b, path,
					    sizeof(path)) :
		      plumb_dm_serve_attach(argv[2], argv[3], (unsigned)a, b,
					   path, sizeof(path));
		if (ret)
			return fail(ret);
		printf("%s\n", path);
		return 0;
	}
	fprintf(stderr, "usage: dmstack-tool available | create NAME LOWER "
		"START NR | attach NAME LOWER SHIFT SIZE | remove NAME | "
		"exists NAME | offset NAME\n");
	return 2;
}
