/* SPDX-License-Identifier: MIT */
/* Rewriting a damaged copy of a two-copy structure (nand.h,
 * nand_backing_mend). */
#include <stdio.h>

#include "nand.h"

int nand_backing_mend(struct nand_backing *b, const void *good, size_t len,
		      const uint64_t at[2], int bad, const char *what,
		      const char *why)
{
	int r = 0;

	for (int i = 0; i < 2 && !r; i++)
		if (bad & (1 << i)) {
			r = b->ops->pwrite(b, good, len, at[i]);
			if (!r && what)
				fprintf(stderr, "ublk-flash: %s copy %d "
					"rewritten from copy %d (%s)\n", what,
					i, !i, why);
		}
	return r ? r : b->ops->sync(b);
}
