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
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			printf("Usage: ublk-flash info IMG [--json]\n"
			       "Geometry, alignment mode, sizes and the topology to report\n"
			       "to the kernel, from the superblock (never writes).\n"
			       "Exit: 0 ok; 2 usage (also: IMG is a directory or neither\n"
			       "a file nor a block device); 3 I/O error; 4 not an octant\n"
			       "image, or a corrupt, wrong-size or other-version one.\n");
			return 0;
		default:
			return cli_bad_option("info", c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: info: expected one IMG\n");
		return EXIT_USAGE;
	}
	r = ftl_info_read(argv[optind], &info);
	if (r)
		return cli_image_fail("info", argv[optind], r);
	ftl_info_print(&info, stdout, json);
	return 0;
}
