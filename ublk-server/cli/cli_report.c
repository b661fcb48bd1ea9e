/* SPDX-License-Identifier: MIT */
/* The reports of an image (stats, health): live from its server, else
 * read from the image opened read-only. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "nand.h"
#include "serve.h"
#include "zoned.h"

int cli_report(int argc, char **argv, const char *cmd, const char *help,
	       void (*offline)(struct ftl_set *f, FILE *out, bool json))
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct serve_entry e;
	struct ftl_open_opts oo = { .readonly = true };
	struct ftl_set *f;
	struct stat sb;
	bool json = false;
	char what[PATH_MAX + 16], path[PATH_MAX], req[32];
	int c, err;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h':
			fputs(help, stdout);
			return 0;
		default:
			return cli_bad_option(cmd, c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: %s: expected one IMG or DEV\n", cmd);
		return EXIT_USAGE;
	}
	const char *arg = argv[optind];
	bool blk;
	snprintf(what, sizeof(what), "%s: %s", cmd, arg);
	err = cli_find(arg, &e, &blk, path, sizeof(path));
	if (err == -ENAMETOOLONG)
		return cli_fail(what, err);
	if (err == -ENODEV)
		return cli_no_dm(cmd, arg, &e);
	if (err == -ESTALE)
		return cli_stale(cmd, arg, &e);
	if (err == 0 && e.live) {
		snprintf(req, sizeof(req), "%s %s", cmd, json ? "json" : "text");
		err = serve_ctl_request(&e, req, stdout);
		if (!err)
			return 0;
		fprintf(stderr, "ublk-flash: %s: the server of %s does not "
			"answer: %s\n", cmd, arg, strerror(-err));
		return EXIT_IO;
	}
	if (err == 0 && blk) {
		arg = e.image;        /* its server died: read its image */
	} else if (!nand_backing_is_uri(arg)) {   /* a URI: a remote medium */
		arg = path;           /* NAME: /dev/mapper/NAME */
		if (stat(arg, &sb) < 0)
			return cli_fail(what, -errno);
		if (zn_image_probe(arg) == 1)
			goto zoned;
		if (S_ISBLK(sb.st_mode) &&
		    ftl_set_info_read(arg, &(struct ftl_set_info){ 0 }) < 0) {
			fprintf(stderr, "ublk-flash: %s: %s is not served by "
				"ublk-flash\n", cmd, arg);
			return EXIT_IO;
		}
	}
	if (zn_image_probe(arg) == 1) {   /* no FTL: the zones and wear */
zoned:
		err = zn_image_report(arg, stdout, json, !strcmp(cmd, "health"));
		return err ? cli_image_fail(cmd, arg, err) : 0;
	}
	err = ftl_set_open(arg, &oo, &f);
	if (err)
		return cli_image_fail(cmd, arg, err);
	offline(f, stdout, json);
	ftl_set_close(f);
	return 0;
}
