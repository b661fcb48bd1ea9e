/* SPDX-License-Identifier: MIT */
/*
 * GC never picks a block whose host run is still in flight (reserved, not
 * published: ftl_run_reserve .. ftl_run_finish).  Such a block counts no
 * valid page for that run yet; once the next run's reservation closes it
 * (FULL) it looked emptier than any real victim, greedy took it, the
 * drain then published the run and GC copied data written a moment ago:
 * a wrong victim and extra write amplification.  Two cases, GC thread
 * steps (ftl_gc_bg_step, as the thread runs them) while the runs are in
 * flight, a helper thread programming them meanwhile:
 *  - a real victim with half its pages invalid exists: it is the one
 *    collected, for exactly its valid pages; the busy block is neither
 *    the victim index's pick nor the scan's, and the indexes check out;
 *  - the only gain is in blocks the runs supersede: GC publishes the runs
 *    (drain) and collects those, copying nothing.
 * Then every page reads what was written last.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): host runs reserved
 * and programmed by hand (ftl_run_*), GC thread steps (ftl_gc_bg_step),
 * pending blocks (f->gc).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"
#include "test.h"

#define SIZE (16u << 20)
#define PPB 64u
#define NLPN (SIZE / 4096)

static struct ftl *f;
static uint8_t data[2][PPB * 4096];
static uint8_t oob[2][PPB * 64];
static uint32_t crc[2][PPB];
static struct ftl_inflight x[2];
static uint8_t model[SIZE];

static void fill(uint8_t *p, uint32_t lpn, uint32_t n, uint8_t v)
{
	for (uint32_t i = 0; i < n; i++) {
		memset(p + (size_t)i * 4096, v, 4096);
		memcpy(p + (size_t)i * 4096, &(uint32_t){ lpn + i }, 4);
	}
}

static int write_model(uint32_t lpn, uint32_t n, uint8_t v)
{
	fill(model + (size_t)lpn * 4096, lpn, n, v);
	return ftl_write(f, model + (size_t)lpn * 4096, (uint64_t)lpn * 4096,
			 (size_t)n * 4096, 0);
}

/* Reserve run @i (f->lock held): @lpn.. for a whole block. */
static int reserve(int i, uint32_t lpn, uint8_t v)
{
	int r;

	fill(data[i], lpn, PPB, v);
	fill(model + (size_t)lpn * 4096, lpn, PPB, v);
	for (uint32_t p = 0; p < PPB; p++)
		crc[i][p] = oct_crc32c(0, data[i] + (size_t)p * 4096, 4096);
	r = ftl_balance(f, 1);
	if (!r)
		r = ftl_run_reserve(f, STREAM_HOST, lpn, PPB, crc[i], oob[i], sizeof(oob[i]),
				    &x[i]);
	if (!r && x[i].n != PPB)
		r = -1;
	return r;
}

/* Programs both runs, in ticket order, while the GC step waits. */
static void *programmer(void *arg)
{
	(void)arg;
	usleep(20000);
	ftl_run_program(f, &x[0], data[0], oob[0]);
	ftl_run_program(f, &x[1], data[1], oob[1]);
	return NULL;
}

static void check_all(const char *what)
{
	static uint8_t rd[SIZE];

	T_CHECK(ftl_read(f, rd, 0, SIZE) == 0, "%s: read", what);
	for (uint32_t l = 0; l < NLPN; l++)
		if (memcmp(rd + (size_t)l * 4096, model + (size_t)l * 4096, 4096)) {
			T_CHECK(0, "%s: page %u", what, l);
			return;
		}
}

/* @partial: a real victim exists (lpn 0..31 and 64..95 rewritten first,
 * so the first two blocks hold 32 valid pages each). */
static void one_case(bool partial)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = PPB, .op_permille = 280 };
	const char *what = partial ? "a real victim" : "only superseded blocks";
	struct nand_backing *b;
	uint32_t busy, b0 = FTL_NONE, v;
	uint64_t rel0;
	pthread_t t;
	int r;

	if (nand_backing_mem(ftl_test_image_size(&c), false, &b) ||
	    ftl_create_backing(b, &c) || ftl_open_backing(b, NULL, &f)) {
		T_CHECK(0, "%s: setup", what);
		return;
	}
	T_CHECK(write_model(0, NLPN, 'z') == 0, "%s: fill", what);
	b0 = ftl_map_get(f, 0) / PPB;
	if (partial)
		T_CHECK(write_model(0, 32, 'p') == 0 &&
			write_model(64, 32, 'q') == 0, "%s: rewrites", what);
	ftl_lock(&f->lock);
	/* run 0 takes a whole fresh block; run 1's reservation closes it */
	r = reserve(0, partial ? 200 : 0, 'A');
	if (!r)
		r = reserve(1, partial ? 300 : 64, 'B');
	busy = (uint32_t)(x[0].ppn / PPB);
	T_CHECK(!r && x[0].ppn % PPB == 0 && x[1].ppn / PPB != busy,
		"%s: two runs reserved: %d", what, r);
	T_CHECK(f->idx.state[busy] == FTL_BLK_FULL && f->idx.valid[busy] == 0,
		"%s: the busy block is FULL with 0 valid pages counted", what);
	v = ftl_victim(f, PPB);
	T_CHECK(v != busy, "%s: the index picks block %u, in flight", what, v);
	T_CHECK(ftl_victim_scan(f, PPB) != busy, "%s: the scan picks it", what);
	T_CHECK(ftl_idx_check(f) == 0, "%s: indexes: %ld", what,
		ftl_idx_check(f));
	if (partial)
		T_EQ_U64(v, b0, "%s: the half-valid first block is the pick",
			 what);
	/* GC thread steps until one victim is done; the programs land
	 * meanwhile (the step's drain waits for them) */
	pthread_create(&t, NULL, programmer, NULL);
	rel0 = f->ctr.m.gc_relocations;
	r = 0;
	for (int s = 0; s < 8 && !r && f->gc.npend == 0; s++)
		r = ftl_gc_bg_step(f, f->idx.nfree + 1);
	T_CHECK(r == 0 || r == 1, "%s: GC steps: %d", what, r);
	T_EQ_U64(f->gc.npend, 1, "%s: one victim collected", what);
	T_CHECK(f->gc.npend && f->gc.pend[0] == b0, "%s: it is the first block (%u), "
		"not the busy one (%u)", what, f->gc.npend ? f->gc.pend[0] : FTL_NONE,
		busy);
	/* the victim's valid pages and nothing more: 32 (half a block), or
	 * none when the runs superseded the whole block */
	T_EQ_U64(f->ctr.m.gc_relocations - rel0, partial ? 32 : 0,
		 "%s: pages copied to gain one block", what);
	T_CHECK(f->idx.valid[busy] == PPB, "%s: the busy block holds its run", what);
	ftl_unlock(&f->lock);
	pthread_join(t, NULL);
	ftl_lock(&f->lock);
	T_CHECK(ftl_run_finish(f, &x[0]) == 0 && ftl_run_finish(f, &x[1]) == 0,
		"%s: runs finish", what);
	T_CHECK(ftl_idx_check(f) == 0, "%s: indexes after", what);
	ftl_unlock(&f->lock);
	check_all(what);
	T_CHECK(ftl_close(f) == 0, "%s: close", what);
}

int main(void)
{
	one_case(true);
	one_case(false);
	return t_result();
}
