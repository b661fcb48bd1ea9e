/* SPDX-License-Identifier: MIT */
/* Named partitioning profiles; docs/topology.md says why each is so. */
#include <inttypes.h>
#include <string.h>
#include "align-private.h"

#define MiB (1ull << 20)
#define LEGACY_CYLINDER (255ull * 63 * 512)   /* 255 heads x 63 sectors */
#define SANE_GRAIN_MAX (1ull << 30)

static const struct align_profile profiles[] = {
	{ "odd", "odd-aligned 512e: LBA 0 at byte 512 of the medium "
	  "(offset 3584), partitions on 1 MiB of the medium from 2047",
	  false, 512, 4096, 3584, MiB, 2047 },
	{ "1m", "512e, offset 0, partitions on 1 MiB from 2048",
	  false, 512, 4096, 0, MiB, 2048 },
	{ "legacy", "DOS cylinder style on 512e: first partition at 63, "
	  "then 255x63 cylinders (misaligned on 4K)",
	  false, 512, 4096, 0, LEGACY_CYLINDER, 63 },
	{ "4kn", "4K native: 4096/4096, partitions on 1 MiB from 256",
	  false, 4096, 4096, 0, MiB, 256 },
	{ "512n", "512 native: 512/512, partitions on 1 MiB from 2048",
	  false, 512, 512, 0, MiB, 2048 },
	{ "auto", "topology from the target; grain max(1 MiB, io_opt, "
	  "erase block)", true, 512, 512, 0, 0, 0 },
};

static const struct align_profile *const profile_list[] = {
	&profiles[0], &profiles[1], &profiles[2], &profiles[3], &profiles[4],
	&profiles[5], NULL,
};

/* Look up a profile by name; NULL if unknown. */
const struct align_profile *align_profile_get(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(profiles[i].name, name))
			return &profiles[i];
	ALIGNP_DBG(ALIGN_DEBUG_PROFILE, "unknown profile '%s'",
		   name ? name : "(null)");
	return NULL;
}

/* The NULL-terminated table of all profiles, for listings. */
const struct align_profile *const *align_profile_list(void)
{
	return profile_list;
}

/*
 * Fill unknown fields from the profile.  A topology with no source (a plain
 * file) takes the profile's logical/physical/offset and becomes
 * ALIGN_SRC_PROFILE; otherwise only zero sizes are filled (a known
 * alignment_offset of 0 is a fact, not a gap).  Size is never touched.
 */
void align_topology_apply_profile(struct align_topology *t,
				  const struct align_profile *p)
{
	if (!t || !p)
		return;
	if (t->source == ALIGN_SRC_NONE) {
		t->logical = p->logical;
		t->physical = p->physical;
		t->alignment_offset = p->alignment_offset;
		t->misaligned = false;
		t->source = ALIGN_SRC_PROFILE;
	}
	if (!t->logical)
		t->logical = p->logical;
	if (!t->physical)
		t->physical = p->physical > t->logical ? p->physical : t->logical;
	if (!t->io_min)
		t->io_min = t->physical;
	ALIGNP_DBG(ALIGN_DEBUG_PROFILE, "profile %s: %u/%u/%u", p->name,
		   t->logical, t->physical, t->alignment_offset);
}

static uint64_t lcm(uint64_t a, uint64_t b)
{
	return a / alignp_gcd64(a, b) * b;
}

/* A device hint usable as a grain: non-zero, at most 1 GiB, a multiple of
 * the granularity and of 4 KiB (rules out e.g. USB bridges' 65535*512). */
static int sane_hint(uint64_t v, uint32_t gran)
{
	uint64_t unit = gran > 4096 ? gran : 4096;

	return v && v <= SANE_GRAIN_MAX && v % unit == 0;
}

/* The partition grain of profile @p on topology @t, bytes of the medium:
 * the profile's own, or for "auto" the smallest multiple of the unit that
 * is at least 1 MiB, the unit being the least common multiple of the
 * granularity, a sane io_opt and a sane erase_block.  With powers of two
 * (every disk but a RAID) that is max(1 MiB, granularity, io_opt,
 * erase_block); a 3-disk stripe of 12 KiB chunks (io_min 12288, io_opt
 * 36864) gets 29 stripes, 1069056 bytes: on 1 MiB it would cut stripes and
 * even chunks (2048s is not a multiple of 12 KiB). */
uint64_t align_profile_grain(const struct align_profile *p,
			     const struct align_topology *t)
{
	uint64_t unit;
	uint32_t gran;

	if (p && p->grain)
		return p->grain;
	if (!t)
		return MiB;
	gran = align_granularity(t);
	unit = gran;
	if (sane_hint(t->io_opt, gran))
		unit = lcm(unit, t->io_opt);
	if (sane_hint(t->erase_block, gran))
		unit = lcm(unit, t->erase_block);
	if (unit > SANE_GRAIN_MAX)
		unit = gran;
	unit = (MiB + unit - 1) / unit * unit;
	ALIGNP_DBG(ALIGN_DEBUG_PROFILE, "auto grain %" PRIu64, unit);
	return unit;
}

/* Where the first partition goes: the profile's first_lba if it is at or
 * after @bound, else the first grain-aligned LBA >= @bound (UINT64_MAX if
 * none). */
uint64_t align_profile_first_lba(const struct align_profile *p,
				 const struct align_topology *t, uint64_t bound)
{
	if (p && p->first_lba && p->first_lba >= bound)
		return p->first_lba;
	return align_first_aligned_lba(t, bound, align_profile_grain(p, t));
}
