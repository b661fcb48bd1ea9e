/* SPDX-License-Identifier: MIT */
/* ublk-flash stats IMG|DEV [--json]: live from a server, else offline. */
#include <stdio.h>

#include "commands.h"
#include "ftl-set.h"

static void stats(struct ftl_set *f, FILE *out, bool json)
{
	struct ftl_stats st;

	ftl_set_stats_get(f, &st);
	ftl_stats_print(&st, out, json);
}

int cmd_stats(int argc, char **argv)
{
	return cli_report(argc, argv, "stats",
		"Usage: ublk-flash stats IMG|DEV [--json]\n"
		"Engine counters: live from the server of IMG or of DEV (a\n"
		"served device, a partition of it, its --dm device NAME or\n"
		"/dev/mapper/NAME), else read from the image (read-only).\n"
		"--json: one object, raw numbers (keys: ublk-flash(8)).\n"
		"A zoned image: its zones and their wear instead.\n"
		"Exit: 0; 2 usage (also: not a file or block device);\n"
		"3 not served (also: DEV's number now belongs to another\n"
		"device; no dm device NAME) / I/O error; 4 corrupt, or\n"
		"not an octant\n"
		"image.\n", stats);
}
