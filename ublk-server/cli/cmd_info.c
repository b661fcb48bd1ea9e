/* SPDX-License-Identifier: MIT */
/* ublk-flash info IMG|DEV [--json]: geometry, mode and topology (read-only). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ftl-set.h"
#include "serve.h"
#include "zoned.h"

/* info: print what the superblock says (never writes). */
int cmd_info(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ftl_set_info info;
	struct serve_entry e;
	char path[PATH_MAX];
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
			printf("Usage: ublk-flash info IMG|DEV [--json]\n"
			       "Geometry, alignment mode, sizes and the topology to report\n"
			       "to the kernel, from the superblock (never writes).  DEV: a\n"
			       "served device, a partition of it or its --dm device (NAME\n"
			       "or /dev/mapper/NAME): the image it serves.\n"
			       "Exit: 0 ok; 2 usage (also: IMG is a directory or neither\n"
			       "a file nor a block device); 3 I/O error, DEV's number\n"
			       "now belongs to another device, or no dm device NAME\n"
			       "(the server whose --dm it was is named); 4 not an octant\n"
			       "image, or a corrupt, wrong-size or other-version one.\n");
			return 0;
		default:
			return cli_bad_option("info", c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: info: expected one IMG or DEV\n");
		return EXIT_USAGE;
	}
	/* A served device (or a partition or --dm device of it): its image. */
	const char *arg = argv[optind], *img = arg;
	bool blk;
	r = cli_find(arg, &e, &blk, path, sizeof(path));
	if (r == -ENODEV)
		return cli_no_dm("info", arg, &e);
	if (blk && r == -ESTALE)
		return cli_stale("info", arg, &e);
	if (blk)
		img = r == 0 ? e.image : path;   /* not served: the device */
	if (zn_image_probe(img) == 1) {     /* a zoned image: no FTL */
		r = zn_info(img, stdout, json);
		return r ? cli_image_fail("info", img, r) : 0;
	}
	r = ftl_set_info_read(img, &info);
	if (r)
		return cli_image_fail("info", img, r);
	ftl_set_info_print(&info, img, stdout, json);
	return 0;
}
