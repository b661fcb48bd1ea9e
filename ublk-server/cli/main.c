/* SPDX-License-Identifier: MIT */
/* ublk-flash: serve emulated NAND flash as a 512e block device. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "create", cmd_create, "create IMG --size SIZE --align odd|1m   make a new flash image" },
	{ "info",   cmd_info,   "info IMG|DEV [--json]                    geometry, mode, topology" },
	{ "fsck",   cmd_fsck,   "fsck IMG [--json] [--repair]             verify an image" },
	{ "stats",  cmd_stats,  "stats IMG|DEV [--json]                   counters (live for a served DEV)" },
	{ "health", cmd_health, "health IMG|DEV [--json]                  health log since create (NVMe SMART)" },
	{ "serve",  cmd_serve,  "serve IMG [--frontend ublk|fuse] ...     expose the image as a block device" },
	{ "stop",   cmd_stop,   "stop DEV|IMG                             stop serving, clean checkpoint" },
	{ "upgrade", cmd_upgrade, "upgrade DEV|IMG [--binary PATH]          hand a live ublk device to a new server" },
	{ "resize", cmd_resize, "resize IMG|DEV --size SIZE               grow an image, served or not" },
	{ "list",   cmd_list,   "list [--json] [-o COLS] [-n] [-r]        every served device and its state" },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: ublk-flash COMMAND [OPTIONS]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %s\n", commands[i].summary);
	fprintf(out, "\n  ublk-flash COMMAND --help   options of one command\n"
		     "  ublk-flash --version\n\n"
		     "Exit codes: 0 ok, 1 problems found, 2 usage (a bad option or\n"
		     "value, a directory or other non-image path), 3 I/O error,\n"
		     "4 not an octant image, or a corrupt or unsupported one, 5 busy,\n"
		     "6 not possible here, nothing changed (upgrade).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("ublk-flash %s\n", OCTANT_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "ublk-flash: unknown command '%s' (try --help)\n", argv[1]);
	return EXIT_USAGE;
}
