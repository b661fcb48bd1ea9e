/* SPDX-License-Identifier: MIT */
/*
 * Creating a set image at a path (ftl-set.h, ftl_set_create): the
 * engine's create medium handling (ftl_create_medium: files, block
 * devices, NBD / RBD URIs, --force, signatures, sizes), then
 * ftl_set_create_backing on it.
 */
#include <errno.h>

#include "ftl-int.h"
#include "ftl-set-int.h"

struct set_make {
	const struct ftl_create_opts *o;
	unsigned nparts;
	uint64_t stripe, size;       /* image bytes */
};

/* ftl_create_medium's make: a reused medium reads as zeroes first (the
 * header area first, synced: nand_backing_wipe). */
static int set_make(struct nand_backing *b, bool reused, void *ctx)
{
	const struct set_make *m = ctx;
	int r = reused ? nand_backing_wipe(b, OCT_SB_AREA, m->size) : 0;

	return r ? r : ftl_set_create_backing(b, m->o, m->nparts, m->stripe);
}

int ftl_test_set_create_reused(struct nand_backing *b,
			       const struct ftl_create_opts *o,
			       unsigned nparts, uint64_t stripe)
{
	struct set_make m = { .o = o, .nparts = nparts, .stripe = stripe,
		.size = ftl_set_image_size(o, nparts, stripe) };

	return m.size ? set_make(b, true, &m) : -EINVAL;
}

int ftl_set_create(const char *path, const struct ftl_create_opts *o,
		   unsigned nparts, uint64_t stripe)
{
	struct set_make m = { .o = o, .nparts = nparts, .stripe = stripe };

	if (nparts == 1)
		return ftl_create(path, o);
	if (o->integrity || (o->max_size && o->max_size > o->size))
		return -EOPNOTSUPP;
	m.size = ftl_set_image_size(o, nparts, stripe);
	if (!m.size)
		return -EINVAL;
	return ftl_create_medium(path, o->force, m.size, set_make, &m);
}
