/* SPDX-License-Identifier: MIT */
/*
 * A program that fails with an error of the backing leaves nothing a
 * recovery would believe (nand.c, prog_undo): a run's pwritev that wrote a
 * prefix of whole slots and then failed (a full tmpfs: ENOSPC), a single
 * page's pwrite, the OOB write of a separate-layout (1.0) program; with
 * and without erase stamps; the OOBs read as erased afterwards, the
 * block's later pages still count, and no power cut after the failure
 * returned brings a record back.  When the undo cannot be made sure (the
 * backing fails every write and read after), the nand is failed: it
 * writes nothing more, even once the backing works again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failing-backing.h"
#include "nand.h"
#include "test.h"

#define PS 4096u
#define OS 64u
#define PPB 8u
#define NBLK 4u
#define FOFF 8192u

static struct nand_geom geom(bool inl, bool stamp)
{
	struct nand_geom g = { .page_size = PS, .oob_size = OS, .ppb = PPB,
		.nblocks = NBLK, .flash_off = FOFF, .oob_inline = inl,
		.oob_stamp = stamp };

	if (!inl)
		g.oob_off = FOFF + (uint64_t)NBLK * PPB * PS;
	return g;
}

static uint64_t img_size(const struct nand_geom *g)
{
	return g->oob_inline ? FOFF + (uint64_t)NBLK * PPB * (PS + OS)
			     : g->oob_off + (uint64_t)NBLK * PPB * OS;
}

static uint64_t oob_at(const struct nand_geom *g, uint64_t ppn)
{
	return g->oob_inline ? FOFF + ppn * (PS + OS) + PS
			     : g->oob_off + ppn * OS;
}

struct rig {
	struct nand_geom g;
	struct nand_backing *mem, *b;
	struct nand *n;
	uint8_t data[PPB * PS], oob[PPB * OS];
};

/* A nand over a failing backing over memory (@powercut: crash images);
 * every block erased once (stamps: generation 1 or more). */
static int rig_open(struct rig *x, bool inl, bool stamp, bool powercut)
{
	x->g = geom(inl, stamp);
	if (nand_backing_mem(img_size(&x->g), powercut, &x->mem))
		return -1;
	nand_mem_hold(x->mem);
	x->b = fb_wrap(x->mem);
	if (!x->b || nand_create(x->b, &x->g, &x->n))
		return -1;
	for (uint32_t k = 0; k < NBLK; k++) {
		nand_set_block(x->n, k, PPB, 0);
		if (nand_erase(x->n, k))
			return -1;
	}
	for (uint32_t i = 0; i < PPB; i++) {
		memset(x->data + i * PS, 0x40 + (int)i, PS);
		memset(x->oob + i * OS, 0, OS);
		/* a record-like OOB: nonzero bytes before the stamp area */
		memset(x->oob + i * OS, 0x70 + (int)i, OS - 16);
	}
	return nand_sync(x->n);
}

static void rig_close(struct rig *x)
{
	fb_disarm();
	nand_destroy(x->n);
	x->mem->ops->destroy(x->mem);
}

static bool zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Raw bytes of page @ppn's OOB record in @img (before the stamp area). */
static const uint8_t *raw_rec(const struct rig *x, const uint8_t *img,
			      uint64_t ppn)
{
	return img + oob_at(&x->g, ppn);
}

/* A run of @count pages of block 1 fails after @keep bytes landed:
 * nothing of it may read back as programmed, and no crash image may
 * hold a record of it; pages programmed after it in the block count. */
static void run_fails(bool stamp, uint32_t count, uint64_t keep,
		      const char *what)
{
	struct rig x;
	uint8_t boob[PPB * OS], *img, *crash;
	uint32_t done = 99;
	uint64_t first = PPB;           /* block 1, page 0 */
	int r;

	if (rig_open(&x, true, stamp, true)) {
		T_CHECK(0, "%s: setup", what);
		return;
	}
	img = nand_mem_bytes(x.mem, NULL);
	fb_arm(2 * (PS + OS), UINT64_MAX, keep, -ENOSPC, false, false);
	r = nand_program_run(x.n, first, count, x.data, x.oob, &done);
	T_CHECK(r == -ENOSPC && done == 0, "%s: run fails: %d, done %u", what,
		r, done);
	T_EQ_U64(fb_fail_off, FOFF + first * (PS + OS), "%s: failed where", what);
	/* the live image: every OOB of the run blank (page 0 of a stamped
	 * block may hold its erase stamp, never a record) */
	for (uint32_t i = 0; i < count; i++)
		T_CHECK(zero(raw_rec(&x, img, first + i), OS - 16),
			"%s: page %u's record undone", what, i);
	T_CHECK(nand_read_block_oob(x.n, 1, boob) == 0 &&
		zero(boob, (size_t)PPB * OS), "%s: block reads erased", what);
	/* every crash image from now on: no record of the failed run */
	crash = malloc(img_size(&x.g));
	for (uint64_t seed = 0; crash && seed < 32; seed++) {
		nand_mem_crash_image(x.mem, seed, seed & 1, crash);
		for (uint32_t i = 0; i < count; i++)
			if (!zero(raw_rec(&x, crash, first + i), OS - 16)) {
				T_CHECK(0, "%s: crash image %u holds page "
					"%u's record", what, (unsigned)seed, i);
				seed = 99;
				break;
			}
	}
	free(crash);
	/* the block goes on past the failed pages; their generation holds */
	r = count == PPB ? 0 :
	    nand_program_run(x.n, first + count, PPB - count,
			     x.data + (size_t)count * PS,
			     x.oob + (size_t)count * OS, &done);
	T_CHECK(r == 0 && (count == PPB || done == PPB - count),
		"%s: later pages: %d", what, r);
	T_CHECK(nand_read_block_oob(x.n, 1, boob) == 0, "%s: block oob", what);
	for (uint32_t i = 0; i < PPB; i++)
		T_CHECK(i < count ? zero(boob + (size_t)i * OS, OS)
				  : !memcmp(boob + (size_t)i * OS,
					    x.oob + (size_t)i * OS, OS - 16),
			"%s: page %u after the later run", what, i);
	T_CHECK(nand_sync(x.n) == 0, "%s: sync (the nand still works)", what);
	rig_close(&x);
}

/* One page (nand_program: one pwrite of data and OOB) that wrote its
 * whole slot and still failed. */
static void page_fails(void)
{
	struct rig x;
	uint8_t *img;
	int r;

	if (rig_open(&x, true, true, false)) {
		T_CHECK(0, "page: setup");
		return;
	}
	img = nand_mem_bytes(x.mem, NULL);
	fb_arm(PS + OS, PS + OS, PS + OS, -EIO, false, false);
	r = nand_program(x.n, 2 * PPB + 3, x.data, x.oob);
	T_CHECK(r == -EIO, "page: program fails: %d", r);
	T_CHECK(zero(raw_rec(&x, img, 2 * PPB + 3), OS - 16),
		"page: its record undone");
	T_CHECK(nand_program(x.n, 2 * PPB + 4, x.data, x.oob) == 0 &&
		nand_sync(x.n) == 0, "page: the next page programs");
	rig_close(&x);
}

/* Layout 1.0: data and OOB are two writes; the OOB write fails after its
 * record landed.  Its record must be gone, also after the next program of
 * the block writes the block's buffered OOB back, and after a sync. */
static void separate_fails(void)
{
	struct rig x;
	uint8_t *img;
	int r;

	if (rig_open(&x, false, false, false)) {
		T_CHECK(0, "separate: setup");
		return;
	}
	img = nand_mem_bytes(x.mem, NULL);
	fb_arm(OS, OS, OS, -EIO, false, false);
	r = nand_program(x.n, 3 * PPB, x.data, x.oob);
	T_CHECK(r == -EIO, "separate: program fails: %d", r);
	T_CHECK(zero(raw_rec(&x, img, 3 * PPB), OS),
		"separate: its record undone");
	T_CHECK(nand_program(x.n, 3 * PPB + 1, x.data + PS, x.oob + OS) == 0,
		"separate: the next page programs");
	T_CHECK(nand_sync(x.n) == 0, "separate: sync");
	T_CHECK(zero(raw_rec(&x, img, 3 * PPB), OS),
		"separate: the failed record stays undone after the block's "
		"OOB went out again");
	T_CHECK(!memcmp(raw_rec(&x, img, 3 * PPB + 1), x.oob + OS, OS),
		"separate: the next page's record is there");
	rig_close(&x);
}

/* The backing fails every write and read after the failure: the undo
 * cannot be made sure, so the nand writes nothing more -- even when the
 * backing works again, no sync may report the medium durable. */
static void undo_impossible(void)
{
	struct rig x;
	uint32_t done;
	int r;

	if (rig_open(&x, true, true, false)) {
		T_CHECK(0, "impossible: setup");
		return;
	}
	fb_arm(2 * (PS + OS), UINT64_MAX, 3 * (PS + OS), -EIO, true, true);
	r = nand_program_run(x.n, PPB, PPB, x.data, x.oob, &done);
	T_CHECK(r == -EIO, "impossible: run fails: %d", r);
	fb_disarm();                    /* the backing answers again */
	T_CHECK(nand_sync(x.n) == -EIO, "impossible: no sync succeeds after");
	T_CHECK(nand_program(x.n, 2 * PPB, x.data, x.oob) == -EIO,
		"impossible: no program after");
	T_CHECK(nand_erase(x.n, 2) == -EIO, "impossible: no erase after");
	rig_close(&x);
}

int main(void)
{
	run_fails(true, PPB, 3 * (PS + OS), "stamped, 3 whole slots");
	run_fails(true, 5, 2 * (PS + OS) + 100, "stamped, 2 slots and a torn one");
	run_fails(false, PPB, 3 * (PS + OS), "no stamps, 3 whole slots");
	run_fails(false, 6, 6 * (PS + OS) - 1, "no stamps, all but a byte");
	page_fails();
	separate_fails();
	undo_impossible();
	return t_result();
}
