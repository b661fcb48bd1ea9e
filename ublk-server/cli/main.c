/* SPDX-License-Identifier: MIT */
/* ublk-flash: serve emulated NAND flash as a 512e block device. */
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ublk-flash COMMAND [OPTIONS]\n"
		"Commands: create, info, fsck, stats, serve, stop (not ready yet)\n"
		"  --help      this text\n"
		"  --version   print the version\n");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("ublk-flash %s\n", OCTANT_VERSION);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
