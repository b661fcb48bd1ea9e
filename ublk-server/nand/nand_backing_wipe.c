/* SPDX-License-Identifier: MIT */
/* Zeroing a reused medium before a create (nand.h, nand_backing_wipe). */
#include "nand.h"

int nand_backing_wipe(struct nand_backing *b, uint64_t head, uint64_t len)
{
	int r = b->ops->punch(b, 0, head < len ? head : len);

	if (!r)
		r = b->ops->sync(b);
	if (!r && len > head)
		r = b->ops->punch(b, head, len - head);
	/* and synced: a power cut after the new superblock must not find
	 * the old records under it (a zoned disk rebuilds its write
	 * pointers from them: tests/unit/zoned-create-cut.c) */
	return r ? r : b->ops->sync(b);
}
