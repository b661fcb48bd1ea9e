/* SPDX-License-Identifier: MIT */
/*
 * libalign: the kernel / util-linux / parted facts of
 * /work/shared/reference.md ("Kernel and tool alignment facts"), the
 * profiles and the parted-style explanations, as tables of cases.
 */
#include <stdint.h>
#include <string.h>
#include "align.h"
#include "test.h"

static struct align_topology topo(uint32_t ls, uint32_t ps, uint32_t off)
{
	struct align_topology t = { .logical = ls, .physical = ps,
		.alignment_offset = off, .source = ALIGN_SRC_OVERRIDE };
	return t;
}

/* reference.md: partition offset (gran + A - start*512 mod gran) % gran */
static void test_partition_offsets(void)
{
	static const struct { uint32_t ls, ps, a; uint64_t start; uint32_t want; } c[] = {
		{ 512, 4096, 3584,   63,    0 },   /* reference.md: A=3584 start 63 -> 0 */
		{ 512, 4096, 3584, 2048, 3584 },   /* A=3584 start 2048 -> 3584 */
		{ 512, 4096,    0,   63,  512 },   /* A=0 start 63 -> 512 */
		{ 512, 4096,    0, 2048,    0 },
		{ 512, 4096, 3584, 2047,    0 },   /* odd profile's first partition */
		{ 512, 4096, 3584, 2055,    0 },   /* parted's answer: 4K-aligned too */
		{ 512, 4096, 3584,    7,    0 },
		{ 512, 4096, 3584,    0, 3584 },
		{ 512,  512,    0,   63,    0 },
		{ 4096, 4096,   0,    1,    0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = topo(c[i].ls, c[i].ps, c[i].a);
		T_EQ_U64(align_partition_offset(&t, c[i].start), c[i].want,
			 "case %zu: %u/%u/%u start %" PRIu64, i, c[i].ls,
			 c[i].ps, c[i].a, c[i].start);
		/* a partition is physically aligned iff its offset is 0 */
		T_CHECK(align_lba_is_aligned(&t, c[i].start) == (c[i].want == 0),
			"case %zu: is_aligned disagrees with the offset", i);
	}
	struct align_topology m = topo(512, 4096, 0);
	m.misaligned = true;
	T_EQ_U64(align_partition_offset(&m, 2048), UINT32_MAX,
		 "misaligned device: the kernel's -1");
	T_EQ_U64(align_dm_linear_offset(&m, 8), UINT32_MAX, "misaligned dm");
}

/* reference.md: dm-linear at sector 1 on a 4096-physical device -> 3584,
 * at 8 -> 0 (sectors are 512 bytes whatever the logical size). */
static void test_dm_linear(void)
{
	static const struct { uint32_t ls, ps, a; uint64_t s; uint32_t want; } c[] = {
		{ 512, 4096, 0, 1, 3584 }, { 512, 4096, 0, 8, 0 },
		{ 4096, 4096, 0, 8, 0 },   { 4096, 4096, 0, 1, 3584 },
		{ 512, 4096, 3584, 1, 3072 }, { 512, 4096, 3584, 7, 0 },
		{ 512, 512, 0, 1, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = topo(c[i].ls, c[i].ps, c[i].a);
		T_EQ_U64(align_dm_linear_offset(&t, c[i].s), c[i].want,
			 "dm case %zu", i);
	}
}

/* reference.md: lowest aligned LBA 7 on 512/4096 -> alignment_offset 3584;
 * generally A = lowest * 512, and the first aligned LBA is the lowest. */
static void test_lowest_aligned(void)
{
	for (uint32_t low = 0; low < 8; low++) {
		struct align_topology t = topo(512, 4096, low * 512);
		T_EQ_U64(align_first_aligned_lba(&t, 0, 0), low, "lowest %u", low);
	}
	struct align_topology t;
	T_CHECK(align_topology_parse("512/4096/3584", &t) == 0, "parse");
	T_EQ_U64(align_first_aligned_lba(&t, 0, 0), 7, "lowest aligned LBA 7");
}

/* reference.md: fdisk GPT first odd-aligned partition 2047 (grain 1 MiB,
 * first usable 34); DOS at 7; parted mkpart 1MiB -> 2055 (offset 7,
 * grain 2048 sectors, not 1 MiB of the medium). */
static void test_tools(void)
{
	struct align_topology t = topo(512, 4096, 3584);
	uint64_t parted;

	T_EQ_U64(align_first_aligned_lba(&t, 34, 1 << 20), 2047, "fdisk GPT");
	T_EQ_U64(align_first_aligned_lba(&t, 1, 0), 7, "fdisk DOS");
	parted = 2048 + (7 + 2048 - 2048 % 2048) % 2048;   /* parted's rule */
	T_EQ_U64(parted, 2055, "parted's rule");
	T_CHECK(align_lba_is_aligned(&t, parted), "2055 is 4K-aligned");
	T_CHECK(!align_lba_is_grain_aligned(&t, parted, 1 << 20),
		"2055 is 4 KiB past the 1 MiB boundary of the medium");
	T_CHECK(align_lba_is_grain_aligned(&t, 2047, 1 << 20), "2047 on 1 MiB");
	T_CHECK(align_lba_is_grain_aligned(&t, 63, 4096), "odd: 63 on 4K");
	struct align_topology z = topo(512, 4096, 0);
	T_CHECK(!align_lba_is_aligned(&z, 63), "offset 0: 63 misaligned");
	T_EQ_U64(align_first_aligned_lba(&z, 34, 1 << 20), 2048, "1m GPT");
}

static void test_explain(void)
{
	static const struct { uint32_t ls, ps, a; uint64_t lba, grain; const char *want; } c[] = {
		{ 512, 4096, 3584, 2048, 0, "2048s % 8s != 7s" },
		{ 512, 4096, 3584,   63, 0, "63s % 8s == 7s" },
		{ 512, 4096,    0,   63, 0, "63s % 8s != 0s" },
		{ 512, 4096,    0, 2048, 0, "2048s % 8s == 0s" },
		{ 512, 4096, 3584, 2055, 1 << 20, "2055s % 2048s != 2047s" },
		{ 512, 4096, 3584, 2047, 1 << 20, "2047s % 2048s == 2047s" },
		{ 4096, 4096,   0,  256, 1 << 20, "256s % 256s == 0s" },
		{ 512,  512,    0,   63, 0, "63s % 1s == 0s" },
	};
	char buf[128];
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = topo(c[i].ls, c[i].ps, c[i].a);
		int n = c[i].grain ? align_explain_grain(&t, c[i].lba, c[i].grain,
							 buf, sizeof(buf))
				   : align_explain(&t, c[i].lba, buf, sizeof(buf));
		T_CHECK(n == (int)strlen(c[i].want) && !strcmp(buf, c[i].want),
			"explain case %zu: '%s' want '%s'", i, buf, c[i].want);
	}
	struct align_topology t = topo(512, 4096, 3584);
	T_CHECK(align_explain(&t, 2048, buf, 4) == 16 && strlen(buf) == 3,
		"explain truncates like snprintf");
}

static void test_profiles(void)
{
	static const struct { const char *name; uint32_t ls, ps, a; uint64_t grain, first; } c[] = {
		{ "odd",    512, 4096, 3584, 1 << 20, 2047 },
		{ "1m",     512, 4096,    0, 1 << 20, 2048 },
		{ "legacy", 512, 4096,    0, 255 * 63 * 512, 63 },
		{ "4kn",   4096, 4096,    0, 1 << 20, 256 },
		{ "512n",   512,  512,    0, 1 << 20, 2048 },
	};
	const struct align_profile *const *all = align_profile_list();
	size_t n = 0;

	while (all[n])
		n++;
	T_EQ_U64(n, 6, "six profiles");
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const struct align_profile *p = align_profile_get(c[i].name);
		struct align_topology t = { .size = 1 << 30 };

		T_CHECK(p != NULL, "profile %s", c[i].name);
		if (!p)
			continue;
		T_CHECK(!p->from_target && p->description && *p->description,
			"%s: description", c[i].name);
		align_topology_apply_profile(&t, p);
		T_CHECK(t.logical == c[i].ls && t.physical == c[i].ps &&
			t.alignment_offset == c[i].a && t.source == ALIGN_SRC_PROFILE &&
			t.size == 1 << 30, "%s: topology", c[i].name);
		T_CHECK(align_topology_validate(&t) == 0, "%s: valid", c[i].name);
		T_EQ_U64(align_profile_grain(p, &t), c[i].grain, "%s grain", c[i].name);
		T_EQ_U64(align_profile_first_lba(p, &t, 34), c[i].first, "%s first",
			 c[i].name);
		/* the first LBA is on the grain, except legacy's 63 (track 1) */
		T_CHECK(align_lba_is_grain_aligned(&t, c[i].first, c[i].grain) ==
			(strcmp(c[i].name, "legacy") != 0), "%s first on grain",
			c[i].name);
		/* and physically aligned, except legacy (the problem shown) */
		T_CHECK(align_lba_is_aligned(&t, c[i].first) ==
			(strcmp(c[i].name, "legacy") != 0), "%s first 4K", c[i].name);
	}
	/* odd: LBA 63 is physically aligned too, which is the point */
	const struct align_profile *odd = align_profile_get("odd");
	struct align_topology t = { 0 };
	align_topology_apply_profile(&t, odd);
	T_CHECK(align_lba_is_aligned(&t, 63), "odd: 63 aligned");
	/* legacy beyond 63: cylinder boundaries */
	const struct align_profile *leg = align_profile_get("legacy");
	struct align_topology l = { 0 };
	align_topology_apply_profile(&l, leg);
	T_EQ_U64(align_profile_first_lba(leg, &l, 64), 16065, "legacy cyl 1");
	T_CHECK(align_profile_get("nope") == NULL && align_profile_get(NULL) == NULL,
		"unknown profile");

	/* auto: grain from the target */
	const struct align_profile *au = align_profile_get("auto");
	T_CHECK(au && au->from_target, "auto");
	struct align_topology a = topo(512, 4096, 0);
	a.source = ALIGN_SRC_DEVICE;
	a.io_min = 4096;
	T_EQ_U64(align_profile_grain(au, &a), 1 << 20, "auto: 1 MiB default");
	a.io_opt = 4 << 20;
	T_EQ_U64(align_profile_grain(au, &a), 4 << 20, "auto: io_opt 4 MiB");
	a.erase_block = 8 << 20;
	T_EQ_U64(align_profile_grain(au, &a), 8 << 20, "auto: erase 8 MiB");
	a.io_opt = 65535 * 512;   /* USB bridge nonsense: ignored */
	a.erase_block = 0;
	T_EQ_U64(align_profile_grain(au, &a), 1 << 20, "auto: insane io_opt");
	a.io_opt = 3 * 512 * 1024;   /* RAID5 3 x 512K: honoured */
	T_EQ_U64(align_profile_grain(au, &a), 3 * 512 * 1024, "auto: raid");
	a.io_opt = 2u << 30;
	T_EQ_U64(align_profile_grain(au, &a), 1 << 20, "auto: > 1 GiB ignored");
	a.io_opt = 0;
	a.alignment_offset = 3584;
	T_EQ_U64(align_profile_first_lba(au, &a, 34), 2047, "auto on odd target");
	/* auto on a plain file: the kernel's 512/512 defaults */
	struct align_topology f = { .size = 1 << 20 };
	align_topology_apply_profile(&f, au);
	T_CHECK(f.logical == 512 && f.physical == 512 && f.alignment_offset == 0,
		"auto on a plain file");
	/* a device's known offset 0 is not overwritten by a profile */
	struct align_topology d = topo(512, 4096, 0);
	d.source = ALIGN_SRC_DEVICE;
	align_topology_apply_profile(&d, odd);
	T_CHECK(d.alignment_offset == 0 && d.source == ALIGN_SRC_DEVICE &&
		d.io_min == 4096, "profile fills gaps only");
}

static void test_calc_misc(void)
{
	struct align_topology t = topo(512, 4096, 3584);

	T_EQ_U64(align_granularity(&t), 4096, "gran");
	t.io_min = 65536;
	T_EQ_U64(align_granularity(&t), 65536, "gran io_min");
	struct align_topology z = { 0 };
	T_EQ_U64(align_granularity(&z), 512, "gran never 0");
	t = topo(512, 4096, 3584);
	T_CHECK(align_end_is_aligned(&t, 2046), "end 2046 (next 2047)");
	T_CHECK(!align_end_is_aligned(&t, 2047), "end 2047");
	T_EQ_U64(align_last_aligned_lba(&t, 4000, 1 << 20), 2046, "last 1 MiB");
	T_EQ_U64(align_last_aligned_lba(&t, 2046, 1 << 20), 2046, "last at bound");
	T_EQ_U64(align_last_aligned_lba(&t, 2045, 1 << 20), 0, "none");
	T_EQ_U64(align_last_aligned_lba(&t, 100, 0), 94, "last 4K");
	/* a grain the topology can never meet: 4096-byte LBAs, 512 shift */
	struct align_topology k = topo(4096, 4096, 0);
	k.io_min = 0;
	T_EQ_U64(align_first_aligned_lba(&k, 0, 1 << 20), 0, "4kn 0");
	T_EQ_U64(align_first_aligned_lba(&k, 1, 1 << 20), 256, "4kn 256");
	struct align_topology bad = topo(4096, 8192, 0);
	bad.alignment_offset = 512;   /* invalid: not a multiple of 4096 */
	T_EQ_U64(align_first_aligned_lba(&bad, 0, 0), UINT64_MAX, "unsolvable");
	T_EQ_U64(align_first_aligned_lba(&t, UINT64_MAX - 1, 0), UINT64_MAX,
		 "past the end");
	T_CHECK(strcmp(align_version(), OCTANT_VERSION) == 0, "version");
}

/* Values at the edges of the types: no wrap-around. */
static void test_extremes(void)
{
	struct align_topology t = topo(512, 4096, 0xBFFFFE00u);
	uint64_t g = (1ull << 63) + (1ull << 62), l = g / 512;

	t.io_min = 0xC0000000u;   /* granularity + offset > 2^32 */
	T_EQ_U64(align_partition_offset(&t, 0), 0xBFFFFE00u, "huge io_min");
	T_EQ_U64(align_partition_offset(&t, 1), 0xBFFFFC00u, "huge io_min 1");
	T_EQ_U64(align_dm_linear_offset(&t, 0x5FFFFFFF), 0, "huge io_min dm");
	t = topo(512, 512, 0);
	T_CHECK(align_lba_is_grain_aligned(&t, l, g), "grain 2^63+2^62");
	T_CHECK(!align_lba_is_grain_aligned(&t, l - 1, g), "grain - 1");
	T_EQ_U64(align_first_aligned_lba(&t, 1, g), l, "first, huge grain");
	T_EQ_U64(align_last_aligned_lba(&t, 2 * l + 5, g), 2 * l - 1,
		 "last, huge grain");
	T_EQ_U64(align_last_aligned_lba(&t, UINT64_MAX, g),
		 UINT64_MAX / l * l - 1, "last at the end of the LBA space");
	T_EQ_U64(align_first_aligned_lba(&t, l + 1, g), 2 * l, "next one");
	T_EQ_U64(align_first_aligned_lba(&t, UINT64_MAX / l * l + 1, g),
		 UINT64_MAX, "none left");
	T_EQ_U64(align_first_aligned_lba(&t, UINT64_MAX, 0), UINT64_MAX, "max");
}

int main(void)
{
	test_extremes();
	test_partition_offsets();
	test_dm_linear();
	test_lowest_aligned();
	test_tools();
	test_explain();
	test_profiles();
	test_calc_misc();
	return t_result();
}
