/* SPDX-License-Identifier: MIT */
/*
 * Overlapping writers: threads write the same and overlapping ranges (from
 * one sector to 1.5 MiB, aligned or not) with stamped data.  Every write
 * takes a ticket before it is issued and another when it is acknowledged.
 * At the end each sector must hold an intact stamp of a write covering it,
 * and no covering write may have been issued after that write was
 * acknowledged (else a later write was lost or a map update reordered:
 * e.g. two read-modify-writes of one page not excluding each other).
 * Randomised: prints its seed, replays with OCTANT_SEED.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): holds one range-lock
 * stripe (f->stripe).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

#define NT       4
#define REGION   (6u << 20)           /* bytes the writers share */
#define RSECT    (REGION / 512)
#define MAXLEN   (3u << 19)           /* 1.5 MiB */

struct wlog {
	uint32_t sect, nsect;
	uint64_t start, end;          /* tickets: issued, acknowledged */
};

static struct ftl *f;
static unsigned seed;
static int nw;                        /* writes per thread */
static struct wlog *wl;               /* NT * nw entries, id = index + 1 */
static uint64_t ticket;
static int failed;
static pthread_barrier_t bar;         /* writers + checker, per round */
#define ROUND    8                    /* writes per thread per round */

static void stamp(uint8_t *s, uint32_t sect, uint32_t id)
{
	for (int i = 0; i < 512; i += 8) {
		memcpy(s + i, &sect, 4);
		memcpy(s + i + 4, &id, 4);
	}
}

/* The write id stamped in sector @sect (0: never written), -1 if torn. */
static int64_t stamped(const uint8_t *s, uint32_t sect)
{
	uint32_t id;

	memcpy(&id, s + 4, 4);
	for (int i = 0; i < 512; i += 8) {
		uint32_t a, b;
		memcpy(&a, s + i, 4);
		memcpy(&b, s + i + 4, 4);
		if (id == 0 ? (a || b) : (a != sect || b != id))
			return -1;
	}
	return id;
}

static void *writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	uint64_t rs = ((uint64_t)seed << 8 | t) * 0x9e3779b97f4a7c15ull | 1;
	uint8_t *buf = malloc(MAXLEN);

	if (!buf)
		return (void *)1;
	for (int i = 0; i < nw; i++) {
		if (i && i % ROUND == 0) {      /* the checker looks now */
			pthread_barrier_wait(&bar);
			pthread_barrier_wait(&bar);
		}
		uint32_t id = t * (uint32_t)nw + (uint32_t)i + 1;
		struct wlog *w = &wl[id - 1];
		uint64_t x = t_xorshift(&rs);
		uint32_t ns, s0;

		switch (x % 6) {
		case 0: case 1: case 2: case 3:                         /* sub-page */
			ns = 1 + (uint32_t)(x >> 8) % 12; break;
		case 4:  ns = 1 + (uint32_t)(x >> 8) % (MAXLEN / 512); break;
		default: ns = 2048; break;                              /* 1 MiB */
		}
		x = t_xorshift(&rs);
		if (ns < 16 && x % 4)       /* sub-page writes: two hot pages */
			s0 = (uint32_t)((x >> 8) % 16);
		else if (x % 3 == 0)        /* one of a few shared ranges */
			s0 = (uint32_t)((x >> 8) % 4) * 1021;
		else
			s0 = (uint32_t)((x >> 8) % (RSECT - ns + 1));
		if (s0 + ns > RSECT)
			ns = RSECT - s0;
		for (uint32_t k = 0; k < ns; k++)
			stamp(buf + (size_t)k * 512, s0 + k, id);
		w->sect = s0;
		w->nsect = ns;
		w->start = __atomic_add_fetch(&ticket, 1, __ATOMIC_SEQ_CST);
		if (ftl_write(f, buf, s0 * 512ull, (size_t)ns * 512, 0)) {
			failed = 1;
			w->end = UINT64_MAX;
			continue;
		}
		w->end = __atomic_add_fetch(&ticket, 1, __ATOMIC_SEQ_CST);
	}
	pthread_barrier_wait(&bar);
	free(buf);
	return NULL;
}

/* Fault seam used as a scheduler: now and then a page read or program
 * sleeps a little, so a read-modify-write's window (read the page, write
 * it back) or a program really overlaps other writers even on a busy
 * machine with few cores. */
static int jitter(void *ctx, enum nand_op op, uint64_t page, void *buf,
		  size_t len)
{
	static _Thread_local uint64_t x;

	(void)ctx; (void)page; (void)buf; (void)len;
	if (!x)
		x = (uint64_t)(uintptr_t)&x | 1;
	if (op != NAND_OP_ERASE && t_xorshift(&x) % 8 == 0)
		usleep(op == NAND_OP_READ ? 200 : 50);
	return 0;
}

static void *write_mib(void *arg)
{
	static uint8_t mib[1 << 20];
	volatile int *done = arg;

	if (ftl_write(f, mib, 0, sizeof(mib), 0) == 0)
		*done = 1;
	return NULL;
}

/* A 1 MiB write must not wait for a writer holding the stripe of a far
 * away page (it took every stripe once). */
static void disjoint_ranges(void)
{
	uint64_t far = (8u << 20) / f->g.ps;
	unsigned k = ftl_stripe_of(far);
	volatile int done = 0;
	pthread_t th;

	for (uint64_t p = 0; p < (1u << 20) / f->g.ps + 1; p++)
		if (ftl_stripe_of(p) == k)
			T_CHECK(0, "pages %llu and %llu share a stripe",
				(unsigned long long)p, (unsigned long long)far);
	ftl_lock(&f->stripe[k]);
	pthread_create(&th, NULL, write_mib, (void *)&done);
	for (int i = 0; i < 500 && !done; i++)
		usleep(10000);
	T_CHECK(done, "a 1 MiB write at 0 waited for the stripe of page %llu",
		(unsigned long long)far);
	ftl_unlock(&f->stripe[k]);
	pthread_join(th, NULL);
}

/* Check the region after the writes [from, to) of every thread. */
static void check_round(int from, int to, uint64_t *maxstart, uint8_t *img,
			uint64_t *bad)
{
	for (int t = 0; t < NT; t++)
		for (int i = t * nw + from; i < t * nw + to; i++)
			for (uint32_t k = 0; k < wl[i].nsect; k++)
				if (wl[i].start > maxstart[wl[i].sect + k])
					maxstart[wl[i].sect + k] = wl[i].start;
	nand_set_fault(f->nand, NULL, NULL);
	T_CHECK(ftl_read(f, img, 0, REGION) == 0, "read");
	for (uint32_t s = 0; s < RSECT && *bad < 10; s++) {
		int64_t id = stamped(img + (size_t)s * 512, s);
		const struct wlog *w = id > 0 && id <= NT * nw ? &wl[id - 1] : NULL;

		if (id < 0 || (id > 0 && (!w || s < w->sect ||
					  s >= w->sect + w->nsect))) {
			T_CHECK(0, "sector %u: torn or foreign stamp", s);
			(*bad)++;
		} else if (id == 0 ? maxstart[s] != 0 : maxstart[s] > w->end) {
			T_CHECK(0, "round %d: sector %u holds write %lld (acked "
				"at %llu), but a write issued at %llu covers it",
				from / ROUND, s, (long long)id,
				w ? (unsigned long long)w->end : 0ull,
				(unsigned long long)maxstart[s]);
			(*bad)++;
		}
	}
	nand_set_fault(f->nand, jitter, NULL);
}

int main(void)
{
	struct ftl_create_opts c = { .size = 16 << 20, .align = FTL_ALIGN_ODD,
		.pages_per_block = 32, .op_permille = 150 };
	pthread_t th[NT];
	struct nand_backing *b;
	struct ftl_stats st;
	uint64_t *maxstart = calloc(RSECT, sizeof(uint64_t));
	uint8_t *img = malloc(REGION);
	uint64_t bad = 0;

	seed = t_seed();
	nw = t_long() ? 3000 : 400;
	wl = calloc((size_t)NT * nw, sizeof(*wl));
	if (!maxstart || !img || !wl)
		T_SKIP("out of memory");
	T_CHECK(nand_backing_mem(ftl_test_image_size(&c), false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "open");
	disjoint_ranges();
	{       /* a full disk: overwrites then need GC to relocate */
		uint8_t *fill = calloc(1, 1 << 20);
		T_CHECK(fill != NULL, "malloc");
		for (uint64_t off = 0; fill && off < ftl_size(f); off += 1 << 20)
			T_CHECK(ftl_write(f, fill, off, 1 << 20, 0) == 0,
				"fill at %llu", (unsigned long long)off);
		free(fill);
	}
	pthread_barrier_init(&bar, NULL, NT + 1);
	nand_set_fault(f->nand, jitter, NULL);
	for (uintptr_t t = 0; t < NT; t++)
		pthread_create(&th[t], NULL, writer, (void *)t);
	for (int r = 0; r < nw / ROUND; r++) {
		pthread_barrier_wait(&bar);     /* the writers wait */
		check_round(r * ROUND, (r + 1) * ROUND, maxstart, img, &bad);
		if (r + 1 < nw / ROUND)
			pthread_barrier_wait(&bar);
	}
	for (int t = 0; t < NT; t++)
		pthread_join(th[t], NULL);
	T_CHECK(!failed, "a write failed");
	ftl_stats_get(f, &st);
	T_CHECK(st.gc_relocations > 0, "GC ran");
	T_EQ_U64(st.nand_violations, 0, "violations");
	T_CHECK(ftl_close(f) == 0, "close");
	pthread_barrier_destroy(&bar);
	free(maxstart);
	free(img);
	free(wl);
	if (t_failures)
		fprintf(stderr, "replay: OCTANT_SEED=%u\n", seed);
	return t_result();
}
