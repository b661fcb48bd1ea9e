/* SPDX-License-Identifier: MIT */
/*
 * alignpart create: plan an aligned layout with libalign, build it in
 * libfdisk at exactly those LBAs, and write it — only after every check
 * passed.  Old signatures are wiped after the new table is on disk, so a
 * failed write leaves the old table as it was.
 */
#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libfdisk/libfdisk.h>
#include <libsmartcols/libsmartcols.h>

#include "ap.h"

enum { C_NR, C_START, C_END, C_SECTORS, C_SIZE, C_TYPE, C_ALIGNED, C_OFFSET,
       C_WHY, C_NOTE, C_NCOLS };

static const struct ap_col cols[C_NCOLS] = {
	[C_NR]      = { "nr",            NULL,           SCOLS_JSON_NUMBER, true },
	[C_START]   = { "start",         "start_sector", SCOLS_JSON_NUMBER, true },
	[C_END]     = { "end",           "end_sector",   SCOLS_JSON_NUMBER, true },
	[C_SECTORS] = { "sectors",       "size_sectors", SCOLS_JSON_NUMBER, true },
	[C_SIZE]    = { "size",          "size_bytes",   SCOLS_JSON_NUMBER, true },
	[C_TYPE]    = { "type",          NULL,           SCOLS_JSON_STRING, false },
	[C_ALIGNED] = { "aligned",       NULL,           SCOLS_JSON_BOOLEAN, false },
	[C_OFFSET]  = { "kernel_offset", NULL,           SCOLS_JSON_NUMBER, true },
	[C_WHY]     = { "explanation",   NULL,           SCOLS_JSON_STRING, false },
	[C_NOTE]    = { "note",          NULL,           SCOLS_JSON_STRING, false },
};

/* Loud warnings and notes about the plan, on stderr. */
static void report_plan(const struct ap_topo *tp, const struct ap_part *parts,
			size_t n)
{
	char why[96], g[32];

	ap_human_size(tp->grain, g, sizeof(g));
	for (size_t i = 0; i < n; i++) {
		const struct ap_part *p = &parts[i];

		align_explain(&tp->t, p->start, why, sizeof(why));
		if (p->moved)
			ap_note("partition %zu: start %" PRIu64 " moved to %" PRIu64
				" (profile %s: %s grain)", p->partno, p->wanted,
				p->start, tp->profile->name, g);
		if (!align_lba_is_aligned(&tp->t, p->start)) {
			ap_warn("*** PARTITION %zu STARTS AT LBA %" PRIu64 ", WHICH IS NOT PHYSICALLY ALIGNED "
				"(%s on %u/%u offset %u)%s: every write straddles physical sectors "
				"and costs a read-modify-write ***",
				p->partno, p->start, why, tp->t.logical, tp->t.physical,
				tp->t.alignment_offset,
				p->forced ? ", forced with --start" : "");
		} else if (p->forced &&
			   !align_lba_is_grain_aligned(&tp->t, p->start, tp->grain)) {
			ap_note("partition %zu: --start %" PRIu64 " is physically aligned "
				"but not on the %s grain", p->partno, p->start, g);
		}
	}
}

static int output(const struct ap_opts *o, const struct ap_topo *tp,
		  const char *label, const struct ap_part *parts, size_t n,
		  uint64_t first, uint64_t last)
{
	struct ap_doc *doc = ap_doc_new(o);
	struct libscols_table *tb = doc ? ap_table_new(doc, "partitions") : NULL;
	char buf[C_NCOLS][96], g[32];
	const char *cells[C_NCOLS];
	int rc;

	if (!tb) {
		ap_doc_free(doc);
		return ap_fail(AP_EXIT_IO, "out of memory");
	}
	ap_doc_kv(doc, "target", SCOLS_JSON_STRING, "%s", o->target);
	ap_doc_kv(doc, "label", SCOLS_JSON_STRING, "%s", label);
	ap_doc_kv(doc, "topology", SCOLS_JSON_STRING, "%s", tp->desc);
	ap_topo_doc_source(doc, tp);
	ap_doc_kv(doc, "profile", SCOLS_JSON_STRING, "%s", tp->profile->name);
	ap_doc_kv(doc, o->json ? "grain_bytes" : "grain", SCOLS_JSON_NUMBER, "%s",
		  ap_doc_size(doc, tp->grain, g, sizeof(g)));
	ap_doc_kv(doc, o->json ? "first_usable_sector" : "first_usable",
		  SCOLS_JSON_NUMBER, "%" PRIu64, first);
	ap_doc_kv(doc, o->json ? "last_usable_sector" : "last_usable",
		  SCOLS_JSON_NUMBER, "%" PRIu64, last);
	ap_doc_kv(doc, "written", SCOLS_JSON_BOOLEAN, "%s", o->no_act ? "no" : "yes");
	ap_doc_end_record(doc, "device");

	ap_table_cols(doc, tb, cols, C_NCOLS);
	for (size_t i = 0; i < n; i++) {
		const struct ap_part *p = &parts[i];

		for (int c = 0; c < C_NCOLS; c++)
			cells[c] = buf[c];
		snprintf(buf[C_NR], 96, "%zu", p->partno);
		snprintf(buf[C_START], 96, "%" PRIu64, p->start);
		snprintf(buf[C_END], 96, "%" PRIu64, p->start + p->size - 1);
		snprintf(buf[C_SECTORS], 96, "%" PRIu64, p->size);
		ap_doc_size(doc, p->size * tp->t.logical, buf[C_SIZE], 96);
		snprintf(buf[C_TYPE], 96, "%s", p->type_name);
		cells[C_ALIGNED] = align_lba_is_aligned(&tp->t, p->start) ? "yes" : "no";
		snprintf(buf[C_OFFSET], 96, "%u", align_partition_offset(&tp->t, p->start));
		if (align_partition_offset(&tp->t, p->start) == UINT32_MAX)
			snprintf(buf[C_OFFSET], 96, "-1");
		align_explain(&tp->t, p->start, buf[C_WHY], 96);
		if (p->moved)
			snprintf(buf[C_NOTE], 96, "moved from %" PRIu64, p->wanted);
		else if (p->forced)
			snprintf(buf[C_NOTE], 96, "forced (--start)");
		else
			snprintf(buf[C_NOTE], 96, "%s", o->json ? "" : "-");
		ap_table_row(doc, tb, cells);
	}
	ap_doc_table(doc, tb);
	if (!o->json)
		printf("\n%s\n", o->no_act ? "--no-act: nothing was written."
					   : "The partition table has been written.");
	rc = ap_doc_print(doc);
	scols_unref_table(tb);
	ap_doc_free(doc);
	return rc;
}

/* Make the partition nodes appear: BLKRRPART, then BLKPG for what the
 * kernel's own scan missed (no DOS/EFI parser built in: a loop device's
 * /dev/loopNp1 never appears otherwise).  Failing that, the exact command. */
static void tell_kernel(const char *target, int fd)
{
	/* BLKRRPART here rather than libfdisk's, which warns when a loop
	 * device without partscan refuses it although BLKPG then works */
	int rr = ioctl(fd, BLKRRPART) < 0 ? -errno : 0;
	int r = align_partitions_sync(target);

	if (r == -EINVAL || r == -ENOTTY)
		ap_warn("%s takes no kernel partitions (BLKPG: %s): attach a loop "
			"device with losetup -P, or map them with: alignpart map %s",
			target, strerror(-r), target);
	else if (r < 0)
		ap_warn("%s: the kernel's partitions do not match the new table "
			"(%sBLKPG: %s); run: partx -u %s", target,
			rr < 0 ? "re-read refused, " : "", strerror(-r), target);
}

static int write_table(const struct ap_opts *o, const struct ap_topo *tp,
		       struct fdisk_context *cxt, int fd, const char *label)
{
	int rc = fdisk_write_disklabel(cxt);

	if (rc < 0)
		return ap_fail(AP_EXIT_IO, "writing the %s table to %s failed: %s",
			       label, o->target, strerror(-rc));
	if (fsync(fd) < 0)
		return ap_fail(AP_EXIT_IO, "%s: cannot flush the new table: %s",
			       o->target, strerror(errno));
	rc = ap_wipe_leftovers(fd, tp, label);
	if (rc)
		return rc;
	if (fsync(fd) < 0)
		return ap_fail(AP_EXIT_IO, "%s: cannot flush: %s", o->target, strerror(errno));
	if (tp->is_blockdev)
		tell_kernel(o->target, fd);
	return 0;
}

/* alignpart create TARGET ...: 0 written (or planned with --no-act). */
int ap_cmd_create(const struct ap_opts *o)
{
	struct ap_req *reqs = calloc(AP_MAX_PARTS, sizeof(*reqs));
	struct ap_part *parts = calloc(AP_MAX_PARTS, sizeof(*parts));
	struct fdisk_context *cxt = NULL;
	struct ap_topo tp;
	char label[16] = "", sigs[512];
	uint64_t first = 0, last = 0;
	size_t nreq = 0;
	int fd = -1, rc, nsig;

	if (!reqs || !parts) {
		rc = ap_fail(AP_EXIT_IO, "out of memory");
		goto out;
	}
	rc = ap_cols_check(o, cols, C_NCOLS);   /* before anything is written */
	if (!rc)
		rc = ap_topo_resolve(o, &tp);
	if (rc)
		goto out;
	if (tp.is_image) {
		rc = ap_fail(AP_EXIT_REFUSED,
			     "%s is an octant flash image: a table would destroy it; partition the device ublk-flash serves",
			     o->target);
		goto out;
	}
	if (o->label)
		snprintf(label, sizeof(label), "%s", o->label);

	/* 1. refuse what is in use or holds data, before opening for write */
	if (!o->no_act) {
		rc = ap_check_not_in_use(o->target, tp.is_blockdev);
		if (rc)
			goto out;
	}
	nsig = ap_probe_signatures(o->target, sigs, sizeof(sigs));
	if (nsig < 0) {
		rc = ap_fail(AP_EXIT_IO, "%s: cannot probe for signatures: %s",
			     o->target, strerror(-nsig));
		goto out;
	}
	if (nsig > 0 && !o->force && !o->no_act) {
		rc = ap_fail(AP_EXIT_REFUSED, "%s already holds data (%s); use --force to overwrite it",
			     o->target, sigs);
		goto out;
	}
	if (!o->no_act) {
		fd = open(o->target, O_RDWR | O_CLOEXEC | (tp.is_blockdev ? O_EXCL : 0));
		if (fd < 0) {
			rc = errno == EBUSY
			     ? ap_fail(AP_EXIT_REFUSED, "%s is in use", o->target)
			     : ap_fail(AP_EXIT_IO, "%s: %s", o->target, strerror(errno));
			goto out;
		}
	}
	rc = ap_fdisk_open(&tp, o->target, fd, o->no_act, &cxt);
	if (rc)
		goto out;

	/* 2. what to create, where: all checks before anything is written */
	if (o->script) {
		rc = ap_read_script(cxt, o->script, reqs, &nreq, label, sizeof(label));
	} else {
		for (size_t i = 0; !rc && i < o->nparts; i++, nreq++)
			rc = ap_parse_part_spec(o->part_spec[i], &tp, &reqs[i]);
	}
	if (rc)
		goto out;
	if (!strcmp(label, "dos") && nreq > 4) {
		rc = ap_fail(AP_EXIT_USAGE, "a dos table holds 4 primary partitions; %zu asked (use --label gpt)",
			     nreq);
		goto out;
	}
	rc = ap_fdisk_usable(&tp, label, &first, &last);
	if (!rc)
		rc = ap_plan(&tp, o, reqs, nreq, first, last, parts);
	if (!rc)
		rc = ap_fdisk_new_label(cxt, label, first);
	for (size_t i = 0; !rc && i < nreq; i++)
		rc = ap_fdisk_add(cxt, &parts[i]);
	if (rc)
		goto out;
	report_plan(&tp, parts, nreq);
	if (nsig > 0)
		ap_note("%s holds data (%s): %s", o->target, sigs,
			!o->no_act ? "replacing it (--force)" :
			o->force ? "it would be replaced" : "it would be replaced (needs --force)");

	/* 3. write, then report */
	if (!o->no_act) {
		rc = write_table(o, &tp, cxt, fd, label);
		if (rc)
			goto out;
	}
	rc = output(o, &tp, label, parts, nreq, first, last);
out:
	ap_fdisk_close(cxt);
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = ap_fail(AP_EXIT_IO, "%s: %s", o->target, strerror(errno));
	if (reqs)
		ap_free_reqs(reqs, nreq);
	free(reqs);
	free(parts);
	return rc;
}
