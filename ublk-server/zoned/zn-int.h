/* SPDX-License-Identifier: MIT */
/* The zone layer's private state (the files of ublk-server/zoned only). */
#ifndef OCTANT_ZN_INT_H
#define OCTANT_ZN_INT_H

#include <pthread.h>

#include "zn-format.h"
#include "zoned.h"

#define ZN_SECT 512u
#define ZN_SPP (ZN_LBS / ZN_SECT)      /* sectors per page */

struct zn_state {
	uint32_t wp;          /* write pointer, pages from the zone's start;
	                         zone pages (cap) when FULL */
	uint32_t prog;        /* pages programmed since the last reset (wp,
	                         or one past the finish mark): the blocks a
	                         reset erases */
	uint8_t  cond;        /* enum zn_cond */
};

struct zn {
	struct nand *nand;
	struct zn_geom g;
	uint32_t zpages;      /* pages per zone: zone_blocks * ppb */
	bool readonly;
	pthread_mutex_t lock; /* guards everything below and the nand */
	struct zn_state *zs;  /* nzones */
	uint32_t nopen;       /* zones IMP_OPEN or EXP_OPEN */
	uint32_t nactive;     /* zones open or CLOSED */
	struct zn_counters c;
	uint8_t *pbuf;        /* one page of data (zn_io.c, finish) */
	uint8_t *obuf;        /* ppb OOBs (recovery; a run's records) */
};

/* zn_state.c: conditions and the open/active accounting (lock held) */
bool zn_cond_open(uint8_t c);
bool zn_cond_active(uint8_t c);
/* Move zone @i to @c, keeping nopen and nactive. */
void zn_set_cond(struct zn *z, uint32_t i, uint8_t c);
/* Make room for zone @i (EMPTY or CLOSED, or IMP_OPEN for @explicit) to
 * open: the active limit for an EMPTY one (-EOVERFLOW), then the open
 * limit, closing an implicitly open zone when needed (-ETOOMANYREFS when
 * none is). */
int zn_open_room(struct zn *z, uint32_t i);
/* Zone @i's blocks and pages on the medium. */
uint32_t zn_block(const struct zn *z, uint32_t i, uint32_t zpage);
uint64_t zn_ppn(const struct zn *z, uint32_t i, uint32_t zpage);

/* zn_mgmt.c */
int zn_mgmt_locked(struct zn *z, enum zn_op op, uint32_t i);

#endif /* OCTANT_ZN_INT_H */
