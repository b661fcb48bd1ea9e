/* SPDX-License-Identifier: MIT */
/* ublk-flash stats IMG|DEV [--json]: live from a server, else offline. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "nand.h"
#include "serve.h"

int cmd_stats(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct serve_entry e;
	struct ftl_open_opts oo = { .readonly = true };
	struct ftl_stats st;
	struct ftl *f;
	struct stat sb;
	bool json = false;
	char what[PATH_MAX + 16], path[PATH_MAX];
	int c, err;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h':
			printf("Usage: ublk-flash stats IMG|DEV [--json]\n"
			       "Engine counters: live from the server of IMG or of DEV (a\n"
			       "served device, a partition of it, its --dm device NAME or\n"
			       "/dev/mapper/NAME), else read from the image (read-only).\n"
			       "--json: one object, raw numbers (keys: ublk-flash(8)).\n"
			       "Exit: 0; 2 usage (also: not a file or block device);\n"
			       "3 not served (also: DEV's number now belongs to another\n"
			       "device; no dm device NAME) / I/O error; 4 corrupt, or\n"
			       "not an octant\n"
			       "image.\n");
			return 0;
		default:
			return cli_bad_option("stats", c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: stats: expected one IMG or DEV\n");
		return EXIT_USAGE;
	}
	const char *arg = argv[optind];
	bool blk;
	snprintf(what, sizeof(what), "stats: %s", arg);
	err = cli_find(arg, &e, &blk, path, sizeof(path));
	if (err == -ENAMETOOLONG)
		return cli_fail(what, err);
	if (err == -ENODEV)
		return cli_no_dm("stats", arg, &e);
	if (err == -ESTALE)
		return cli_stale("stats", arg, &e);
	if (err == 0 && e.live) {
		err = serve_ctl_request(&e, json ? "stats json" : "stats text",
					stdout);
		if (!err)
			return 0;
		fprintf(stderr, "ublk-flash: stats: the server of %s does not "
			"answer: %s\n", arg, strerror(-err));
		return EXIT_IO;
	}
	if (err == 0 && blk) {
		arg = e.image;        /* its server died: read its image */
	} else if (!nand_backing_is_uri(arg)) {   /* a URI: an NBD medium */
		arg = path;           /* NAME: /dev/mapper/NAME */
		if (stat(arg, &sb) < 0)
			return cli_fail(what, -errno);
		if (S_ISBLK(sb.st_mode) &&
		    ftl_info_read(arg, &(struct ftl_info){ 0 }) < 0) {
			fprintf(stderr, "ublk-flash: stats: %s is not served by "
				"ublk-flash\n", arg);
			return EXIT_IO;
		}
	}
	err = ftl_open(arg, &oo, &f);
	if (err)
		return cli_image_fail("stats", arg, err);
	ftl_stats_get(f, &st);
	ftl_stats_print(&st, stdout, json);
	ftl_close(f);
	return 0;
}
