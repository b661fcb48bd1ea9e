/* SPDX-License-Identifier: MIT */
/* alignpart: create and audit MBR/GPT tables with alignment checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap.h"
#include "ap-map.h"

int main(int argc, char **argv)
{
	struct ap_opts o;
	int rc;

	/* map / unmap (partition-tool/ap-map.c) parse their own options */
	if (argc > 1 && !strcmp(argv[1], "map"))
		return ap_cmd_map(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "unmap"))
		return ap_cmd_unmap(argc - 1, argv + 1);

	rc = ap_parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;          /* --help, --version or a usage error */

	switch (o.cmd) {
	case AP_CMD_CHECK:
		return ap_cmd_check(&o);
	case AP_CMD_CREATE:
		return ap_cmd_create(&o);
	case AP_CMD_SUGGEST:
		return ap_cmd_suggest(&o);
	case AP_CMD_PREDICT:
		return ap_cmd_predict(&o);
	case AP_CMD_CONVERT:
		return ap_cmd_convert(&o);
	default:
		break;
	}
	return ap_fail(AP_EXIT_USAGE, "no command given");
}
