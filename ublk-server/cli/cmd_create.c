/* SPDX-License-Identifier: MIT */
/* ublk-flash create IMG --size SIZE --align odd|1m [geometry options]. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "align.h"
#include "commands.h"
#include "ftl.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ublk-flash create IMG --size SIZE --align odd|1m [options]\n"
		"Create an emulated-flash image (a sparse file, or a block device).\n"
		"  --size SIZE            exported disk size (512, 64M, 1GiB, 100s ...)\n"
		"  --align odd|1m         odd: LBA 0 at byte 512 of flash page 0\n"
		"                         (alignment_offset 3584); 1m: no shift\n"
		"  --page-size N          flash page: 4096 (default), 8192, 16384\n"
		"  --pages-per-block N    pages per erase block, power of 2 (64)\n"
		"  --oob-size N           out-of-band bytes per page (64)\n"
		"  --over-provision PCT   spare flash, percent of SIZE (7)\n"
		"  --bad-blocks RATE      factory bad blocks: each data block is bad\n"
		"                         with probability RATE (e.g. 1e-3), skipped\n"
		"  --bad-block-seed N     seed of that draw (default: random, printed)\n"
		"  --force                overwrite an existing image or signature\n"
		"Exit: 0 ok; 2 usage; 3 I/O error; 5 IMG holds data (use --force).\n");
}

static int parse_u32(const char *s, uint32_t *v)
{
	uint64_t b;

	if (align_parse_size(s, 0, &b) || b > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)b;
	return 0;
}

/* create: make a fresh image (see usage). */
int cmd_create(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "align", required_argument, NULL, 'a' },
		{ "page-size", required_argument, NULL, 'p' },
		{ "pages-per-block", required_argument, NULL, 'b' },
		{ "oob-size", required_argument, NULL, 'o' },
		{ "over-provision", required_argument, NULL, 'O' },
		{ "force", no_argument, NULL, 'f' },
		{ "bad-blocks", required_argument, NULL, 'B' },
		{ "bad-block-seed", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ftl_create_opts o = { 0 };
	char what[4200];
	bool seed_set = false;
	double pct;
	char *end;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:a:fh", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (align_parse_size(optarg, 512, &o.size) || !o.size ||
			    o.size % 512) {
				fprintf(stderr, "ublk-flash: create: bad --size '%s' "
					"(a positive multiple of 512)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'a':
			if (!strcmp(optarg, "odd"))
				o.align = FTL_ALIGN_ODD;
			else if (!strcmp(optarg, "1m"))
				o.align = FTL_ALIGN_1M;
			else {
				fprintf(stderr, "ublk-flash: create: --align must be "
					"odd or 1m, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'p': case 'b': case 'o':
			if (parse_u32(optarg, c == 'p' ? &o.page_size :
				      c == 'b' ? &o.pages_per_block : &o.oob_size)) {
				fprintf(stderr, "ublk-flash: create: bad number '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'O':
			pct = strtod(optarg, &end);
			if (end == optarg || *end || pct < 1 || pct > 1000) {
				fprintf(stderr, "ublk-flash: create: --over-provision "
					"must be a percentage 1..1000\n");
				return EXIT_USAGE;
			}
			o.op_permille = (uint32_t)(pct * 10 + 0.5);
			break;
		case 'f':
			o.force = true;
			break;
		case 'B':
			o.bad_block_rate = strtod(optarg, &end);
			if (end == optarg || *end || !(o.bad_block_rate >= 0 &&
						       o.bad_block_rate < 1)) {
				fprintf(stderr, "ublk-flash: create: --bad-blocks "
					"must be a probability 0 <= RATE < 1, not "
					"'%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'S':
			errno = 0;
			o.bad_block_seed = strtoull(optarg, &end, 0);
			if (end == optarg || *end || errno || *optarg == '-') {
				fprintf(stderr, "ublk-flash: create: bad "
					"--bad-block-seed '%s'\n", optarg);
				return EXIT_USAGE;
			}
			seed_set = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "ublk-flash: create: unknown option '%s' "
				"(try --help)\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !o.size || !o.align) {
		fprintf(stderr, "ublk-flash: create: need IMG, --size and --align "
			"(try --help)\n");
		return EXIT_USAGE;
	}
	if (o.bad_block_rate > 0 && !seed_set) {
		if (getrandom(&o.bad_block_seed, sizeof(o.bad_block_seed), 0) !=
		    sizeof(o.bad_block_seed))
			o.bad_block_seed = (uint64_t)time(NULL);
		fprintf(stderr, "ublk-flash: create: factory bad blocks drawn "
			"with --bad-block-seed %llu\n",
			(unsigned long long)o.bad_block_seed);
	}
	r = ftl_create(argv[optind], &o);
	if (r == -ENOSPC && o.bad_block_rate > 0) {
		fprintf(stderr, "ublk-flash: create: --bad-blocks %g: more bad "
			"blocks than the spare area absorbs (raise "
			"--over-provision), or the device is too small\n",
			o.bad_block_rate);
		return EXIT_USAGE;
	}
	if (r == -EEXIST) {
		fprintf(stderr, "ublk-flash: create: %s already holds an image or "
			"a signature; use --force to overwrite\n", argv[optind]);
		return EXIT_BUSY;
	}
	if (r == -EINVAL) {
		fprintf(stderr, "ublk-flash: create: unsupported geometry (page "
			"size 4096/8192/16384, pages per block a power of 2 in "
			"4..1024, oob 32..1024, over-provision 1..1000 %%)\n");
		return EXIT_USAGE;
	}
	snprintf(what, sizeof(what), "create: %s", argv[optind]);
	return r ? cli_fail(what, r) : 0;
}
