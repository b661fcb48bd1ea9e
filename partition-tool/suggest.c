/* SPDX-License-Identifier: MIT */
/* alignpart suggest: where the first partition should start, and why. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libsmartcols/libsmartcols.h>

#include "ap.h"

enum { C_LABEL, C_FIRST_USABLE, C_LBA, C_MEDIUM, C_GRAIN_S, C_OFFSET,
       C_ALIGNED, C_WHY, C_REASON, C_NCOLS };

static const struct ap_col cols[C_NCOLS] = {
	[C_LABEL]        = { "label",         NULL,                  SCOLS_JSON_STRING, false },
	[C_FIRST_USABLE] = { "first_usable",  "first_usable_sector", SCOLS_JSON_NUMBER, true },
	[C_LBA]          = { "first_lba",     NULL,                  SCOLS_JSON_NUMBER, true },
	[C_MEDIUM]       = { "medium_byte",   NULL,                  SCOLS_JSON_NUMBER, true },
	[C_GRAIN_S]      = { "grain_sectors", NULL,                  SCOLS_JSON_NUMBER, true },
	[C_OFFSET]       = { "kernel_offset", NULL,                  SCOLS_JSON_NUMBER, true },
	[C_ALIGNED]      = { "aligned",       NULL,                  SCOLS_JSON_BOOLEAN, false },
	[C_WHY]          = { "explanation",   NULL,                  SCOLS_JSON_STRING, false },
	[C_REASON]       = { "reason",        NULL,                  SCOLS_JSON_STRING, false },
};

/* Byte of the physical medium where @lba lives (libalign's model: logical
 * byte x sits at x + (gran - alignment_offset % gran) % gran). */
static uint64_t medium_byte(const struct align_topology *t, uint64_t lba)
{
	uint32_t gran = align_granularity(t);

	return lba * t->logical + (gran - t->alignment_offset % gran) % gran;
}

static int suggest_row(const struct ap_topo *tp, const char *label,
		       struct ap_doc *doc, struct libscols_table *tb)
{
	const struct align_profile *p = tp->profile;
	char buf[C_NCOLS][192], g[32];
	const char *cells[C_NCOLS];
	uint64_t first, last, lba;
	int rc;

	rc = ap_fdisk_usable(tp, label, &first, &last);
	if (rc)
		return rc;
	lba = align_profile_first_lba(p, &tp->t, first);
	if (lba == UINT64_MAX || lba > last)
		return ap_fail(AP_EXIT_USAGE, "no aligned LBA fits a %s table on %s",
			       label, tp->desc);
	ap_human_size(tp->grain, g, sizeof(g));
	for (int i = 0; i < C_NCOLS; i++)
		cells[i] = buf[i];
	snprintf(buf[C_LABEL], sizeof(buf[0]), "%s", label);
	snprintf(buf[C_FIRST_USABLE], sizeof(buf[0]), "%" PRIu64, first);
	snprintf(buf[C_LBA], sizeof(buf[0]), "%" PRIu64, lba);
	snprintf(buf[C_MEDIUM], sizeof(buf[0]), "%" PRIu64, medium_byte(&tp->t, lba));
	snprintf(buf[C_GRAIN_S], sizeof(buf[0]), "%" PRIu64, tp->grain / tp->t.logical);
	if (align_partition_offset(&tp->t, lba) == UINT32_MAX)
		snprintf(buf[C_OFFSET], sizeof(buf[0]), "-1");
	else
		snprintf(buf[C_OFFSET], sizeof(buf[0]), "%u", align_partition_offset(&tp->t, lba));
	cells[C_ALIGNED] = align_lba_is_aligned(&tp->t, lba) ? "yes" : "no";
	align_explain(&tp->t, lba, buf[C_WHY], sizeof(buf[0]));
	if (p->first_lba && p->first_lba >= first && lba == p->first_lba)
		snprintf(buf[C_REASON], sizeof(buf[0]),
			 "profile %s puts the first partition at LBA %" PRIu64 " (medium byte %" PRIu64 ")",
			 p->name, lba, medium_byte(&tp->t, lba));
	else
		snprintf(buf[C_REASON], sizeof(buf[0]),
			 "first LBA >= %" PRIu64 " (after the %s table) on a %s boundary of the medium",
			 first, label, g);
	return ap_table_row(doc, tb, cells) < 0 ? ap_fail(AP_EXIT_IO, "out of memory") : 0;
}

/* alignpart suggest TARGET: first aligned LBA per label, grain, reason. */
int ap_cmd_suggest(const struct ap_opts *o)
{
	struct libscols_table *tb = NULL;
	struct ap_doc *doc = NULL;
	struct ap_topo tp;
	char g[32], e[32];
	int rc;

	rc = ap_cols_check(o, cols, C_NCOLS);
	if (!rc)
		rc = ap_topo_resolve(o, &tp);
	if (rc)
		return rc;
	doc = ap_doc_new(o);
	tb = doc ? ap_table_new(doc, "suggestions") : NULL;
	if (!tb) {
		rc = ap_fail(AP_EXIT_IO, "out of memory");
		goto out;
	}
	ap_table_cols(doc, tb, cols, C_NCOLS);
	if (!o->label || !strcmp(o->label, "dos"))
		rc = suggest_row(&tp, "dos", doc, tb);
	if (!rc && (!o->label || !strcmp(o->label, "gpt")))
		rc = suggest_row(&tp, "gpt", doc, tb);
	if (rc)
		goto out;
	ap_doc_kv(doc, "target", SCOLS_JSON_STRING, "%s", o->target);
	ap_doc_kv(doc, "topology", SCOLS_JSON_STRING, "%s", tp.desc);
	ap_topo_doc_source(doc, &tp);
	ap_doc_kv(doc, "profile", SCOLS_JSON_STRING, "%s", tp.profile->name);
	if (!o->json)
		ap_doc_kv(doc, "grain", SCOLS_JSON_STRING, "%s",
			  ap_doc_size(doc, tp.grain, g, sizeof(g)));
	ap_doc_kv(doc, "grain_bytes", SCOLS_JSON_NUMBER, "%" PRIu64, tp.grain);
	ap_doc_kv(doc, "granularity", SCOLS_JSON_NUMBER, "%u", align_granularity(&tp.t));
	if (o->json)   /* a number of bytes, null when unknown */
		ap_doc_kv(doc, "erase_block_bytes", SCOLS_JSON_NUMBER, "%s",
			  tp.t.erase_block ? ap_doc_size(doc, tp.t.erase_block, e,
							 sizeof(e)) : "");
	else
		ap_doc_kv(doc, "erase_block", SCOLS_JSON_STRING, "%s",
			  tp.t.erase_block ? ap_doc_size(doc, tp.t.erase_block, e,
							 sizeof(e)) : "unknown");
	ap_doc_end_record(doc, "device");
	ap_doc_table(doc, tb);
	rc = ap_doc_print(doc);
out:
	if (tb)
		scols_unref_table(tb);
	ap_doc_free(doc);
	return rc;
}
