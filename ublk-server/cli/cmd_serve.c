/* SPDX-License-Identifier: MIT */
/* ublk-flash serve IMG [options]: expose an image as a block device. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ublk_cmd.h>

#include "commands.h"
#include "serve.h"
#include "log.h"

static void serve_usage(FILE *out)
{
	fprintf(out,
		"Usage: ublk-flash serve IMG [OPTIONS]\n"
		"Expose IMG as a block device; prints its path (/dev/loopN, /dev/ublkbN)\n"
		"once it is live, then serves in the background (stop: ublk-flash stop).\n\n"
		"  --frontend ublk|fuse  default: ublk if /dev/ublk-control exists, else fuse\n"
		"  -f, --foreground      stay attached (SIGTERM/SIGINT stop cleanly)\n"
		"  --pidfile FILE        write the server's pid to FILE once the device\n"
		"                        is live (removed at stop; a running pid in it: 5)\n"
		"  --log syslog|stderr|FILE   where the server's messages go once the\n"
		"                        device is live (default: syslog when in the\n"
		"                        background, stderr with --foreground)\n"
		"  -r, --read-only       a read-only device; the image is never written\n"
		"                        (no checkpoint; a roll-forward stays in memory)\n"
		"  --scan                ignore checkpoints, rebuild the map from OOB\n"
		"  --gc greedy|cost-benefit   GC victim policy (default greedy)\n"
		"  --gc-thread on|off    collect garbage in a background thread, writers\n"
		"                        only when it falls behind (default on); off:\n"
		"                        only inline, in the writing thread\n"
		"  --streams on|off      placement streams: hot and cold host data in\n"
		"                        separate open blocks, by measured update\n"
		"                        temperature (default off; docs/engine.md)\n"
		"  --wl-threshold N      static wear-levelling threshold, 1..1000000\n"
		"                        (max - min erase count; default 128)\n"
		"  --faults SPEC         a failing medium: program=P,erase=P,bitflip=RATE,\n"
		"                        seed=N[,ecc=BITS][,cw=BYTES] (docs/engine.md)\n"
		"  --dm NAME             stack dm-linear NAME on the device\n"
		"  --recover             ublk: re-attach a device left by a dead server;\n"
		"                        it keeps the access it was created with, so\n"
		"                        give --read-only exactly when it had it (else 2)\n"
		"  --upgrade             ublk: take the device over from the live\n"
		"                        server of IMG (a live upgrade: `ublk-flash\n"
		"                        upgrade` runs this with its options; it\n"
		"                        needs the kernel's QUIESCE_DEV, else 6)\n"
		"  --dev-id N            ublk: device id to ask for, 0..1048575\n"
		"  --queues N, --depth N ublk: hardware queues 1..64 (default 1),\n"
		"                        queue depth 1..4096 (default 64)\n\n"
		"Exit: 0 live; 2 usage (a bad value, a ublk option with --frontend\n"
		"fuse, IMG a directory or neither a file nor a block device, a\n"
		"--pidfile or --log FILE that cannot be written, --recover with a\n"
		"--read-only other than the device's, a zoned image with\n"
		"--frontend fuse (FUSE + loop cannot show zones), an FTL option,\n"
		"--dm or --recover); 3 system error\n"
		"(no /dev/fuse, no syslog socket, a zoned image where ublk or its\n"
		"ZONED feature (Linux 6.6+) is missing, ...); 4 not an octant image, or a\n"
		"corrupt one; 5 busy (already served, no free loop device, the\n"
		"--pidfile names a running process); 6 --upgrade not possible here\n"
		"(no QUIESCE_DEV, served over FUSE, an older server; nothing changed).\n");
}

/* Limits of the numbers (ublk: UBLK_MAX_QUEUE_DEPTH, the 64 queues
 * frontend/ublk.c sets up at most, the kernel's 2^20 device minors). */
#define SERVE_MAX_QUEUES  64u
#define SERVE_MAX_DEVID   ((1u << 20) - 1)
#define SERVE_MAX_WL      1000000u

/* The exit status of serve_main's -errno @err (serve_fail, its one line
 * said): cli_exit_of's, and 6 for -EOPNOTSUPP, "not possible here". */
static int cli_serve_exit(int err)
{
	return err == -EOPNOTSUPP ? EXIT_UNSUPPORTED : cli_exit_of(err);
}

int cmd_serve(int argc, char **argv)
{
	enum { O_FRONTEND = 256, O_RECOVER, O_DEVID, O_QUEUES, O_DEPTH, O_DM,
	       O_SCAN, O_GC, O_GCTHREAD, O_STREAMS, O_WL, O_FAULTS, O_PIDFILE, O_LOG,
	       O_UPGRADE };
	static const struct option lo[] = {
		{ "frontend", required_argument, NULL, O_FRONTEND },
		{ "foreground", no_argument, NULL, 'f' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "pidfile", required_argument, NULL, O_PIDFILE },
		{ "log", required_argument, NULL, O_LOG },
		{ "recover", no_argument, NULL, O_RECOVER },
		{ "upgrade", no_argument, NULL, O_UPGRADE },
		{ "dev-id", required_argument, NULL, O_DEVID },
		{ "queues", required_argument, NULL, O_QUEUES },
		{ "depth", required_argument, NULL, O_DEPTH },
		{ "dm", required_argument, NULL, O_DM },
		{ "scan", no_argument, NULL, O_SCAN },
		{ "gc", required_argument, NULL, O_GC },
		{ "gc-thread", required_argument, NULL, O_GCTHREAD },
		{ "streams", required_argument, NULL, O_STREAMS },
		{ "wl-threshold", required_argument, NULL, O_WL },
		{ "faults", required_argument, NULL, O_FAULTS },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct fe_serve_opts o = { .dev_id = -1 };
	struct ftl_open_opts oo = { .bg_gc = true };
	struct serve_fail f;
	const char *ublk_only = NULL;   /* a ublk option given */
	static struct nand_fault_spec fs;
	char err[256];
	unsigned v;
	int c, code;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fhr", lo, NULL)) != -1) {
		switch (c) {
		case O_FRONTEND: o.frontend = optarg; break;
		case 'f': o.foreground = true; break;
		case 'r': o.read_only = true; break;
		case O_PIDFILE: o.pidfile = optarg; break;
		case O_LOG: {
			enum serve_log_kind k;

			if (serve_log_parse(optarg, &k)) {
				fprintf(stderr, "ublk-flash: serve: --log: '%s' is "
					"not syslog, stderr or a file path (./%s "
					"for a file here)\n", optarg, optarg);
				return EXIT_USAGE;
			}
			o.log = optarg;
			o.log_kind = (int)k;
			break;
		}
		case O_RECOVER:
			o.recover = true;
			ublk_only = "--recover";
			break;
		case O_UPGRADE:
			o.upgrade = true;
			ublk_only = "--upgrade";
			break;
		case O_DEVID:
			if (cli_unsigned("serve", "--dev-id", optarg, 0,
					 SERVE_MAX_DEVID, &v))
				return EXIT_USAGE;
			o.dev_id = (int)v;
			ublk_only = "--dev-id";
			break;
		case O_QUEUES:
			if (cli_unsigned("serve", "--queues", optarg, 1,
					 SERVE_MAX_QUEUES, &o.queues))
				return EXIT_USAGE;
			ublk_only = "--queues";
			break;
		case O_DEPTH:
			if (cli_unsigned("serve", "--depth", optarg, 1,
					 UBLK_MAX_QUEUE_DEPTH, &o.depth))
				return EXIT_USAGE;
			ublk_only = "--depth";
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
		case O_GCTHREAD:
			if (cli_on_off("serve", "--gc-thread", optarg, &oo.bg_gc))
				return EXIT_USAGE;
			break;
		case O_STREAMS:
			if (cli_on_off("serve", "--streams", optarg, &oo.streams))
				return EXIT_USAGE;
			break;
		case O_WL:
			if (cli_unsigned("serve", "--wl-threshold", optarg, 1,
					 SERVE_MAX_WL, &oo.wl_threshold))
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
			return cli_bad_option("serve", c, argv);
		}
	}
	/* the device, its queues and its id are the live server's */
	if (o.upgrade && (o.recover || o.dev_id >= 0 || o.queues || o.depth ||
			  o.foreground || oo.scan)) {
		fprintf(stderr, "ublk-flash: serve: --upgrade takes the device "
			"as it is: not with --recover, --dev-id, --queues, "
			"--depth, --scan or --foreground\n");
		return EXIT_USAGE;
	}
	if (ublk_only && o.frontend && !strcmp(o.frontend, "fuse")) {
		fprintf(stderr, "ublk-flash: serve: %s applies to the ublk "
			"frontend only, not to --frontend fuse\n", ublk_only);
		return EXIT_USAGE;
	}
	/* without --frontend, serve picks fuse when there is no ublk */
	if (ublk_only && !o.frontend && access("/dev/ublk-control", F_OK)) {
		fprintf(stderr, "ublk-flash: serve: %s applies to the ublk "
			"frontend only, and there is no /dev/ublk-control here "
			"(modprobe ublk_drv)\n", ublk_only);
		return EXIT_USAGE;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: serve: expected one IMG (try --help)\n");
		return EXIT_USAGE;
	}
	o.image = argv[optind];
	if (oo.faults) {
		struct ftl_set_info info;

		if (!ftl_set_info_read(o.image, &info) &&
		    info.set.page_size % fs.cw) {
			fprintf(stderr, "ublk-flash: serve: --faults: cw=%u does "
				"not divide the %u-byte flash page\n", fs.cw,
				info.set.page_size);
			return EXIT_USAGE;
		}
		if (!fs.seed_set &&
		    getrandom(&fs.seed, sizeof(fs.seed), 0) != sizeof(fs.seed))
			fs.seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
		fs.seed_set = true;
		nand_fault_format(&fs, err, sizeof(err));
		fprintf(stderr, "ublk-flash: serve: faults %s\n", err);
	}
	if (o.upgrade &&
	    (code = cli_image_set_refuse("serve", o.image, "no live upgrade")))
		return code;
	if (!serve_main(&o, &oo, &f))
		code = 0;
	else if (f.daemon)     /* its parent said why */
		code = cli_serve_exit(f.err);
	else if (f.image)      /* says what IMG is */
		code = cli_image_fail_why("serve", o.image, f.err, f.why);
	else
		code = cli_serve_exit(f.err);
	if (f.daemon)
		_exit(code);
	return code;
}
