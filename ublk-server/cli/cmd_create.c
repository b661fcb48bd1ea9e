/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "commands.h"

int cmd_create(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ublk-flash: create: not implemented yet\n");
	return EXIT_IO;
}
