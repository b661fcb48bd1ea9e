/* SPDX-License-Identifier: MIT */
/*
 * Growing an image in place (ftl_grow, ftl_grow.c), odd and 1m: refusals
 * (smaller, not whole sectors, beyond the checkpoint slots' room, no
 * room at all) change nothing; a grow keeps every sector and the new
 * space takes writes; and a power cut at EVERY write of the grow sequence
 * (several crash images per write: prefixes, subsets, torn writes, drawn
 * from the seed, and a kill -9's) leaves an image that opens at the old
 * size or the new one with every sector as written, zeroes past the old
 * end, superblock copies that agree once opened (and, after a kill, no
 * checkpoint taken for damaged: no fsck problem), that takes writes, and
 * that a second grow finishes.  A fresh seed per run,
 * printed; OCTANT_SEED replays it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cut-test.h"
#include "ftl-int.h"
#include "test.h"

#define SIZE0  (1u << 20)
#define SIZE1  (2u << 20)
#define ROOM   (4u << 20)
#define NS0    (SIZE0 / 512)
#define NS1    (SIZE1 / 512)
#define IMAGES 4                /* crash images per cut write: */
#define KILLED (IMAGES - 1)     /* ... the last one a kill -9's (every
				   write so far whole), the others power
				   cuts' */

static uint64_t rs;
static uint32_t base[NS0], late[NS0]; /* flushed / newest version */
static uint8_t *rbuf, *crash, *img0;
static uint64_t isz;
static uint64_t cut_k;  /* the cut write, its image */
static int cut_j;

static void fill(uint8_t *p, uint32_t s, uint32_t v)
{
	for (uint32_t i = 0; i < 512; i += 8) {
		uint32_t w[2] = { s, v ^ i };
		memcpy(p + i, w, 8);
	}
}

/* The version sector @s of @p holds, -1 if it is no version of it (0:
 * zeroes, never written). */
static int64_t version(const uint8_t *p, uint32_t s)
{
	uint8_t t[512];
	uint32_t w[2];

	memcpy(w, p, 8);
	if (w[0] == 0 && w[1] == 0) {
		for (uint32_t i = 0; i < 512; i++)
			if (p[i])
				return -1;
		return 0;
	}
	fill(t, s, w[1]);
	return w[0] == s && !memcmp(t, p, 512) ? (int64_t)w[1] : -1;
}

static int write_ver(struct ftl *f, uint32_t s, uint32_t n, uint32_t v)
{
	uint8_t *w = malloc((size_t)n * 512);
	int r;

	for (uint32_t i = 0; i < n; i++)
		fill(w + (size_t)i * 512, s + i, v);
	r = ftl_write(f, w, (uint64_t)s * 512, (size_t)n * 512, 0);
	free(w);
	return r;
}

/* Every sector below the old end reads its flushed version or the newer
 * one; past it zeroes (or, with @top_ver, that version). */
static bool check(struct ftl *f, uint64_t seed, const char *what,
		  uint32_t top_ver)
{
	uint64_t size = ftl_size(f);
	uint32_t ns = (uint32_t)(size / 512);

	if (ftl_read(f, rbuf, 0, size)) {
		T_CHECK(0, "seed %llu: %s: read failed", (unsigned long long)seed,
			what);
		return false;
	}
	for (uint32_t s = 0; s < ns; s++) {
		int64_t v = version(rbuf + (size_t)s * 512, s);
		bool ok = s < NS0 ? v == base[s] || v == late[s] :
			  v == 0 || (top_ver && v == top_ver);
		if (!ok) {
			T_CHECK(0, "seed %llu: %s: sector %u reads %lld, "
				"flushed %u newest %u", (unsigned long long)seed,
				what, s, (long long)v, s < NS0 ? base[s] : 0,
				s < NS0 ? late[s] : 0);
			return false;
		}
	}
	return true;
}

/* The old image: writes all over, flushed, then some not flushed, then
 * the process dies (no clean checkpoint). */
static void workload(const struct ftl_create_opts *c, uint64_t seed)
{
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint32_t v = 1;
	uint8_t *bytes;
	uint64_t n;

	memset(base, 0, sizeof(base));
	memset(late, 0, sizeof(late));
	T_CHECK(nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, c) == 0, "create");
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "open");
	for (int i = 0; i < 300 && f; i++) {
		uint32_t len = 1 + (uint32_t)(t_xorshift(&rs) % 24);
		uint32_t s = (uint32_t)(t_xorshift(&rs) % (NS0 - len + 1));
		bool flushed = i < 250;

		T_CHECK(write_ver(f, s, len, ++v) == 0, "write");
		for (uint32_t k = s; k < s + len; k++) {
			late[k] = v;
			if (flushed)
				base[k] = v;
		}
		if (flushed && i % 50 == 49)
			T_CHECK(ftl_flush(f) == 0, "flush");
	}
	if (f)
		ftl_abandon(f);
	bytes = nand_mem_bytes(b, &n);
	memcpy(img0, bytes, isz);
	b->ops->destroy(b);
	(void)seed;
}

static struct nand_backing *load(const uint8_t *img, bool powercut)
{
	struct nand_backing *m = NULL;

	if (nand_backing_mem(isz, powercut, &m))
		return NULL;
	nand_mem_load(m, img);
	return m;
}

/* At the cut write: the crash images this instant may leave (cut-test.h). */
static uint8_t *shots[IMAGES];

/* The superblock copies on @m: 0 when both check out and agree, else
 * the bad-copy mask (ftl_sb_load; a cut between grow steps 4 and 5 leaves
 * copy 1 valid but of the new size: fsck exit 4 until a writer mends it). */
static int sb_bad(struct nand_backing *m)
{
	uint8_t area[OCT_SB_AREA];
	struct oct_sb sb;
	struct ftl_geom g;
	int bad = 3;

	if (m->ops->pread(m, area, sizeof(area), 0) == 0 &&
	    ftl_sb_load(area, sizeof(area), &sb, &g, &bad) != 0)
		bad = 3;
	return bad;
}

/* A crash image: opens at the old or the new size, data intact, takes
 * writes past the old end (new size) and a grow finishes it; the open
 * mends the superblock copy the cut left behind. */
static void check_crash(const uint8_t *img, uint64_t seed, int *old_n,
			int *new_n)
{
	struct nand_backing *m = load(img, false);
	struct ftl *f = NULL;
	uint64_t size;
	int r;

	nand_mem_hold(m);
	r = ftl_open_backing(m, NULL, &f);
	T_CHECK(r == 0, "seed %llu: open after a cut at write %llu of the "
		"grow (image %d): %d", (unsigned long long)seed,
		(unsigned long long)cut_k, cut_j, r);
	if (r) {
		m->ops->destroy(m);
		m->ops->destroy(m);
		return;
	}
	size = ftl_size(f);
	T_CHECK(size == SIZE0 || size == SIZE1, "seed %llu: size %llu",
		(unsigned long long)seed, (unsigned long long)size);
	/* a kill -9 at any write of the grow leaves no checkpoint slot that
	 * looks damaged (it did: fsck exit 4 after a kill -9 of a resize).
	 * A power cut may drop a slot's erase and keep what was programmed
	 * over it: taken for damage and rolled forward (nothing lost; fsck
	 * says so) */
	T_CHECK(cut_j != KILLED || !f->mnt.ckpt_fallback,
		"seed %llu: a kill at write %llu of the grow: at %llu bytes, "
		"a checkpoint slot taken for damaged", (unsigned long long)seed,
		(unsigned long long)cut_k, (unsigned long long)size);
	*old_n += size == SIZE0;
	*new_n += size == SIZE1;
	check(f, seed, "after the cut", 0);
	T_CHECK(write_ver(f, (uint32_t)(size / 512) - 8, 8, 7777777) == 0 &&
		ftl_flush(f) == 0, "seed %llu: write at the end after the cut",
		(unsigned long long)seed);
	T_CHECK(ftl_close(f) == 0, "close");
	T_CHECK(sb_bad(m) == 0, "seed %llu: a cut at write %llu of the grow "
		"(image %d): superblock copies still differ after an open "
		"(mask %d)", (unsigned long long)seed,
		(unsigned long long)cut_k, cut_j, sb_bad(m));
	/* closed at the new size, it opens with no damaged checkpoint: the
	 * old size's the grow had not replaced yet (step 6) are older than
	 * the new ones, superseded (they made every open roll forward and
	 * fsck exit 4 until rewritten: a kill -9 during an online resize) */
	nand_mem_hold(m);
	f = NULL;
	if (size == SIZE1 && ftl_open_backing(m, NULL, &f) == 0) {
		T_CHECK(!f->mnt.ckpt_fallback, "seed %llu: a cut at write %llu "
			"of the grow (image %d): closed at the new size, a "
			"checkpoint slot taken for damaged",
			(unsigned long long)seed, (unsigned long long)cut_k,
			cut_j);
		T_CHECK(ftl_close(f) == 0, "close again");
	} else if (size == SIZE1) {
		T_CHECK(0, "seed %llu: reopen after the cut",
			(unsigned long long)seed);
	} else {
		m->ops->destroy(m);     /* the hold */
	}
	if (size == SIZE0) {            /* its end is the old data's */
		for (uint32_t s = NS0 - 8; s < NS0; s++)
			base[s] = late[s] = 7777777;
	}
	r = ftl_test_grow_backing(m, SIZE1, NULL);
	T_CHECK(r == 0, "seed %llu: grow again after the cut: %d",
		(unsigned long long)seed, r);
	f = NULL;
	if (!r && ftl_open_backing(m, NULL, &f) == 0) {
		T_EQ_U64(ftl_size(f), SIZE1, "seed %llu", (unsigned long long)seed);
		check(f, seed, "grown after the cut", 7777777);
		ftl_close(f);
	} else {
		T_CHECK(0, "seed %llu: open after the second grow",
			(unsigned long long)seed);
		m->ops->destroy(m);
	}
}

static void run(enum ftl_align_mode a, uint64_t seed)
{
	struct ftl_create_opts c = { .size = SIZE0, .align = a,
		.pages_per_block = 8, .op_permille = 250, .max_size = ROOM };
	struct ftl_create_opts c1 = c, tight = c;
	static uint32_t sb[NS0], sl[NS0];
	struct nand_backing *m;
	struct ftl_stats st0, st1;
	struct ftl *f = NULL;
	int old_n = 0, new_n = 0, cuts = 0;
	uint64_t max = 0, isz0;

	c1.size = ROOM;
	isz = ftl_test_image_size(&c1);  /* the largest it grows to */
	isz0 = ftl_test_image_size(&c);
	T_CHECK(isz > isz0, "room");
	rs = seed | 1;
	workload(&c, seed);
	memcpy(sb, base, sizeof(sb));
	memcpy(sl, late, sizeof(sl));

	/* refusals write nothing */
	m = load(img0, false);
	T_EQ_U64(ftl_test_grow_backing(m, SIZE0 - 4096, NULL), (uint64_t)-ERANGE,
		 "shrink");
	T_EQ_U64(ftl_test_grow_backing(m, SIZE1 + 100, NULL), (uint64_t)-EINVAL,
		 "not whole sectors");
	T_EQ_U64(ftl_test_grow_backing(m, 2 * ROOM, &max), (uint64_t)-EFBIG,
		 "beyond the room");
	T_CHECK(max >= ROOM && max < 2 * ROOM, "max %llu", (unsigned long long)max);
	T_EQ_U64(ftl_test_grow_backing(m, SIZE0, NULL), 0, "same size");
	T_CHECK(!memcmp(nand_mem_bytes(m, &max), img0, isz), "refusals wrote");
	m->ops->destroy(m);
	/* an image without room: the slots of its own size only */
	tight.max_size = 0;
	T_CHECK(nand_backing_mem(isz, false, &m) == 0 &&
		ftl_create_backing(m, &tight) == 0, "create without room");
	T_EQ_U64(ftl_test_grow_backing(m, 4 * ROOM, &max), (uint64_t)-EFBIG,
		 "no room");
	T_CHECK(max >= SIZE0 && max < 4 * ROOM, "max %llu",
		(unsigned long long)max);
	m->ops->destroy(m);

	/* a whole grow: data kept, the new space free and writable */
	m = load(img0, false);
	nand_mem_hold(m);
	T_CHECK(ftl_open_backing(m, NULL, &f) == 0, "open");
	ftl_stats_get(f, &st0);
	ftl_close(f);
	T_EQ_U64(ftl_test_grow_backing(m, SIZE1, NULL), 0, "grow");
	nand_mem_hold(m);
	f = NULL;
	T_CHECK(ftl_open_backing(m, NULL, &f) == 0, "open grown");
	if (f) {
		T_EQ_U64(ftl_size(f), SIZE1, "grown size");
		T_EQ_U64(ftl_mount_kind(f), FTL_MOUNT_CLEAN, "clean after grow");
		ftl_stats_get(f, &st1);
		T_CHECK(st1.free_blocks > st0.free_blocks, "free %llu -> %llu",
			(unsigned long long)st0.free_blocks,
			(unsigned long long)st1.free_blocks);
		check(f, seed, "grown", 0);
		for (uint32_t s = NS0; s < NS1; s += 64)
			T_CHECK(write_ver(f, s, 64, 9999) == 0, "write new space");
		T_CHECK(ftl_close(f) == 0, "close grown");
		f = NULL;
		nand_mem_hold(m);
		T_CHECK(ftl_open_backing(m, NULL, &f) == 0, "reopen grown");
		if (f) {
			check(f, seed, "grown and written", 9999);
			ftl_close(f);
		}
	}
	m->ops->destroy(m);

	/* a power cut at every write of the grow */
	for (uint64_t k = 1;; k++) {
		struct cut_ctx cc = { .seed = seed * 1000003 + k,
				      .nshots = IMAGES };
		int r;

		cc.m = m = load(img0, true);
		memcpy(cc.shots, shots, sizeof(shots));
		nand_mem_set_trigger(m, k, cut_fire, &cc);
		r = ftl_test_grow_backing(m, SIZE1, NULL);
		m->ops->destroy(m);
		if (!cc.fired) {
			T_EQ_U64(r, 0, "grow with no cut");
			break;
		}
		cuts++;
		for (int j = 0; j < IMAGES; j++) {
			cut_k = k;
			cut_j = j;
			check_crash(shots[j], cc.seed + (uint64_t)j, &old_n, &new_n);
			memcpy(base, sb, sizeof(sb));
			memcpy(late, sl, sizeof(sl));
		}
		if (t_failures)
			break;
	}
	fprintf(stderr, "%s: %d writes in the grow, cut at each (%d images): "
		"%d opened at the old size, %d at the new\n",
		a == FTL_ALIGN_ODD ? "odd" : "1m", cuts, cuts * IMAGES, old_n,
		new_n);
	T_CHECK(cuts >= 4 && old_n > 0 && new_n > 0, "cuts %d old %d new %d",
		cuts, old_n, new_n);
}

int main(void)
{
	uint64_t seed = t_seed();
	struct ftl_create_opts c1 = { .size = ROOM, .align = FTL_ALIGN_ODD,
		.pages_per_block = 8, .op_permille = 250, .max_size = ROOM };

	isz = ftl_test_image_size(&c1) + (1u << 20);
	rbuf = malloc(ROOM);
	crash = malloc(isz);
	img0 = malloc(isz);
	for (int j = 0; j < IMAGES; j++)
		shots[j] = malloc(isz);
	run(FTL_ALIGN_ODD, seed);
	run(FTL_ALIGN_1M, seed ^ 0x9e3779b9);
	free(rbuf);
	free(crash);
	free(img0);
	for (int j = 0; j < IMAGES; j++)
		free(shots[j]);
	return t_result();
}
