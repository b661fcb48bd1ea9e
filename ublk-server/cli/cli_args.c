/* SPDX-License-Identifier: MIT */
/* Option values: every number through common/oct-parse, one message shape;
 * an error as its one line and exit code (cli_fail). */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "align.h"
#include "commands.h"
#include "oct-parse.h"

int cli_uint(const char *cmd, const char *opt, const char *s, uint64_t min,
	     uint64_t max, uint64_t *v)
{
	int r = oct_parse_uint(s, min, max, v);

	if (r == -ERANGE)
		fprintf(stderr, "ublk-flash: %s: %s: %s is out of range "
			"(%" PRIu64 "..%" PRIu64 ")\n", cmd, opt, s, min, max);
	else if (r)
		fprintf(stderr, "ublk-flash: %s: %s: '%s' is not a whole number "
			"(%" PRIu64 "..%" PRIu64 ")\n", cmd, opt, s, min, max);
	return r ? -1 : 0;
}

int cli_unsigned(const char *cmd, const char *opt, const char *s,
		 unsigned min, unsigned max, unsigned *v)
{
	uint64_t x;

	if (cli_uint(cmd, opt, s, min, max, &x))
		return -1;
	*v = (unsigned)x;
	return 0;
}

int cli_on_off(const char *cmd, const char *opt, const char *s, bool *v)
{
	if (strcmp(s, "on") && strcmp(s, "off")) {
		fprintf(stderr, "ublk-flash: %s: %s: '%s' is not on or off\n",
			cmd, opt, s);
		return -1;
	}
	*v = !strcmp(s, "on");
	return 0;
}

int cli_size(const char *cmd, const char *opt, const char *s, uint64_t *bytes)
{
	if (align_parse_size(s, 512, bytes) == 0)
		return 0;
	fprintf(stderr, "ublk-flash: %s: %s: '%s' is not a size (a positive "
		"number with an optional unit: 512, 64M, 1GiB, 2048s)\n",
		cmd, opt, s);
	return -1;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
	const char *o = argv[optind - 1];

	if (c == ':')
		fprintf(stderr, "ublk-flash: %s: option '%s' needs a value "
			"(try --help)\n", cmd, o);
	else
		fprintf(stderr, "ublk-flash: %s: unknown option '%s' "
			"(try --help)\n", cmd, o);
	return EXIT_USAGE;
}

int cli_fail(const char *what, int err)
{
	fprintf(stderr, "ublk-flash: %s: %s\n", what, strerror(err < 0 ? -err
								    : err));
	return cli_exit_of(err);
}

int cli_exit_of(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case EBADMSG: case EPROTONOSUPPORT: case EUCLEAN:
		return EXIT_CORRUPT;
	case EBUSY: case EEXIST: case EALREADY:
		return EXIT_BUSY;
	case EINVAL:
		return EXIT_USAGE;
	default:
		return EXIT_IO;
	}
}
