/* SPDX-License-Identifier: MIT */
/*
 * page_programs counts every page a checkpoint programs, including the
 * checkpoint an open starts from: the counters a checkpoint persists are
 * taken before its own pages are programmed, so without a correction
 * every close lost its checkpoint's pages.
 * Open, write, close, open (a clean mount); write and flush, stats A;
 * write a clean checkpoint (what ftl_close does) and measure its k pages
 * (ckpt_bytes, a per-mount counter); die without anything else (abandon);
 * the next mount's page_programs - A == k + 1 (the mount marker).
 * Measured per checkpoint: with delta checkpoints (v4) k depends on what
 * changed since the previous one.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): writes checkpoints on
 * demand (ftl_ckpt_write).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

static struct ftl *open_mem(struct nand_backing *b)
{
	struct ftl_open_opts o = { 0 };
	struct ftl *f = NULL;
	int r;

	nand_mem_hold(b);
	r = ftl_open_backing(b, &o, &f);
	T_CHECK(r == 0, "open: %d", r);
	if (r)
		exit(t_result());
	return f;
}

int main(void)
{
	struct ftl_create_opts c = { .size = 16u << 20, .align = FTL_ALIGN_1M };
	static uint8_t mb[1 << 20];
	struct ftl_stats a, b, cc;
	struct nand_backing *bk;
	struct ftl *f;
	uint64_t k, ps;
	int r;

	if (nand_backing_mem(ftl_test_image_size(&c), false, &bk) ||
	    ftl_create_backing(bk, &c)) {
		T_CHECK(0, "create");
		return t_result();
	}
	f = open_mem(bk);
	ps = f->g.ps;
	memset(mb, 0x5a, sizeof(mb));
	for (uint64_t o = 0; o < (8u << 20); o += sizeof(mb))
		T_CHECK(ftl_write(f, mb, o, sizeof(mb), 0) == 0, "write");
	ftl_stats_get(f, &a);
	ftl_close(f);

	f = open_mem(bk);
	ftl_stats_get(f, &b);
	T_CHECK(b.last_mount == FTL_MOUNT_CLEAN, "clean mount");
	T_EQ_U64(b.programs_host + b.programs_gc + b.programs_ckpt,
		 b.page_programs, "programs by origin add up");
	/* a live clean checkpoint (what ftl_close writes) of a state with
	 * changes, then death: its k pages (ckpt_bytes, a per-mount counter)
	 * must be in the counters the next mount finds, plus the marker */
	memset(mb, 0xa5, sizeof(mb));
	T_CHECK(ftl_write(f, mb, 0, sizeof(mb), 0) == 0, "write");
	T_CHECK(ftl_flush(f) == 0, "flush");
	ftl_stats_get(f, &a);
	ftl_lock(&f->lock);
	r = ftl_ckpt_write(f, true);
	ftl_unlock(&f->lock);
	T_CHECK(r == 0, "checkpoint: %d", r);
	ftl_stats_get(f, &cc);
	k = (cc.ckpt_bytes - a.ckpt_bytes) / ps;
	printf("# one checkpoint: %llu pages\n", (unsigned long long)k);
	T_CHECK(k >= 2, "a checkpoint after writes has a header and payload "
		"pages");
	T_EQ_U64(cc.page_programs - a.page_programs, k,
		 "programs of a live checkpoint");
	ftl_abandon(f);
	f = open_mem(bk);
	ftl_stats_get(f, &b);
	T_CHECK(b.last_mount == FTL_MOUNT_CLEAN, "clean mount after it");
	T_EQ_U64(b.page_programs - a.page_programs, k + 1,
		 "programs of the clean checkpoint + the mount marker");
	ftl_close(f);
	bk->ops->destroy(bk);
	return t_result();
}
