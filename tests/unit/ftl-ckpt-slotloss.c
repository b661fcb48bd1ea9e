/* SPDX-License-Identifier: MIT */
/*
 * Two lost blocks: the newest checkpoint slot's base block (a delta record
 * needs its base: the whole slot is gone with it) and one data block.
 * Recovery falls back to the slot before and rolls forward from its newest
 * record, so every page, trim record and flush summary numbered past that
 * record must still be on the medium.  GC kept a block until the two
 * newest checkpoint *records* covered it; when both were in the newest
 * slot (a base and a delta, or two deltas), it erased blocks the slot
 * before did not cover, flush summaries among them, and a flushed page
 * lost with the second block read as zeroes (fuzz-oracle image seed
 * 200345: blocks 21 and 6 erased, sector 119); and a checkpoint dropped
 * the list of pages flushed since the last summary, so pages only a
 * checkpoint of the newest slot covered had no summary at all.  Now a
 * block holding a summary the newest checkpoint of the slot before does
 * not cover is erased only after a base, and such pages stay listed for
 * the next summary.
 *
 * A seeded workload of 4 KiB writes, flushes and discards on a 1 MiB
 * image with 4-page blocks (its slot spans two blocks, as in the oracle);
 * after each of its last 40 flushes, a copy of the medium is damaged: the
 * newest slot's first block erased (every other time: the whole slot),
 * together with each data block in turn (3,200 images).  Each copy must be refused, or read every
 * logical page as its newest version or EIO (never zeroes for written
 * data, never an older version, never data from before a trim).
 * Seeded (OCTANT_SEED replays); OCTANT_LONG=1: up to 4 seeds in a row,
 * within the long budget (test.h).
 *
 * Inspects engine internals (struct ftl, ftl-int.h): the newest
 * checkpoint's slot (f->ck) and the geometry (f->g) to damage them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE  (1u << 20)
#define NLPN  (SIZE / 4096)
#define SNAPS 40                /* damaged snapshots per run */

static uint64_t rs;
static uint32_t cur[NLPN];      /* newest id per logical page, 0: zeroes */
static int bad, opened, refused, eio;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static void fill(uint8_t *p, uint32_t lpn, uint32_t id)
{
	for (uint32_t i = 0; i < 4096; i += 4) {
		uint32_t v = (lpn * 2654435761u) ^ (id * 40503u) ^ i ^ 0x3c3c;
		memcpy(p + i, &v, 4);
	}
}

/* Some writes, a discard now and then, a flush at the end. */
static void ops(struct ftl *f, int n, uint32_t *id)
{
	uint8_t w[4096];

	for (int i = 0; i < n; i++) {
		uint32_t l = (uint32_t)(rnd() % NLPN);

		if (rnd() % 24 == 0) {
			uint32_t k = 1 + (uint32_t)(rnd() % 4);

			if (l + k > NLPN)
				k = NLPN - l;
			T_CHECK(ftl_discard(f, (uint64_t)l * 4096,
					    (uint64_t)k * 4096) == 0, "discard");
			memset(cur + l, 0, k * sizeof(*cur));
			continue;
		}
		fill(w, l, *id);
		T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0,
			"write");
		cur[l] = (*id)++;
		if (rnd() % 6 == 0)
			T_CHECK(ftl_flush(f) == 0, "flush");
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
}

static void erase_blk(uint8_t *m, const struct ftl_geom *g, uint32_t blk)
{
	for (uint64_t p = (uint64_t)blk * g->ppb;
	     p < (uint64_t)(blk + 1) * g->ppb; p++) {
		memset(m + ftl_page_off(g, p), 0xff, g->ps);
		memset(m + ftl_oob_off(g, p), 0, g->oob);
	}
}

/* Open @m; every logical page must read its newest version or EIO. */
static void check(const uint8_t *m, uint64_t isz, const char *what,
		  uint32_t blk)
{
	uint8_t w[4096], r[4096];
	struct nand_backing *b;
	struct ftl *f;
	int rc;

	if (nand_backing_mem(isz, false, &b))
		abort();
	nand_mem_load(b, m);
	rc = ftl_open_backing(b, NULL, &f);
	if (rc) {
		refused++;
		b->ops->destroy(b);
		return;
	}
	opened++;
	for (uint32_t l = 0; l < NLPN; l++) {
		int e = ftl_read(f, r, (uint64_t)l * 4096, 4096);

		if (e == -EIO) {
			eio++;
			continue;
		}
		fill(w, l, cur[l]);
		if (!cur[l])
			memset(w, 0, sizeof(w));
		if (e || memcmp(r, w, 4096)) {
			if (bad++ < 5)
				T_CHECK(0, "%s and data block %u lost: logical "
					"page %u reads %s (newest id %u)", what,
					blk, l, e ? strerror(-e) : !cur[l] ?
					"data from before a trim" :
					r[0] == 0 && !memcmp(r, r + 1, 4095) ?
					"zeroes" : "an older version", cur[l]);
			break;
		}
	}
	ftl_abandon(f);
}

/* The medium now (a crash right after the flush): the newest slot's first
 * block or (@whole) every block of it erased, with each data block. */
static void damage_all(struct ftl *f, struct nand_backing *b, bool whole)
{
	const struct ftl_geom *g = &f->g;
	uint64_t isz = g->image_size;
	uint32_t s0 = (uint32_t)(ftl_ckpt_slot_page(f, f->ck.gen, 0) / g->ppb);
	uint8_t *img = malloc(isz), *m = malloc(isz);

	if (!img || !m)
		abort();
	memcpy(img, nand_mem_bytes(b, NULL), isz);
	for (uint32_t d = g->ckpt_blocks; d < g->nblocks; d++) {
		memcpy(m, img, isz);
		for (uint32_t k = 0; k < (whole ? g->slot_blocks : 1); k++)
			erase_blk(m, g, s0 + k);
		erase_blk(m, g, d);
		check(m, isz, whole ? "the newest slot" :
		      "the newest slot's base block", d);
	}
	free(m);
	free(img);
}

static void run(uint64_t seed)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 4, .oob_size = 64, .op_permille = 250 };
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint32_t id = 1;

	rs = seed | 1;
	memset(cur, 0, sizeof(cur));
	if (nand_backing_mem(ftl_test_image_size(&c), false, &b) ||
	    ftl_create_backing(b, &c)) {
		T_CHECK(0, "create");
		return;
	}
	nand_mem_hold(b);
	if (ftl_open_backing(b, NULL, &f)) {
		T_CHECK(0, "open");
		b->ops->destroy(b);
		return;
	}
	T_CHECK(f->g.ckpt_delta && f->g.flush_sum && f->g.slot_blocks == 2,
		"geometry: delta %d, summaries %d, slot of %u blocks",
		f->g.ckpt_delta, f->g.flush_sum, f->g.slot_blocks);
	ops(f, 3 * NLPN, &id);          /* GC from here on */
	for (int s = 0; s < SNAPS && !bad; s++) {
		ops(f, 8 + (int)(rnd() % 24), &id);
		damage_all(f, b, s % 2);
	}
	ftl_abandon(f);
	b->ops->destroy(b);
}

int main(void)
{
	uint64_t seed = t_seed();
	int n = t_long() ? 4 : 1, i;

	for (i = 0; i < n && t_long_more(i, 1) && !bad; i++)
		run(seed + (uint64_t)i);
	t_long_covered("seeds", i, n);
	printf("ftl-ckpt-slotloss: %d damaged images: %d opened (%d pages "
	       "EIO), %d refused; %d wrong\n", opened + refused, opened, eio,
	       refused, bad);
	T_CHECK(opened > 0 && eio > 0, "the damage reached data: %d opened, "
		"%d EIO", opened, eio);
	return t_result();
}
