/* SPDX-License-Identifier: MIT */
/* ublk-flash create IMG --size SIZE --align odd|1m [geometry options]. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <time.h>

#include "align.h"
#include "commands.h"
#include "ftl-set.h"
#include "ftl-format.h"
#include "nand.h"
#include "oct-parse.h"
#include "serve.h"
#include "zn-format.h"

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
		"  --oob-size N           out-of-band bytes per page, 48..1024 (64)\n"
		"  --over-provision PCT   spare flash, percent of SIZE (7)\n"
		"  --bad-blocks RATE      factory bad blocks: each data block is bad\n"
		"                         with probability RATE (e.g. 1e-3), skipped\n"
		"  --bad-block-seed N     seed of that draw (default: random, printed)\n"
		"  --max-size SIZE        room to grow in place (resize) up to SIZE\n"
		"                         (checkpoint area sized for it; default\n"
		"                         --size)\n"
		"  --endurance N          rated erases per block (P/E cycles), for\n"
		"                         `health` percentage used, 1..10000000 (3000)\n"
		"  --force                overwrite an existing image or signature\n"
		"  --zoned                a host-managed zoned disk with no FTL\n"
		"                         (zones of erase blocks; served over ublk\n"
		"                         on kernels 6.6+): --align 1m (the default;\n"
		"                         odd is refused), --page-size 4096, no\n"
		"                         --over-provision nor --bad-blocks\n"
		"  --integrity PROFILE    protection information per 512-byte\n"
		"                         sector, kept in the OOB: t10dif (T10-DIF\n"
		"                         type 1, CRC16 guard, ref tag checked;\n"
		"                         served over ublk with INTEGRITY, kernels\n"
		"                         7.0+) or none (the default); the default\n"
		"                         --oob-size grows to hold it\n"
		"  --parts N              a set of N engines in one image, 1..16 (1:\n"
		"                         a plain image, the default): the logical\n"
		"                         space striped over them, each with its own\n"
		"                         lock and GC thread (writes to different\n"
		"                         parts run in parallel, to one part in\n"
		"                         turn); not with --zoned, --integrity\n"
		"                         nor --max-size (a set cannot grow yet)\n"
		"  --stripe SIZE          with --parts 2 or more: bytes of each\n"
		"                         stripe, a power of 2, a multiple of the\n"
		"                         page size, at most 1G (1M)\n"
		"  --zone-size SIZE       with --zoned: a power of 2, a whole number\n"
		"                         of erase blocks (16M); SIZE is rounded up\n"
		"                         to whole zones\n"
		"An image that is served (or open for writing anywhere) is refused,\n"
		"--force or not.\n"
		"Exit: 0 ok; 2 usage (a bad value, a size the geometry cannot\n"
		"hold, IMG a directory or neither a file nor a block device);\n"
		"3 I/O error; 5 IMG holds data (use --force) or is in use\n"
		"(served, mounted).\n");
}

/*
 * @path does not exist: make it (empty, O_EXCL) and lock it, the fd; else
 * (it exists, a remote medium's URI, or another create locked it first,
 * or wrote it already) -1.  Making and locking are two steps: between
 * them another create that found the path taken may lock it, write a
 * whole image and let go (1 pair in ~1400 of tests/cli/ublk-flash-engine
 * .bats's racing creates).  This one then locked a written image as its
 * own, found the signature and removed the other's image as not one: so
 * a file no longer empty once locked is not ours.
 */
static int create_new_locked(const char *path)
{
	struct stat st;
	int fd;

	if (nand_backing_is_uri(path))
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &st) < 0 ||
	    st.st_size != 0) {
		close(fd);          /* another create locked it first, or
				       wrote it already */
		return -1;
	}
	return fd;
}

/* Remove @path after a failed create made it: only while it is still the
 * file @fd (made and locked by create_new_locked) names. */
static void remove_made(const char *path, int fd)
{
	struct stat a, b;

	if (!fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		unlink(path);
}

/* The geometry options, each against the engine's limits (ftl_geom.c). */
static int check_geometry(const struct ftl_create_opts *o,
			  const char *const arg[3])
{
	uint32_t ppb = o->pages_per_block, oob = o->oob_size;

	if (o->page_size && o->page_size != 4096 && o->page_size != 8192 &&
	    o->page_size != 16384) {
		fprintf(stderr, "ublk-flash: create: --page-size: %s is not 4096, "
			"8192 or 16384\n", arg[0]);
		return -1;
	}
	if (ppb && (ppb < 4 || ppb > 1024 || (ppb & (ppb - 1)))) {
		fprintf(stderr, "ublk-flash: create: --pages-per-block: %s is not "
			"a power of 2 in 4..1024\n", arg[1]);
		return -1;
	}
	if (oob && (oob < FTL_OOB_FLUSH_MIN || oob > 1024 || oob % 8)) {
		fprintf(stderr, "ublk-flash: create: --oob-size: %s is not a "
			"multiple of 8 in %u..1024\n", arg[2], FTL_OOB_FLUSH_MIN);
		return -1;
	}
	return 0;
}

/* --integrity: the OOB must hold the PI record (ftl-format.h) beside the
 * records before it and the erase stamp; without --oob-size it grows to
 * the next power of 2 that does (128 for 4K and 8K pages, 256 for 16K). */
static int check_integrity(struct ftl_create_opts *o)
{
	uint32_t ps = o->page_size ? o->page_size : 4096;
	uint32_t need = FTL_OOB_PI_AT + (uint32_t)FTL_OOB_PI_SIZE(ps) +
			NAND_STAMP_SIZE, dflt = 64;

	if (!o->integrity)
		return 0;
	if (!o->oob_size) {
		while (dflt < need)
			dflt *= 2;
		o->oob_size = dflt;
		return 0;
	}
	if (o->oob_size < need) {
		fprintf(stderr, "ublk-flash: create: --integrity t10dif needs "
			"--oob-size %u or more with %u-byte pages (48 bytes of "
			"records, %u of guards, %u of erase stamp), not %u\n",
			need, ps, (uint32_t)FTL_OOB_PI_SIZE(ps), NAND_STAMP_SIZE,
			o->oob_size);
		return -1;
	}
	return 0;
}

/* --size beyond what the geometry can address: say the limit and which
 * --page-size would hold it. */
static int check_size(const struct ftl_create_opts *o, const char *size_arg)
{
	static const uint32_t sizes[] = { 4096, 8192, 16384 };
	struct ftl_create_opts t = *o;
	uint32_t ps = o->page_size ? o->page_size : 4096;
	uint64_t max = ftl_create_max_size(o), m;
	char fix[128] = "";
	size_t n = 0;

	if (o->size <= max)
		return 0;
	for (size_t i = 0; i < 3; i++) {
		if (sizes[i] <= ps)
			continue;
		t.page_size = sizes[i];
		m = ftl_create_max_size(&t);
		if (m >= o->size)
			n += (size_t)snprintf(fix + n, sizeof(fix) - n, "%s%u",
					      n ? " or " : "use --page-size ",
					      sizes[i]);
	}
	if (!n) {
		t.page_size = 16384;
		snprintf(fix, sizeof(fix), "no page size holds it (16384-byte "
			 "pages: at most %llu bytes)",
			 (unsigned long long)ftl_create_max_size(&t));
	}
	fprintf(stderr, "ublk-flash: create: --size %s is too large for %u-byte "
		"pages (at most %llu bytes); %s\n", size_arg, ps,
		(unsigned long long)max, fix);
	return -1;
}

/* --parts / --stripe against the other options: 0, or -1 said. */
static int check_set(const struct ftl_create_opts *o, uint64_t nparts,
		     uint64_t stripe, bool zoned, const char *stripe_arg)
{
	uint64_t ps = o->page_size ? o->page_size : 4096;
	const char *why = NULL;

	if (nparts > 1)
		why = zoned ? "--parts: a zoned image cannot be a set" :
		      o->integrity ? "--parts: a set cannot carry --integrity "
		      "yet" :
		      o->max_size ? "--parts: a set cannot grow yet (no "
		      "--max-size)" : NULL;
	else if (stripe_arg)
		why = "--stripe needs --parts 2 or more";
	if (!why && stripe_arg && (!stripe || (stripe & (stripe - 1)) ||
				   stripe % ps || stripe > FTL_SET_STRIPE_MAX)) {
		fprintf(stderr, "ublk-flash: create: --stripe: %s is not a power "
			"of 2, a multiple of the %llu-byte page, at most 1G\n",
			stripe_arg, (unsigned long long)ps);
		return -1;
	}
	if (why)
		fprintf(stderr, "ublk-flash: create: %s\n", why);
	return why ? -1 : 0;
}

/* create --zoned: a zoned image (zn-format.h), under the same image lock
 * as an FTL image. */
static int create_zoned(const char *path, const struct zn_create_opts *zo)
{
	int lock_fd = create_new_locked(path), r;
	bool made = lock_fd >= 0;
	char why[200] = "";

	if (!made) {
		r = cli_image_lock("create", path, "stop it first (--force does "
				   "not override this)", &lock_fd);
		if (r)
			return r;
	}
	r = zn_create(path, zo, why, sizeof(why));
	if (r && made)
		remove_made(path, lock_fd);
	if (lock_fd >= 0)
		close(lock_fd);
	if (r == -EINVAL || r == -EOPNOTSUPP) {
		fprintf(stderr, "ublk-flash: create: %s\n", why);
		return EXIT_USAGE;
	}
	if (r == -EEXIST) {
		fprintf(stderr, "ublk-flash: create: %s is not empty; use --force "
			"to overwrite it\n", path);
		return EXIT_BUSY;
	}
	if (r == -ENOSPC) {
		fprintf(stderr, "ublk-flash: create: %s: the block device is "
			"smaller than the image needs (try a smaller --size)\n",
			path);
		return EXIT_USAGE;
	}
	return r ? cli_image_fail("create", path, r) : 0;
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
		{ "endurance", required_argument, NULL, 'E' },
		{ "max-size", required_argument, NULL, 'M' },
		{ "zoned", no_argument, NULL, 'Z' },
		{ "zone-size", required_argument, NULL, 'z' },
		{ "integrity", required_argument, NULL, 'I' },
		{ "parts", required_argument, NULL, 'P' },
		{ "stripe", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ftl_create_opts o = { 0 };
	const char *size_arg = NULL, *arg[3] = { NULL, NULL, NULL };
	uint64_t v;
	bool seed_set = false, zoned = false, op_set = false;
	uint64_t zone_size = 0, nparts = 1, stripe = 0;
	const char *stripe_arg = NULL;
	char *end;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:a:fh", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_size("create", "--size", optarg, &o.size))
				return EXIT_USAGE;
			if (o.size % 512) {
				fprintf(stderr, "ublk-flash: create: --size: %s is "
					"not a multiple of 512 bytes\n", optarg);
				return EXIT_USAGE;
			}
			size_arg = optarg;
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
		case 'p': case 'o':     /* bytes: "4096", "16K" */
			if (cli_size("create", c == 'p' ? "--page-size" :
				     "--oob-size", optarg, &v))
				return EXIT_USAGE;
			/* 1: out of range either way (the message shows arg) */
			*(c == 'p' ? &o.page_size : &o.oob_size) =
				v > UINT32_MAX ? 1 : (uint32_t)v;
			arg[c == 'p' ? 0 : 2] = optarg;
			break;
		case 'b':
			if (cli_uint("create", "--pages-per-block", optarg, 1,
				     UINT32_MAX, &v))
				return EXIT_USAGE;
			o.pages_per_block = (uint32_t)v;
			arg[1] = optarg;
			break;
		case 'O':               /* percent, one decimal: permille */
			if (oct_parse_fixed(optarg, 1, 10, 10000, &v)) {
				fprintf(stderr, "ublk-flash: create: --over-provision: "
					"'%s' is not a percentage in 1..1000 (at most "
					"one decimal)\n", optarg);
				return EXIT_USAGE;
			}
			o.op_permille = (uint32_t)v;
			op_set = true;
			break;
		case 'Z':
			zoned = true;
			break;
		case 'P':
			if (cli_uint("create", "--parts", optarg, 1,
				     FTL_SET_MAX_PARTS, &nparts))
				return EXIT_USAGE;
			break;
		case 'T':
			if (cli_size("create", "--stripe", optarg, &stripe))
				return EXIT_USAGE;
			stripe_arg = optarg;
			break;
		case 'I':
			if (strcmp(optarg, "t10dif") && strcmp(optarg, "none")) {
				fprintf(stderr, "ublk-flash: create: --integrity "
					"must be t10dif or none, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			o.integrity = !strcmp(optarg, "t10dif");
			break;
		case 'z':
			if (cli_size("create", "--zone-size", optarg, &zone_size))
				return EXIT_USAGE;
			break;
		case 'M':               /* room to grow: ublk-flash resize */
			if (cli_size("create", "--max-size", optarg, &o.max_size))
				return EXIT_USAGE;
			break;
		case 'E':
			if (cli_uint("create", "--endurance", optarg, 1,
				     FTL_PE_MAX, &v))
				return EXIT_USAGE;
			o.pe_cycles = (uint32_t)v;
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
			return cli_bad_option("create", c, argv);
		}
	}
	if (optind < argc - 1) {
		fprintf(stderr, "ublk-flash: create: unexpected argument '%s' "
			"after IMG '%s' (try --help)\n", argv[optind + 1],
			argv[optind]);
		return EXIT_USAGE;
	}
	if (check_set(&o, nparts, stripe, zoned, stripe_arg))
		return EXIT_USAGE;
	if (zoned || zone_size) {
		struct zn_create_opts zo = {
			.size = o.size, .zone_size = zone_size,
			.ppb = o.pages_per_block, .oob_size = o.oob_size,
			.pe_cycles = o.pe_cycles, .force = o.force,
		};
		const char *why = !zoned ? "--zone-size needs --zoned" :
			o.align == FTL_ALIGN_ODD ? "--align odd: a zoned image "
			"has no odd mode (the 512-byte shift would make every "
			"zone straddle two erase blocks and every page write a "
			"read-modify-write, which sequential zones cannot take); "
			"use --align 1m" :
			o.page_size && o.page_size != ZN_LBS ? "--page-size: a "
			"zoned image has 4096-byte pages (the logical block is "
			"the page)" :
			op_set ? "--over-provision: a zoned image has no FTL, "
			"so no spare area" :
			o.bad_block_rate > 0 ? "--bad-blocks: not supported on a "
			"zoned image yet" :
			o.integrity ? "--integrity: not supported on a zoned "
			"image yet" : NULL;

		if (why) {
			fprintf(stderr, "ublk-flash: create: %s\n", why);
			return EXIT_USAGE;
		}
		if (optind == argc || !o.size) {
			fprintf(stderr, "ublk-flash: create: missing %s (try "
				"--help)\n", optind == argc ? "IMG" : "--size SIZE");
			return EXIT_USAGE;
		}
		return create_zoned(argv[optind], &zo);
	}
	if (optind == argc || !o.size || !o.align) {
		fprintf(stderr, "ublk-flash: create: missing %s (try --help)\n",
			optind == argc ? "IMG" : !o.size ? "--size SIZE" :
			"--align odd|1m");
		return EXIT_USAGE;
	}
	if (check_geometry(&o, arg) || check_integrity(&o) ||
	    check_size(&o, size_arg))
		return EXIT_USAGE;
	if (o.bad_block_rate > 0 && !seed_set) {
		if (getrandom(&o.bad_block_seed, sizeof(o.bad_block_seed), 0) !=
		    sizeof(o.bad_block_seed))
			o.bad_block_seed = (uint64_t)time(NULL);
		fprintf(stderr, "ublk-flash: create: factory bad blocks drawn "
			"with --bad-block-seed %llu\n",
			(unsigned long long)o.bad_block_seed);
	}
	/* The engine's image lock, held while the image is rewritten: a
	 * served image is refused, and no server can open it meanwhile.  A
	 * new file is made here (O_EXCL) and locked before it is written, so
	 * of two creates of one new path exactly one writes it; the other
	 * finds it locked or holding an image (exit 5). */
	bool made = false;
	int lock_fd = create_new_locked(argv[optind]);

	made = lock_fd >= 0;
	if (!made) {
		r = cli_image_lock("create", argv[optind],
				   "stop it first (--force does not override "
				   "this)", &lock_fd);
		if (r)
			return r;
	}
	r = ftl_set_create(argv[optind], &o, (unsigned)nparts, stripe);
	if (r && made)
		remove_made(argv[optind], lock_fd); /* ours, not an image */
	if (lock_fd >= 0)
		close(lock_fd);
	if (r == -ENOSPC && o.bad_block_rate > 0) {
		fprintf(stderr, "ublk-flash: create: --bad-blocks %g: more bad "
			"blocks than the spare area absorbs (raise "
			"--over-provision), or the device is too small\n",
			o.bad_block_rate);
		return EXIT_USAGE;
	}
	if (r == -EEXIST) {
		char what[128];

		cli_image_holds(argv[optind], what, sizeof(what));
		fprintf(stderr, "ublk-flash: create: %s is not empty (%s); use "
			"--force to overwrite it\n", argv[optind], what);
		return EXIT_BUSY;
	}
	if (r == -EINVAL) {         /* checked above: the limits drifted */
		fprintf(stderr, "ublk-flash: create: unsupported geometry (page "
			"size 4096/8192/16384, pages per block a power of 2 in "
			"4..1024, oob 48..1024, over-provision 1..1000 %%)\n");
		return EXIT_USAGE;
	}
	if (r == -ENOSPC) {
		fprintf(stderr, "ublk-flash: create: %s: the block device is "
			"smaller than the image needs (try a smaller --size)\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	return r ? cli_image_fail("create", argv[optind], r) : 0;
}
