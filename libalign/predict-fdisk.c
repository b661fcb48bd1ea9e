/* SPDX-License-Identifier: MIT */
/*
 * What sfdisk / fdisk choose: a model of libfdisk's alignment (util-linux
 * 2.38, libfdisk/src/alignment.c, gpt.c, dos.c), checked against the real
 * sfdisk by tests/cli/alignpart-predict.bats and tests/vm/guest/align-matrix.sh.
 *
 * libfdisk reads libblkid's topology, takes the optimal I/O size (else the
 * minimum) as its I/O size unless the physical sector does not divide it
 * or it is the 33553920 some USB bridges report,
 * and from that a grain (max(1 MiB, I/O size)) and a first LBA: the
 * alignment offset when there is one (LBA 7 on offset 3584), else 1 MiB or
 * the I/O size when larger.  The default start of the first partition is
 * that first LBA (dos) or the GPT's first usable LBA, aligned "in range":
 * up to the grain, then moved back by (granularity - offset) so that it is
 * on a physical boundary again (GPT on offset 3584: 34 -> 2048 -> 2047).
 */
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include "align-private.h"

#define MiB (1ull << 20)
#define GPT_ENTRIES_BYTES (128ull * 128ull)

/* The fields of struct fdisk_context that alignment reads. */
struct fdisk_model {
	uint64_t ss;          /* sector_size */
	uint64_t phy;         /* phy_sector_size */
	uint64_t min_io;      /* min_io_size */
	uint64_t opt_io;      /* optimal_io_size (as libblkid said) */
	uint64_t io_size;     /* the I/O size fdisk uses */
	uint64_t A;           /* alignment_offset */
	uint64_t grain;       /* bytes */
	uint64_t first_lba;
	uint64_t total;       /* sectors */
};

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* fdisk_discover_topology() + fdisk_reset_alignment() (topology_get_grain,
 * topology_get_first_lba) for a topology as libblkid reports it. */
static void model_init(struct fdisk_model *m, const struct align_topology *t)
{
	bool has_topology;
	uint64_t x = 0;

	memset(m, 0, sizeof(*m));
	m->ss = alignp_logical(t);
	m->phy = t->physical;
	m->min_io = t->io_min;
	m->opt_io = t->io_opt;
	m->A = t->misaligned ? 0 : t->alignment_offset;   /* libblkid's 0 */
	m->io_size = m->opt_io ? m->opt_io : m->min_io;
	/* ignore an optimal I/O size the physical sector does not divide */
	if (m->io_size && m->phy && m->io_size % m->phy)
		m->io_size = m->phy;
	/* ... and the USB bridges' 65535 x 512 (util-linux #1221, 2.37) */
	if (m->io_size == 33553920)
		m->io_size = m->phy;
	if (!m->phy)
		m->phy = m->ss;
	if (!m->min_io)
		m->min_io = m->ss;
	if (!m->io_size)
		m->io_size = m->ss;
	m->total = t->size / m->ss;

	/* topology_get_grain */
	m->grain = max64(m->io_size, MiB);
	if (m->total <= m->grain * 4 / m->ss)
		m->grain = m->phy;

	/* topology_get_first_lba */
	has_topology = m->opt_io || m->A || !alignp_pow2(m->min_io);
	if (has_topology) {
		if (m->A)
			x = m->A;
		else if (m->io_size > MiB)
			x = m->io_size;
	}
	if (!x)
		x = MiB;
	m->first_lba = x / m->ss;
	if (m->total <= m->first_lba * 4)
		m->first_lba = m->phy / m->ss;
}

/* lba_is_aligned(): on the grain (or granularity when larger), at the
 * alignment offset. */
static bool lba_is_aligned(const struct fdisk_model *m, uint64_t lba)
{
	uint64_t g = max64(m->phy, m->min_io), off;

	if (m->grain > g)
		g = m->grain;
	off = (uint64_t)((alignp_u128)lba * m->ss % g);
	return (g + m->A - off) % g == 0;
}

/* lba_is_phy_aligned(): what `fdisk -l` warns about. */
static bool lba_is_phy_aligned(const struct fdisk_model *m, uint64_t lba)
{
	uint64_t g = max64(m->phy, m->min_io);
	uint64_t off = (uint64_t)((alignp_u128)lba * m->ss % g);

	return (g + m->A - off) % g == 0;
}

enum { UP, DOWN, NEAREST };

/* fdisk_align_lba() */
static uint64_t align_lba(const struct fdisk_model *m, uint64_t lba, int dir)
{
	uint64_t res, n = m->grain / m->ss;

	if (lba_is_aligned(m, lba))
		return lba;
	if (lba < m->first_lba)
		res = m->first_lba;
	else if (dir == UP)
		res = (lba + n) / n * n;
	else if (dir == DOWN)
		res = lba / n * n;
	else
		res = (lba + n / 2) / n * n;
	if (m->A && !lba_is_aligned(m, res) && res > m->A / m->ss) {
		res -= (max64(m->phy, m->min_io) - m->A) / m->ss;
		if (dir == UP && res < lba)
			res += n;
	}
	return res;
}

/* fdisk_align_lba_in_range() */
static uint64_t align_in_range(const struct fdisk_model *m, uint64_t lba,
			       uint64_t start, uint64_t stop)
{
	start = align_lba(m, start, UP);
	stop = align_lba(m, stop, DOWN);
	if (lba > start && lba < stop && lba - start < m->grain / m->ss)
		return lba;
	lba = align_lba(m, lba, NEAREST);
	if (lba < start)
		return start;
	if (lba > stop)
		return stop;
	return lba;
}

int align_predict_fdisk(const struct align_topology *seen, enum align_label label,
			struct align_tool_result *r)
{
	struct fdisk_model m;
	uint64_t first, last;

	if (!seen || !r || (label != ALIGN_LABEL_DOS && label != ALIGN_LABEL_GPT))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	model_init(&m, seen);
	if (label == ALIGN_LABEL_GPT) {
		/* count_first_last_lba(): the UEFI minimum, or the topology's
		 * first LBA when that is larger and fits */
		uint64_t es = (GPT_ENTRIES_BYTES + m.ss - 1) / m.ss;
		uint64_t flba = es + 2;

		if (m.total < 2 * es + 4)
			return -ENOSPC;
		last = m.total - 2 - es;
		first = flba < m.first_lba && m.first_lba < last ? m.first_lba : flba;
		m.first_lba = first;   /* gpt_reset_alignment() follows the header */
	} else {
		if (m.total < 2)
			return -ENOSPC;
		first = m.first_lba;
		last = m.total - 1;
		if (last > UINT32_MAX)
			last = UINT32_MAX;
	}
	if (first > last)
		return -ENOSPC;
	r->start = align_in_range(&m, first, first, last);
	r->end = UINT64_MAX;    /* not modelled: dos takes the rest, gpt aligns it */
	r->grain = m.grain / m.ss;
	r->grain_offset = m.A / m.ss % r->grain;
	if (!lba_is_phy_aligned(&m, r->start)) {
		r->warns = true;
		snprintf(r->says, sizeof(r->says),
			 "Partition 1 does not start on physical sector boundary.");
	}
	ALIGNP_DBG(ALIGN_DEBUG_CALC, "fdisk model: io_size %llu grain %llu "
		   "first_lba %llu -> %s start %llu",
		   (unsigned long long)m.io_size, (unsigned long long)m.grain,
		   (unsigned long long)m.first_lba,
		   label == ALIGN_LABEL_GPT ? "gpt" : "dos",
		   (unsigned long long)r->start);
	return 0;
}
