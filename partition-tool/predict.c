/* SPDX-License-Identifier: MIT */
/*
 * alignpart predict: what sfdisk / fdisk, parted, sgdisk, mkfs.xfs and
 * mke2fs will do to the target (libalign's models of each tool, fed the
 * topology the tool reads), judged on the medium's topology next to
 * alignpart's own choice, with the tool's own words and, where it
 * misaligns, fails or refuses, a command that avoids it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libsmartcols/libsmartcols.h>

#include "ap.h"

enum { C_TOOL, C_LABEL, C_START, C_GRID, C_GRAIN, C_GOFF, C_OFFSET, C_ALIGNED,
       C_ONGRAIN, C_EXIT, C_VERDICT, C_STRIPE, C_SU, C_SW, C_BS, C_SAYS,
       C_AVOID, C_COMMAND, C_NCOLS };

static const struct ap_col cols[C_NCOLS] = {
	[C_TOOL]    = { "tool",          NULL,                   SCOLS_JSON_STRING, false, false },
	[C_LABEL]   = { "label",         NULL,                   SCOLS_JSON_STRING, false, false },
	[C_START]   = { "start",         "start_sector",         SCOLS_JSON_NUMBER, true, false },
	[C_GRID]    = { "grid",          NULL,                   SCOLS_JSON_STRING, true, false },
	[C_GRAIN]   = { "grain",         "grain_sectors",        SCOLS_JSON_NUMBER, true, true },
	[C_GOFF]    = { "grain_offset",  "grain_offset_sectors", SCOLS_JSON_NUMBER, true, true },
	[C_OFFSET]  = { "kernel_offset", NULL,                   SCOLS_JSON_NUMBER, true, false },
	[C_ALIGNED] = { "aligned",       NULL,                   SCOLS_JSON_BOOLEAN, false, false },
	[C_ONGRAIN] = { "on_grain",      NULL,                   SCOLS_JSON_BOOLEAN_OPTIONAL, false, false },
	[C_EXIT]    = { "exit",          "exit_status",          SCOLS_JSON_NUMBER, true, false },
	[C_VERDICT] = { "verdict",       NULL,                   SCOLS_JSON_STRING, false, false },
	[C_STRIPE]  = { "stripe",        NULL,                   SCOLS_JSON_STRING, false, true },
	[C_SU]      = { "stripe_unit",   "stripe_unit_bytes",    SCOLS_JSON_NUMBER, true, true },
	[C_SW]      = { "stripe_width",  "stripe_width_bytes",   SCOLS_JSON_NUMBER, true, true },
	[C_BS]      = { "block_size",    "block_size_bytes",     SCOLS_JSON_NUMBER, true, true },
	[C_SAYS]    = { "says",          NULL,                   SCOLS_JSON_STRING, false, true },
	[C_AVOID]   = { "avoid",         NULL,                   SCOLS_JSON_STRING, false, true },
	[C_COMMAND] = { "command",       NULL,                   SCOLS_JSON_STRING, false, true },
};

#define PRED_LINE 2304   /* a command: two quoted paths and some words */

/* One row of the report. */
struct row {
	const char *tool;          /* "sfdisk", "parted 0%", "mkfs.xfs", ... */
	int label;                 /* ALIGN_LABEL_*, -1 for mkfs */
	bool mkfs;
	struct align_tool_result r;
	char command[PRED_LINE];
	char avoid[PRED_LINE];
	bool aligned, on_grain, misaligned;
	char verdict[32];
};

struct predict {
	const struct ap_opts *o;
	struct ap_topo tp;             /* the medium: alignpart's topology */
	struct align_topology seen;    /* what the tools read */
	const struct align_topology *kern;  /* what sysfs will report from */
	char seen_desc[160];
	char dev[1024];                /* the target, quoted for a shell */
	uint64_t ap_start[2];          /* alignpart's first partition, seen LBAs */
};

/* @s quoted for a POSIX shell when it needs it ('it'\''s'). */
static void shell_quote(const char *s, char *buf, size_t len)
{
	size_t n = 0;
	bool plain = *s != 0;

	for (const char *p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789/._-+:=@,%", *p))
			plain = false;
	if (plain) {
		snprintf(buf, len, "%s", s);
		return;
	}
	if (len < 3) {
		*buf = 0;
		return;
	}
	buf[n++] = '\'';
	for (; *s && n + 6 < len; s++) {
		if (*s == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *s;
		}
	}
	buf[n++] = '\'';
	buf[n] = 0;
}

static const char *label_name(int label)
{
	return label == ALIGN_LABEL_GPT ? "gpt" : "dos";
}

/* The topology the tools read: --topology (a disk reporting it), a block
 * device's queue limits (the kernel's, also for a device ublk-flash
 * serves), nothing for a plain file (512-byte sectors, no hints). */
static void seen_topology(struct predict *p)
{
	const struct ap_opts *o = p->o;
	struct align_topology k;

	p->seen = p->tp.t;
	p->kern = &p->tp.t;
	if (o->topology) {
		p->seen.source = ALIGN_SRC_OVERRIDE;
	} else if (p->tp.is_blockdev) {
		if (align_topology_from_device(o->target, &k) == 0) {
			k.source = ALIGN_SRC_DEVICE;
			p->seen = k;
		}
		p->kern = &p->seen;
	} else {
		memset(&p->seen, 0, sizeof(p->seen));
		p->seen.logical = 512;
		p->seen.size = p->tp.t.size;
		p->seen.source = ALIGN_SRC_NONE;
	}
	if (!p->tp.is_blockdev && !o->topology)
		snprintf(p->seen_desc, sizeof(p->seen_desc),
			 "512-byte sectors, no topology (a plain file)");
	else if (align_topology_describe(&p->seen, p->seen_desc,
					 sizeof(p->seen_desc)) < 0)
		snprintf(p->seen_desc, sizeof(p->seen_desc), "?");
}

/* Is LBA @lba of the tools (seen sectors) physically aligned on the medium,
 * and on alignpart's grain? */
static void judge(const struct predict *p, uint64_t lba, bool *aligned,
		  bool *on_grain)
{
	uint64_t byte = lba * p->seen.logical, ml = p->tp.t.logical;

	*aligned = *on_grain = false;
	if (byte % ml)
		return;
	*aligned = align_lba_is_aligned(&p->tp.t, byte / ml);
	*on_grain = align_lba_is_grain_aligned(&p->tp.t, byte / ml, p->tp.grain);
}

/* The avoid command of a partitioning tool: alignpart's start, given to
 * the tool the way it keeps it. */
static void avoid_partitioner(const struct predict *p, struct row *w)
{
	uint64_t s = p->ap_start[w->label];
	const char *l = label_name(w->label);

	if (!strcmp(w->tool, "sfdisk") && w->label == ALIGN_LABEL_GPT)
		/* sfdisk's GPT keeps its first usable LBA at 2048: lower it */
		snprintf(w->avoid, sizeof(w->avoid),
			 "printf 'label: gpt\\nfirst-lba: %" PRIu64 "\\nstart=%" PRIu64
			 "\\n' | sfdisk %s", (uint64_t)(2 + 16384 / p->seen.logical), s, p->dev);
	else if (!strcmp(w->tool, "sfdisk"))
		snprintf(w->avoid, sizeof(w->avoid),
			 "printf 'label: %s\\nstart=%" PRIu64 "\\n' | sfdisk %s",
			 l, s, p->dev);
	else if (!strncmp(w->tool, "parted", 6))
		snprintf(w->avoid, sizeof(w->avoid),
			 "parted -s -a minimal %s mklabel %s mkpart primary %" PRIu64 "s 100%%",
			 p->dev, w->label == ALIGN_LABEL_GPT ? "gpt" : "msdos", s);
	else if (!strcmp(w->tool, "sgdisk"))
		snprintf(w->avoid, sizeof(w->avoid),
			 "sgdisk -a 1 -n 1:%" PRIu64 ":0 %s", s, p->dev);
}

static void finish_row(const struct predict *p, struct row *w)
{
	if (w->mkfs) {
		/* the device itself: is its LBA 0 aligned on the medium? */
		judge(p, 0, &w->aligned, &w->on_grain);
		w->misaligned = !w->r.refuses && !w->aligned;
		snprintf(w->verdict, sizeof(w->verdict), "%s%s",
			 w->r.refuses ? "REFUSES" : !w->aligned ? "MISALIGNED" :
			 w->r.warns ? "warns" : "ok",
			 !w->r.refuses && !w->aligned && w->r.warns ? ", warns" : "");
		if (w->r.refuses || !w->aligned || (w->r.warns && p->seen.alignment_offset))
			snprintf(w->avoid, sizeof(w->avoid),
				 "make the filesystem on a partition: alignpart create %s "
				 "--label gpt --part rest", p->dev);
		return;
	}
	if (w->r.refuses) {
		snprintf(w->verdict, sizeof(w->verdict), "FAILS");
	} else {
		judge(p, w->r.start, &w->aligned, &w->on_grain);
		w->misaligned = !w->aligned;
		snprintf(w->verdict, sizeof(w->verdict), "%s%s",
			 w->aligned ? "aligned" : "MISALIGNED",
			 w->r.warns ? ", warns" : "");
	}
	if (strcmp(w->tool, "alignpart") &&
	    (w->r.refuses || w->misaligned || w->r.warns))
		avoid_partitioner(p, w);
}

static int add_partitioners(struct predict *p, struct row *rows, size_t *n)
{
	static const char *const parted_starts[] = { "1MiB", "0%" };
	const char *only = p->o->label;

	for (int label = ALIGN_LABEL_DOS; label <= ALIGN_LABEL_GPT; label++) {
		const char *l = label_name(label);
		uint64_t first, last, s;
		struct row *w;
		int rc;

		if (only && strcmp(only, l))
			continue;
		/* alignpart's own choice, as suggest gives it */
		rc = ap_fdisk_usable(&p->tp, l, &first, &last);
		if (rc)
			return rc;
		s = align_profile_first_lba(p->tp.profile, &p->tp.t, first);
		if (s == UINT64_MAX || s > last)
			return ap_fail(AP_EXIT_USAGE, "no aligned LBA fits a %s table on %s",
				       l, p->tp.desc);
		s = s * p->tp.t.logical / p->seen.logical;
		p->ap_start[label] = s;
		w = &rows[(*n)++];
		w->tool = "alignpart";
		w->label = label;
		w->r.start = s;
		w->r.grain = p->tp.grain / p->seen.logical;
		w->r.grain_offset = w->r.grain ? s % w->r.grain : 0;
		w->r.end = UINT64_MAX;
		snprintf(w->command, sizeof(w->command),
			 "alignpart create %s --label %s%s%s --part rest", p->dev, l,
			 p->tp.profile_named ? " --profile " : "",
			 p->tp.profile_named ? p->tp.profile->name : "");

		w = &rows[(*n)++];
		w->tool = "sfdisk";
		w->label = label;
		if (align_predict_fdisk(&p->seen, label, &w->r) < 0)
			return ap_fail(AP_EXIT_USAGE, "%s is too small for a %s table", p->o->target, l);
		snprintf(w->command, sizeof(w->command),
			 "printf 'label: %s\\n,\\n' | sfdisk %s", l, p->dev);

		for (size_t i = 0; i < 2; i++) {
			w = &rows[(*n)++];
			w->tool = i ? "parted 0%" : "parted 1MiB";
			w->label = label;
			if (align_predict_parted(&p->seen, label, parted_starts[i],
						 "100%", &w->r) < 0)
				return ap_fail(AP_EXIT_USAGE, "%s is too small for a %s table",
					       p->o->target, l);
			snprintf(w->command, sizeof(w->command),
				 "parted -s -a optimal %s mklabel %s mkpart primary %s 100%%",
				 p->dev, label == ALIGN_LABEL_GPT ? "gpt" : "msdos",
				 parted_starts[i]);
		}
		if (label == ALIGN_LABEL_GPT) {
			w = &rows[(*n)++];
			w->tool = "sgdisk";
			w->label = label;
			if (align_predict_sgdisk(&p->seen, &w->r) < 0)
				return ap_fail(AP_EXIT_USAGE, "%s is too small for a gpt table",
					       p->o->target);
			snprintf(w->command, sizeof(w->command), "sgdisk -n 1:0:0 %s", p->dev);
		}
	}
	return 0;
}

static void add_mkfs(struct predict *p, struct row *rows, size_t *n)
{
	struct row *w = &rows[(*n)++];

	w->tool = "mkfs.xfs";
	w->label = -1;
	w->mkfs = true;
	align_predict_mkfs_xfs(&p->seen, &w->r);
	snprintf(w->command, sizeof(w->command), "mkfs.xfs %s", p->dev);

	w = &rows[(*n)++];
	w->tool = "mke2fs";
	w->label = -1;
	w->mkfs = true;
	align_predict_mke2fs(&p->seen, &w->r);
	snprintf(w->command, sizeof(w->command), "mke2fs -t ext4 %s", p->dev);
}

static void fill_cells(const struct predict *p, const struct row *w,
		       char buf[C_NCOLS][PRED_LINE],
		       const char *cells[C_NCOLS])
{
	const char *none = p->o->json ? "" : "-";
	bool part = !w->mkfs && !w->r.refuses;
	uint32_t off;
	char a[32], b[32];

	for (int i = 0; i < C_NCOLS; i++) {
		cells[i] = buf[i];
		buf[i][0] = 0;
	}
	snprintf(buf[C_TOOL], PRED_LINE, "%s", w->tool);
	snprintf(buf[C_LABEL], PRED_LINE, "%s", w->mkfs ? none : label_name(w->label));
	if (part)
		snprintf(buf[C_START], PRED_LINE, "%" PRIu64, w->r.start);
	else
		cells[C_START] = none;
	if (!w->mkfs) {
		snprintf(buf[C_GRID], PRED_LINE, "%" PRIu64 " mod %" PRIu64,
			 w->r.grain_offset, w->r.grain);
		snprintf(buf[C_GRAIN], PRED_LINE, "%" PRIu64, w->r.grain);
		snprintf(buf[C_GOFF], PRED_LINE, "%" PRIu64, w->r.grain_offset);
	} else {
		cells[C_GRID] = cells[C_GRAIN] = cells[C_GOFF] = none;
	}
	/* what sysfs will show: the partition's alignment_offset, or the
	 * device's own for mkfs */
	if (w->mkfs)
		off = p->kern->misaligned ? UINT32_MAX : p->kern->alignment_offset;
	else if (part)
		off = align_partition_offset(p->kern, w->r.start * p->seen.logical /
					     p->kern->logical);
	else
		off = 0;
	if (!w->mkfs && !part)
		cells[C_OFFSET] = none;
	else if (off == UINT32_MAX)
		snprintf(buf[C_OFFSET], PRED_LINE, "-1");
	else
		snprintf(buf[C_OFFSET], PRED_LINE, "%u", off);
	if (!w->mkfs && !part) {
		cells[C_ALIGNED] = cells[C_ONGRAIN] = p->o->json ? "" : "-";
		if (p->o->json)
			cells[C_ALIGNED] = "false";
	} else {
		cells[C_ALIGNED] = w->aligned ? "yes" : "no";
		cells[C_ONGRAIN] = w->mkfs ? none : w->on_grain ? "yes" : "no";
	}
	snprintf(buf[C_EXIT], PRED_LINE, "%d", w->r.exit_status);
	snprintf(buf[C_VERDICT], PRED_LINE, "%s", w->verdict);
	if (w->mkfs && !w->r.refuses) {
		snprintf(buf[C_STRIPE], PRED_LINE, "%s/%s",
			 w->r.stripe_unit ? ap_human_size(w->r.stripe_unit, a, sizeof(a)) : "0",
			 w->r.stripe_width ? ap_human_size(w->r.stripe_width, b, sizeof(b)) : "0");
		snprintf(buf[C_SU], PRED_LINE, "%" PRIu64, w->r.stripe_unit);
		snprintf(buf[C_SW], PRED_LINE, "%" PRIu64, w->r.stripe_width);
		snprintf(buf[C_BS], PRED_LINE, "%u", w->r.block_size);
	} else {
		cells[C_STRIPE] = cells[C_SU] = cells[C_SW] = cells[C_BS] = none;
	}
	snprintf(buf[C_SAYS], PRED_LINE, "%s", w->r.says[0] ? w->r.says : none);
	snprintf(buf[C_AVOID], PRED_LINE, "%s", w->avoid[0] ? w->avoid : none);
	snprintf(buf[C_COMMAND], PRED_LINE, "%s", w->command);
}

/* Below the readable table: each command, what it says, how to avoid it. */
static void print_details(const struct row *rows, size_t n)
{
	putchar('\n');
	for (size_t i = 0; i < n; i++) {
		const struct row *w = &rows[i];

		printf("%s%s%s: %s\n", w->tool, w->mkfs ? "" : " ",
		       w->mkfs ? "" : label_name(w->label), w->command);
		if (w->r.says[0])
			printf("    says:  %s\n", w->r.says);
		if (w->avoid[0])
			printf("    avoid: %s\n", w->avoid);
	}
}

/* alignpart predict TARGET: 0, 1 when some tool would misalign. */
int ap_cmd_predict(const struct ap_opts *o)
{
	struct libscols_table *tb = NULL;
	struct ap_doc *doc = NULL;
	struct predict *p = calloc(1, sizeof(*p));
	struct row *rows = calloc(16, sizeof(*rows));
	char buf[C_NCOLS][PRED_LINE], g[32];
	const char *cells[C_NCOLS];
	size_t n = 0, bad = 0;
	int rc;

	if (!p || !rows) {
		rc = ap_fail(AP_EXIT_IO, "out of memory");
		goto out;
	}
	p->o = o;
	rc = ap_cols_check(o, cols, C_NCOLS);
	if (!rc)
		rc = ap_topo_resolve(o, &p->tp);
	if (rc)
		goto out;
	if (p->tp.is_image) {
		rc = ap_fail(AP_EXIT_USAGE,
			     "%s is an octant flash image, not a disk: predict the device ublk-flash serves from it",
			     o->target);
		goto out;
	}
	shell_quote(o->target, p->dev, sizeof(p->dev));
	seen_topology(p);
	rc = add_partitioners(p, rows, &n);
	if (rc)
		goto out;
	add_mkfs(p, rows, &n);
	for (size_t i = 0; i < n; i++) {
		finish_row(p, &rows[i]);
		if (rows[i].misaligned && strcmp(rows[i].tool, "alignpart"))
			bad++;
	}

	doc = ap_doc_new(o);
	tb = doc ? ap_table_new(doc, "predictions") : NULL;
	if (!tb) {
		rc = ap_fail(AP_EXIT_IO, "out of memory");
		goto out;
	}
	ap_table_cols(doc, tb, cols, C_NCOLS);
	for (size_t i = 0; i < n; i++) {
		fill_cells(p, &rows[i], buf, cells);
		if (ap_table_row(doc, tb, cells) < 0) {
			rc = ap_fail(AP_EXIT_IO, "out of memory");
			goto out;
		}
	}
	ap_doc_kv(doc, "target", SCOLS_JSON_STRING, "%s", o->target);
	ap_doc_kv(doc, "topology", SCOLS_JSON_STRING, "%s", p->tp.desc);
	ap_topo_doc_source(doc, &p->tp);
	ap_doc_kv(doc, "tools_see", SCOLS_JSON_STRING, "%s", p->seen_desc);
	ap_doc_kv(doc, "profile", SCOLS_JSON_STRING, "%s", p->tp.profile->name);
	if (!o->json)
		ap_doc_kv(doc, "grain", SCOLS_JSON_STRING, "%s",
			  ap_doc_size(doc, p->tp.grain, g, sizeof(g)));
	ap_doc_kv(doc, "grain_bytes", SCOLS_JSON_NUMBER, "%" PRIu64, p->tp.grain);
	ap_doc_kv(doc, "misaligning_tools", SCOLS_JSON_NUMBER, "%zu", bad);
	ap_doc_end_record(doc, "device");
	ap_doc_table(doc, tb);
	rc = ap_doc_print(doc);
	if (!rc && !o->json && !o->columns && !o->noheadings && !o->raw)
		print_details(rows, n);
	if (!rc && bad)
		rc = AP_EXIT_MISALIGNED;
out:
	if (tb)
		scols_unref_table(tb);
	ap_doc_free(doc);
	free(rows);
	free(p);
	return rc;
}
