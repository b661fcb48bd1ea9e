/* SPDX-License-Identifier: MIT */
/*
 * Layout planning: where each requested partition starts and ends.  Every
 * number comes from libalign; every impossible request (overlap, beyond the
 * end, too small, unusable start) is a one-line error before anything is
 * written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap.h"

/* Free the strings of @n requests. */
void ap_free_reqs(struct ap_req *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(reqs[i].type);
		free(reqs[i].name);
		free(reqs[i].size_str);
	}
}

/* Parse "SIZE[:TYPE]" (SIZE "rest" or align_parse_size syntax) into @r. */
int ap_parse_part_spec(const char *spec, const struct ap_topo *tp,
		       struct ap_req *r)
{
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	uint64_t bytes;
	char size[64];

	memset(r, 0, sizeof(*r));
	if (n == 0 || n >= sizeof(size))
		return ap_fail(AP_EXIT_USAGE, "bad --part '%s': want SIZE[:TYPE]", spec);
	memcpy(size, spec, n);
	size[n] = 0;
	if (colon && !colon[1])
		return ap_fail(AP_EXIT_USAGE, "bad --part '%s': empty TYPE", spec);
	r->size_str = strdup(size);
	r->type = colon ? strdup(colon + 1) : NULL;
	if (!r->size_str || (colon && !r->type))
		return ap_fail(AP_EXIT_IO, "out of memory");
	if (!strcmp(size, "rest")) {
		r->rest = true;
		return 0;
	}
	if (align_parse_size(size, tp->t.logical, &bytes) < 0)
		return ap_fail(AP_EXIT_USAGE,
			       "bad --part '%s': '%s' is not a size (a positive number of bytes with an optional unit, whole %u-byte sectors with s: 64MiB, 1G, 2048s; or rest)",
			       spec, size, tp->t.logical);
	r->size = (bytes + tp->t.logical - 1) / tp->t.logical;
	if (!r->size)
		return ap_fail(AP_EXIT_USAGE, "--part '%s': a partition needs at least one sector", spec);
	return 0;
}

/*
 * Place @nreq requests into @parts for a table whose usable LBAs are
 * [first_usable, last_usable].  0 or AP_EXIT_USAGE (message printed).
 */
int ap_plan(const struct ap_topo *tp, const struct ap_opts *o,
	    struct ap_req *reqs, size_t nreq, uint64_t first_usable,
	    uint64_t last_usable, struct ap_part *parts)
{
	uint64_t min_size = align_granularity(&tp->t) / tp->t.logical;
	uint64_t prev_end = 0;
	char gbuf[32];

	if (!nreq)
		return ap_fail(AP_EXIT_USAGE, "no partitions to create");
	if (first_usable > last_usable)
		return ap_fail(AP_EXIT_USAGE, "%s is too small for a partition table (%" PRIu64 " sectors)",
			       o->target, tp->nsectors);
	ap_human_size(tp->grain, gbuf, sizeof(gbuf));
	for (size_t i = 0; i < nreq; i++) {
		struct ap_req *r = &reqs[i];
		struct ap_part *p = &parts[i];
		uint64_t end;

		memset(p, 0, sizeof(*p));
		p->partno = i + 1;
		p->type = r->type;
		p->name = r->name;
		if (i == 0 && o->have_start) {
			p->start = p->wanted = o->start;
			p->forced = true;
		} else if (r->has_start) {
			p->wanted = r->start;
			p->start = align_first_aligned_lba(&tp->t, r->start, tp->grain);
			p->moved = p->start != p->wanted;
		} else if (i == 0) {
			p->start = p->wanted =
				align_profile_first_lba(tp->profile, &tp->t, first_usable);
		} else {
			p->start = p->wanted =
				align_first_aligned_lba(&tp->t, prev_end + 1, tp->grain);
		}
		if (p->start == UINT64_MAX)
			return ap_fail(AP_EXIT_USAGE,
				       "partition %zu: no LBA at or after %" PRIu64 " is aligned to %s on %s",
				       p->partno, p->wanted, gbuf, tp->desc);
		if (p->start < first_usable)
			return ap_fail(AP_EXIT_USAGE,
				       "partition %zu: start %" PRIu64 " is inside the partition table area (first usable LBA %" PRIu64 ")",
				       p->partno, p->start, first_usable);
		if (p->start > last_usable)
			return ap_fail(AP_EXIT_USAGE,
				       "partition %zu: start %" PRIu64 " is beyond the end of %s (last usable LBA %" PRIu64 ")",
				       p->partno, p->start, o->target, last_usable);
		if (r->rest) {
			if (i + 1 != nreq)
				return ap_fail(AP_EXIT_USAGE,
					       "partition %zu: only the last partition can be 'rest'",
					       p->partno);
			/* end on a physical boundary when one is left */
			end = align_last_aligned_lba(&tp->t, last_usable, 0);
			if (end < p->start || end == 0)
				end = last_usable;
		} else {
			end = p->start + r->size - 1;
			if (end > last_usable || end < p->start)
				return ap_fail(AP_EXIT_USAGE,
					       "partition %zu (%s) would end at LBA %" PRIu64 ", beyond the last usable LBA %" PRIu64 " of %s",
					       p->partno, r->size_str ? r->size_str : "size",
					       end, last_usable, o->target);
		}
		p->size = end - p->start + 1;
		if (p->size < min_size)
			return ap_fail(AP_EXIT_USAGE,
				       "partition %zu is too small: %" PRIu64 " sectors, the minimum is one physical sector (%" PRIu64 ")",
				       p->partno, p->size, min_size);
		for (size_t j = 0; j < i; j++) {
			uint64_t e = parts[j].start + parts[j].size - 1;

			if (p->start <= e && end >= parts[j].start)
				return ap_fail(AP_EXIT_USAGE,
					       "partition %zu (LBA %" PRIu64 "-%" PRIu64 ") overlaps partition %zu (LBA %" PRIu64 "-%" PRIu64 ")",
					       p->partno, p->start, end, parts[j].partno,
					       parts[j].start, e);
		}
		if (end > prev_end)
			prev_end = end;
	}
	return 0;
}
