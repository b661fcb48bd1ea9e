/* SPDX-License-Identifier: MIT */
/* ublk-flash health IMG|DEV [--json]: the drive's health log (NVMe's
 * SMART / Health Information), live from a server, else offline. */
#include <stdio.h>

#include "commands.h"
#include "ftl-set.h"

static void health(struct ftl_set *f, FILE *out, bool json)
{
	struct ftl_health h;

	ftl_set_health_get(f, &h);
	ftl_health_print(&h, out, json);
}

int cmd_health(int argc, char **argv)
{
	return cli_report(argc, argv, "health",
		"Usage: ublk-flash health IMG|DEV [--json]\n"
		"The health log since create, as an NVMe drive's SMART / Health\n"
		"Information log page (smartctl -a, nvme smart-log): critical\n"
		"warning, available spare, percentage used, data units and\n"
		"commands read and written, power cycles (read-write opens),\n"
		"power-on hours, unsafe shutdowns, media errors; then the\n"
		"flash behind it.  Live from the server of IMG or DEV (as\n"
		"stats), else read from the image (read-only).\n"
		"--json: one object, raw numbers (keys: ublk-flash(8) HEALTH).\n"
		"A zoned image: its zones and their wear instead.\n"
		"Exit: 0; 2 usage (also: not a file or block device);\n"
		"3 not served (also: DEV's number now belongs to another\n"
		"device; no dm device NAME) / I/O error; 4 corrupt, or\n"
		"not an octant image.\n", health);
}
