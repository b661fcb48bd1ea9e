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
	return r;
}
