/* SPDX-License-Identifier: MIT */
/*
 * Topology resolution: which topology alignpart uses for a target, and
 * where it came from.  Order: --topology (overrides everything, even a
 * block device's own report), then the target itself (block device or
 * octant flash image), then the named profile's defaults for a plain file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <libsmartcols/libsmartcols.h>

#include "ap.h"

/* Short name of a topology source, as printed in reports. */
const char *ap_source_name(enum align_source s)
{
	switch (s) {
	case ALIGN_SRC_DEVICE:   return "device";
	case ALIGN_SRC_IMAGE:    return "image";
	case ALIGN_SRC_OVERRIDE: return "override";
	case ALIGN_SRC_PROFILE:  return "profile";
	case ALIGN_SRC_SERVED:   return "served";
	default:                 return "none";
	}
}

static bool profile_disagrees(const struct align_profile *p,
			      const struct align_topology *t)
{
	return p->logical && p->physical &&
	       (p->logical != t->logical || p->physical != t->physical ||
		p->alignment_offset != t->alignment_offset);
}

/* Add "source" (and for a served device "served_image") to a report. */
void ap_topo_doc_source(struct ap_doc *doc, const struct ap_topo *tp)
{
	ap_doc_kv(doc, "source", SCOLS_JSON_STRING, "%s",
		  ap_source_name(tp->t.source));
	if (tp->served_image[0])
		ap_doc_kv(doc, "served_image", SCOLS_JSON_STRING, "%s",
			  tp->served_image);
}

/* A block device that a live ublk-flash registry entry names, but whose
 * entry does not check out (align_probe: served -ESTALE): say that the
 * topology used is not the image's, once. */
static void served_unverified(const struct ap_opts *o,
			      const struct align_probe *pr)
{
	const struct align_topology *probe = &pr->t;

	if (pr->served != -ESTALE)
		return;
	ap_warn("%s is recorded as served by ublk-flash from %s, but the entry "
		"does not check out: using the %s topology %u/%u offset %u "
		"(LIBALIGN_DEBUG=1 says why)", o->target,
		pr->image,
		probe->source == ALIGN_SRC_DEVICE ? "kernel's" :
		"octant image it holds:", probe->logical, probe->physical,
		probe->alignment_offset);
}

/* A device served by ublk-flash (align_probe: served 0): remember its
 * image and say, when the kernel reports another topology, which one is
 * used and why. */
static void served_note(const struct ap_opts *o, struct ap_topo *tp,
			const struct align_probe *pr)
{
	const struct align_topology *served = &pr->t;
	struct align_topology k;

	snprintf(tp->served_image, sizeof(tp->served_image), "%s",
		 pr->image[0] ? pr->image : "?");
	if (o->topology || align_topology_from_device(o->target, &k) < 0 ||
	    (k.physical == served->physical &&
	     k.alignment_offset == served->alignment_offset))
		return;
	ap_note("%s is served by ublk-flash from %s: using the image's "
		"topology %u/%u offset %u, not the kernel's %u/%u offset %u "
		"(override with --topology)", o->target,
		tp->served_image,
		served->logical, served->physical, served->alignment_offset,
		k.logical, k.physical, k.alignment_offset);
}

/* Odd I/O hints, said once on stderr: a minimum I/O size that is not a
 * power of two (a RAID chunk: 1 MiB is not a multiple of it), an optimal
 * I/O size that is no grain (a USB bridge's 33553920 = 65535 x 512, a
 * width not a multiple of the granularity and 4 KiB): what the grain does
 * with them, so that no verdict looks wrong. */
static void topo_notes(const struct ap_topo *tp)
{
	const struct align_topology *t = &tp->t;
	uint32_t gran = align_granularity(t);
	char g[32];

	ap_human_size(tp->grain, g, sizeof(g));
	if (t->io_min && (t->io_min & (t->io_min - 1))) {
		if (tp->profile->from_target)
			ap_note("minimum_io_size %u is not a power of two (a RAID chunk): "
				"partitions go on multiples of %" PRIu64 " bytes (%s), "
				"whole stripes, not on 1 MiB", t->io_min, tp->grain, g);
		else if (tp->grain % gran)
			ap_note("minimum_io_size %u is not a power of two (a RAID chunk) and "
				"profile %s's %s grain is not a multiple of it: its starts are "
				"misaligned here (--profile auto puts them on whole stripes)",
				t->io_min, tp->profile->name, g);
	}
	if (t->io_opt && tp->profile->from_target && tp->grain % t->io_opt)
		ap_note("optimal_io_size %u is no partition grain (%s): ignored, grain %s",
			t->io_opt, t->io_opt == 33553920u ?
			"65535 x 512, what some USB bridges report" :
			"not a multiple of the granularity and 4 KiB, or over 1 GiB", g);
}

/* A host-managed zoned disk (or a zoned octant image, served or not):
 * Linux adds no partition on one (block/genhd.c marks it GENHD_FL_NO_PART:
 * no partition scan, BLKPG_ADD_PARTITION fails with EINVAL), so a table
 * would be dead weight at best; the alignment that matters is the zone's.
 * One line, AP_EXIT_ZONED, before anything is read or written. */
static int zoned_refusal(const struct ap_opts *o,
			 const struct align_topology *t)
{
	char z[32];

	ap_human_size(t->zone_size, z, sizeof(z));
	return ap_fail(AP_EXIT_ZONED, "%s: a host-managed zoned %s (zones of "
		       "%s): Linux allows no partitions on it; the alignment "
		       "that matters is the zone size, %" PRIu64 " bytes (use "
		       "the whole disk: mkfs.f2fs -m, mkfs.btrfs -O zoned, or "
		       "dm-linear on whole zones)", o->target,
		       t->source == ALIGN_SRC_IMAGE ? "image" : "disk", z,
		       t->zone_size);
}

/*
 * Resolve the topology of o->target into *tp.  Returns 0, AP_EXIT_USAGE for
 * a bad --topology / missing topology, AP_EXIT_IO when the target cannot be
 * probed.
 */
int ap_topo_resolve(const struct ap_opts *o, struct ap_topo *tp)
{
	static struct align_probe pr;   /* the one probe of the target */
	struct align_topology probe;
	struct stat st;
	int rc;

	memset(tp, 0, sizeof(*tp));
	memset(&probe, 0, sizeof(probe));
	tp->profile = align_profile_get(o->profile ? o->profile : "auto");
	if (!tp->profile)
		return ap_fail(AP_EXIT_USAGE, "unknown profile '%s'",
			       o->profile ? o->profile : "auto");
	tp->profile_named = o->profile && !tp->profile->from_target;

	if (stat(o->target, &st) < 0)
		return ap_fail(AP_EXIT_IO, "%s: %s", o->target, strerror(errno));
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		return ap_fail(AP_EXIT_USAGE,
			       "%s: not a block device or a regular file",
			       o->target);
	tp->is_blockdev = S_ISBLK(st.st_mode);

	rc = align_probe(o->target, &pr);
	probe = pr.t;
	if (rc < 0)
		return ap_fail(AP_EXIT_IO, "%s: cannot probe topology: %s",
			       o->target, strerror(-rc));
	if (probe.zone_size)
		return zoned_refusal(o, &probe);
	tp->is_image = probe.source == ALIGN_SRC_IMAGE;
	if (probe.source == ALIGN_SRC_SERVED)
		served_note(o, tp, &pr);
	else if (tp->is_blockdev && !o->topology)
		served_unverified(o, &pr);
	if (!probe.size && !tp->is_blockdev)
		probe.size = (uint64_t)st.st_size;

	if (o->topology) {
		struct align_topology t = { 0 };

		rc = align_topology_parse(o->topology, &t);
		if (rc < 0)
			return ap_fail(AP_EXIT_USAGE,
				       "bad --topology '%s': want LOG/PHYS[/OFFSET[/IO_MIN[/IO_OPT]]], e.g. 512/4096/3584",
				       o->topology);
		if (tp->is_blockdev && probe.logical && t.logical != probe.logical)
			return ap_fail(AP_EXIT_USAGE,
				       "--topology logical size %u differs from %s's %u-byte sectors",
				       t.logical, o->target, probe.logical);
		t.size = probe.size;
		t.erase_block = probe.erase_block;
		t.source = ALIGN_SRC_OVERRIDE;
		tp->t = t;
	} else if (probe.source == ALIGN_SRC_DEVICE ||
		   probe.source == ALIGN_SRC_IMAGE ||
		   probe.source == ALIGN_SRC_SERVED) {
		tp->t = probe;
		if (tp->profile_named && profile_disagrees(tp->profile, &probe))
			ap_warn("%s reports %u/%u offset %u (%s) but profile %s assumes %u/%u offset %u; "
				"using the %s's (override with --topology %u/%u/%u)",
				o->target, probe.logical, probe.physical,
				probe.alignment_offset, ap_source_name(probe.source),
				tp->profile->name, tp->profile->logical,
				tp->profile->physical,
				tp->profile->alignment_offset,
				ap_source_name(probe.source),
				tp->profile->logical, tp->profile->physical,
				tp->profile->alignment_offset);
	} else {
		if (!tp->profile_named)
			return ap_fail(AP_EXIT_USAGE,
				       "%s: a plain file has no topology: give --topology LOG/PHYS[/OFFSET] or --profile odd|1m|legacy|4kn|512n",
				       o->target);
		tp->t = probe;
		tp->t.logical = tp->t.physical = tp->t.alignment_offset = 0;
		tp->t.source = ALIGN_SRC_NONE;
		align_topology_apply_profile(&tp->t, tp->profile);
		tp->t.source = ALIGN_SRC_PROFILE;
	}
	if (!tp->t.logical)
		tp->t.logical = 512;
	if (!tp->t.physical)
		tp->t.physical = tp->t.logical;
	/* a plain file need not be a whole number of sectors: ignore the tail */
	tp->t.size -= tp->t.size % tp->t.logical;
	if (align_topology_validate(&tp->t) < 0)
		return ap_fail(AP_EXIT_USAGE, "%s: inconsistent topology %u/%u offset %u",
			       o->target, tp->t.logical, tp->t.physical,
			       tp->t.alignment_offset);
	tp->nsectors = tp->t.size / tp->t.logical;
	tp->grain = align_profile_grain(tp->profile, &tp->t);
	topo_notes(tp);
	if (align_topology_describe(&tp->t, tp->desc, sizeof(tp->desc)) < 0)
		snprintf(tp->desc, sizeof(tp->desc), "%u/%u offset %u",
			 tp->t.logical, tp->t.physical, tp->t.alignment_offset);
	return 0;
}
