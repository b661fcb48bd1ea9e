/* SPDX-License-Identifier: MIT */
/*
 * libalign: randomized cross-checks of the predicates and calculators
 * against a brute-force byte-level model of the medium.  The model: pick
 * the medium shift s (logical byte 0 lives at medium byte s, s < gran, a
 * multiple of the logical size); the kernel then reports the lowest aligned
 * byte A = (gran - s) % gran.  Everything below is checked by walking
 * bytes / LBAs one at a time.  OCTANT_SEED replays a run; OCTANT_LONG=1
 * runs ten times as many cases.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "align.h"
#include "test.h"

static uint64_t rng_state;

static uint64_t rnd(void)   /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n) { return rnd() % n; }

struct model {
	struct align_topology t;
	uint64_t shift;   /* medium byte of logical byte 0 */
	uint64_t gran;
};

static struct model random_model(void)
{
	static const uint32_t ls_[] = { 512, 512, 512, 4096 };
	static const uint32_t ps_[] = { 512, 4096, 4096, 8192, 16384 };
	struct model m;

	memset(&m, 0, sizeof(m));
	m.t.logical = ls_[below(4)];
	do
		m.t.physical = ps_[below(5)];
	while (m.t.physical < m.t.logical);
	m.t.io_min = below(4) == 0 ? m.t.physical * (1u << below(4)) : 0;
	m.gran = m.t.physical > m.t.io_min ? m.t.physical : m.t.io_min;
	m.shift = below(m.gran / m.t.logical) * m.t.logical;
	m.t.alignment_offset = (uint32_t)((m.gran - m.shift) % m.gran);
	m.t.source = ALIGN_SRC_OVERRIDE;
	return m;
}

/* Brute force: the medium position (mod grain) advances by the logical
 * size per LBA; wrap by repeated subtraction. */
static uint64_t step(uint64_t pos, uint64_t ls, uint64_t grain)
{
	pos += ls;
	while (pos >= grain)
		pos -= grain;
	return pos;
}

/* Medium position of @lba modulo @grain, walking LBA by LBA (the walk is
 * periodic in the LBA with period grain, so lba mod grain steps do). */
static uint64_t bf_pos(const struct model *m, uint64_t lba, uint64_t grain)
{
	uint64_t pos = m->shift % grain;

	for (uint64_t l = 0; l < lba % grain; l++)
		pos = step(pos, m->t.logical, grain);
	return pos;
}

static int bf_on(const struct model *m, uint64_t lba, uint64_t grain)
{
	return bf_pos(m, lba, grain) == 0;
}

static uint64_t random_grain(const struct model *m)
{
	switch (below(5)) {
	case 0: return 0;                          /* = granularity */
	case 1: return m->gran;
	case 2: return 1u << 20;
	case 3: return (uint64_t)m->t.physical << below(9);
	default: return (uint64_t)m->t.logical * (1 + below(64)); /* odd sizes */
	}
}

static void check_predicates(const struct model *m)
{
	uint64_t grain = random_grain(m), g = grain ? grain : m->gran;
	uint64_t bound = below(4) ? below(20000) : rnd() >> below(64);
	uint64_t lba = below(50000), first, last, l, pos, want;
	int on = bf_on(m, lba, g);

	T_CHECK(align_lba_is_grain_aligned(&m->t, lba, grain) == on,
		"grain_aligned %u/%u/%u io_min %u lba %" PRIu64 " grain %" PRIu64,
		m->t.logical, m->t.physical, m->t.alignment_offset, m->t.io_min,
		lba, grain);
	T_CHECK(align_lba_is_aligned(&m->t, lba) == bf_on(m, lba, m->gran),
		"is_aligned lba %" PRIu64, lba);
	T_CHECK(align_end_is_aligned(&m->t, lba) == bf_on(m, lba + 1, m->gran),
		"end_is_aligned lba %" PRIu64, lba);

	/* first aligned >= bound: walk up LBA by LBA, at most one period */
	first = align_first_aligned_lba(&m->t, bound, grain);
	pos = bf_pos(m, bound, g);
	for (l = bound; l - bound <= g && l < UINT64_MAX; l++) {
		if (pos == 0)
			break;
		pos = step(pos, m->t.logical, g);
	}
	if (l - bound > g || l == UINT64_MAX)
		l = UINT64_MAX;   /* none */
	T_EQ_U64(first, l, "first_aligned %u/%u/%u bound %" PRIu64 " grain %"
		 PRIu64, m->t.logical, m->t.physical, m->t.alignment_offset,
		 bound, g);

	/* last LBA <= bound whose successor is aligned: walk up from 1 */
	if (bound > 3 * g)
		return;
	last = align_last_aligned_lba(&m->t, bound, grain);
	want = 0;
	pos = bf_pos(m, 1, g);
	for (l = 1; l <= bound + 1; l++) {
		if (pos == 0)
			want = l - 1;
		pos = step(pos, m->t.logical, g);
	}
	T_EQ_U64(last, want, "last_aligned bound %" PRIu64 " grain %" PRIu64,
		 bound, g);
}

/* Kernel formula vs the model: the partition's alignment_offset is the
 * first byte of the partition that sits on a granularity boundary. */
static void check_partition(const struct model *m)
{
	uint64_t start = below(100000), x = 0;
	uint64_t base = start * m->t.logical + m->shift;
	struct align_topology p;

	while ((base + x) % m->gran)
		x += 512;
	T_EQ_U64(align_partition_offset(&m->t, start), x, "partition at %"
		 PRIu64 " on %u/%u/%u", start, m->t.logical, m->t.physical,
		 m->t.alignment_offset);
	/* a partition's own topology agrees with the disk's predicates */
	p = m->t;
	p.alignment_offset = (uint32_t)x;
	for (int i = 0; i < 4; i++) {
		uint64_t l = below(5000);
		T_CHECK(align_lba_is_aligned(&p, l) ==
			align_lba_is_aligned(&m->t, start + l),
			"partition-relative LBA %" PRIu64, l);
	}
	/* dm-linear: same walk in 512-byte sectors */
	uint64_t sect = below(100000);
	base = sect * 512 + m->shift;
	for (x = 0; (base + x) % m->gran; x += 512)
		;
	T_EQ_U64(align_dm_linear_offset(&m->t, sect), x, "dm at %" PRIu64, sect);
}

/* io_span vs counting bytes per physical sector. */
static void check_span(const struct model *m)
{
	uint64_t p = m->t.physical, off, len, first = UINT64_MAX, n = 0;
	uint64_t cur = UINT64_MAX, cnt = 0;
	struct align_span s;
	int partial = 0;

	off = below(4) ? below(64 * p) : below(8) * p / 8 * 8 + rnd() % 1000000000;
	len = below(4) ? below(3 * p + 2) : (1 + below(4)) * p;
	T_CHECK(align_io_span(&m->t, off, len, &s) == 0, "span rc");
	for (uint64_t i = 0; i < len; i++) {
		uint64_t sec = (off + i + m->shift) / p;
		if (sec != cur) {
			if (cur != UINT64_MAX && cnt < p)
				partial = 1;
			if (first == UINT64_MAX)
				first = sec;
			cur = sec;
			cnt = 0;
			n++;
		}
		cnt++;
	}
	if (cur != UINT64_MAX && cnt < p)
		partial = 1;
	if (!len)
		first = (off + m->shift) / p;
	T_CHECK(s.first_phys == first && s.nphys == n && s.rmw == partial &&
		s.straddles == (len <= p && n > 1),
		"span %" PRIu64 "+%" PRIu64 " on %u/%u/%u: got %" PRIu64 " x%"
		PRIu64 " rmw %d str %d, want %" PRIu64 " x%" PRIu64 " rmw %d",
		off, len, m->t.logical, m->t.physical, m->t.alignment_offset,
		s.first_phys, s.nphys, s.rmw, s.straddles, first, n, partial);
}

/* Huge LBAs: no overflow in the modular arithmetic. */
static void check_huge(const struct model *m)
{
	uint64_t lba = rnd() >> below(8), g = 1u << 20;
	__extension__ unsigned __int128 pos =
		(unsigned __int128)lba * m->t.logical + m->shift;

	T_CHECK(align_lba_is_grain_aligned(&m->t, lba, g) == (pos % g == 0),
		"huge lba %" PRIu64, lba);
}

int main(void)
{
	/* a fresh seed each run (OCTANT_SEED replays) */
	unsigned seed = t_seed();
	long n = t_long() ? 50000 : 5000;
	struct align_topology t = { .logical = 512, .physical = 4096 };
	struct align_span s;

	rng_state = seed;
	for (long i = 0; i < n && t_failures < 20; i++) {
		struct model m = random_model();
		check_predicates(&m);
		check_partition(&m);
		check_span(&m);
		check_huge(&m);
	}
	/* fixed span cases: odd layout, 4K write at LBA 0 straddles */
	t.alignment_offset = 3584;
	T_CHECK(align_io_span(&t, 0, 4096, &s) == 0 && s.first_phys == 0 &&
		s.nphys == 2 && s.rmw && s.straddles, "odd: 4K at 0");
	T_CHECK(align_io_span(&t, 3584, 4096, &s) == 0 && s.first_phys == 1 &&
		s.nphys == 1 && !s.rmw && !s.straddles, "odd: 4K at 3584");
	T_CHECK(align_io_span(&t, 63 * 512, 8192, &s) == 0 && s.nphys == 2 &&
		!s.rmw, "odd: 8K at LBA 63");
	t.alignment_offset = 0;
	T_CHECK(align_io_span(&t, 63 * 512, 4096, &s) == 0 && s.nphys == 2 &&
		s.rmw && s.straddles, "1m: 4K at LBA 63 straddles");
	T_CHECK(align_io_span(&t, 512, 512, &s) == 0 && s.nphys == 1 && s.rmw &&
		!s.straddles, "512 write is rmw");
	T_CHECK(align_io_span(&t, UINT64_MAX - 10, 100, &s) == -EINVAL,
		"span overflow");
	t.physical = 0;
	T_CHECK(align_io_span(&t, 0, 1, &s) == -EINVAL, "no physical size");
	if (t_failures)
		fprintf(stderr, "replay with OCTANT_SEED=%u\n", seed);
	return t_result();
}
