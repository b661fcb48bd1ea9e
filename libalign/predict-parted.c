/* SPDX-License-Identifier: MIT */
/*
 * What `parted -s -a optimal DEV mklabel L mkpart primary START END` does: a
 * model of parted 3.5 (libparted/arch/linux.c linux_get_optimum_alignment,
 * libparted/unit.c ped_unit_parse_custom, parted/parted.c do_mkpart, the
 * constraint solver), checked against the real parted by
 * tests/cli/alignpart-predict.bats and tests/vm/guest/align-matrix.sh.
 *
 * START and END are read as parted reads them: a number and a unit; a
 * location in an IEC unit (1MiB) is exact, any other one (0%, 1MB, 2048s)
 * a range of +- half a unit, less one sector.  The optimal grid is
 * offset alignment_offset / sector, grain 1 MiB when the I/O sizes divide
 * 1 MiB, else the optimal (or the minimum) I/O size.  parted puts the start
 * on the grid point nearest to START inside its range, and the end one
 * sector before a grid point inside END's range; when either has none it
 * takes the sectors asked for as they are and then says the partition is
 * not properly aligned, or, when even that leaves the label's usable area
 * (GPT's last 33 sectors), fails with "You requested a partition from ...".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "align-private.h"

#define MiB (1ll << 20)
#define GPT_ENTRIES_BYTES (128ll * 128ll)

typedef long long sect;        /* PedSector */

/* A parsed location: centre sector, inclusive range, IEC unit? */
struct ploc {
	sect s, lo, hi;
	bool iec;
};

static sect clip(sect len, sect s)
{
	return s < 0 ? 0 : s > len - 1 ? len - 1 : s;
}

/* parse_unit_suffix() + ped_unit_get_size(): the size of the unit named by
 * suffix @u in bytes (no suffix: parted's default unit for input, MB), and
 * whether it is an IEC unit (KiB..TiB, exact locations); 0 when unknown
 * (a cylinder: not modelled). */
static long long unit_size(const char *u, sect len, sect ss, bool *iec)
{
	static const char letters[] = "kmgt";
	long long dec = 1000, bin = 1024;

	*iec = false;
	if (!*u)
		return 1000000;
	if (u[1] == 'i' || u[1] == 'I') {
		for (size_t i = 0; i < 4; i++, bin *= 1024)
			if ((u[0] | 0x20) == letters[i]) {
				*iec = true;
				return bin;
			}
		return 0;
	}
	switch (u[0] | 0x20) {
	case 's': return ss;
	case 'b': return 1;
	case '%': return len * ss / 100;   /* '%' | 0x20 == '%' */
	default: break;
	}
	for (size_t i = 0; i < 4; i++, dec *= 1000)
		if ((u[0] | 0x20) == letters[i])
			return dec;
	return 0;
}

/* ped_unit_parse_custom(): "0%", "1MiB", "2048s", "1MB", "-34s" -> centre
 * and range; -EINVAL when it does not parse, -ERANGE when it is outside the
 * device. */
static int parse_loc(const char *str, sect len, sect ss, struct ploc *l)
{
	const char *suffix = str;
	char *endp;
	double num;
	long long usz;
	sect radius;

	while (*suffix && (strchr("0123456789,.-", *suffix)))
		suffix++;
	num = strtod(str, &endp);
	if (endp == str || endp != suffix || (num > 0 && num < 1))
		return -EINVAL;
	usz = unit_size(suffix, len, ss, &l->iec);
	if (usz <= 0)
		return -EINVAL;
	if (l->iec) {
		radius = 0;            /* an IEC location is exact */
	} else {
		radius = (usz + ss - 1) / ss / 2 - 1;
		if (radius < 0)
			radius = 0;
	}
	l->s = (sect)(num * (double)usz / (double)ss);
	if (str[0] == '-')
		l->s += len;           /* counts from the end */
	l->lo = clip(len, l->s - radius);
	l->hi = clip(len, l->s + radius);
	if (l->s - l->hi > radius || l->lo - l->s > radius)
		return -ERANGE;        /* "The location ... is outside of the device" */
	l->s = clip(len, l->s);
	return 0;
}

static sect mod(sect a, sect m)
{
	sect r = a % m;

	return r < 0 ? r + m : r;
}

/* The grid point (== off mod g) in [lo, hi] nearest to @c, the lower one on
 * a tie (ped_alignment_align_nearest); -1 if none. */
static sect nearest(sect c, sect off, sect g, sect lo, sect hi)
{
	sect up, down;

	if (lo > hi)
		return -1;
	if (c < lo)
		c = lo;
	if (c > hi)
		c = hi;
	down = c - mod(c - off, g);
	up = down == c ? c : down + g;
	if (down < lo)
		down = -1;
	if (up > hi)
		up = -1;
	if (down < 0)
		return up;
	if (up < 0)
		return down;
	return up - c < c - down ? up : down;
}

/* linux_get_optimum_alignment(): offset and grain, sectors. */
static void optimum(const struct align_topology *t, sect ss, sect *off, sect *grain)
{
	long long opt = t->io_opt, min = t->io_min;
	long long A = t->misaligned ? 0 : t->alignment_offset;

	if ((!opt && !min) ||
	    (opt && MiB % opt == 0 && min && MiB % min == 0) ||
	    (!min && opt && MiB % opt == 0) ||
	    (!opt && min && MiB % min == 0))
		*grain = MiB / ss;
	else if (!opt)
		*grain = min / ss;      /* the minimum alignment */
	else
		*grain = opt / ss;
	if (*grain < 1)
		*grain = 1;
	*off = mod(A / ss, *grain);
}

int align_predict_parted(const struct align_topology *seen, enum align_label label,
			 const char *start, const char *end,
			 struct align_tool_result *r)
{
	sect ss, len, off, g, lab_lo, lab_hi, s, e;
	struct ploc ls, le;
	int rc;

	if (!seen || !r || !start || !end ||
	    (label != ALIGN_LABEL_DOS && label != ALIGN_LABEL_GPT))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	ss = alignp_logical(seen);
	len = (sect)(seen->size / (uint64_t)ss);
	if (len < 2)
		return -ENOSPC;
	rc = parse_loc(start, len, ss, &ls);
	if (!rc)
		rc = parse_loc(end, len, ss, &le);
	if (rc)
		return rc == -ERANGE ? -ERANGE : -EINVAL;
	/* _adjust_end_if_iec(): an IEC end is one sector before it */
	if (le.iec && ls.s != le.s) {
		le.s--;
		le.lo--;
		le.hi--;
	}
	if (label == ALIGN_LABEL_GPT) {
		sect es = (GPT_ENTRIES_BYTES + ss - 1) / ss;

		lab_lo = 2 + es;
		lab_hi = len - 2 - es;
	} else {
		lab_lo = 1;
		lab_hi = len - 1;
	}
	if (lab_lo > lab_hi)
		return -ENOSPC;
	optimum(seen, ss, &off, &g);
	r->grain = (uint64_t)g;
	r->grain_offset = (uint64_t)off;

	/* the optimal constraint: start on the grid, end one before it */
	s = nearest(ls.s, off, g, ls.lo > lab_lo ? ls.lo : lab_lo,
		    ls.hi < lab_hi ? ls.hi : lab_hi);
	e = s < 0 ? -1 : nearest(le.s, mod(off - 1, g), g,
				 le.lo > s ? le.lo : s,
				 le.hi < lab_hi ? le.hi : lab_hi);
	if (s >= 0 && e >= 0) {
		r->start = (uint64_t)s;
		r->end = (uint64_t)e;
		return 0;
	}
	/* constraint_any: the sectors asked for, inside the label */
	s = ls.s < lab_lo ? lab_lo : ls.s > lab_hi ? lab_hi : ls.s;
	e = le.s < s ? s : le.s > lab_hi ? lab_hi : le.s;
	if (s < ls.lo || s > ls.hi || e < le.lo || e > le.hi) {
		r->start = r->end = UINT64_MAX;
		r->refuses = true;
		r->exit_status = 1;
		snprintf(r->says, sizeof(r->says),
			 "Error: You requested a partition from %s to %s (sectors %lld..%lld). "
			 "The closest location we can manage is sectors %lld..%lld.",
			 start, end, ls.s, le.s, s, e);
		return 0;
	}
	r->start = (uint64_t)s;
	r->end = (uint64_t)e;
	if (mod(s, g) != off) {
		r->warns = true;
		snprintf(r->says, sizeof(r->says),
			 "Warning: The resulting partition is not properly aligned "
			 "for best performance: %llds %% %llds != %llds", s, g, off);
	}
	return 0;
}
