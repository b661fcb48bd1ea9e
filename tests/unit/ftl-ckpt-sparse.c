/* SPDX-License-Identifier: MIT */
/*
 * Checkpoints skip blank payload pages (version 3, ftl_ckpt_write.c).
 * 1. What a checkpoint writes follows the data written, not the device
 *    size: the same 2 MiB written to a 16 MiB and a 256 MiB image, then one
 *    checkpoint each (ckpt_bytes counter): the big one writes at most a few
 *    pages more (before: the whole map, 16x as many pages).
 * 2. Power cut inside such a checkpoint, after each of its backing writes
 *    in turn, the unsynced writes kept as a prefix or any subset with one
 *    torn (seeded): every flushed sector reads back, whichever checkpoint
 *    the open then takes.
 * 3. A checkpoint torn so that only its payload crc can tell (its second
 *    block's OOB records lost, that block's one map page in use reads as
 *    blank): the open takes the one before and rolls forward.
 * 4. A clean close / open round trip of a sparse image reads everything,
 *    even with garbage in the data area of every unprogrammed payload page
 *    (blank by its OOB: its data is never read).
 * Random: a new seed per run (crash images), printed; OCTANT_SEED replays.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): checkpoints written
 * on demand and the newest one's slot (f->ck).
 */
#include <errno.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"
#include "ftl-tagged.h"

#define SMALL (16u << 20)

static uint64_t seed0;

/* 1 MiB at the start and 1 MiB at logical page @hi: map page 0 and the
 * one of @hi in use (one map page: 1024 logical pages), the others blank;
 * @span logical pages checked. */
static uint64_t hi = 3072, span = 4096;

static bool in_set(uint64_t l)
{
	return l < 256 || (l >= hi && l < hi + 256);
}

static void write_set(struct ftl *f, uint64_t tag)
{
	static uint8_t buf[4096];

	for (uint64_t l = 0; l < span; l++) {
		if (!in_set(l))
			continue;
		tt_stamp(buf, l, tag);
		T_CHECK(ftl_write(f, buf, l * 4096, 4096, 0) == 0, "write %llu",
			(unsigned long long)l);
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
}

/* Every page of the first @span holds its stamp, or zeroes if not
 * written.  Returns false on the first wrong page. */
static bool verify(struct ftl *f, uint64_t tag, const char *what)
{
	static uint8_t buf[4096], want[4096];

	for (uint64_t l = 0; l < span; l++) {
		bool written = in_set(l);
		int r = ftl_read(f, buf, l * 4096, 4096);

		if (written)
			tt_stamp(want, l, tag);
		else
			memset(want, 0, sizeof(want));
		if (r || memcmp(buf, want, sizeof(buf))) {
			T_CHECK(0, "%s: page %llu: rc %d, %s", what,
				(unsigned long long)l, r, r ? "" : "wrong data");
			return false;
		}
	}
	return true;
}

static uint64_t ckpt_once(struct ftl *f)
{
	struct ftl_stats a, b;
	int r;

	ftl_stats_get(f, &a);
	ftl_lock(&f->lock);
	r = ftl_ckpt_write(f, false);
	ftl_unlock(&f->lock);
	T_CHECK(r == 0, "checkpoint: %d", r);
	ftl_stats_get(f, &b);
	return b.ckpt_bytes - a.ckpt_bytes;
}

static void size_independent(void)
{
	struct nand_backing *bs, *bb;
	struct ftl *s = tt_create(&bs, SMALL, 16, false);
	struct ftl *b = tt_create(&bb, 16 * SMALL, 16, false);
	uint64_t cs, cb, full;

	write_set(s, 1);
	write_set(b, 1);
	cs = ckpt_once(s);
	cb = ckpt_once(b);
	full = ((uint64_t)b->g.payload_pages + 1) * b->g.ps;
	fprintf(stderr, "one checkpoint after 2 MiB written: %llu bytes on "
		"16 MiB, %llu on 256 MiB (the whole payload: %llu)\n",
		(unsigned long long)cs, (unsigned long long)cb,
		(unsigned long long)full);
	T_CHECK(cb <= cs + 4ull * b->g.ps, "256 MiB: %llu bytes, 16 MiB: %llu",
		(unsigned long long)cb, (unsigned long long)cs);
	T_CHECK(cb < full / 4, "256 MiB: %llu of %llu bytes",
		(unsigned long long)cb, (unsigned long long)full);
	verify(b, 1, "256 MiB before close");
	{
		struct ftl_geom g = b->g;
		uint64_t n, spp = (uint64_t)g.slot_blocks * g.ppb, scribbled = 0;
		uint8_t *img;

		T_CHECK(ftl_close(b) == 0, "close");
		/* garbage in the data of every unprogrammed payload page */
		img = nand_mem_bytes(bb, &n);
		for (uint64_t p = 0; p < FTL_CKPT_SLOTS * spp; p++) {
			const uint8_t *o = img + ftl_oob_off(&g, p);
			bool blank = true;

			for (uint32_t k = 0; k < g.oob && blank; k++)
				blank = !o[k];
			if (!blank || p % spp == 0 || p % spp > g.payload_pages)
				continue;
			memset(img + ftl_page_off(&g, p), 0x5a, g.ps);
			scribbled++;
		}
		T_CHECK(scribbled > 0, "no unprogrammed payload page");
	}
	{
		struct ftl *g = NULL;

		nand_mem_hold(bb);
		T_CHECK(ftl_open_backing(bb, NULL, &g) == 0, "reopen");
		if (g) {
			T_CHECK(g->mnt.kind == FTL_MOUNT_CLEAN, "clean open");
			verify(g, 1, "256 MiB after a clean reopen");
			ftl_close(g);
		}
	}
	ftl_close(s);
	bs->ops->destroy(bs);
	bb->ops->destroy(bb);
}

/* ---- power cuts inside a checkpoint ------------------------------------ */

static struct nand_backing *pb;
static uint8_t *crash_img;
static uint64_t isz;
static int cuts, cut_fail;
static unsigned cut_at;

static void at_cut(void *ctx)
{
	(void)ctx;
	for (uint64_t k = 0; k < 6 && !cut_fail; k++) {
		uint64_t seed = seed0 + cut_at * 16 + k;
		struct nand_backing *m;
		struct ftl *g = NULL;
		char what[96];
		int r;

		nand_mem_crash_image(pb, seed, k != 0, crash_img);
		if (nand_backing_mem(isz, false, &m))
			return;
		nand_mem_load(m, crash_img);
		r = ftl_open_backing(m, NULL, &g);
		snprintf(what, sizeof(what), "cut after write %u of the "
			 "checkpoint, crash seed %llu", cut_at,
			 (unsigned long long)seed);
		T_CHECK(r == 0, "%s: open: %d", what, r);
		if (!r && getenv("T_DEBUG"))
			fprintf(stderr, "%s: gen %llu\n", what,
				(unsigned long long)g->ck.gen);
		if (!r && !verify(g, 2, what))
			cut_fail = 1;
		if (!r)
			ftl_abandon(g);
		else
			m->ops->destroy(m);
		cuts++;
	}
}

static void power_cuts(void)
{
	unsigned last = 0;

	/* 32 MiB, 4-page blocks: the checkpoint spans blocks whose OOB
	 * records reach the medium apart; slot block 1 holds map pages 3-6,
	 * of which only 5 is in use, the block table is further on: a torn
	 * checkpoint whose block 1 is missing passes every check but the
	 * payload crc */
	hi = 5120;
	span = 8192;

	for (cut_at = 1; cut_at < 200 && !cut_fail; cut_at++) {
		struct nand_backing *b;
		struct ftl *f = tt_create(&b, 2 * SMALL, 4, true);
		int before = cuts;

		pb = b;
		isz = ftl_test_image_size(&(struct ftl_create_opts){
			.size = 2 * SMALL, .align = FTL_ALIGN_1M,
			.pages_per_block = 4 });
		if (!crash_img)
			crash_img = malloc(isz);
		write_set(f, 1);
		(void)ckpt_once(f);
		write_set(f, 2);        /* flushed; the checkpoint covers it */
		nand_mem_set_trigger(b, cut_at, at_cut, NULL);
		(void)ckpt_once(f);
		nand_mem_set_trigger(b, 0, NULL, NULL);
		ftl_abandon(f);
		b->ops->destroy(b);
		if (cuts == before)
			break;          /* the checkpoint had fewer writes */
		last = cut_at;
	}
	fprintf(stderr, "%d crash images, cuts after each of the checkpoint's "
		"%u backing writes\n", cuts, last);
	T_CHECK(last >= 3, "too few writes inside the checkpoint: %u", last);
	free(crash_img);
}

/*
 * The torn state the payload crc alone catches: a checkpoint whose header
 * block reached the medium but whose next block's OOB records did not (the
 * block holds map page 5 of 8, the only one of 3..6 in use; the block
 * table is in a later block, so the map check passes).  The open must
 * not take it (map page 5 would read as blank: its data lost) but the
 * one before, roll forward, and read every flushed sector.
 */
static void torn_block(void)
{
	struct nand_backing *b;
	struct ftl *f = tt_create(&b, 2 * SMALL, 4, false), *g = NULL;
	struct ftl_geom geo = f->g;
	uint64_t slot0, n;
	uint8_t *img;
	int r;

	hi = 5120;
	span = 8192;
	write_set(f, 1);
	(void)ckpt_once(f);
	write_set(f, 2);
	(void)ckpt_once(f);
	slot0 = ftl_ckpt_slot_page(f, f->ck.gen, 0);
	T_CHECK(geo.ppb == 4 && geo.payload_pages > 8 && geo.slot_blocks >= 3,
		"geometry: ppb %u, payload %u pages", geo.ppb, geo.payload_pages);
	ftl_abandon(f);
	img = nand_mem_bytes(b, &n);
	for (uint32_t k = 0; k < geo.ppb; k++)   /* the block's OOB, any layout */
		memset(img + ftl_oob_off(&geo, slot0 + geo.ppb + k), 0, geo.oob);
	nand_mem_hold(b);
	r = ftl_open_backing(b, NULL, &g);
	T_CHECK(r == 0, "torn block: open: %d", r);
	if (!r) {
		T_CHECK(g->mnt.kind == FTL_MOUNT_ROLL_FORWARD,
			"torn block: mount kind %d", g->mnt.kind);
		verify(g, 2, "checkpoint with its second block's OOB lost");
		ftl_close(g);
	}
	b->ops->destroy(b);
}

int main(void)
{
	seed0 = t_seed();
	size_independent();
	torn_block();
	power_cuts();
	return t_result();
}
