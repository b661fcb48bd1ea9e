/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "commands.h"

int cmd_serve(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ublk-flash: serve: not implemented yet\n");
	return EXIT_IO;
}
