/* SPDX-License-Identifier: MIT */
/*
 * sfdisk script input (--script FILE|-): parsed by libfdisk's script API,
 * turned into alignpart requests so that the profile's alignment applies
 * to every start (ap_plan() reports each start it moves).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libfdisk/libfdisk.h>

#include "ap.h"

static int take_partition(struct fdisk_partition *pa, const char *label,
			  struct ap_req *r, size_t idx)
{
	struct fdisk_parttype *t = fdisk_partition_get_type(pa);
	const char *name = fdisk_partition_get_name(pa);

	memset(r, 0, sizeof(*r));
	if (fdisk_partition_has_start(pa) && !fdisk_partition_start_is_default(pa)) {
		r->has_start = true;
		r->start = fdisk_partition_get_start(pa);
	}
	if (fdisk_partition_has_size(pa) && !fdisk_partition_end_is_default(pa)) {
		r->size = fdisk_partition_get_size(pa);
		if (!r->size)
			return ap_fail(AP_EXIT_USAGE, "script partition %zu: size 0", idx + 1);
	} else {
		r->rest = true;
	}
	if (t) {
		char buf[64];

		if (!strcmp(label, "dos"))
			snprintf(buf, sizeof(buf), "%x", fdisk_parttype_get_code(t));
		else
			snprintf(buf, sizeof(buf), "%s",
				 fdisk_parttype_get_string(t) ? fdisk_parttype_get_string(t) : "");
		if (*buf && !(r->type = strdup(buf)))
			return ap_fail(AP_EXIT_IO, "out of memory");
	}
	if (name && *name && !(r->name = strdup(name)))
		return ap_fail(AP_EXIT_IO, "out of memory");
	if (asprintf(&r->size_str, "script line %zu", idx + 1) < 0) {
		r->size_str = NULL;
		return ap_fail(AP_EXIT_IO, "out of memory");
	}
	return 0;
}

/*
 * Read an sfdisk script from @file ("-" = stdin) with the libfdisk context
 * @cxt (whose sector size converts sizes).  @label: in = --label or "",
 * out = the label to create.  Fills @reqs / *nreq.  0 or AP_EXIT_*.
 */
int ap_read_script(struct fdisk_context *cxt, const char *file,
		   struct ap_req *reqs, size_t *nreq, char *label, size_t len)
{
	struct fdisk_script *dp = NULL;
	struct fdisk_iter *itr = NULL;
	struct fdisk_partition *pa;
	struct fdisk_table *tb;
	const char *hdr;
	FILE *f;
	int rc, ret = 0;

	*nreq = 0;
	f = strcmp(file, "-") ? fopen(file, "re") : stdin;
	if (!f)
		return ap_fail(AP_EXIT_IO, "%s: %s", file, strerror(errno));
	dp = fdisk_new_script(cxt);
	itr = fdisk_new_iter(FDISK_ITER_FORWARD);
	if (!dp || !itr) {
		ret = ap_fail(AP_EXIT_IO, "out of memory");
		goto out;
	}
	if (*label)
		fdisk_script_set_header(dp, "label", label);
	rc = fdisk_script_read_file(dp, f);
	if (rc < 0) {
		ret = ap_fail(AP_EXIT_USAGE, "%s: not a valid sfdisk script (line %d): %s",
			      strcmp(file, "-") ? file : "stdin",
			      fdisk_script_get_nlines(dp), strerror(-rc));
		goto out;
	}
	hdr = fdisk_script_get_header(dp, "label");
	if (!*label) {
		if (!hdr) {
			ret = ap_fail(AP_EXIT_USAGE, "the script has no 'label:' header: give --label gpt|dos");
			goto out;
		}
		snprintf(label, len, "%s", hdr);
	}
	if (strcmp(label, "gpt") && strcmp(label, "dos")) {
		ret = ap_fail(AP_EXIT_USAGE, "script label '%s': alignpart writes gpt or dos", label);
		goto out;
	}
	tb = fdisk_script_get_table(dp);
	while (tb && fdisk_table_next_partition(tb, itr, &pa) == 0) {
		if (*nreq >= AP_MAX_PARTS) {
			ret = ap_fail(AP_EXIT_USAGE, "the script has more than %d partitions", AP_MAX_PARTS);
			goto out;
		}
		ret = take_partition(pa, label, &reqs[*nreq], *nreq);
		(*nreq)++;
		if (ret)
			goto out;
	}
	if (!*nreq)
		ret = ap_fail(AP_EXIT_USAGE, "the script describes no partitions");
out:
	fdisk_free_iter(itr);
	fdisk_unref_script(dp);
	if (f != stdin)
		fclose(f);
	return ret;
}
