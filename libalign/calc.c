/* SPDX-License-Identifier: MIT */
/*
 * Alignment predicates and calculators.  The model (docs/topology.md):
 * logical byte x of the device lives at byte x + shift of the physical
 * medium, shift = (gran - alignment_offset % gran) % gran; an LBA l is
 * aligned to g bytes of the medium iff (l * logical + shift) % g == 0.
 * With g = gran that is the kernel's (gran + A - l*ls mod gran) % gran == 0.
 */
#include <inttypes.h>
#include <stdio.h>
#include "align-private.h"

/* Alignment granularity: max(physical, io_min), never 0. */
uint32_t align_granularity(const struct align_topology *t)
{
	uint32_t g = t->physical > t->io_min ? t->physical : t->io_min;

	return g ? g : alignp_logical(t);
}

uint64_t alignp_shift(const struct align_topology *t)
{
	uint32_t gran = align_granularity(t);

	return (gran - t->alignment_offset % gran) % gran;
}

static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m)
{
	return (uint64_t)((alignp_u128)a * b % m);
}

/* Inverse of @a modulo @m (gcd(a, m) == 1, m >= 1). */
static uint64_t invmod(uint64_t a, uint64_t m)
{
	__extension__ __int128 r0 = m, r1 = a % m, s0 = 0, s1 = 1;

	while (r1) {
		__extension__ __int128 q = r0 / r1, tmp;
		tmp = r0 - q * r1; r0 = r1; r1 = tmp;
		tmp = s0 - q * s1; s0 = s1; s1 = tmp;
	}
	s0 %= (__int128)m;
	if (s0 < 0)
		s0 += m;
	return (uint64_t)s0;
}

/*
 * Solve l * logical + shift == 0 (mod grain): the aligned LBAs are exactly
 * l == *l0 (mod *period).  -1 if no LBA is aligned to @grain.
 */
static int solve(const struct align_topology *t, uint64_t grain,
		 uint64_t *l0, uint64_t *period)
{
	uint64_t ls = alignp_logical(t), g = grain ? grain : align_granularity(t);
	uint64_t r = (g - alignp_shift(t) % g) % g;   /* l*ls == r (mod g) */
	uint64_t d = alignp_gcd64(ls, g), m = g / d;

	if (r % d)
		return -1;
	*period = m;
	*l0 = m == 1 ? 0 : mulmod(r / d, invmod(ls / d % m, m), m);
	return 0;
}

/* Is @lba on a @grain-byte boundary of the physical medium? */
bool align_lba_is_grain_aligned(const struct align_topology *t, uint64_t lba,
				uint64_t grain)
{
	uint64_t g = grain ? grain : align_granularity(t);
	uint64_t ls = alignp_logical(t);

	return ((alignp_u128)mulmod(lba, ls, g) + alignp_shift(t) % g) % g == 0;
}

/* Is a partition / I/O starting at @lba physically aligned? */
bool align_lba_is_aligned(const struct align_topology *t, uint64_t lba)
{
	return align_lba_is_grain_aligned(t, lba, align_granularity(t));
}

/* Does a partition whose last LBA is @last_lba end on a physical boundary? */
bool align_end_is_aligned(const struct align_topology *t, uint64_t last_lba)
{
	return align_lba_is_grain_aligned(t, last_lba + 1, align_granularity(t));
}

/* First LBA >= @bound aligned to @grain bytes of the medium (grain 0 =
 * granularity); UINT64_MAX if there is none (grain incompatible with the
 * topology, or past the end of the LBA space). */
uint64_t align_first_aligned_lba(const struct align_topology *t,
				 uint64_t bound, uint64_t grain)
{
	uint64_t l0, m, delta;
	alignp_u128 l;

	if (solve(t, grain, &l0, &m) < 0) {
		ALIGNP_DBG(ALIGN_DEBUG_CALC, "no LBA is aligned to %" PRIu64
			   " bytes", grain);
		return UINT64_MAX;
	}
	delta = (uint64_t)(((alignp_u128)l0 + m - bound % m) % m);
	l = (alignp_u128)bound + delta;
	if (l >= UINT64_MAX)
		return UINT64_MAX;
	ALIGNP_DBG(ALIGN_DEBUG_CALC, "first aligned >= %" PRIu64 " grain %"
		   PRIu64 ": %" PRIu64, bound, grain, (uint64_t)l);
	return (uint64_t)l;
}

/* The largest LBA <= @bound such that LBA+1 is aligned to @grain bytes of
 * the medium; 0 if none. */
uint64_t align_last_aligned_lba(const struct align_topology *t,
				uint64_t bound, uint64_t grain)
{
	uint64_t l0, m;
	alignp_u128 y = (alignp_u128)bound + 1, x;

	if (solve(t, grain, &l0, &m) < 0)
		return 0;
	/* largest x <= y with x == l0 (mod m), x >= 1; answer x - 1 */
	x = y - (y % m + m - l0) % m;
	if (x > y || x < 1)
		return 0;
	return (uint64_t)(x - 1);
}

/* (gran + A - byte mod gran) % gran, or UINT32_MAX if misaligned. */
static uint32_t stacked_offset(const struct align_topology *t, uint64_t units,
			       uint64_t unit)
{
	uint32_t gran = align_granularity(t);
	uint64_t at = mulmod(units, unit, gran);

	if (t->misaligned)
		return UINT32_MAX;
	return (uint32_t)(((uint64_t)gran + t->alignment_offset % gran - at) % gran);
}

/* The kernel's alignment_offset for a partition starting at @start_lba.
 * UINT32_MAX (the kernel's -1, printed unsigned by sysfs) if the device
 * itself is misaligned. */
uint32_t align_partition_offset(const struct align_topology *t,
				uint64_t start_lba)
{
	uint32_t r = stacked_offset(t, start_lba, alignp_logical(t));

	ALIGNP_DBG(ALIGN_DEBUG_CALC, "partition at %" PRIu64 ": offset %u",
		   start_lba, r);
	return r;
}

/* The kernel's alignment_offset for a dm-linear target at 512-byte sector
 * @start_sector of the device (blk_stack_limits of one target); UINT32_MAX
 * if the device is misaligned. */
uint32_t align_dm_linear_offset(const struct align_topology *t,
				uint64_t start_sector)
{
	return stacked_offset(t, start_sector, 512);
}

/* parted-style explanation of @lba against @grain bytes of the medium:
 * "2055s % 2048s != 2047s".  Returns snprintf's length. */
int align_explain_grain(const struct align_topology *t, uint64_t lba,
			uint64_t grain, char *buf, size_t len)
{
	uint64_t l0, m;

	if (solve(t, grain, &l0, &m) < 0)
		return snprintf(buf, len, "%" PRIu64 "s: no LBA is aligned to %"
				PRIu64 " bytes", lba,
				grain ? grain : align_granularity(t));
	return snprintf(buf, len, "%" PRIu64 "s %% %" PRIu64 "s %s %" PRIu64 "s",
			lba, m, lba % m == l0 ? "==" : "!=", l0);
}

/* parted-style explanation of why @lba is (not) physically aligned. */
int align_explain(const struct align_topology *t, uint64_t lba, char *buf,
		  size_t len)
{
	return align_explain_grain(t, lba, 0, buf, len);
}
