/* SPDX-License-Identifier: MIT */
/* The superblock copy's own checks, shared by the FTL's and the zone
 * layer's decoders (oct-format.h). */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "oct-format.h"

int oct_sb_check(const struct oct_sb *in)
{
	struct oct_sb sb = *in;
	uint32_t crc = sb.crc;

	if (memcmp(sb.magic, OCT_SB_MAGIC, 8))
		return -EBADMSG;
	if (sb.version != OCT_SB_VERSION)
		return -EPROTONOSUPPORT;
	sb.crc = 0;
	return oct_crc32c(0, &sb, OCT_SB_SIZE) == crc ? 0 : -EBADMSG;
}
