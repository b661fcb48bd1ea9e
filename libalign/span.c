/* SPDX-License-Identifier: MIT */
/* Which physical sectors of the medium an I/O touches. */
#include <errno.h>
#include <inttypes.h>
#include "align-private.h"

/*
 * A write/read of @len bytes at logical byte offset @off: the physical
 * sectors of the medium it touches (logical byte x is at medium byte
 * x + shift, see calc.c), whether a physical sector is only partly covered
 * (read-modify-write) and whether an I/O no longer than one physical sector
 * still touches two.  len 0 touches nothing.  -EINVAL for a topology
 * without a physical sector size or an I/O past 2^64 bytes.
 */
int align_io_span(const struct align_topology *t, uint64_t off, uint64_t len,
		  struct align_span *span)
{
	uint64_t p = t->physical, start, end;

	if (!p || !span)
		return -EINVAL;
	start = off + alignp_shift(t);
	if (start < off || len > UINT64_MAX - start)
		return -EINVAL;
	end = start + len;                      /* exclusive, medium bytes */
	span->first_phys = start / p;
	if (!len) {
		span->nphys = 0;
		span->rmw = span->straddles = false;
		return 0;
	}
	span->nphys = (end - 1) / p - span->first_phys + 1;
	span->rmw = start % p != 0 || end % p != 0;
	span->straddles = len <= p && span->nphys > 1;
	ALIGNP_DBG(ALIGN_DEBUG_CALC, "span %" PRIu64 "+%" PRIu64 ": phys %"
		   PRIu64 " x%" PRIu64 "%s%s", off, len, span->first_phys,
		   span->nphys, span->rmw ? " rmw" : "",
		   span->straddles ? " straddles" : "");
	return 0;
}
