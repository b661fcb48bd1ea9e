/* SPDX-License-Identifier: MIT */
/*
 * ublk-flash list [--json] [-o COLS] [-n] [-r]: every served device from
 * the run registry (serve.h), live or not, in a libsmartcols table like
 * lsblk's; --json through the one JSON writer (common/oct-json.h) with
 * raw numbers.
 */
#include <errno.h>
#include <getopt.h>
#include <libsmartcols.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "ftl-set.h"
#include "oct-fmt.h"
#include "oct-json.h"
#include "serve.h"
#include "zoned.h"

/* What list knows of one entry, raw (JSON) and as text (the table). */
struct list_row {
	const struct serve_entry *e;
	const char *state;
	bool has_info;
	bool zoned;              /* a zoned image (no FTL): its size below */
	uint64_t zsize;
	struct ftl_info info;
	uint64_t start;             /* unix seconds the device went live */
	uint64_t uptime;            /* seconds, 0 when not running */
};

enum list_kind { LK_STR, LK_U64, LK_OPT_STR };

struct list_col {
	const char *name;           /* table heading; JSON key in lower case */
	const char *help;
	double whint;
	int flags;                  /* SCOLS_FL_* */
	enum list_kind kind;
	bool dflt;                  /* shown without -o */
};

enum { C_DEVICE, C_IMAGE, C_MODE, C_SIZE, C_FRONTEND, C_DM, C_PID, C_STATE,
       C_UPTIME, C_STARTED, C_RUNDIR, C_PI, C_NCOLS };

static const struct list_col list_cols[C_NCOLS] = {
	[C_DEVICE]   = { "DEVICE", "block device served (/dev/loopN, /dev/ublkbN)", 0.1, 0, LK_OPT_STR, true },
	[C_IMAGE]    = { "IMAGE", "image file or device served", 0.4, SCOLS_FL_TRUNC, LK_STR, true },
	[C_MODE]     = { "MODE", "alignment mode of the image: odd or 1m, zoned for a zoned image", 0.05, 0, LK_OPT_STR, true },
	[C_SIZE]     = { "SIZE", "logical size (JSON: bytes)", 0.05, SCOLS_FL_RIGHT, LK_U64, false },
	[C_FRONTEND] = { "FRONTEND", "fuse (FUSE + loop) or ublk", 0.05, 0, LK_STR, true },
	[C_DM]       = { "DM", "name of the dm-linear device stacked on it (serve option dm)", 0.1, 0, LK_OPT_STR, true },
	[C_PID]      = { "PID", "server process", 0.05, SCOLS_FL_RIGHT, LK_U64, true },
	[C_STATE]    = { "STATE", "running, dead (server gone), stale (its device number is another's now), lost (server alive, device not its own)", 0.05, 0, LK_STR, true },
	[C_UPTIME]   = { "UPTIME", "time since the device went live (JSON: seconds)", 0.05, SCOLS_FL_RIGHT, LK_U64, true },
	[C_STARTED]  = { "STARTED", "when the device went live, ISO 8601 (JSON: unix seconds)", 0.1, 0, LK_U64, false },
	[C_RUNDIR]   = { "RUNDIR", "the entry's folder in the run registry", 0.2, 0, LK_STR, false },
	[C_PI]       = { "PI", "protection information of the image: t10dif or none", 0.05, 0, LK_OPT_STR, false },
};

/* "running", "dead", "stale" or "lost" (see list_cols). */
static const char *list_state(const struct serve_entry *e)
{
	bool own = serve_entry_verify(e);

	if (e->live)
		return own ? "running" : "lost";
	return own ? "dead" : "stale";
}

static void list_row_fill(struct list_row *r, const struct serve_entry *e)
{
	static _Thread_local struct ftl_set_info si_buf; /* off the stack */
	struct ftl_set_info *si = &si_buf;
	char p[PATH_MAX];
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->e = e;
	r->state = list_state(e);
	r->has_info = ftl_set_info_read(e->image, si) == 0;
	if (r->has_info)
		r->info = si->set;
	r->zoned = !r->has_info && zn_image_disk(e->image, &r->zsize) == 1;
	snprintf(p, sizeof(p), "%s/pid", e->dir);
	if (stat(p, &st) == 0)
		r->start = (uint64_t)st.st_mtime;
	if (e->live && r->start) {
		time_t now = time(NULL);
		r->uptime = (uint64_t)now > r->start ? (uint64_t)now - r->start : 0;
	}
}

/* Column @c of @r: a string (NULL: none), or a number in *num. */
static const char *list_value(const struct list_row *r, int c, uint64_t *num,
			      char *buf, size_t len)
{
	const struct serve_entry *e = r->e;
	const char *dm;

	*num = 0;
	switch (c) {
	case C_DEVICE:   return e->dev[0] ? e->dev : NULL;
	case C_IMAGE:    return e->image;
	case C_MODE:
		return r->zoned ? "zoned" : !r->has_info ? NULL :
		       r->info.align == FTL_ALIGN_ODD ? "odd" : "1m";
	case C_SIZE:
		*num = r->zoned ? r->zsize : r->has_info ? r->info.logical_size : 0;
		return r->zoned || r->has_info ? oct_fmt_size(*num, buf, len) :
		       NULL;
	case C_FRONTEND: return e->frontend;
	case C_DM:
		dm = strrchr(e->dm, '/');
		return e->dm[0] ? (dm ? dm + 1 : e->dm) : NULL;
	case C_PID:
		*num = (uint64_t)e->pid;
		snprintf(buf, len, "%d", (int)e->pid);
		return buf;
	case C_STATE:    return r->state;
	case C_UPTIME:
		*num = r->uptime;
		return e->live ? oct_fmt_duration(r->uptime, buf, len) : NULL;
	case C_STARTED:
		*num = r->start;
		return r->start ? oct_fmt_time(r->start, buf, len) : NULL;
	case C_RUNDIR:   return e->dir;
	case C_PI:       return !r->has_info ? NULL : r->info.pi ? "t10dif" : "none";
	}
	return NULL;
}

/* -o LIST ("+LIST" adds to the default columns) into @sel; the count, or
 * -1 after "list: unknown column 'X'". */
static int list_parse_cols(const char *spec, int *sel, int max)
{
	int n = 0;
	char *copy, *tok, *save = NULL;

	if (spec[0] == '+') {
		for (int c = 0; c < C_NCOLS; c++)
			if (list_cols[c].dflt)
				sel[n++] = c;
		spec++;
	}
	copy = strdup(spec);
	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int c;
		for (c = 0; c < C_NCOLS; c++)
			if (!strcasecmp(tok, list_cols[c].name))
				break;
		if (c == C_NCOLS) {
			fprintf(stderr, "ublk-flash: list: unknown column '%s' "
				"(see list --help)\n", tok);
			free(copy);
			return -1;
		}
		if (n < max)
			sel[n++] = c;
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "ublk-flash: list: -o: no column named\n");
		return -1;
	}
	return n;
}

static void list_json(const struct list_row *rows, int nrows, const int *sel,
		      int ncol)
{
	struct oct_json j;
	char key[32], buf[64];
	uint64_t num;

	oct_json_init(&j, stdout);
	oct_json_obj(&j, NULL);
	oct_json_arr(&j, "devices");
	for (int i = 0; i < nrows; i++) {
		oct_json_obj(&j, NULL);
		for (int k = 0; k < ncol; k++) {
			const struct list_col *c = &list_cols[sel[k]];
			const char *v = list_value(&rows[i], sel[k], &num, buf,
						   sizeof(buf));
			size_t l;
			for (l = 0; c->name[l] && l + 1 < sizeof(key); l++)
				key[l] = (char)(c->name[l] | 0x20);
			key[l] = '\0';
			if (c->kind == LK_U64)
				oct_json_u64(&j, key, num);
			else if (v)
				oct_json_str(&j, key, v);
			else
				oct_json_null(&j, key);
		}
		oct_json_end(&j);
	}
	oct_json_end(&j);
	oct_json_end(&j);
}

static int list_table(const struct list_row *rows, int nrows, const int *sel,
		      int ncol, bool noheadings, bool raw)
{
	struct libscols_table *tb = scols_new_table();
	char buf[64];
	uint64_t num;
	int err = 0;

	if (!tb)
		return -ENOMEM;
	scols_table_enable_noheadings(tb, noheadings);
	scols_table_enable_raw(tb, raw);
	for (int k = 0; k < ncol && !err; k++) {
		const struct list_col *c = &list_cols[sel[k]];
		if (!scols_table_new_column(tb, c->name, c->whint, c->flags))
			err = -ENOMEM;
	}
	for (int i = 0; i < nrows && !err; i++) {
		struct libscols_line *ln = scols_table_new_line(tb, NULL);
		if (!ln) {
			err = -ENOMEM;
			break;
		}
		for (int k = 0; k < ncol && !err; k++) {
			const char *v = list_value(&rows[i], sel[k], &num, buf,
						   sizeof(buf));
			if (scols_line_set_data(ln, (size_t)k, v ? v : "-"))
				err = -ENOMEM;
		}
	}
	if (!err)
		err = scols_print_table(tb);
	scols_unref_table(tb);
	return err;
}

/* A server whose entry was removed under it writes it again within a
 * second: wait for that (a few seconds at most), else say it is missing. */
static void list_wait_unlisted(void)
{
	char dir[PATH_MAX];
	pid_t pid;

	if (serve_entry_wait_orphans(3000) == 0)
		return;
	pid = serve_entry_orphan(dir, sizeof(dir));
	if (pid > 0)
		fprintf(stderr, "ublk-flash: list: pid %d serves an image whose "
			"run registry entry %s was removed and is not back yet: "
			"not listed\n", (int)pid, dir);
}

static void list_help(void)
{
	printf("Usage: ublk-flash list [--json] [-o COLS] [-n] [-r]\n"
	       "Every device ublk-flash serves (the run registry, %s),\n"
	       "also entries whose server died, with their state.\n"
	       "  -J, --json         one JSON object {\"devices\":[...]}, keys the\n"
	       "                     column names in lower case, raw numbers\n"
	       "  -o, --output COLS  columns, comma-separated (+COLS: added to\n"
	       "                     the default ones)\n"
	       "  -n, --noheadings   no heading line\n"
	       "  -r, --raw          raw output (columns split by one space,\n"
	       "                     unsafe characters escaped as \\xHH)\n"
	       "Columns (* default):\n", plumb_run_base());
	for (int c = 0; c < C_NCOLS; c++)
		printf("  %c %-9s %s\n", list_cols[c].dflt ? '*' : ' ',
		       list_cols[c].name, list_cols[c].help);
	printf("Exit: 0 (also with nothing served); 2 usage; 3 the registry\n"
	       "could not be read.\n");
}

int cmd_list(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "output", required_argument, NULL, 'o' },
		{ "noheadings", no_argument, NULL, 'n' },
		{ "raw", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int sel[64], ncol = 0, c, n, code = 0, unreadable;
	bool json = false, noheadings = false, raw = false;
	struct serve_entry *e = NULL;
	struct list_row *rows = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":Jo:nrh", lo, NULL)) != -1) {
		switch (c) {
		case 'J': json = true; break;
		case 'n': noheadings = true; break;
		case 'r': raw = true; break;
		case 'o':
			ncol = list_parse_cols(optarg, sel, 64);
			if (ncol < 0)
				return EXIT_USAGE;
			break;
		case 'h':
			list_help();
			return 0;
		default:
			return cli_bad_option("list", c, argv);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "ublk-flash: list: unexpected argument '%s'\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (!ncol)
		for (c = 0; c < C_NCOLS; c++)
			if (list_cols[c].dflt)
				sel[ncol++] = c;
	list_wait_unlisted();
	n = plumb_entry_list(&e, &unreadable);
	if (n < 0)
		return cli_fail("list: the run registry", n);
	if (unreadable)
		fprintf(stderr, "ublk-flash: list: %d entr%s of %s not readable by "
			"this user (run as root)\n", unreadable,
			unreadable == 1 ? "y" : "ies", plumb_run_base());
	rows = calloc((size_t)n + 1, sizeof(*rows));
	if (!rows) {
		free(e);
		return cli_fail("list", -ENOMEM);
	}
	for (int i = 0; i < n; i++)
		list_row_fill(&rows[i], &e[i]);
	if (json) {
		list_json(rows, n, sel, ncol);
	} else {
		int err = list_table(rows, n, sel, ncol, noheadings, raw);
		if (err)
			code = cli_fail("list", err);
	}
	free(rows);
	free(e);
	return code;
}
