/* SPDX-License-Identifier: MIT */
/*
 * Host program runs outside the engine's lock, under concurrency: writer
 * threads write runs of whole pages (overlapping and disjoint ranges,
 * every page stamped with its logical page and a unique version) on a
 * small, full device with little over-provisioning, so GC runs all the
 * time while other writers' runs are in flight; they flush now and then.
 * A reader checks that every page it sees is whole (one logical page, one
 * version, never a page still being programmed).  Then the engine is
 * killed (ftl_abandon: what was written stays in the backing) and
 * reopened (roll-forward): every logical page must hold exactly what the
 * live engine showed.  A GC copy that got a newer sequence number than a
 * host program of the same page still in flight brings old data back
 * here; a map published before the program shows as a torn page to the
 * reader.  Randomised: prints its seed, replays with OCTANT_SEED.
 * 3 rounds of 600 writes per writer; OCTANT_LONG=1: up to 20 rounds of
 * 3,000, at least 3 and more while the long budget lasts (test.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE    (8u << 20)
#define NPG     (SIZE / 4096)
#define NW      3           /* writer threads */
#define MAXRUN  48          /* pages per write */

static struct ftl *f;
static uint64_t seed0;
static int ops;
static int stop;               /* atomic */
static uint64_t version;        /* atomic */
static uint8_t live[SIZE], back[SIZE];

static void stamp(uint8_t *p, uint32_t lpn, uint64_t v)
{
	for (uint32_t i = 0; i < 4096; i += 16) {
		uint64_t a = (uint64_t)lpn << 32 | i, b = v ^ (a * 0x9e3779b97f4a7c15ull);
		memcpy(p + i, &a, 8);
		memcpy(p + i + 8, &b, 8);
	}
}

/* 0: never written (zeroes); else the version; UINT64_MAX: not whole. */
static uint64_t version_of(const uint8_t *p, uint32_t lpn)
{
	uint64_t a, b, v;

	memcpy(&a, p, 8);
	memcpy(&b, p + 8, 8);
	if (!a && !b) {
		for (uint32_t i = 0; i < 4096; i++)
			if (p[i])
				return UINT64_MAX;
		return 0;
	}
	v = b ^ (a * 0x9e3779b97f4a7c15ull);
	for (uint32_t i = 0; i < 4096; i += 16) {
		uint64_t x = (uint64_t)lpn << 32 | i, y = v ^ (x * 0x9e3779b97f4a7c15ull);
		if (memcmp(p + i, &x, 8) || memcmp(p + i + 8, &y, 8))
			return UINT64_MAX;
	}
	return v;
}

static void *writer(void *arg)
{
	uint64_t rs = seed0 * 7919 + (uintptr_t)arg * 104729 + 1;
	uint8_t *buf = malloc((size_t)MAXRUN * 4096);
	intptr_t t = (intptr_t)arg;

	for (int i = 0; buf && i < ops; i++) {
		uint64_t x = t_xorshift(&rs);
		uint32_t n = 1 + (uint32_t)(x % MAXRUN), lpn;

		/* half the writes in a hot quarter all threads share
		 * (overlapping), half in this thread's own stretch */
		if (x >> 60 & 1)
			lpn = (uint32_t)((x >> 8) % (NPG / 4 - n));
		else
			lpn = NPG / 4 + (uint32_t)t * (NPG * 3 / 4 / NW) +
			      (uint32_t)((x >> 8) % (NPG * 3 / 4 / NW - n));
		for (uint32_t k = 0; k < n; k++)
			stamp(buf + (size_t)k * 4096, lpn + k,
			      __atomic_add_fetch(&version, 1, __ATOMIC_RELAXED));
		if (ftl_write(f, buf, (uint64_t)lpn * 4096, (size_t)n * 4096, 0)) {
			free(buf);
			return (void *)1;
		}
		if (!(x >> 40 & 63) && ftl_flush(f)) {
			free(buf);
			return (void *)1;
		}
	}
	free(buf);
	return buf ? NULL : (void *)1;
}

static void *reader(void *arg)
{
	uint64_t rs = seed0 * 31 + 7;
	uint8_t *buf = malloc(64 * 4096);
	long bad = 0;

	(void)arg;
	while (buf && !__atomic_load_n(&stop, __ATOMIC_RELAXED) && !bad) {
		uint32_t lpn = (uint32_t)(t_xorshift(&rs) % (NPG - 64));

		if (ftl_read(f, buf, (uint64_t)lpn * 4096, 64 * 4096))
			bad = 1;
		for (uint32_t k = 0; k < 64 && !bad; k++)
			if (version_of(buf + (size_t)k * 4096, lpn + k) == UINT64_MAX) {
				fprintf(stderr, "reader: logical page %u torn\n",
					lpn + k);
				bad = 1;
			}
	}
	free(buf);
	return (void *)bad;
}

static int run(struct nand_backing *b)
{
	pthread_t w[NW], rd;
	void *res;
	int fails = 0;
	uint32_t diff = 0;

	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "open");
	if (!f)
		return 1;
	/* a full device first: GC from the first write on */
	memset(live, 0, sizeof(live));
	for (uint32_t p = 0; p < NPG; p++)
		stamp(live + (size_t)p * 4096, p,
		      __atomic_add_fetch(&version, 1, __ATOMIC_RELAXED));
	T_CHECK(ftl_write(f, live, 0, SIZE, 0) == 0, "fill");
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	pthread_create(&rd, NULL, reader, NULL);
	for (intptr_t t = 0; t < NW; t++)
		pthread_create(&w[t], NULL, writer, (void *)t);
	for (int t = 0; t < NW; t++) {
		pthread_join(w[t], &res);
		fails += res != NULL;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(rd, &res);
	T_CHECK(!fails, "%d writers failed", fails);
	T_CHECK(res == NULL, "the reader saw a torn page");
	T_CHECK(ftl_read(f, live, 0, SIZE) == 0, "read the live engine");
	ftl_abandon(f);                 /* kill -9: no flush, no checkpoint */
	f = NULL;
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "reopen (roll-forward)");
	if (!f)
		return 1;
	T_CHECK(ftl_read(f, back, 0, SIZE) == 0, "read after the reopen");
	for (uint32_t p = 0; p < NPG; p++) {
		uint64_t a = version_of(live + (size_t)p * 4096, p);
		uint64_t z = version_of(back + (size_t)p * 4096, p);

		T_CHECK(a != UINT64_MAX, "live page %u whole", p);
		if (a != z && !diff++)
			T_CHECK(0, "logical page %u: version %llu live, %llu "
				"after roll-forward%s", p, (unsigned long long)a,
				(unsigned long long)z,
				z < a ? " (older data back)" : "");
	}
	T_CHECK(!diff, "%u logical pages differ after roll-forward", diff);
	T_CHECK(ftl_close(f) == 0, "close");
	f = NULL;
	return 0;
}

int main(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 64, .op_permille = 70, .force = true };
	struct nand_backing *b;
	struct ftl_stats st;
	uint64_t isz = ftl_test_image_size(&c);
	int rounds = t_long() ? 20 : 3, r;

	seed0 = t_seed();
	ops = t_long() ? 3000 : 600;
	T_CHECK(nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	for (r = 0; r < rounds && t_long_more(r, 3) && !t_failures; r++) {
		seed0 = seed0 * 6364136223846793005ull + 1442695040888963407ull;
		if (run(b))
			break;
	}
	t_long_covered("rounds", r, rounds);
	nand_mem_hold(b);
	if (!t_failures && ftl_open_backing(b, NULL, &f) == 0) {
		ftl_stats_get(f, &st);
		fprintf(stderr, "%d rounds, %llu GC relocations\n", r,
			(unsigned long long)st.gc_relocations);
		T_CHECK(st.gc_relocations > 0, "GC ran");
		ftl_close(f);
	}
	b->ops->destroy(b);
	return t_result();
}
