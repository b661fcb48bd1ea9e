/* SPDX-License-Identifier: MIT */
/* A store without room under the medium: counted and said (nand-int.h,
 * bk_wrote).  A leaf: it calls nothing else of the nand. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nand-int.h"

/*
 * The backing refused a write or a sync for want of room (@r: -ENOSPC,
 * -EDQUOT): the filesystem under a sparse image is full, or a quota is
 * reached.  What it was part of fails with that error up to the host (a
 * failed program is undone first, prog_undo), so a host write that needs
 * new room fails with ENOSPC while overwrites of room the store holds
 * still succeed -- and a person reading the log must learn why, not only
 * the client: one line on stderr (the server's log), at the first such
 * failure and then at most once a minute while they go on, with the count
 * (store_full, also in stats).  No line says the room came back: a write
 * into room already held succeeds while the store is still full.
 */
void nand_store_full(struct nand *n, int r)
{
	struct timespec ts;
	uint64_t cnt = __atomic_add_fetch(&n->c.store_full, 1, __ATOMIC_RELAXED);
	uint64_t now, last = __atomic_load_n(&n->full_said, __ATOMIC_RELAXED);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec + 1;
	if (last && now - last < 60)
		return;
	if (!__atomic_compare_exchange_n(&n->full_said, &last, now, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;         /* another thread says it */
	fprintf(stderr, "ublk-flash: the medium's store has no room (%s): "
		"host writes that need new room fail with ENOSPC until it "
		"has; data written before is kept (%llu refused so far)\n",
		strerror(-r), (unsigned long long)cnt);
}
