/* SPDX-License-Identifier: MIT */
/* alignpart check: audit the alignment of an existing partition table. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libfdisk/libfdisk.h>
#include <libsmartcols/libsmartcols.h>

#include "ap-map.h"
#include "ap.h"

#define MIB (1024ULL * 1024ULL)

enum { C_NR, C_START, C_END, C_SECTORS, C_SIZE, C_TYPE, C_ALIGNED, C_MIB,
       C_ERASE, C_ENDAL, C_OFFSET, C_VERDICT, C_WHY, C_NCOLS };

static const struct ap_col cols[C_NCOLS] = {
	[C_NR]      = { "nr",            NULL,           SCOLS_JSON_NUMBER, true },
	[C_START]   = { "start",         "start_sector", SCOLS_JSON_NUMBER, true },
	[C_END]     = { "end",           "end_sector",   SCOLS_JSON_NUMBER, true },
	[C_SECTORS] = { "sectors",       "size_sectors", SCOLS_JSON_NUMBER, true },
	[C_SIZE]    = { "size",          "size_bytes",   SCOLS_JSON_NUMBER, true },
	[C_TYPE]    = { "type",          NULL,           SCOLS_JSON_STRING, false },
	[C_ALIGNED] = { "aligned",       NULL,           SCOLS_JSON_BOOLEAN, false },
	[C_MIB]     = { "mib_aligned",   NULL,           SCOLS_JSON_BOOLEAN, false },
	[C_ERASE]   = { "erase_aligned", NULL,           SCOLS_JSON_BOOLEAN_OPTIONAL, false },
	[C_ENDAL]   = { "end_aligned",   NULL,           SCOLS_JSON_BOOLEAN, false },
	[C_OFFSET]  = { "kernel_offset", NULL,           SCOLS_JSON_NUMBER, true },
	[C_VERDICT] = { "verdict",       NULL,           SCOLS_JSON_STRING, false },
	[C_WHY]     = { "explanation",   NULL,           SCOLS_JSON_STRING, false },
};

static const char *yn(bool v)
{
	return v ? "yes" : "no";
}

/* Fill the row of partition @p into @buf/@cells; true when misaligned. */
static bool audit(const struct ap_topo *tp, const struct ap_part *p, bool json,
		  const struct ap_doc *doc, char buf[C_NCOLS][96],
		  const char *cells[C_NCOLS])
{
	const struct align_topology *t = &tp->t;
	uint64_t last = p->start + p->size - 1;
	uint32_t off = align_partition_offset(t, p->start);
	bool ok = align_lba_is_aligned(t, p->start);
	const char *unknown = json ? "" : "-";

	snprintf(buf[C_NR], 96, "%zu", p->partno);
	snprintf(buf[C_START], 96, "%" PRIu64, p->start);
	snprintf(buf[C_END], 96, "%" PRIu64, last);
	snprintf(buf[C_SECTORS], 96, "%" PRIu64, p->size);
	ap_doc_size(doc, p->size * t->logical, buf[C_SIZE], 96);
	snprintf(buf[C_TYPE], 96, "%s", p->type_name);
	for (int i = 0; i < C_NCOLS; i++)
		cells[i] = buf[i];
	if (p->container) {
		cells[C_ALIGNED] = cells[C_MIB] = cells[C_ENDAL] = json ? "no" : "-";
		cells[C_ERASE] = unknown;
		cells[C_OFFSET] = "0";
		cells[C_VERDICT] = "container";
		cells[C_WHY] = "holds logical partitions; not checked";
		return false;
	}
	cells[C_ALIGNED] = yn(ok);
	cells[C_MIB] = yn(align_lba_is_grain_aligned(t, p->start, MIB));
	cells[C_ERASE] = t->erase_block
		? yn(align_lba_is_grain_aligned(t, p->start, t->erase_block)) : unknown;
	cells[C_ENDAL] = yn(align_end_is_aligned(t, last));
	if (off == UINT32_MAX)
		snprintf(buf[C_OFFSET], 96, "-1");
	else
		snprintf(buf[C_OFFSET], 96, "%u", off);
	cells[C_VERDICT] = ok ? "aligned" : "MISALIGNED";
	align_explain(t, p->start, buf[C_WHY], 96);
	return !ok;
}

/* alignpart check TARGET: exit 0 when every partition is physically
 * aligned, 1 when any is not, >= 2 on errors. */
int ap_cmd_check(const struct ap_opts *o)
{
	struct ap_part *parts = NULL;
	struct fdisk_context *cxt = NULL;
	struct libscols_table *tb = NULL;
	struct ap_doc *doc = NULL;
	struct ap_topo tp;
	const char *label = NULL;
	size_t n = 0, bad = 0, checked = 0, nmapped = 0;
	char buf[C_NCOLS][96], gbuf[32];
	int kdiff = 0;
	const char *cells[C_NCOLS];
	int rc;

	rc = ap_cols_check(o, cols, C_NCOLS);
	if (!rc)
		rc = ap_topo_resolve(o, &tp);
	if (rc)
		return rc;
	if (tp.is_image)
		return ap_fail(AP_EXIT_USAGE,
			       "%s is an octant flash image, not a disk: check the device ublk-flash serves from it",
			       o->target);
	parts = calloc(AP_MAX_PARTS, sizeof(*parts));
	doc = ap_doc_new(o);
	if (!parts || !doc) {
		rc = ap_fail(AP_EXIT_IO, "out of memory");
		goto out;
	}
	rc = ap_fdisk_open(&tp, o->target, -1, true, &cxt);
	if (!rc)
		rc = ap_fdisk_read(cxt, parts, &n, &label);
	if (rc)
		goto out;

	tb = ap_table_new(doc, "partitions");
	if (!tb) {
		rc = ap_fail(AP_EXIT_IO, "out of memory");
		goto out;
	}
	ap_table_cols(doc, tb, cols, C_NCOLS);
	for (size_t i = 0; i < n; i++) {
		if (audit(&tp, &parts[i], o->json, doc, buf, cells))
			bad++;
		if (!parts[i].container)
			checked++;
		ap_table_row(doc, tb, cells);
	}

	/* Partitions mapped with `alignpart map`: does the kernel agree? */
	if (tp.is_blockdev) {
		kdiff = ap_map_verify(o->target, &tp.t, false, &nmapped);
		if (kdiff < 0) {        /* no device-mapper here: nothing mapped */
			kdiff = 0;
			nmapped = 0;
		}
	}
	ap_doc_kv(doc, "target", SCOLS_JSON_STRING, "%s", o->target);
	ap_doc_kv(doc, "label", SCOLS_JSON_STRING, "%s", label);
	ap_doc_kv(doc, "topology", SCOLS_JSON_STRING, "%s", tp.desc);
	ap_topo_doc_source(doc, &tp);
	ap_doc_kv(doc, "logical", SCOLS_JSON_NUMBER, "%u", tp.t.logical);
	ap_doc_kv(doc, "physical", SCOLS_JSON_NUMBER, "%u", tp.t.physical);
	ap_doc_kv(doc, "alignment_offset", SCOLS_JSON_NUMBER, "%u", tp.t.alignment_offset);
	if (o->json)   /* a number of bytes, null when unknown */
		ap_doc_kv(doc, "erase_block_bytes", SCOLS_JSON_NUMBER, "%s",
			  tp.t.erase_block ? ap_doc_size(doc, tp.t.erase_block, gbuf,
							 sizeof(gbuf)) : "");
	else
		ap_doc_kv(doc, "erase_block", SCOLS_JSON_STRING, "%s",
			  tp.t.erase_block ? ap_doc_size(doc, tp.t.erase_block, gbuf,
							 sizeof(gbuf)) : "unknown");
	ap_doc_kv(doc, "partitions", SCOLS_JSON_NUMBER, "%zu", checked);
	ap_doc_kv(doc, "misaligned", SCOLS_JSON_NUMBER, "%zu", bad);
	ap_doc_kv(doc, "verdict", SCOLS_JSON_STRING, "%s",
		  bad ? "MISALIGNED" : "aligned");
	if (nmapped) {
		ap_doc_kv(doc, "mapped_partitions", SCOLS_JSON_NUMBER, "%zu", nmapped);
		ap_doc_kv(doc, "kernel_disagrees", SCOLS_JSON_NUMBER, "%d", kdiff);
	}
	ap_doc_end_record(doc, "device");
	ap_doc_table(doc, tb);
	if (!o->json) {
		if (bad)
			printf("\n%zu of %zu partitions are not physically aligned "
			       "(a partition is aligned when start %% granularity == lowest aligned LBA).\n",
			       bad, checked);
		else
			printf("\nall %zu partitions are physically aligned.\n", checked);
	}
	rc = ap_doc_print(doc);
	if (!rc && nmapped && !o->json) {
		printf("\nmapped partitions, predicted vs kernel alignment_offset:\n");
		ap_map_verify(o->target, &tp.t, true, NULL);
	}
	if (kdiff > 0)
		fprintf(stderr, "alignpart: warning: the kernel reports a different "
			"alignment_offset than predicted for %d mapped partition%s\n",
			kdiff, kdiff > 1 ? "s" : "");
	if (!rc && bad)
		rc = AP_EXIT_MISALIGNED;
out:
	if (tb)
		scols_unref_table(tb);
	ap_fdisk_close(cxt);
	ap_doc_free(doc);
	free(parts);
	return rc;
}
