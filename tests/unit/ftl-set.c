/* SPDX-License-Identifier: MIT */
/*
 * A set of engines (ftl-set.h) on memory backings, odd and 1m, 2 and 3
 * parts, a small stripe and the default one: writes at 512-byte
 * granularity crossing stripe and part boundaries (chosen at each
 * boundary, then random), discards and write-zeroes, checked against a
 * shadow of the disk through the set, and straight from the part engines
 * where the routing formula puts each stripe (a set routing consistently
 * but wrongly fails), before and after close and reopen.  Requests out of
 * range fail with -EINVAL.  A plain engine image opens as a set of one
 * part.  Damaged headers (either copy, both, another version, fields out
 * of range) and damaged parts fail the open with their error; a
 * damaged copy beside a good one is rewritten by a writer's open only (not
 * one of another version); options a
 * set cannot carry are refused before anything is written.  A fault
 * model gives each part its own draws.  Seeded (printed; OCTANT_SEED
 * replays).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-set-format.h"
#include "ftl-set-test.h"

#define SIZE (6u << 20)

static uint64_t rs;

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = t_xorshift(&rs);

		memcpy(p + i, &v, 8);
	}
}

static bool verify(struct ftl_set *s, const uint8_t *shadow, uint8_t *rbuf,
		   const char *when)
{
	int r = ftl_set_read(s, rbuf, 0, SIZE);

	T_CHECK(r == 0, "%s: read: %d", when, r);
	if (r)
		return false;
	for (uint64_t o = 0; o < SIZE; o += 512)
		if (memcmp(rbuf + o, shadow + o, 512)) {
			T_CHECK(0, "%s: sector %llu differs", when,
				(unsigned long long)(o / 512));
			return false;
		}
	return t_set_parts_hold(s, shadow, when);
}

/* A write of @len at @off through the set and into the shadow. */
static void put(struct ftl_set *s, uint8_t *shadow, uint8_t *w, uint64_t off,
		uint64_t len)
{
	int r;

	fill(w, len);
	r = ftl_set_write(s, w, off, len, t_xorshift(&rs) % 8 ? 0 : FTL_FUA);
	T_CHECK(r == 0, "write %llu+%llu: %d", (unsigned long long)off,
		(unsigned long long)len, r);
	memcpy(shadow + off, w, len);
}

static void run(enum ftl_align_mode align, unsigned np, uint64_t stripe)
{
	uint8_t *shadow = calloc(1, SIZE), *rbuf = malloc(SIZE);
	uint8_t *w = malloc(4 * stripe + 8192);
	uint64_t shift = align == FTL_ALIGN_ODD ? 512 : 0;
	struct nand_backing *b;
	struct ftl_set *s;
	char when[96];
	int r;

	snprintf(when, sizeof(when), "%s %u parts stripe %llu",
		 align == FTL_ALIGN_ODD ? "odd" : "1m", np,
		 (unsigned long long)stripe);
	s = t_set_make(SIZE, align, np, stripe, false, NULL, &b);
	T_EQ_U64(ftl_set_parts(s), np, "%s", when);
	T_EQ_U64(ftl_set_size(s), SIZE, "%s", when);
	T_EQ_U64(ftl_set_stripe(s), stripe, "%s", when);
	/* around every stripe boundary (logical byte k * stripe - shift),
	 * a write from 1.5 KiB before to 2.5 KiB after, and one over 2
	 * whole stripes from an odd sector */
	for (uint64_t y = stripe; y - shift < SIZE - 4096; y += stripe) {
		put(s, shadow, w, y - shift - 1536, 4096);
		if (y - shift + 2 * stripe + 1024 < SIZE && y % (3 * stripe) == 0)
			put(s, shadow, w, y - shift - 512 * 3, 2 * stripe + 1024);
	}
	for (int i = 0; i < 300; i++) {
		uint64_t len = (1 + t_xorshift(&rs) % (2 * stripe / 512 + 8)) * 512;
		uint64_t off = t_xorshift(&rs) % ((SIZE - len) / 512 + 1) * 512;
		unsigned k = (unsigned)(t_xorshift(&rs) % 10);

		if (k == 0) {
			r = ftl_set_discard(s, off, len);
			T_CHECK(r == 0, "%s: discard: %d", when, r);
			memset(shadow + off, 0, len);
		} else if (k == 1) {
			r = ftl_set_write_zeroes(s, off, len);
			T_CHECK(r == 0, "%s: write zeroes: %d", when, r);
			memset(shadow + off, 0, len);
		} else {
			put(s, shadow, w, off, len);
		}
		if (i == 150)
			T_CHECK(ftl_set_flush(s) == 0, "%s: flush", when);
	}
	verify(s, shadow, rbuf, when);
	/* out of range */
	T_CHECK(ftl_set_read(s, rbuf, SIZE - 512, 1024) == -EINVAL, "%s: past "
		"the end", when);
	T_CHECK(ftl_set_read(s, rbuf, SIZE + 512, 512) == -EINVAL, "%s: after "
		"the end", when);
	T_CHECK(ftl_set_write(s, w, 256, 512, 0) == -EINVAL, "%s: unaligned",
		when);
	T_CHECK(ftl_set_discard(s, SIZE, 512) == -EINVAL, "%s: discard past",
		when);
	T_CHECK(ftl_set_read(s, rbuf, SIZE, 0) == 0, "%s: empty at the end",
		when);
	T_CHECK(ftl_set_close(s) == 0, "%s: close", when);
	r = t_set_reopen(b, NULL, &s);
	T_CHECK(r == 0, "%s: reopen: %d", when, r);
	if (!r) {
		strcat(when, " reopened");
		verify(s, shadow, rbuf, when);
		put(s, shadow, w, stripe - shift - 512, 1024);
		T_CHECK(ftl_set_close(s) == 0, "%s: close", when);
		T_CHECK(t_set_reopen(b, NULL, &s) == 0, "%s: reopen", when);
		verify(s, shadow, rbuf, when);
		ftl_set_close(s);
	}
	t_set_drop(b);
	free(shadow);
	free(rbuf);
	free(w);
}

/* A plain engine image opens as a set of one part: reads what the engine
 * wrote, its writes are the engine's. */
static void plain(enum ftl_align_mode align)
{
	struct ftl_create_opts c = { .size = 2u << 20, .align = align };
	uint8_t *a = malloc(c.size), *r2 = malloc(c.size);
	struct nand_backing *b;
	struct ftl_set *s;
	struct ftl *f;
	int r;

	fill(a, c.size);
	T_CHECK(nand_backing_mem(ftl_test_image_size(&c), false, &b) == 0 &&
		ftl_create_backing(b, &c) == 0, "plain create");
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "plain open");
	T_CHECK(ftl_write(f, a, 0, c.size, 0) == 0, "engine write");
	T_CHECK(ftl_close(f) == 0, "engine close");
	r = t_set_reopen(b, NULL, &s);
	T_CHECK(r == 0, "plain image as a set: %d", r);
	if (!r) {
		T_EQ_U64(ftl_set_parts(s), 1, "one part");
		T_EQ_U64(ftl_set_size(s), c.size, "size");
		T_EQ_U64(ftl_set_align(s), align, "the engine's alignment");
		T_EQ_U64(ftl_set_stripe(s), 0, "no stripe");
		T_CHECK(ftl_set_read(s, r2, 0, c.size) == 0 &&
			!memcmp(a, r2, c.size), "reads the engine's data");
		fill(a + 4096, 8192);
		T_CHECK(ftl_set_write(s, a + 4096, 4096, 8192, 0) == 0 &&
			ftl_set_discard(s, 65536, 4096) == 0, "set write");
		memset(a + 65536, 0, 4096);
		T_CHECK(ftl_set_close(s) == 0, "set close");
	}
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "engine reopen");
	T_CHECK(ftl_read(f, r2, 0, c.size) == 0 && !memcmp(a, r2, c.size),
		"the engine reads the set's writes");
	ftl_close(f);
	t_set_drop(b);
	free(a);
	free(r2);
}

/* Open @img loaded into @b: the error (0 opened, closed again). */
static int open_img(struct nand_backing *b, const uint8_t *img)
{
	struct ftl_set *s;
	int r;

	nand_mem_load(b, img);
	r = t_set_reopen(b, NULL, &s);
	if (!r)
		T_CHECK(ftl_set_close(s) == 0, "close");
	return r;
}

static void reseal(uint8_t *img, unsigned copies, void (*fn)(struct ftl_set_hdr *))
{
	static const uint32_t at[2] = { FTL_SET_COPY0, FTL_SET_COPY1 };

	for (unsigned c = 0; c < 2; c++) {
		struct ftl_set_hdr h;

		if (!(copies & (1u << c)))
			continue;
		memcpy(&h, img + at[c], sizeof(h));
		fn(&h);
		h.crc = 0;
		h.crc = oct_crc32c(0, &h, sizeof(h));
		memcpy(img + at[c], &h, sizeof(h));
	}
}

static void v2(struct ftl_set_hdr *h) { h->version = 2; }
static void overlap(struct ftl_set_hdr *h) { h->parts[1].off = h->parts[0].off + (1u << 20); }
static void past_end(struct ftl_set_hdr *h) { h->parts[1].off += 64u << 20; }
static void many(struct ftl_set_hdr *h) { h->nparts = 17; }
static void one(struct ftl_set_hdr *h) { h->nparts = 1; }
static void stripe3(struct ftl_set_hdr *h) { h->stripe = 3 * 4096; }
static void bigger(struct ftl_set_hdr *h) { h->logical_size *= 4; }
static void unaligned(struct ftl_set_hdr *h) { h->parts[1].off += 4096; }
static void noop(struct ftl_set_hdr *h) { (void)h; }
static void shorter(struct ftl_set_hdr *h) { h->parts[1].len -= 4096; }

/* Damaged headers and parts: the error, never a crash, nothing leaked. */
static void corrupt(void)
{
	struct ftl_set_hdr h0;
	struct nand_backing *b;
	struct ftl_set *s;
	uint64_t isz;
	uint8_t *img, *good;
	int r;

	s = t_set_make(SIZE, FTL_ALIGN_ODD, 2, 1u << 16, false, NULL, &b);
	T_CHECK(ftl_set_close(s) == 0, "close");
	good = nand_mem_bytes(b, &isz);
	img = malloc(isz);
	memcpy(&h0, good, sizeof(h0));
	good = malloc(isz);
	memcpy(good, nand_mem_bytes(b, NULL), isz);

#define CASE(what, want, edit) do {                                    \
		memcpy(img, good, isz);                                \
		edit;                                                  \
		r = open_img(b, img);                                  \
		T_CHECK(r == (want), "%s: %d, want %d", what, r, want); \
	} while (0)
	CASE("intact", 0, (void)0);
	CASE("copy 0 bad", 0, img[FTL_SET_COPY0 + 40] ^= 1);
	CASE("copy 1 bad", 0, img[FTL_SET_COPY1 + 40] ^= 1);
	CASE("copy 0 gone", 0, memset(img + FTL_SET_COPY0, 0, 512));
	CASE("both bad", -EBADMSG, (img[FTL_SET_COPY0 + 24] ^= 1,
				    img[FTL_SET_COPY1 + 300] ^= 1));
	CASE("both gone", -EBADMSG, (memset(img + FTL_SET_COPY0, 0, 512),
				     memset(img + FTL_SET_COPY1, 0, 512)));
	CASE("version 2", -EPROTONOSUPPORT, reseal(img, 3, v2));
	CASE("copy 0 version 2", 0, reseal(img, 1, v2));
	CASE("overlapping parts", -EBADMSG, reseal(img, 3, overlap));
	CASE("part past the end", -EBADMSG, reseal(img, 3, past_end));
	CASE("17 parts", -EBADMSG, reseal(img, 3, many));
	CASE("1 part", -EBADMSG, reseal(img, 3, one));
	CASE("stripe not a power of two", -EBADMSG, reseal(img, 3, stripe3));
	CASE("part not aligned", -EBADMSG, reseal(img, 3, unaligned));
	CASE("parts too small for the size", -EBADMSG, reseal(img, 3, bigger));
	CASE("copy 1 overlapping, copy 0 good", 0, reseal(img, 2, overlap));
	CASE("resealed unchanged", 0, reseal(img, 3, noop));
	/* a part's engine superblocks gone under a valid header */
	CASE("part 1 damaged", -EBADMSG,
	     memset(img + h0.parts[1].off, 0, OCT_SB_AREA));
	CASE("part 0 damaged", -EBADMSG,
	     memset(img + h0.parts[0].off, 0xa5, OCT_SB_AREA));
	CASE("part 1 cut short", -EINVAL, reseal(img, 3, shorter));
#undef CASE
	t_set_drop(b);
	free(img);
	free(good);
}

/* A damaged header copy: a read-only open leaves it alone (the image
 * unchanged), a writer's open rewrites it from the good copy (both then
 * the same, sound header); a copy of another version is left alone. */
static void mend(void)
{
	static const uint32_t at[2] = { FTL_SET_COPY0, FTL_SET_COPY1 };
	struct ftl_open_opts ro = { .readonly = true };
	struct nand_backing *b;
	struct ftl_set *s;
	uint64_t isz;
	uint8_t *img, *good, *cur;

	s = t_set_make(SIZE, FTL_ALIGN_1M, 2, 1u << 16, false, NULL, &b);
	T_CHECK(ftl_set_close(s) == 0, "close");
	cur = nand_mem_bytes(b, &isz);
	img = malloc(isz);
	good = malloc(isz);
	memcpy(good, cur, isz);
	T_CHECK(!memcmp(good + at[0], good + at[1], FTL_SET_HDR_SIZE),
		"created: the copies differ");
#define MEND(what, edit, mended) do {                                   		memcpy(img, good, isz);                                		edit;                                                  		nand_mem_load(b, img);                                 		T_CHECK(t_set_reopen(b, &ro, &s) == 0, "%s: read-only open", 			what);                                         		if (s)                                                 			ftl_set_close(s);                              		s = NULL;                                              		T_CHECK(!memcmp(cur, img, 2 * 4096), "%s: a read-only open " 			"wrote the header area", what);                		T_CHECK(t_set_reopen(b, NULL, &s) == 0, "%s: open", what); 		if (s)                                                 			ftl_set_close(s);                              		s = NULL;                                              		for (int c = 0; c < 2; c++)                            			T_CHECK(!((mended) & (1 << c)) ||              				!memcmp(cur + at[c], good + at[c],     					FTL_SET_HDR_SIZE), "%s: copy %d not " 				"rewritten by a writer's open", what, c); 	} while (0)
	MEND("copy 0 bit", img[FTL_SET_COPY0 + 40] ^= 1, 1);
	MEND("copy 1 bit", img[FTL_SET_COPY1 + 300] ^= 1, 2);
	MEND("copy 0 gone", memset(img + FTL_SET_COPY0, 0, 512), 1);
	MEND("copy 1 gone", memset(img + FTL_SET_COPY1, 0, 512), 2);
	MEND("copy 1 overlapping", reseal(img, 2, overlap), 2);
	MEND("copy 0 version 2", reseal(img, 1, v2), 2);
#undef MEND
	/* the version-2 copy stays */
	T_CHECK(((const struct ftl_set_hdr *)(cur + at[0]))->version == 2,
		"a copy of another version was overwritten");
	t_set_drop(b);
	free(img);
	free(good);
}

/* Options a set refuses, before it writes anything. */
static void refused(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_ODD };
	struct nand_backing *b;
	uint8_t *img;
	uint64_t n;

	T_CHECK(nand_backing_mem(16u << 20, false, &b) == 0, "mem");
	c.integrity = true;
	T_CHECK(ftl_set_create_backing(b, &c, 2, 0) == -EOPNOTSUPP, "PI");
	T_EQ_U64(ftl_set_image_size(&c, 2, 0), 0, "PI size");
	c.integrity = false;
	c.max_size = 2 * SIZE;
	T_CHECK(ftl_set_create_backing(b, &c, 2, 0) == -EOPNOTSUPP, "grow room");
	c.max_size = 0;
	T_CHECK(ftl_set_create_backing(b, &c, 1, 0) == -EINVAL, "1 part");
	T_CHECK(ftl_set_create_backing(b, &c, 17, 0) == -EINVAL, "17 parts");
	T_CHECK(ftl_set_create_backing(b, &c, 2, 3 * 4096) == -EINVAL,
		"stripe not a power of two");
	T_CHECK(ftl_set_create_backing(b, &c, 2, 2048) == -EINVAL,
		"stripe under a page");
	c.page_size = 16384;
	T_CHECK(ftl_set_create_backing(b, &c, 2, 8192) == -EINVAL,
		"stripe under a 16K page");
	c.page_size = 0;
	c.size = SIZE + 100;
	T_CHECK(ftl_set_create_backing(b, &c, 2, 0) == -EINVAL,
		"size not in sectors");
	img = nand_mem_bytes(b, &n);
	for (uint64_t i = 0; i < n; i++)
		if (img[i]) {
			T_CHECK(0, "a refused create wrote byte %llu",
				(unsigned long long)i);
			break;
		}
	b->ops->destroy(b);
}

/* Corrected bits of part @p so far. */
static uint64_t corrected(struct ftl_set *s, unsigned p)
{
	struct ftl_stats st;

	ftl_stats_get(ftl_set_part(s, p), &st);
	return st.ecc_corrected_bits;
}

/*
 * A fault model on a set (serve --faults): part i draws from seed + i, so
 * the parts fail differently.  The same reads, page by page, of the same
 * part offsets on both parts: the bits corrected in each read, a sequence
 * per part, must differ (with one seed for all they were equal: seen
 * failing so).
 */
static void faults(uint64_t seed)
{
	enum { PAGES = 256, STRIPE = 16384 };
	struct ftl_open_opts o = { 0 };
	struct nand_fault_spec spec;
	uint64_t seq[2][PAGES], sum[2] = { 0, 0 };
	uint8_t *page = malloc(4096);
	struct nand_backing *b;
	struct ftl_set *s;
	char err[128], txt[64];

	snprintf(txt, sizeof(txt), "bitflip=1e-5,seed=%llu",
		 (unsigned long long)seed);
	T_CHECK(nand_fault_parse(txt, &spec, err, sizeof(err)) == 0, "%s", err);
	o.faults = &spec;
	s = t_set_make(SIZE, FTL_ALIGN_1M, 2, STRIPE, false, &o, &b);
	memset(page, 0x5a, 4096);
	for (uint64_t off = 0; off < SIZE; off += 4096)
		T_CHECK(ftl_set_write(s, page, off, 4096, 0) == 0, "write");
	/* page k of part p: stripe 2 * (k / 4) + p, page k % 4 in it */
	for (unsigned k = 0; k < PAGES; k++)
		for (unsigned p = 0; p < 2; p++) {
			uint64_t c0 = corrected(s, p);
			uint64_t off = (2 * (k / 4) + p) * (uint64_t)STRIPE +
				       (k % 4) * 4096;

			T_CHECK(ftl_set_read(s, page, off, 4096) == 0, "read");
			seq[p][k] = corrected(s, p) - c0;
			sum[p] += seq[p][k];
		}
	T_CHECK(sum[0] > 0 && sum[1] > 0, "seed %llu: bits corrected: %llu "
		"and %llu", (unsigned long long)seed,
		(unsigned long long)sum[0], (unsigned long long)sum[1]);
	T_CHECK(memcmp(seq[0], seq[1], sizeof(seq[0])) != 0, "seed %llu: "
		"both parts drew the same bit errors (%llu bits each): one seed "
		"for all parts", (unsigned long long)seed,
		(unsigned long long)sum[0]);
	ftl_set_close(s);
	t_set_drop(b);
	free(page);
}

int main(void)
{
	rs = t_seed() | 1;
	for (int a = 0; a < 2; a++)
		for (unsigned np = 2; np <= 3; np++) {
			enum ftl_align_mode al = a ? FTL_ALIGN_1M : FTL_ALIGN_ODD;

			run(al, np, 16384);
			run(al, np, 1u << 20);
		}
	plain(FTL_ALIGN_ODD);
	plain(FTL_ALIGN_1M);
	corrupt();
	mend();
	refused();
	faults(1);
	faults(rs);
	return t_result();
}
