/* SPDX-License-Identifier: MIT */
/* Zone conditions and the open / active limits (docs/engine.md, "Zone
 * state machine"). */
#include <errno.h>

#include "zn-int.h"

bool zn_cond_open(uint8_t c)
{
	return c == ZN_COND_IMP_OPEN || c == ZN_COND_EXP_OPEN;
}

bool zn_cond_active(uint8_t c)
{
	return zn_cond_open(c) || c == ZN_COND_CLOSED;
}

void zn_set_cond(struct zn *z, uint32_t i, uint8_t c)
{
	uint8_t old = z->zs[i].cond;

	z->nopen += zn_cond_open(c) - zn_cond_open(old);
	z->nactive += zn_cond_active(c) - zn_cond_active(old);
	z->zs[i].cond = c;
}

/* Close one implicitly open zone (the lowest) to free an open slot. */
static bool close_implicit(struct zn *z)
{
	for (uint32_t i = 0; i < z->g.nzones; i++)
		if (z->zs[i].cond == ZN_COND_IMP_OPEN) {
			zn_set_cond(z, i, z->zs[i].wp ? ZN_COND_CLOSED :
					  ZN_COND_EMPTY);
			z->c.closes++;
			return true;
		}
	return false;
}

int zn_open_room(struct zn *z, uint32_t i)
{
	uint8_t c = z->zs[i].cond;

	if (c == ZN_COND_EMPTY && z->g.max_active &&
	    z->nactive >= z->g.max_active) {
		z->c.resource_refusals++;
		return -EOVERFLOW;
	}
	if (zn_cond_open(c) || !z->g.max_open || z->nopen < z->g.max_open)
		return 0;
	if (close_implicit(z))
		return 0;
	z->c.resource_refusals++;
	return -ETOOMANYREFS;
}

uint32_t zn_block(const struct zn *z, uint32_t i, uint32_t zpage)
{
	return i * z->g.zone_blocks + zpage / z->g.ppb;
}

uint64_t zn_ppn(const struct zn *z, uint32_t i, uint32_t zpage)
{
	return (uint64_t)i * z->zpages + zpage;
}
