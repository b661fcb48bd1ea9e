/* SPDX-License-Identifier: MIT */
/*
 * Erase stamps (nand.h, oob_stamp): an erase of a block full of pages
 * writes one OOB-sized stamp (counted in backing bytes), the old bytes
 * stay on the backing, and every OOB read the nand hands out (one page,
 * a block, a run; this nand and a fresh one over the same bytes) shows
 * none of the old records.  Reprogrammed pages show again, stale ones
 * past them do not; erase generations keep rising past stamps a power cut
 * left behind.  Randomised over erase / program cycles and power cuts
 * (seed printed; replay with OCTANT_SEED).  The layout without stamps
 * still zeroes the whole block.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "nand.h"
#include "test.h"

#define PS   4096u
#define OS   64u
#define PPB  8u
#define NBLK 4u
#define SLOT (PS + OS)

/* A backing that counts the bytes written through it. */
struct cnt_backing {
	struct nand_backing base;
	struct nand_backing *m;
	uint64_t wbytes;
};

static int c_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	struct cnt_backing *c = (struct cnt_backing *)b;

	return c->m->ops->pread(c->m, buf, len, off);
}

static int c_pwrite(struct nand_backing *b, const void *buf, size_t len,
		    uint64_t off)
{
	struct cnt_backing *c = (struct cnt_backing *)b;

	c->wbytes += len;
	return c->m->ops->pwrite(c->m, buf, len, off);
}

static int c_preadv(struct nand_backing *b, const struct iovec *iov, int cnt,
		    uint64_t off)
{
	struct cnt_backing *c = (struct cnt_backing *)b;

	return c->m->ops->preadv(c->m, iov, cnt, off);
}

static int c_pwritev(struct nand_backing *b, const struct iovec *iov, int cnt,
		     uint64_t off)
{
	struct cnt_backing *c = (struct cnt_backing *)b;

	for (int i = 0; i < cnt; i++)
		c->wbytes += iov[i].iov_len;
	return c->m->ops->pwritev(c->m, iov, cnt, off);
}

static int c_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	struct cnt_backing *c = (struct cnt_backing *)b;

	return c->m->ops->punch(c->m, off, len);
}

static int c_sync(struct nand_backing *b)
{
	struct cnt_backing *c = (struct cnt_backing *)b;

	return c->m->ops->sync(c->m);
}

static void c_destroy(struct nand_backing *b)
{
	struct cnt_backing *c = (struct cnt_backing *)b;

	c->m->ops->destroy(c->m);
	free(c);
}

static const struct nand_backing_ops cnt_ops = {
	.pread = c_pread, .pwrite = c_pwrite, .punch = c_punch,
	.sync = c_sync, .destroy = c_destroy, .preadv = c_preadv,
	.pwritev = c_pwritev,
};

static struct cnt_backing *cnt_over(struct nand_backing *m)
{
	struct cnt_backing *c = calloc(1, sizeof(*c));

	if (!c)
		exit(T_EXIT_FAIL);
	c->base.ops = &cnt_ops;
	c->m = m;
	nand_mem_hold(m);               /* the test keeps @m */
	return c;
}

static struct nand_geom geom(bool stamp)
{
	return (struct nand_geom){ .page_size = PS, .oob_size = OS, .ppb = PPB,
		.nblocks = NBLK, .flash_off = 8192, .oob_inline = true,
		.oob_stamp = stamp };
}

static uint64_t img_size(void)
{
	return 8192 + (uint64_t)NBLK * PPB * SLOT;
}

/* A record the caller would write: its page and cycle in every byte of
 * the first OS - NAND_STAMP_SIZE (never all zero). */
static void record(uint8_t *oob, uint64_t ppn, uint32_t cycle)
{
	memset(oob, 0, OS);
	for (uint32_t i = 0; i < OS - NAND_STAMP_SIZE; i += 8) {
		uint32_t v[2] = { (uint32_t)ppn + 1, cycle };

		memcpy(oob + i, v, 8);
	}
}

static bool zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * What every OOB read of block @blk must show: the record of cycle
 * want[pg] (0: erased, all zero).  Checked through nand_read_oob, one
 * nand_read_block_oob and one nand_read_run of the whole block.
 */
static void expect(struct nand *n, uint32_t blk, const uint32_t *want,
		   const char *what)
{
	static uint8_t boob[PPB * OS], roob[PPB * OS], data[PPB * PS];
	uint8_t oob[OS], rec[OS];
	int res[PPB];

	T_CHECK(nand_read_block_oob(n, blk, boob) == 0, "%s: block oob", what);
	T_CHECK(nand_read_run(n, (uint64_t)blk * PPB, PPB, data, roob, res) == 0,
		"%s: run", what);
	for (uint32_t pg = 0; pg < PPB; pg++) {
		uint64_t ppn = (uint64_t)blk * PPB + pg;

		T_CHECK(nand_read_oob(n, ppn, oob) == 0, "%s: oob", what);
		if (want[pg])
			record(rec, ppn, want[pg]);
		else
			memset(rec, 0, OS);
		T_CHECK(!memcmp(oob, rec, OS), "%s: block %u page %u: "
			"nand_read_oob shows %s (want cycle %u)", what, blk, pg,
			zero(oob, OS) ? "nothing" : "another record", want[pg]);
		T_CHECK(!memcmp(boob + pg * OS, rec, OS), "%s: block %u page "
			"%u: nand_read_block_oob differs (want cycle %u)", what,
			blk, pg, want[pg]);
		T_CHECK(!memcmp(roob + pg * OS, rec, OS), "%s: block %u page "
			"%u: nand_read_run differs (want cycle %u)", what, blk,
			pg, want[pg]);
	}
}

/* Program pages [from, to) of @blk with records of @cycle. */
static void program(struct nand *n, uint32_t blk, uint32_t from, uint32_t to,
		    uint32_t cycle, bool run)
{
	static uint8_t data[PPB * PS], oob[PPB * OS];
	uint32_t done;

	for (uint32_t pg = from; pg < to; pg++) {
		memset(data + (pg - from) * PS, (int)(cycle + pg), PS);
		record(oob + (pg - from) * OS, (uint64_t)blk * PPB + pg, cycle);
	}
	if (from == to)
		return;
	if (run)
		T_CHECK(nand_program_run(n, (uint64_t)blk * PPB + from, to - from,
					 data, oob, &done) == 0, "run");
	else
		for (uint32_t pg = from; pg < to; pg++)
			T_CHECK(nand_program(n, (uint64_t)blk * PPB + pg,
					     data + (pg - from) * PS,
					     oob + (pg - from) * OS) == 0,
				"program");
}

/* A fresh nand over @m, as an open after a restart: nothing known. */
static struct nand *reopen(struct nand_backing *m, struct cnt_backing **cp)
{
	struct cnt_backing *c = cnt_over(m);
	struct nand_geom g = geom(true);
	struct nand *n;

	if (nand_create(&c->base, &g, &n)) {
		T_CHECK(0, "nand_create");
		exit(t_result());
	}
	for (uint32_t k = 0; k < NBLK; k++)
		nand_set_block(n, k, PPB, 0);   /* read everything */
	*cp = c;
	return n;
}

/* One erase writes one OOB; old bytes stay; no read shows them. */
static void erase_costs_one_oob(void)
{
	struct nand_backing *m;
	struct cnt_backing *c;
	struct nand *n;
	uint32_t want[PPB] = { 0 }, none[PPB] = { 0 };
	uint8_t *img;
	uint64_t w0;

	T_CHECK(nand_backing_mem(img_size(), false, &m) == 0, "mem");
		n = reopen(m, &c);
	for (uint32_t k = 0; k < NBLK; k++)
		nand_set_block(n, k, 0, 0);
	program(n, 1, 0, PPB, 1, true);
	for (uint32_t pg = 0; pg < PPB; pg++)
		want[pg] = 1;
	expect(n, 1, want, "programmed");
	w0 = c->wbytes;
	T_CHECK(nand_erase(n, 1) == 0, "erase");
	T_EQ_U64(c->wbytes - w0, OS, "bytes written by one erase (stamped)");
	img = nand_mem_bytes(m, NULL);
	/* the old records are still on the backing, pages 1.. untouched */
	for (uint32_t pg = 1; pg < PPB; pg++) {
		uint8_t rec[OS];

		record(rec, 1 * PPB + pg, 1);
		T_CHECK(!memcmp(img + 8192 + (uint64_t)(PPB + pg) * SLOT + PS,
				rec, OS - NAND_STAMP_SIZE),
			"page %u's old record is gone: the erase zeroed", pg);
	}
	expect(n, 1, none, "erased");
	T_CHECK(nand_block_oob_hole(n, 1), "an erased block reads as a hole");
	nand_destroy(n);
	n = reopen(m, &c);
	expect(n, 1, none, "erased, reopened");
	/* reprogram 3 pages: they show, the 5 stale ones after them do not */
	nand_set_block(n, 1, 0, 0);
	program(n, 1, 0, 3, 2, false);
	want[0] = want[1] = want[2] = 2;
	for (uint32_t pg = 3; pg < PPB; pg++)
		want[pg] = 0;
	expect(n, 1, want, "reprogrammed");
	nand_destroy(n);
	n = reopen(m, &c);
	expect(n, 1, want, "reprogrammed, reopened");
	nand_destroy(n);
	/* a block left open goes on after a restart: its next pages carry
	 * the generation the medium holds (nothing read before the program) */
	n = reopen(m, &c);
	nand_set_block(n, 1, 3, 1);
	program(n, 1, 3, 5, 3, true);
	want[3] = want[4] = 3;
	expect(n, 1, want, "continued after a reopen");
	/* the checkpoint's erase count may be older than the medium's: the
	 * next erase still goes above every stamp */
	nand_set_block(n, 1, 3, 0);
	T_CHECK(nand_erase(n, 1) == 0, "erase 2");
	T_CHECK(nand_block_ec(n, 1) >= 2, "erase count %u after two erases",
		nand_block_ec(n, 1));
	expect(n, 1, none, "erased twice");
	nand_destroy(n);
	nand_mem_power_off(m);
	m->ops->destroy(m);
}

/* The layout without stamps zeroes the block's slots, as before. */
static void unstamped_zeroes(void)
{
	struct nand_backing *m;
	struct cnt_backing *c;
	struct nand_geom g = geom(false);
	struct nand *n;
	uint32_t none[PPB] = { 0 };
	uint64_t w0;

	T_CHECK(nand_backing_mem(img_size(), false, &m) == 0, "mem");
	c = cnt_over(m);
	T_CHECK(nand_create(&c->base, &g, &n) == 0, "create");
	for (uint32_t k = 0; k < NBLK; k++)
		nand_set_block(n, k, 0, 0);
	program(n, 2, 0, PPB, 1, true);
	w0 = c->wbytes;
	T_CHECK(nand_erase(n, 2) == 0, "erase");
	T_EQ_U64(c->wbytes - w0, (uint64_t)PPB * SLOT,
		 "bytes written by one erase (zeroing)");
	nand_set_block(n, 2, PPB, nand_block_ec(n, 2));
	expect(n, 2, none, "zeroed");
	nand_destroy(n);
	m->ops->destroy(m);
}

/* Geometries where an OOB could cross a sector are refused. */
static void geometry_rule(void)
{
	struct nand_geom g = geom(true);

	T_CHECK(nand_stamp_geom_ok(&g), "4096 + 64 at 8192");
	g.oob_size = 48;
	T_CHECK(!nand_stamp_geom_ok(&g), "48-byte OOB");
	g.oob_size = 64;
	g.flash_off = 8192 + 64;
	T_CHECK(!nand_stamp_geom_ok(&g), "unaligned flash");
	g.flash_off = 8192;
	g.oob_inline = false;
	T_CHECK(!nand_stamp_geom_ok(&g), "separate layout");
}

/*
 * Erase / program cycles on one block, a power cut (prefix or subset of
 * the writes since the last sync, one torn) at a random point, reopened
 * by a fresh nand: every page shows either the record of its newest
 * durable program since the newest durable erase or nothing -- never a
 * record of a cycle before an erase that is durable, never an erased page
 * that was programmed and synced since its block's last synced erase.
 * The next erase after the cut must hide every page (its generation is
 * above all that the cut left).
 */
static void powercut_cycles(unsigned seed, int rounds)
{
	uint64_t rs = (uint64_t)seed * 2654435761u | 1;
	uint8_t *crash = malloc(img_size());

	int round;

	for (round = 0; round < rounds && t_long_more(round, 2000); round++) {
		struct nand_backing *m, *m2;
		struct cnt_backing *c;
		struct nand *n;
		/* cycle: 1 before the first erase, +1 per erase; per page the
		 * cycle of its synced program (0: none since the last synced
		 * erase); lo: no record of a cycle below may show */
		uint32_t synced[PPB] = { 0 }, cycle = 1, wp = 0, lo = 1;
		uint32_t none[PPB] = { 0 };
		bool erased_since = false;
		int steps = 2 + (int)(t_xorshift(&rs) % 24);

		T_CHECK(nand_backing_mem(img_size(), true, &m) == 0, "mem");
				n = reopen(m, &c);
		for (uint32_t k = 0; k < NBLK; k++)
			nand_set_block(n, k, 0, 0);
		for (int s = 0; s < steps; s++) {
			uint64_t op = t_xorshift(&rs) % 8;

			if (op < 2 || wp == PPB) {      /* erase */
				T_CHECK(nand_erase(n, 3) == 0, "erase");
				cycle++;
				wp = 0;
				erased_since = true;
			} else if (op < 6) {            /* program some pages */
				uint32_t k = 1 + (uint32_t)(t_xorshift(&rs) % (PPB - wp));

				program(n, 3, wp, wp + k, cycle, t_xorshift(&rs) & 1);
				wp += k;
			} else {                        /* sync */
				T_CHECK(nand_sync(n) == 0, "sync");
				for (uint32_t pg = 0; pg < PPB; pg++)
					synced[pg] = pg < wp ? cycle : 0;
				lo = cycle;
				erased_since = false;
			}
		}
		nand_mem_crash_image(m, t_xorshift(&rs), true, crash);
		nand_destroy(n);
		nand_mem_power_off(m);
		m->ops->destroy(m);
		T_CHECK(nand_backing_mem(img_size(), false, &m2) == 0, "mem2");
		nand_mem_load(m2, crash);
		n = reopen(m2, &c);
		for (uint32_t pg = 0; pg < PPB; pg++) {
			uint8_t oob[OS], rec[OS];
			uint64_t ppn = 3 * PPB + pg;
			bool ok = false;

			T_CHECK(nand_read_oob(n, ppn, oob) == 0, "read");
			if (zero(oob, OS))
				ok = !synced[pg] || erased_since;
			for (uint32_t cy = lo; !ok && cy <= cycle; cy++) {
				record(rec, ppn, cy);
				ok = !memcmp(oob, rec, OS);
			}
			T_CHECK(ok, "seed %u round %d: page %u shows %s (synced "
				"cycle %u, oldest allowed %u, last %u)", seed, round,
				pg, zero(oob, OS) ? "nothing" : "an older record",
				synced[pg], lo, cycle);
		}
		T_CHECK(nand_erase(n, 3) == 0, "erase after the cut");
		expect(n, 3, none, "erased after the cut");
		nand_destroy(n);
		nand_mem_power_off(m2);
		m2->ops->destroy(m2);
		if (t_failures)
			break;
	}
	t_long_covered("power-cut cycles", round, rounds);
	free(crash);
}

int main(void)
{
	unsigned seed = t_seed();

	geometry_rule();
	erase_costs_one_oob();
	unstamped_zeroes();
	powercut_cycles(seed, t_long() ? 20000 : 2000);
	return t_result();
}
