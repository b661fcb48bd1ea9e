/* SPDX-License-Identifier: MIT */
/* alignpart: create and audit MBR/GPT tables with alignment checks. */
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: alignpart COMMAND [OPTIONS]\n"
		"Commands: check, create, suggest (not ready yet)\n"
		"  --help      this text\n"
		"  --version   print the version\n");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("alignpart %s\n", OCTANT_VERSION);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
