/* SPDX-License-Identifier: MIT */
/* Explicit topologies ("LOG/PHYS[/OFFSET[/IO_MIN[/IO_OPT]]]"), validation and
 * description. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include "align-private.h"

#define MAX_LOGICAL  65536u
#define MAX_PHYSICAL (1u << 20)

/* A decimal number up to UINT32_MAX; advances *p. */
static int parse_u32(const char **p, uint32_t *v)
{
	uint64_t x = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		x = x * 10 + (uint64_t)(*s - '0');
		if (x > UINT32_MAX)
			return -EINVAL;
	}
	*v = (uint32_t)x;
	*p = s;
	return 0;
}

/* An optional "/N" field; advances *p.  0 when absent (*given false). */
static int parse_opt_field(const char **p, uint32_t *v, bool *given)
{
	*given = false;
	if (**p != '/')
		return 0;
	(*p)++;
	*given = true;
	return parse_u32(p, v);
}

/* Parse "LOG/PHYS[/OFFSET[/IO_MIN[/IO_OPT]]]" (e.g. "512/4096/3584",
 * "512/4096/0/12288/36864") into *t; size and erase_block untouched, io_min
 * PHYS unless given, io_opt untouched unless given.  IO_MIN (>= PHYS) and
 * IO_OPT (0 = none) need only be multiples of LOG: a 3-disk stripe's chunk
 * and width, a USB bridge's 33553920. */
int align_topology_parse(const char *spec, struct align_topology *t)
{
	uint32_t ls, ps, off = 0, iomin = 0, ioopt = 0, gran;
	bool has_off, has_min = false, has_opt = false;
	const char *p = spec;

	if (!spec || !t || parse_u32(&p, &ls) < 0 || *p++ != '/' ||
	    parse_u32(&p, &ps) < 0 || parse_opt_field(&p, &off, &has_off) < 0)
		goto err;
	if (has_off && parse_opt_field(&p, &iomin, &has_min) < 0)
		goto err;
	if (has_off && has_min && parse_opt_field(&p, &ioopt, &has_opt) < 0)
		goto err;
	if (*p)
		goto err;
	if (!has_min)
		iomin = ps;
	gran = iomin > ps ? iomin : ps;
	if (!alignp_pow2(ls) || ls < 512 || ls > MAX_LOGICAL ||
	    !alignp_pow2(ps) || ps < ls || ps > MAX_PHYSICAL ||
	    iomin < ps || iomin % ls || ioopt % ls ||
	    off % ls || off >= gran)
		goto err;
	t->logical = ls;
	t->physical = ps;
	t->alignment_offset = off;
	t->io_min = iomin;
	if (has_opt)
		t->io_opt = ioopt;
	t->misaligned = false;
	t->source = ALIGN_SRC_OVERRIDE;
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "override %u/%u/%u io_min %u io_opt %u",
		   ls, ps, off, iomin, t->io_opt);
	return 0;
err:
	ALIGNP_DBG(ALIGN_DEBUG_PROBE, "bad topology spec '%s'",
		   spec ? spec : "(null)");
	return -EINVAL;
}

/* 0 if the topology is self-consistent, else -EINVAL: power-of-two
 * logical (512..64K) and physical (>= logical) sizes, io_min / io_opt /
 * erase_block multiples of the logical size, alignment_offset a multiple
 * of the logical size below the granularity, size whole sectors. */
int align_topology_validate(const struct align_topology *t)
{
	uint32_t ls;

	if (!t)
		return -EINVAL;
	ls = t->logical;
	if (!alignp_pow2(ls) || ls < 512 || ls > MAX_LOGICAL)
		return -EINVAL;
	if (!alignp_pow2(t->physical) || t->physical < ls ||
	    t->physical > MAX_PHYSICAL)
		return -EINVAL;
	if (t->io_min % ls || t->io_opt % ls || t->erase_block % ls ||
	    t->size % ls)
		return -EINVAL;
	if (t->alignment_offset % ls ||
	    t->alignment_offset >= align_granularity(t))
		return -EINVAL;
	return 0;
}

static const char *source_name(enum align_source s)
{
	switch (s) {
	case ALIGN_SRC_DEVICE:   return "device";
	case ALIGN_SRC_IMAGE:    return "image";
	case ALIGN_SRC_OVERRIDE: return "override";
	case ALIGN_SRC_PROFILE:  return "profile";
	case ALIGN_SRC_SERVED:   return "served image";
	case ALIGN_SRC_NONE:     break;
	}
	return "unknown";
}

/* One line, e.g. "512/4096 offset 3584 io_min 4096 io_opt 262144
 * erase_block 262144 size 1073741824 (image)"; zero fields are left out.
 * Returns snprintf's length, -EINVAL without a topology. */
int align_topology_describe(const struct align_topology *t, char *buf,
			    size_t len)
{
	char io_min[24] = "", io_opt[24] = "", erase[32] = "", size[32] = "";

	if (!t || (!buf && len))
		return -EINVAL;
	if (t->io_min)
		snprintf(io_min, sizeof(io_min), " io_min %u", t->io_min);
	if (t->io_opt)
		snprintf(io_opt, sizeof(io_opt), " io_opt %u", t->io_opt);
	if (t->erase_block)
		snprintf(erase, sizeof(erase), " erase_block %u", t->erase_block);
	if (t->size)
		snprintf(size, sizeof(size), " size %" PRIu64, t->size);
	return snprintf(buf, len, "%u/%u offset %u%s%s%s%s%s (%s)", t->logical,
			t->physical, t->alignment_offset,
			t->misaligned ? " misaligned" : "", io_min, io_opt,
			erase, size, source_name(t->source));
}
