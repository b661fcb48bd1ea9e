/* SPDX-License-Identifier: MIT */
/*
 * Random I/O against a shadow copy: writes of every size from 512 B to
 * 1 MiB, aligned and misaligned, FUA, flushes, discards, write-zeroes,
 * clean reopens and reopens after a crash (following a flush), in odd and
 * 1m modes, with garbage collection running all the time: inline in the
 * writer, then (a second pair of runs) in the background GC thread too
 * (ftl_open_opts.bg_gc), whose timing adds nondeterminism: the seed
 * replays the workload, not the interleaving.
 */
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

static uint64_t rs;
static bool bg;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static size_t pick_len(uint64_t size)
{
	static const size_t fixed[] = { 512, 1024, 3584, 4096, 4608, 8192,
					65536, 131072, 1 << 20 };
	size_t l;

	if (rnd() % 3)
		l = fixed[rnd() % (sizeof(fixed) / sizeof(fixed[0]))];
	else
		l = (size_t)(1 + rnd() % 256) * 512;
	return l > size ? size : l;
}

static uint64_t pick_off(uint64_t size, size_t len)
{
	uint64_t slots = (size - len) / 512 + 1, o = rnd() % slots * 512;

	if (rnd() % 2)
		o &= ~4095ull;  /* 4K-aligned (in logical bytes) */
	return o;
}

static int verify_all(struct ftl *f, const uint8_t *shadow, uint64_t size,
		      uint8_t *buf, const char *when)
{
	if (ftl_read(f, buf, 0, size)) {
		T_CHECK(0, "read all (%s)", when);
		return -1;
	}
	for (uint64_t i = 0; i < size; i++)
		if (buf[i] != shadow[i]) {
			T_CHECK(0, "byte %llu: %u != %u (%s)",
				(unsigned long long)i, buf[i], shadow[i], when);
			return -1;
		}
	return 0;
}

static struct ftl *reopen(struct nand_backing *b)
{
	struct ftl_open_opts o = { .bg_gc = bg };
	struct ftl *f = NULL;
	int r;

	nand_mem_hold(b);
	r = ftl_open_backing(b, &o, &f);
	T_CHECK(r == 0, "open_backing %d", r);
	return r ? NULL : f;
}

/* The long mode's budget (test.h): the next run has the @slot-th of 4
 * parts, and does at least the short mode's 2,500 operations. */
static int slot;
static long ops_done, ops_want;

static void run(enum ftl_align_mode a, int ops)
{
	struct ftl_create_opts c = { .size = 6 << 20, .align = a,
		.pages_per_block = 16, .op_permille = 125 };
	uint64_t size = c.size, isz = ftl_test_image_size(&c);
	uint8_t *shadow = calloc(1, size), *buf = malloc(size);
	uint8_t *w = malloc(1 << 20);
	struct nand_backing *b;
	struct ftl_stats st;
	struct ftl *f;
	int i;

	slot++;
	T_CHECK(nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	f = reopen(b);
	if (!f)
		return;
	for (i = 0; i < ops && t_long_upto(i, 2500, slot, 4) && !t_failures;
	     i++) {
		uint64_t op = rnd() % 100;
		size_t len = pick_len(size);
		uint64_t off = pick_off(size, len);

		if (op < 80) {
			for (size_t k = 0; k < len; k += 8)
				*(uint64_t *)(w + k) = rnd();
			T_CHECK(ftl_write(f, w, off, len, op < 3 ? FTL_FUA : 0) == 0,
				"write %zu@%llu", len, (unsigned long long)off);
			memcpy(shadow + off, w, len);
			T_CHECK(ftl_read(f, buf, off, len) == 0, "read");
			T_CHECK(!memcmp(buf, w, len), "read back %zu@%llu", len,
				(unsigned long long)off);
		} else if (op < 86) {
			T_CHECK((op & 1 ? ftl_discard(f, off, len) :
				 ftl_write_zeroes(f, off, len)) == 0, "discard");
			memset(shadow + off, 0, len);
		} else if (op < 95) {
			T_CHECK(ftl_flush(f) == 0, "flush");
		} else if (op < 97) {
			T_CHECK(ftl_close(f) == 0, "close");
			f = reopen(b);
			if (!f)
				break;
			verify_all(f, shadow, size, buf, "clean reopen");
		} else if (op < 98) {
			T_CHECK(ftl_flush(f) == 0, "flush");
			ftl_abandon(f);
			f = reopen(b);
			if (!f)
				break;
			ftl_stats_get(f, &st);
			T_EQ_U64(st.last_mount, FTL_MOUNT_ROLL_FORWARD, "kind");
			verify_all(f, shadow, size, buf, "after crash");
		} else {
			verify_all(f, shadow, size, buf, "check");
		}
	}
	if (f) {
		verify_all(f, shadow, size, buf, "end");
		ftl_stats_get(f, &st);
		fprintf(stderr, "%s%s: ", a == FTL_ALIGN_ODD ? "odd" : "1m",
			bg ? " (background GC)" : "");
		ftl_stats_print(&st, stderr, true);
		T_EQ_U64(st.nand_violations, 0, "violations");
		T_CHECK(st.gc_relocations > 0, "GC ran");
		T_EQ_U64(st.gc_bg_errors, 0, "background GC errors");
		T_CHECK(ftl_close(f) == 0, "close");
	}
	b->ops->destroy(b);
	free(shadow);
	free(buf);
	free(w);
	ops_done += i;
	ops_want += ops;
}

int main(void)
{
	int ops = t_long() ? 20000 : 2500;

	rs = t_seed() | 1;
	run(FTL_ALIGN_ODD, ops);
	run(FTL_ALIGN_1M, ops);
	bg = true;
	run(FTL_ALIGN_ODD, ops);
	run(FTL_ALIGN_1M, ops);
	t_long_covered("operations", ops_done, ops_want);
	return t_result();
}
