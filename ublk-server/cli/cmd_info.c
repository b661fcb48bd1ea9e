/* SPDX-License-Identifier: MIT */
/* ublk-flash info IMG [--json]: geometry, mode and topology (read-only). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ftl.h"

/* info: print what the superblock says (never writes). */
int cmd_info(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ftl_info info;
	bool json = false;
	char what[4200];
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			printf("Usage: ublk-flash info IMG [--json]\n"
			       "Geometry, alignment mode, sizes and the topology to report\n"
			       "to the kernel, from the superblock (never writes).\n"
			       "Exit: 0 ok; 2 usage; 3 I/O error; 4 corrupt, truncated,\n"
			       "wrong-size or other-version image.\n");
			return 0;
		default:
			fprintf(stderr, "ublk-flash: info: unknown option '%s'\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: info: expected one IMG\n");
		return EXIT_USAGE;
	}
	r = ftl_info_read(argv[optind], &info);
	if (r == -EINVAL) {
		fprintf(stderr, "ublk-flash: info: %s: wrong size (truncated?): the "
			"superblock needs %llu bytes\n", argv[optind],
			(unsigned long long)info.image_size);
		return EXIT_CORRUPT;
	}
	if (r == -EBADMSG) {
		fprintf(stderr, "ublk-flash: info: %s: not a valid octant flash "
			"image (bad or missing superblock)\n", argv[optind]);
		return EXIT_CORRUPT;
	}
	if (r == -EPROTONOSUPPORT) {
		fprintf(stderr, "ublk-flash: info: %s: image of another format "
			"version\n", argv[optind]);
		return EXIT_CORRUPT;
	}
	snprintf(what, sizeof(what), "info: %s", argv[optind]);
	if (r)
		return cli_fail(what, r);
	ftl_info_print(&info, stdout, json);
	return 0;
}
