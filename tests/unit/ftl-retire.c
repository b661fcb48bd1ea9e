/* SPDX-License-Identifier: MIT */
/*
 * Moving data off retired blocks costs O(1) per host page: ftl_retire_move
 * (called from ftl_balance before every host page) resumes where it left
 * off instead of scanning every block from the start on each call.
 * 1. K full blocks near the end of a 64 MiB device (1024 blocks) are
 *    retired; host writes move their pages off while every block is
 *    looked at about once in all (f->maint.retire_visits, the test seam), not
 *    K times;
 * 2. once nothing is left to retire, further host writes look at no
 *    block at all;
 * 3. every sector still reads back what was written.
 * Random write offsets: seed printed, replay with OCTANT_SEED.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): retires blocks
 * (ftl_retire_block), counts the blocks ftl_retire_move looked at
 * (f->maint).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE  (64u << 20)
#define PS    4096u
#define K     24u

static uint8_t model[SIZE], rd[SIZE];

static void fill(uint8_t *p, size_t n, uint64_t *rs)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = t_xorshift(rs);
		memcpy(p + i, &v, 8);
	}
}

/* @n random 4 KiB host writes (the model follows). */
static void host_writes(struct ftl *f, unsigned n, uint64_t *rs)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = (t_xorshift(rs) % (SIZE / PS)) * PS;
		int r;

		fill(model + off, PS, rs);
		r = ftl_write(f, model + off, off, PS, false);
		T_CHECK(r == 0, "write at %llu: %d", (unsigned long long)off, r);
		if (r)
			exit(t_result());
	}
}

int main(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 16, .op_permille = 300 };
	struct ftl_open_opts o = { 0 };
	uint64_t rs = t_seed() | 1, visits;
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint32_t nb, got = 0, left = 0;
	int r;

	if (nand_backing_mem(ftl_test_image_size(&c), false, &b) ||
	    ftl_create_backing(b, &c)) {
		T_CHECK(0, "create");
		return t_result();
	}
	nand_mem_hold(b);
	r = ftl_open_backing(b, &o, &f);
	T_CHECK(r == 0, "open: %d", r);
	if (r)
		return t_result();
	nb = f->g.nblocks;
	fill(model, SIZE, &rs);
	for (size_t off = 0; off < SIZE; off += 1 << 20)
		T_CHECK(ftl_write(f, model + off, off, 1 << 20, false) == 0, "fill");

	/* retire the K highest full blocks holding data */
	ftl_lock(&f->lock);
	for (uint32_t blk = nb - 1; blk >= f->g.ckpt_blocks && got < K; blk--) {
		if (f->idx.state[blk] != FTL_BLK_FULL || !f->idx.valid[blk])
			continue;
		r = ftl_retire_block(f, blk, "test");
		T_CHECK(r == 0, "retire %u: %d", blk, r);
		got++;
	}
	ftl_unlock(&f->lock);
	T_EQ_U64(got, K, "blocks retired");
	T_CHECK(f->maint.retire_scan, "retire_scan set");

	/* 1. move them: about one look per block in all */
	f->maint.retire_visits = 0;
	host_writes(f, 4 * K, &rs);
	for (uint32_t blk = f->g.ckpt_blocks; blk < nb; blk++)
		if (f->idx.state[blk] == FTL_BLK_BAD && f->idx.valid[blk] &&
		    !f->maint.bb_done[blk])
			left++;
	T_EQ_U64(left, 0, "retired blocks still holding pages to move");
	T_CHECK(f->ctr.m.bad_relocations > 0, "pages moved off retired blocks");
	visits = f->maint.retire_visits;
	printf("# %u blocks, %u retired: %llu blocks looked at\n", nb, K,
	       (unsigned long long)visits);
	T_CHECK(visits <= nb + 4 * K,
		"ftl_retire_move looked at %llu blocks for %u retired ones on a "
		"%u-block device (at most %u expected)",
		(unsigned long long)visits, K, nb, nb + 4 * K);

	/* 2. nothing left: no block looked at */
	T_CHECK(!f->maint.retire_scan, "retire_scan cleared");
	f->maint.retire_visits = 0;
	host_writes(f, 1000, &rs);
	T_EQ_U64(f->maint.retire_visits, 0, "blocks looked at with nothing to retire");

	/* 3. the data */
	T_CHECK(ftl_read(f, rd, 0, SIZE) == 0, "read");
	T_CHECK(!memcmp(rd, model, SIZE), "data after retiring");
	ftl_close(f);
	b->ops->destroy(b);
	return t_result();
}
