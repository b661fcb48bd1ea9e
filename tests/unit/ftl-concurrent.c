/* SPDX-License-Identifier: MIT */
/*
 * Concurrent callers: several threads do 512-byte read-modify-writes of
 * the same few flash pages (each owns some sectors of every page) while
 * another thread writes elsewhere to keep garbage collection busy and
 * readers check that they never see a torn or foreign sector.  No write
 * may be lost: at the end each sector holds its owner's last value.
 * Twice: GC inline in the writers, then with the background GC thread
 * (ftl_open_opts.bg_gc) collecting between them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

#define NT      4          /* RMW threads */
#define PAGES   4          /* shared pages at the start of the disk */
#define SECT    (PAGES * 8)

static struct ftl *f;
static int iters;
static volatile int stop;
static uint32_t last[SECT];

static void stamp(uint8_t *s, uint32_t sect, uint32_t val)
{
	for (int i = 0; i < 512; i += 8) {
		memcpy(s + i, &sect, 4);
		memcpy(s + i + 4, &val, 4);
	}
}

static bool check(const uint8_t *s, uint32_t sect, uint32_t *val)
{
	uint32_t a, v;

	memcpy(&v, s + 4, 4);
	for (int i = 0; i < 512; i += 8) {
		uint32_t x, y;
		memcpy(&x, s + i, 4);
		memcpy(&y, s + i + 4, 4);
		if ((x || y) && (x != sect || y != v))
			return false;
		if (!x && !y && v)
			return false;
	}
	memcpy(&a, s, 4);
	*val = a == sect ? v : 0;
	return true;
}

static void *rmw(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	uint8_t s[512];

	for (int i = 1; i <= iters; i++)
		for (uint32_t sect = t; sect < SECT; sect += NT) {
			stamp(s, sect, (uint32_t)i);
			if (ftl_write(f, s, sect * 512ull, 512, 0))
				return (void *)1;
			last[sect] = (uint32_t)i;
		}
	return NULL;
}

static void *churn(void *arg)
{
	uint64_t x = 88172645463325252ull, size = ftl_size(f);
	uint8_t *b = malloc(65536);

	(void)arg;
	memset(b, 0x5a, 65536);
	while (!stop) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		uint64_t off = 65536 + (x % ((size - 131072) / 4096)) * 4096;
		if (ftl_write(f, b, off, 4096 << (x % 4), 0))
			break;
		if (!(x % 64))
			ftl_flush(f);
	}
	free(b);
	return NULL;
}

static int read_fail;

static void *reader(void *arg)
{
	uint8_t *b = malloc(SECT * 512);
	uint32_t v;

	(void)arg;
	while (!stop) {
		if (ftl_read(f, b, 0, SECT * 512)) {
			read_fail = 1;
			break;
		}
		for (uint32_t s = 0; s < SECT; s++)
			if (!check(b + s * 512, s, &v))
				read_fail = 2;
	}
	free(b);
	return NULL;
}

static void run(bool bg)
{
	struct ftl_create_opts c = { .size = 8 << 20, .align = FTL_ALIGN_ODD,
		.pages_per_block = 16, .op_permille = 100 };
	struct ftl_open_opts o = { .bg_gc = bg };
	pthread_t th[NT], ch, rd;
	struct nand_backing *b;
	struct ftl_stats st;
	uint8_t buf[SECT * 512];
	void *ret;

	fprintf(stderr, "%s GC\n", bg ? "background" : "inline");
	stop = 0;
	read_fail = 0;
	memset(last, 0, sizeof(last));
	T_CHECK(nand_backing_mem(ftl_test_image_size(&c), false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	T_CHECK(ftl_open_backing(b, &o, &f) == 0, "open");
	/* Fill the disk first: the RMW threads' own programs (far more than
	 * the spare area) then need GC whatever the threads' timing, so GC
	 * certainly runs while they race (it was timing-dependent: ~7 %). */
	{
		uint8_t *fill = calloc(1, 1 << 20);
		T_CHECK(fill != NULL, "malloc");
		for (uint64_t off = 0; off < ftl_size(f); off += 1 << 20)
			T_CHECK(ftl_write(f, fill, off, 1 << 20, 0) == 0,
				"fill at %llu", (unsigned long long)off);
		free(fill);
	}
	pthread_create(&ch, NULL, churn, NULL);
	pthread_create(&rd, NULL, reader, NULL);
	for (uintptr_t t = 0; t < NT; t++)
		pthread_create(&th[t], NULL, rmw, (void *)t);
	for (int t = 0; t < NT; t++) {
		pthread_join(th[t], &ret);
		T_CHECK(ret == NULL, "rmw thread %d failed", t);
	}
	stop = 1;
	pthread_join(ch, NULL);
	pthread_join(rd, NULL);
	T_CHECK(read_fail == 0, "a reader saw an error or a torn sector (%d)",
		read_fail);
	T_CHECK(ftl_read(f, buf, 0, sizeof(buf)) == 0, "read");
	for (uint32_t s = 0; s < SECT; s++) {
		uint32_t v = 0;
		T_CHECK(check(buf + s * 512, s, &v) && v == last[s],
			"sector %u holds %u, last write was %u", s, v, last[s]);
	}
	ftl_stats_get(f, &st);
	ftl_stats_print(&st, stderr, true);
	T_CHECK(st.gc_relocations > 0, "GC ran");
	T_EQ_U64(st.nand_violations, 0, "violations");
	T_EQ_U64(st.gc_bg_errors, 0, "background GC errors");
	if (!bg)
		T_EQ_U64(st.gc_bg_victims, 0, "no background GC when off");
	T_CHECK(ftl_close(f) == 0, "close");
}

int main(void)
{
	iters = t_long() ? 3000 : 400;
	run(false);
	if (!t_failures)
		run(true);
	return t_result();
}
