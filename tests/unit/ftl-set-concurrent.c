/* SPDX-License-Identifier: MIT */
/*
 * Two writer threads on a 2-part set (ftl-set.h, odd, stripe 8 KiB: a
 * request of 12 KiB spans both parts) filled first so GC runs: each owns
 * every other 512-byte sector of a shared area (the same flash pages, in
 * both parts: overlapping pages, read-modify-writes racing) and writes
 * 12 KiB requests across stripes into a disjoint area of its own, while a
 * reader checks it never sees a torn or foreign sector.  At the end every
 * sector holds its owner's last write, and the set's stats are the sum of
 * the parts' (host_write_sectors: exactly the sectors written).  Twice:
 * GC inline, then with a GC thread per part.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-set-test.h"

#define NT     2
#define SHARED (32 * 8)                 /* sectors: 32 flash pages */
#define AREA   (1u << 20)               /* each thread's own bytes */
#define REQ    (12u << 10)              /* its request */
#define SLOTS  (AREA / REQ)

static struct ftl_set *set;
static int iters;
static volatile int stop;
static uint32_t last[SHARED], own_last[NT][SLOTS];
static uint64_t sectors[NT];            /* written by each thread */

static void stamp(uint8_t *s, uint32_t sect, uint32_t val)
{
	for (int i = 0; i < 512; i += 8) {
		memcpy(s + i, &sect, 4);
		memcpy(s + i + 4, &val, 4);
	}
}

/* Is @s whole (one stamp of sector @sect, or zeroes)?  Its value. */
static bool check(const uint8_t *s, uint32_t sect, uint32_t *val)
{
	uint32_t a, v;

	memcpy(&a, s, 4);
	memcpy(&v, s + 4, 4);
	for (int i = 0; i < 512; i += 8) {
		uint32_t x, y;

		memcpy(&x, s + i, 4);
		memcpy(&y, s + i + 4, 4);
		if (x != a || y != v)
			return false;
	}
	if (a != sect && (a || v))
		return false;
	*val = v;
	return true;
}

/* The area of thread @t: after the shared sectors, 1 MiB each. */
static uint64_t area(unsigned t)
{
	return (1u << 20) + (uint64_t)t * AREA;
}

static void *writer(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint8_t s[512], *b = malloc(REQ);
	uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1);
	void *ret = NULL;

	for (int i = 1; i <= iters && !ret; i++) {
		for (uint32_t sect = t; sect < SHARED; sect += NT) {
			stamp(s, sect, (uint32_t)i);
			if (ftl_set_write(set, s, sect * 512ull, 512, 0)) {
				ret = (void *)1;
				break;
			}
			last[sect] = (uint32_t)i;
			sectors[t]++;
		}
		for (int j = 0; j < 8 && !ret; j++) {
			uint32_t slot = (uint32_t)(t_xorshift(&x) % SLOTS);
			uint64_t off = area(t) + (uint64_t)slot * REQ;

			for (uint32_t k = 0; k < REQ / 512; k++)
				stamp(b + k * 512, (uint32_t)(off / 512) + k,
				      (uint32_t)i);
			if (ftl_set_write(set, b, off, REQ, 0))
				ret = (void *)2;
			own_last[t][slot] = (uint32_t)i;
			sectors[t] += REQ / 512;
		}
		if (i % 50 == 0 && ftl_set_flush(set))
			ret = (void *)3;
	}
	free(b);
	return ret;
}

static int read_fail;

static void *reader(void *arg)
{
	uint8_t *b = malloc(SHARED * 512);
	uint32_t v;

	(void)arg;
	while (!stop) {
		if (ftl_set_read(set, b, 0, SHARED * 512)) {
			read_fail = 1;
			break;
		}
		for (uint32_t s = 0; s < SHARED; s++)
			if (!check(b + s * 512, s, &v))
				read_fail = 2;
	}
	free(b);
	return NULL;
}

static void run(bool bg)
{
	struct ftl_open_opts o = { .bg_gc = bg };
	uint8_t *buf = malloc(AREA);
	struct nand_backing *b;
	struct ftl_stats st, p0, p1;
	pthread_t th[NT], rd;
	uint64_t filled = 0;
	void *ret;

	fprintf(stderr, "%s GC\n", bg ? "background" : "inline");
	stop = 0;
	read_fail = 0;
	memset(last, 0, sizeof(last));
	memset(own_last, 0, sizeof(own_last));
	memset(sectors, 0, sizeof(sectors));
	set = t_set_make(4u << 20, FTL_ALIGN_ODD, 2, 8192, false, &o, &b);
	memset(buf, 0, AREA);
	for (uint64_t off = 0; off < ftl_set_size(set); off += AREA) {
		T_CHECK(ftl_set_write(set, buf, off, AREA, 0) == 0,
			"fill at %llu", (unsigned long long)off);
		filled += AREA / 512;
	}
	pthread_create(&rd, NULL, reader, NULL);
	for (uintptr_t t = 0; t < NT; t++)
		pthread_create(&th[t], NULL, writer, (void *)t);
	for (int t = 0; t < NT; t++) {
		pthread_join(th[t], &ret);
		T_CHECK(ret == NULL, "writer %d failed (%p)", t, ret);
	}
	stop = 1;
	pthread_join(rd, NULL);
	T_CHECK(read_fail == 0, "a reader saw an error or a torn sector (%d)",
		read_fail);
	T_CHECK(ftl_set_read(set, buf, 0, SHARED * 512) == 0, "read");
	for (uint32_t s = 0; s < SHARED; s++) {
		uint32_t v = 0;

		T_CHECK(check(buf + s * 512, s, &v) && v == last[s],
			"sector %u holds %u, last write was %u", s, v, last[s]);
	}
	for (unsigned t = 0; t < NT; t++) {
		T_CHECK(ftl_set_read(set, buf, area(t), AREA) == 0, "read");
		for (uint32_t slot = 0; slot < SLOTS; slot++)
			for (uint32_t k = 0; k < REQ / 512; k++) {
				uint64_t o2 = (uint64_t)slot * REQ + k * 512;
				uint32_t v = 0;

				if (!check(buf + o2, (uint32_t)((area(t) + o2) /
					   512), &v) || v != own_last[t][slot]) {
					T_CHECK(0, "thread %u slot %u sector %u: "
						"%u, last %u", t, slot, k, v,
						own_last[t][slot]);
					slot = SLOTS;
					break;
				}
			}
	}
	ftl_set_stats_get(set, &st);
	ftl_stats_get(ftl_set_part(set, 0), &p0);
	ftl_stats_get(ftl_set_part(set, 1), &p1);
	T_EQ_U64(st.host_write_sectors, filled + sectors[0] + sectors[1],
		 "the set's host_write_sectors");
	T_EQ_U64(st.host_write_sectors, p0.host_write_sectors +
		 p1.host_write_sectors, "the parts' sum");
	T_EQ_U64(st.page_programs, p0.page_programs + p1.page_programs,
		 "page_programs");
	T_CHECK(p0.host_write_sectors > filled / 4 &&
		p1.host_write_sectors > filled / 4, "both parts written");
	T_CHECK(st.gc_relocations > 0, "GC ran");
	T_EQ_U64(st.nand_violations, 0, "violations");
	T_EQ_U64(st.erase_max, p0.erase_max > p1.erase_max ? p0.erase_max :
		 p1.erase_max, "erase_max");
	T_CHECK(ftl_set_close(set) == 0, "close");
	t_set_drop(b);
	free(buf);
}

int main(void)
{
	iters = t_long() ? 2000 : 300;
	run(false);
	if (!t_failures)
		run(true);
	return t_result();
}
