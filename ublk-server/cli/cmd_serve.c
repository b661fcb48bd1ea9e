/* SPDX-License-Identifier: MIT */
/* ublk-flash serve IMG [options]: expose an image as a block device. */
#include <getopt.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "serve.h"

static void serve_usage(FILE *out)
{
	fprintf(out,
		"Usage: ublk-flash serve IMG [OPTIONS]\n"
		"Expose IMG as a block device; prints its path (/dev/loopN, /dev/ublkbN)\n"
		"once it is live, then serves in the background (stop: ublk-flash stop).\n\n"
		"  --frontend ublk|fuse  default: ublk if /dev/ublk-control exists, else fuse\n"
		"  -f, --foreground      stay attached (SIGTERM/SIGINT stop cleanly)\n"
		"  --scan                ignore checkpoints, rebuild the map from OOB\n"
		"  --gc greedy|cost-benefit   GC victim policy (default greedy)\n"
		"  --wl-threshold N      static wear-levelling threshold\n"
		"  --faults SPEC         a failing medium: program=P,erase=P,bitflip=RATE,\n"
		"                        seed=N[,ecc=BITS][,cw=BYTES] (docs/engine.md)\n"
		"  --dm NAME             stack dm-linear NAME on the device\n"
		"  --recover             ublk: re-attach a device left by a dead server\n"
		"  --dev-id N            ublk: device id to ask for\n"
		"  --queues N, --depth N ublk: hardware queues, queue depth\n\n"
		"Exit: 0 live; 2 usage; 3 system error (no /dev/fuse, ...); 4 corrupt\n"
		"image; 5 busy (already served, no free loop device).\n");
}

static int serve_uint(const char *opt, const char *s, unsigned *v)
{
	char *end;
	unsigned long n = strtoul(s, &end, 10);
	if (!*s || *end || n > 1000000) {
		fprintf(stderr, "ublk-flash: serve: %s: bad number '%s'\n", opt, s);
		return -1;
	}
	*v = (unsigned)n;
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	enum { O_FRONTEND = 256, O_RECOVER, O_DEVID, O_QUEUES, O_DEPTH, O_DM,
	       O_SCAN, O_GC, O_WL, O_FAULTS };
	static const struct option lo[] = {
		{ "frontend", required_argument, NULL, O_FRONTEND },
		{ "foreground", no_argument, NULL, 'f' },
		{ "recover", no_argument, NULL, O_RECOVER },
		{ "dev-id", required_argument, NULL, O_DEVID },
		{ "queues", required_argument, NULL, O_QUEUES },
		{ "depth", required_argument, NULL, O_DEPTH },
		{ "dm", required_argument, NULL, O_DM },
		{ "scan", no_argument, NULL, O_SCAN },
		{ "gc", required_argument, NULL, O_GC },
		{ "wl-threshold", required_argument, NULL, O_WL },
		{ "faults", required_argument, NULL, O_FAULTS },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct fe_serve_opts o = { .dev_id = -1 };
	struct ftl_open_opts oo = { 0 };
	static struct nand_fault_spec fs;
	char err[256];
	unsigned v;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fh", lo, NULL)) != -1) {
		switch (c) {
		case O_FRONTEND: o.frontend = optarg; break;
		case 'f': o.foreground = true; break;
		case O_RECOVER: o.recover = true; break;
		case O_DEVID:
			if (serve_uint("--dev-id", optarg, &v))
				return EXIT_USAGE;
			o.dev_id = (int)v;
			break;
		case O_QUEUES:
			if (serve_uint("--queues", optarg, &o.queues))
				return EXIT_USAGE;
			break;
		case O_DEPTH:
			if (serve_uint("--depth", optarg, &o.depth))
				return EXIT_USAGE;
			break;
		case O_DM: o.dm_name = optarg; break;
		case O_SCAN: oo.scan = true; break;
		case O_GC:
			if (!strcmp(optarg, "greedy"))
				oo.gc = FTL_GC_GREEDY;
			else if (!strcmp(optarg, "cost-benefit"))
				oo.gc = FTL_GC_COST_BENEFIT;
			else {
				fprintf(stderr, "ublk-flash: serve: --gc: '%s' is "
					"not greedy or cost-benefit\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_WL:
			if (serve_uint("--wl-threshold", optarg, &oo.wl_threshold))
				return EXIT_USAGE;
			break;
		case O_FAULTS:
			if (nand_fault_parse(optarg, &fs, err, sizeof(err))) {
				fprintf(stderr, "ublk-flash: serve: --%s\n", err);
				return EXIT_USAGE;
			}
			oo.faults = &fs;
			break;
		case 'h': serve_usage(stdout); return 0;
		default:
			fprintf(stderr, "ublk-flash: serve: unknown or incomplete "
				"option '%s' (try --help)\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: serve: expected one IMG (try --help)\n");
		return EXIT_USAGE;
	}
	o.image = argv[optind];
	if (oo.faults) {
		struct ftl_info info;

		if (!ftl_info_read(o.image, &info) && info.page_size % fs.cw) {
			fprintf(stderr, "ublk-flash: serve: --faults: cw=%u does "
				"not divide the %u-byte flash page\n", fs.cw,
				info.page_size);
			return EXIT_USAGE;
		}
		if (!fs.seed_set &&
		    getrandom(&fs.seed, sizeof(fs.seed), 0) != sizeof(fs.seed))
			fs.seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
		fs.seed_set = true;
		nand_fault_format(&fs, err, sizeof(err));
		fprintf(stderr, "ublk-flash: serve: faults %s\n", err);
	}
	return serve_main(&o, &oo);
}
