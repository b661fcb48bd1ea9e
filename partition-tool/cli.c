/* SPDX-License-Identifier: MIT */
/* alignpart command-line parsing: commands, options, usage texts. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap.h"
#include "oct-parse.h"

enum {
	OPT_JSON = 1000, OPT_TOPOLOGY, OPT_PROFILE, OPT_LABEL, OPT_PART,
	OPT_START, OPT_SCRIPT, OPT_NOACT, OPT_FORCE, OPT_HELP, OPT_VERSION,
	OPT_TO, OPT_FROM,
	OPT_OUTPUT = 'o', OPT_NOHEAD = 'n', OPT_RAW = 'r', OPT_BYTES = 'b',
};

static const struct option longopts[] = {
	{ "json",     no_argument,       NULL, OPT_JSON },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "profile",  required_argument, NULL, OPT_PROFILE },
	{ "label",    required_argument, NULL, OPT_LABEL },
	{ "part",     required_argument, NULL, OPT_PART },
	{ "start",    required_argument, NULL, OPT_START },
	{ "script",   required_argument, NULL, OPT_SCRIPT },
	{ "no-act",   no_argument,       NULL, OPT_NOACT },
	{ "force",    no_argument,       NULL, OPT_FORCE },
	{ "help",     no_argument,       NULL, OPT_HELP },
	{ "version",  no_argument,       NULL, OPT_VERSION },
	{ "output",   required_argument, NULL, OPT_OUTPUT },
	{ "noheadings", no_argument,     NULL, OPT_NOHEAD },
	{ "raw",      no_argument,       NULL, OPT_RAW },
	{ "bytes",    no_argument,       NULL, OPT_BYTES },
	{ "to",       required_argument, NULL, OPT_TO },
	{ "from",     required_argument, NULL, OPT_FROM },
	{ NULL, 0, NULL, 0 },
};

static const char *cmd_name(enum ap_cmd c)
{
	switch (c) {
	case AP_CMD_CHECK:   return "check";
	case AP_CMD_CREATE:  return "create";
	case AP_CMD_SUGGEST: return "suggest";
	case AP_CMD_PREDICT: return "predict";
	case AP_CMD_CONVERT: return "convert";
	default:             return NULL;
	}
}

static void profiles_help(FILE *out)
{
	const struct align_profile *const *p = align_profile_list();

	fputs("\nProfiles (--profile):\n", out);
	for (; p && *p; p++)
		fprintf(out, "  %-8s %s\n", (*p)->name,
			(*p)->description ? (*p)->description : "");
}

/* The table output options every command takes (as lsblk's). */
static const char ap_output_help[] =
	"Output: --json (sizes in bytes, positions in sectors: size_bytes,\n"
	"  start_sector, ...); the table as lsblk's: -o, --output COLS (columns\n"
	"  by heading or JSON key, in that order; alignpart(8) lists them),\n"
	"  -n, --noheadings, -r, --raw, -b, --bytes (sizes in bytes, not 8MiB).\n";

/* Print the usage text of @cmd (AP_CMD_NONE: the overview) on @out. */
void ap_usage(FILE *out, enum ap_cmd cmd)
{
	switch (cmd) {
	case AP_CMD_CHECK:
		fputs("Usage: alignpart check TARGET [--topology LOG/PHYS[/OFFSET]] [--profile P] [--json]\n"
		      "Audit the partition table of TARGET: per partition the start, end, size,\n"
		      "physical / grain / end alignment, the kernel's alignment_offset, a verdict.\n"
		      "Exit 0 all aligned, 1 some misaligned, 2 usage, 3 I/O, 5 refused (the codes of ublk-flash).\n", out);
		break;
	case AP_CMD_CREATE:
		fputs("Usage: alignpart create TARGET --label gpt|dos [--profile P]\n"
		      "         (--part SIZE[:TYPE]... | --script FILE|-) [--start LBA]\n"
		      "         [--topology LOG/PHYS[/OFFSET]] [--no-act] [--force] [--json]\n"
		      "Write a new partition table whose starts are aligned for the topology.\n"
		      "  --part SIZE[:TYPE]  a partition (SIZE like 64MiB, 100s, or 'rest';\n"
		      "                      TYPE a dos hex code, a GPT GUID, L S H U R V)\n"
		      "  --script FILE|-     partitions from an sfdisk script (stdin with -)\n"
		      "  --start LBA         force the first start (warns when misaligned)\n"
		      "  --no-act            print what would be written, write nothing\n"
		      "  --force             overwrite an existing table or signature\n", out);
		break;
	case AP_CMD_SUGGEST:
		fputs("Usage: alignpart suggest TARGET [--profile P] [--topology LOG/PHYS[/OFFSET]] [--json]\n"
		      "Print the first aligned LBA for each label type, the grain and the reason.\n", out);
		break;
	case AP_CMD_PREDICT:
		fputs("Usage: alignpart predict TARGET [--label gpt|dos] [--profile P]\n"
		      "         [--topology LOG/PHYS[/OFFSET[/IO_MIN[/IO_OPT]]]] [--json]\n"
		      "What sfdisk/fdisk, parted (-a optimal, mkpart 1MiB and 0%), sgdisk, mkfs.xfs\n"
		      "and mke2fs will do to TARGET, next to alignpart's own choice: first\n"
		      "partition, alignment on the medium, what the tool says, how to avoid it.\n"
		      "Exit 0, 1 when a tool would misalign, 2 usage, 3 I/O.\n", out);
		break;
	case AP_CMD_CONVERT:
		fputs("Usage: alignpart convert SOURCE --to 512|4096 [--from N]\n"
		      "         [--topology LOG/PHYS[/OFFSET]] [--profile P]\n"
		      "Rewrite a partition table for another logical sector size, every\n"
		      "partition at the same bytes: SOURCE is an sfdisk dump (a file, - for\n"
		      "stdin) or a device or image with a table; the sfdisk dump for --to\n"
		      "sectors goes to stdout (sfdisk DEV < it).  A start or size that is not a\n"
		      "whole number of target sectors is refused (exit 2).\n", out);
		break;
	default:
		break;
	}
	if (cmd != AP_CMD_NONE && cmd != AP_CMD_CONVERT)
		fputs(ap_output_help, out);
	switch (cmd) {
	case AP_CMD_CHECK: case AP_CMD_CREATE: case AP_CMD_SUGGEST:
	case AP_CMD_PREDICT: case AP_CMD_CONVERT:
		break;
	default:
		fputs("Usage: alignpart COMMAND TARGET [OPTIONS]\n"
		      "Create and audit MBR/GPT partition tables with alignment checks.\n\n"
		      "Commands:\n"
		      "  check TARGET     audit an existing table (exit 1 when misaligned)\n"
		      "  create TARGET    write a new aligned table (--label, --part / --script)\n"
		      "  suggest TARGET   first aligned LBA, grain and reason\n"
		      "  predict TARGET   what sfdisk, parted, sgdisk, mkfs.xfs, mke2fs will do\n"
		      "  convert SOURCE   a table for 512 <-> 4096-byte sectors (--to N)\n"
		      "  map TARGET       dm-linear mappings of the partitions (root)\n"
		      "  unmap TARGET     remove them\n\n"
		      "Common options:\n"
		      "  --topology LOG/PHYS[/OFFSET[/IO_MIN[/IO_OPT]]]\n"
		      "                   override the target's topology\n"
		      "  --profile NAME   alignment profile (default auto)\n"
		      "  --json           JSON output (sizes in bytes, positions in sectors:\n"
		      "                   size_bytes, start_sector, ...)\n"
		      "  -o, --output COLS  table columns to print, in order (e.g.\n"
		      "                   nr,start,size,aligned; alignpart(8) lists them)\n"
		      "  -n, --noheadings no table headings\n"
		      "  -r, --raw        raw table output (no alignment, spaces as \\x20)\n"
		      "  -b, --bytes      sizes in bytes, not 8MiB\n"
		      "  --help, --version\n"
		      "Topology: --topology, else a device ublk-flash serves takes its image's\n"
		      "(run registry $UBLK_FLASH_RUN_DIR, default /run/octant), another device\n"
		      "the kernel's, an octant image its header's, a plain file the profile's.\n"
		      "Types (TYPE): a dos hex code, a GPT GUID, a name, or L S H U R V\n"
		      "(linux swap home uefi raid lvm) on both labels.\n"
		      "Run 'alignpart COMMAND --help' for a command's options; see alignpart(8).\n",
		      out);
		break;
	}
	profiles_help(out);
}

static int usage_err(enum ap_cmd cmd, const char *fmt, const char *arg)
{
	char msg[256];
	const char *name = cmd_name(cmd);

	snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
	return ap_fail(AP_EXIT_USAGE, "%s%s%s (see 'alignpart %s%s--help')",
		       name ? name : "", name ? ": " : "", msg,
		       name ? name : "", name ? " " : "");
}

static bool opt_allowed(enum ap_cmd cmd, int opt)
{
	if (cmd == AP_CMD_CONVERT)   /* its output is an sfdisk dump */
		return opt == OPT_TO || opt == OPT_FROM || opt == OPT_TOPOLOGY ||
		       opt == OPT_PROFILE || opt == OPT_HELP || opt == OPT_VERSION;
	switch (opt) {
	case OPT_TO: case OPT_FROM:
		return false;
	case OPT_JSON: case OPT_TOPOLOGY: case OPT_PROFILE:
	case OPT_HELP: case OPT_VERSION:
	case OPT_OUTPUT: case OPT_NOHEAD: case OPT_RAW: case OPT_BYTES:
		return true;
	case OPT_LABEL:
		return cmd == AP_CMD_CREATE || cmd == AP_CMD_SUGGEST ||
		       cmd == AP_CMD_PREDICT;
	default:
		return cmd == AP_CMD_CREATE;
	}
}

/* --start: a plain sector number (common/oct-parse.h); LBAs stay below
 * 2^63 so no sum of a start and a size wraps. */
static int parse_lba(const char *s, uint64_t *v)
{
	return oct_parse_uint(s, 0, INT64_MAX, v);
}

/* --to / --from: a logical sector size, a power of two 512..65536. */
static int parse_sector_size(const char *s, uint64_t *v)
{
	if (oct_parse_uint(s, 512, 65536, v) || (*v & (*v - 1)))
		return -EINVAL;
	return 0;
}

/*
 * Parse argv into @o.  Returns -1 when a command should run, else the exit
 * code to return at once (0 after --help / --version, 2 on a usage error).
 */
int ap_parse_args(int argc, char **argv, struct ap_opts *o)
{
	const char *c;
	int opt, rc;

	memset(o, 0, sizeof(*o));
	if (argc < 2) {
		ap_usage(stderr, AP_CMD_NONE);
		return AP_EXIT_USAGE;
	}
	c = argv[1];
	if (!strcmp(c, "--version") || !strcmp(c, "-V")) {
		printf("alignpart %s (libalign %s)\n", OCTANT_VERSION, align_version());
		return 0;
	}
	if (!strcmp(c, "--help") || !strcmp(c, "-h")) {
		ap_usage(stdout, AP_CMD_NONE);
		return 0;
	}
	if (!strcmp(c, "check"))
		o->cmd = AP_CMD_CHECK;
	else if (!strcmp(c, "create"))
		o->cmd = AP_CMD_CREATE;
	else if (!strcmp(c, "suggest"))
		o->cmd = AP_CMD_SUGGEST;
	else if (!strcmp(c, "predict"))
		o->cmd = AP_CMD_PREDICT;
	else if (!strcmp(c, "convert"))
		o->cmd = AP_CMD_CONVERT;
	else
		return usage_err(AP_CMD_NONE, "unknown command '%s'", c);

	optind = 2;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:nrb", longopts, NULL)) != -1) {
		if (opt == '?')
			return usage_err(o->cmd, "unknown option '%s'", argv[optind - 1]);
		if (opt == ':')
			return usage_err(o->cmd, "option '%s' needs a value", argv[optind - 1]);
		if (!opt_allowed(o->cmd, opt))
			return usage_err(o->cmd, "option '%s' does not apply here", argv[optind - 1]);
		switch (opt) {
		case OPT_JSON:     o->json = true; break;
		case OPT_OUTPUT:   o->columns = optarg; break;
		case OPT_NOHEAD:   o->noheadings = true; break;
		case OPT_RAW:      o->raw = true; break;
		case OPT_BYTES:    o->bytes = true; break;
		case OPT_TOPOLOGY: o->topology = optarg; break;
		case OPT_PROFILE:  o->profile = optarg; break;
		case OPT_LABEL:
			if (strcmp(optarg, "gpt") && strcmp(optarg, "dos"))
				return usage_err(o->cmd, "--label must be gpt or dos, not '%s'", optarg);
			o->label = optarg;
			break;
		case OPT_PART:
			if (o->nparts >= AP_MAX_PARTS)
				return usage_err(o->cmd, "too many --part options%s", NULL);
			o->part_spec[o->nparts++] = optarg;
			break;
		case OPT_START:
			rc = parse_lba(optarg, &o->start);
			if (rc == -ERANGE)
				return usage_err(o->cmd, "--start: %s is out of range (at most 9223372036854775807)", optarg);
			if (rc)
				return usage_err(o->cmd, "--start: '%s' is not an LBA (a whole number of sectors)", optarg);
			o->have_start = true;
			break;
		case OPT_TO:
		case OPT_FROM:
			if (parse_sector_size(optarg, opt == OPT_TO ? &o->to_sector
					      : &o->from_sector))
				return usage_err(o->cmd, opt == OPT_TO ?
						 "--to: '%s' is not a sector size (512, 1024, 2048, 4096, ... 65536)" :
						 "--from: '%s' is not a sector size (512, 1024, 2048, 4096, ... 65536)",
						 optarg);
			break;
		case OPT_SCRIPT:   o->script = optarg; break;
		case OPT_NOACT:    o->no_act = true; break;
		case OPT_FORCE:    o->force = true; break;
		case OPT_HELP:
			ap_usage(stdout, o->cmd);
			return 0;
		case OPT_VERSION:
			printf("alignpart %s (libalign %s)\n", OCTANT_VERSION, align_version());
			return 0;
		}
	}
	if (optind >= argc)
		return usage_err(o->cmd, "missing TARGET%s", NULL);
	if (optind + 1 < argc)
		return usage_err(o->cmd, "unexpected argument '%s'", argv[optind + 1]);
	o->target = argv[optind];
	if (o->profile && !align_profile_get(o->profile))
		return usage_err(o->cmd, "unknown profile '%s'", o->profile);
	if (o->cmd == AP_CMD_CONVERT && !o->to_sector)
		return usage_err(o->cmd, "--to 512|4096 is required%s", NULL);
	if (o->cmd == AP_CMD_CREATE) {
		if (o->script && o->nparts)
			return usage_err(o->cmd, "--script and --part exclude each other%s", NULL);
		if (!o->script && !o->nparts)
			return usage_err(o->cmd, "nothing to create: give --part SIZE[:TYPE] or --script FILE%s", NULL);
		if (!o->label && !o->script)
			return usage_err(o->cmd, "--label gpt|dos is required%s", NULL);
	}
	return -1;
}
