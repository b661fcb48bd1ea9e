/* SPDX-License-Identifier: MIT */
/* Remote media by URI: NBD (nand_backing_nbd.c) or Ceph RBD
 * (nand_backing_rbd.c); see nand.h. */
#include <stddef.h>

#include "nand.h"

bool nand_backing_is_uri(const char *path)
{
	return nand_backing_is_nbd(path) || nand_backing_is_rbd(path);
}

int nand_backing_uri(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size)
{
	if (nand_backing_is_rbd(uri))
		return nand_backing_rbd(uri, readonly, out, size);
	return nand_backing_nbd(uri, readonly, out, size);
}

const char *nand_backing_uri_error(const char *uri)
{
	return nand_backing_is_rbd(uri) ? nand_backing_rbd_error() : NULL;
}
