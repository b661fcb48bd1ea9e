/* SPDX-License-Identifier: MIT */
/* ublk-flash fsck IMG [--json] [--repair]: check (and fix) an image. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "nand.h"
#include "ftl-set.h"
#include "serve.h"
#include "zoned.h"

/* fsck: 0 clean, 1 problems found and repaired, 4 problems left. */
int cmd_fsck(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repair", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	bool json = false, repair = false;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'r':
			repair = true;
			break;
		case 'h':
			printf("Usage: ublk-flash fsck IMG [--json] [--repair]\n"
			       "Check superblocks, checkpoints, the map against the OOB\n"
			       "records and data CRCs, and NAND-rule invariants.  Never\n"
			       "writes unless --repair.\n"
			       "Exit: 0 clean; 1 problems found and repaired; 2 usage\n"
			       "(also: IMG is a directory or neither a file nor a block\n"
			       "device); 3 I/O error; 4 problems left (corrupt, truncated\n"
			       "or other-version image) or not an octant image; 5 busy\n"
			       "(image in use).  A zoned image: every page below each\n"
			       "zone's write pointer is checked; --repair rewrites a\n"
			       "damaged superblock copy (a damaged page reads EIO until\n"
			       "the host resets its zone).\n");
			return 0;
		default:
			return cli_bad_option("fsck", c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: fsck: expected one IMG\n");
		return EXIT_USAGE;
	}
	/* something else entirely (ext4, empty): nothing to check or repair
	 * (a remote medium: the engine's check says) */
	if (cli_image_foreign("fsck", argv[optind]))
		return EXIT_CORRUPT;
	if (zn_image_probe(argv[optind]) == 1) {   /* a zoned image */
		int lock_fd = -1;

		/* --repair mends a damaged superblock copy, no more: held
		 * against a server over it (as the engine's repair) */
		r = repair ? cli_image_lock("fsck", argv[optind],
					    "stop it before --repair",
					    &lock_fd) : 0;
		if (r)
			return r;
		r = zn_fsck(argv[optind], repair, stdout, json);
		if (lock_fd >= 0)
			close(lock_fd);
		return r >= 0 ? r : cli_image_fail("fsck", argv[optind], r);
	}
	if (repair) {
		/* Refuse an image in use before anything is written; the
		 * repair's own open takes the engine's lock again. */
		int lock_fd;
		r = cli_image_lock("fsck", argv[optind],
				   "stop it before --repair", &lock_fd);
		if (r)
			return r;
		if (lock_fd >= 0)
			close(lock_fd);
	}
	r = ftl_set_fsck(argv[optind], repair, stdout, json);
	if (r >= 0)
		return r == 4 ? EXIT_CORRUPT : r;
	if (r == -EBUSY && repair) {
		/* served since the check began: the repair wrote nothing */
		char who[PATH_MAX + 64];

		serve_image_holder(argv[optind], who, sizeof(who));
		fprintf(stderr, "ublk-flash: fsck: %s is %s; stop it before "
			"--repair (nothing was repaired)\n", argv[optind], who);
		return EXIT_BUSY;
	}
	return cli_image_fail("fsck", argv[optind], r);
}
