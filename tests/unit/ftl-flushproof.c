/* SPDX-License-Identifier: MIT */
/*
 * The proof a host flush leaves on the medium (images with
 * OCT_SB_F_FLUSH_SUM: flush summaries, the flush mark; ftl_fsum.c).
 * Every case crashes right after a flush with nothing programmed after
 * it, then damages the medium; the damaged logical pages must read EIO
 * (never the older version, never zeroes) and fsck must say so (exit 4);
 * fsck --repair must then leave a clean image.  All of them failed before
 * flush summaries (the older version was served, fsck said clean):
 *
 *  1. the last flushed page's data: 64 bytes (the image of
 *     /work/shared/repro/final-flush-damage), one byte (repro
 *     flushed-page-corrupt: a page flushed after the last checkpoint);
 *  2. one byte of its OOB record (the second case of final-flush-damage);
 *  3. the block holding it erased (lost);
 *  4. an older version of its logical page programmed over it
 *     (misdirected: on a 48-byte OOB, no erase stamp to catch it);
 *  5. a flushed trim record's OOB damaged: the trimmed range must read
 *     zeroes (restored from the summary), never the data from before;
 *  6. two damages: the summary and the block of a page it lists: the open
 *     refuses (EUCLEAN: which logical page was lost is unknown), fsck
 *     exit 4, --repair accepts the loss and ends clean.
 *  7. Power cuts at every backing write of a host flush (sync, summary
 *     page, flush mark, sync), images with prefixes / subsets of the
 *     unsynced writes, one torn: the open never refuses, no page reads
 *     EIO or an older version than the last completed flush, fsck clean.
 *  Format: create sets the flag, a 40-byte OOB with it is refused, a
 *     damaged flush mark copy is ignored.
 *  8. Cost: a 4 KiB write + flush loop programs one summary page per
 *     flush (a flush with nothing new none, writes without flushes none,
 *     one more page per FTL_FSUM_PER_PAGE pages); an image of the older
 *     format programs none and writes no flush mark.
 * Seeded (OCTANT_SEED replays).
 *
 * Inspects engine internals (struct ftl, ftl-int.h): the GC stream's open
 * block (f->log) and the flush mark (f->fmark) find the summary to damage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"
#include "test.h"

#define SIZE  (2u << 20)
#define NLPN  (SIZE / 4096)

static uint64_t rs;
static char path[256];
static FILE *null;
static uint32_t cur[NLPN];              /* newest id per logical page */

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static void fill(uint8_t *p, uint32_t lpn, uint32_t id)
{
	for (uint32_t i = 0; i < 4096; i += 4) {
		uint32_t v = (lpn * 2654435761u) ^ (id * 40503u) ^ i ^ 0x5a5a;
		memcpy(p + i, &v, 4);
	}
}

/* 4 KiB pages on 16-page blocks, 1 MiB mode, 25 % OP, @oob bytes (48: no
 * erase stamps, 64: stamps) */
static struct ftl_create_opts opts(uint32_t oob)
{
	return (struct ftl_create_opts){ .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 16, .oob_size = oob, .op_permille = 250 };
}

static struct ftl *fresh(const struct ftl_create_opts *c, bool old,
			 struct nand_backing **b, bool powercut)
{
	struct ftl *f = NULL;

	if (nand_backing_mem(ftl_test_image_size(c), powercut, b) ||
	    (old ? ftl_test_create_backing_nofsum(*b, c) :
		   ftl_create_backing(*b, c))) {
		T_CHECK(0, "create");
		exit(t_result());
	}
	nand_mem_hold(*b);
	if (ftl_open_backing(*b, NULL, &f)) {
		T_CHECK(0, "open");
		exit(t_result());
	}
	memset(cur, 0, sizeof(cur));
	return f;
}

static void put(struct ftl *f, uint32_t l, uint32_t id)
{
	uint8_t w[4096];

	fill(w, l, id);
	T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0, "write");
	cur[l] = id;
}

/* A seeded workload: writes (some flushed), enough for checkpoints and
 * GC; then @tail more writes and the final flush. */
static uint32_t workload(struct ftl *f, int ops, int tail)
{
	uint32_t id = 1;

	for (int i = 0; i < ops; i++) {
		put(f, (uint32_t)(rnd() % NLPN), id++);
		if (rnd() % 16 == 0)
			T_CHECK(ftl_flush(f) == 0, "flush");
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
	for (int i = 0; i < tail; i++)
		put(f, (uint32_t)(rnd() % NLPN), id++);
	T_CHECK(ftl_flush(f) == 0, "final flush");
	return id;
}

/* The image now, then the crash (nothing programmed after the flush). */
static uint8_t *crash(struct ftl *f, struct nand_backing *b, uint64_t *isz)
{
	uint8_t *m;

	*isz = f->g.image_size;
	m = malloc(*isz);
	if (!m)
		abort();
	memcpy(m, nand_mem_bytes(b, NULL), *isz);
	ftl_abandon(f);
	b->ops->destroy(b);             /* the test's reference */
	return m;
}

static int open_img(const uint8_t *m, uint64_t isz, struct ftl **f)
{
	struct nand_backing *b;
	int r;

	if (nand_backing_mem(isz, false, &b))
		abort();
	nand_mem_load(b, m);
	r = ftl_open_backing(b, NULL, f);
	if (r)
		b->ops->destroy(b);
	return r;
}

static int fsck_img(const uint8_t *m, uint64_t isz, bool repair, uint8_t *out)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644), r;

	if (fd < 0 || write(fd, m, isz) != (ssize_t)isz) {
		T_CHECK(0, "store %s", path);
		exit(t_result());
	}
	close(fd);
	r = ftl_fsck(path, repair, null, false);
	if (out) {
		fd = open(path, O_RDONLY);
		if (fd < 0 || read(fd, out, isz) != (ssize_t)isz)
			T_CHECK(0, "load %s", path);
		close(fd);
	}
	return r;
}

/*
 * Open the damaged image @m: logical pages marked in @lost must read EIO,
 * every other one its newest value (zeroes if never written or trimmed);
 * then fsck 4, --repair 1, fsck 0.
 */
static void check(const char *what, const uint8_t *m, uint64_t isz,
		  const bool *lost)
{
	uint8_t w[4096], r[4096], *rep = malloc(isz);
	struct ftl *f;
	int rc;

	rc = open_img(m, isz, &f);
	T_CHECK(rc == 0, "%s: open %d", what, rc);
	for (uint32_t l = 0; !rc && l < NLPN; l++) {
		int e = ftl_read(f, r, (uint64_t)l * 4096, 4096);

		fill(w, l, cur[l]);
		if (!cur[l])
			memset(w, 0, sizeof(w));
		if (lost[l]) {
			T_CHECK(e == -EIO, "%s: lost logical page %u reads %d%s",
				what, l, e, e ? "" : memcmp(r, w, 4096) ?
				" (an older version)" : " (its data)");
			continue;
		}
		T_CHECK(e == 0 && !memcmp(r, w, 4096), "%s: logical page %u "
			"reads %d / wrong data", what, l, e);
	}
	if (!rc)
		ftl_abandon(f);
	rc = fsck_img(m, isz, false, NULL);
	T_CHECK(rc == 4, "%s: fsck %d, want 4", what, rc);
	rc = fsck_img(m, isz, true, rep);
	T_CHECK(rc == 1, "%s: fsck --repair %d, want 1", what, rc);
	rc = fsck_img(rep, isz, false, NULL);
	T_CHECK(rc == 0, "%s: fsck after repair %d", what, rc);
	free(rep);
}

/* The flash page the map points @lpn at before the crash, and its OOB. */
static uint32_t where(struct ftl *f, uint32_t lpn)
{
	uint32_t p = f->log.map[lpn];

	T_CHECK(p < FTL_DAMAGED, "lpn %u mapped", lpn);
	return p;
}

/* Cases 1 and 2: the last flushed page, its data or an OOB byte. */
static void last_page(uint32_t oob, int how)
{
	static const char *const name[] = { "64 bytes of the last flushed "
		"page", "one byte of the last flushed page", "one OOB byte of "
		"the last flushed page" };
	struct ftl_create_opts c = opts(oob);
	struct nand_backing *b;
	struct ftl *f = fresh(&c, false, &b, false);
	struct ftl_geom g = f->g;
	bool lost[NLPN] = { false };
	uint32_t l, p, id = workload(f, 600, 20);
	uint64_t isz;
	uint8_t *m;
	char what[128];

	l = (uint32_t)(rnd() % NLPN);   /* written last, then flushed */
	put(f, l, id);
	T_CHECK(ftl_flush(f) == 0, "flush");
	p = where(f, l);
	m = crash(f, b, &isz);
	if (how == 0)
		memset(m + ftl_page_off(&g, p) + 1872, 0x6f, 64);
	else if (how == 1)
		m[ftl_page_off(&g, p) + rnd() % g.ps] ^= 0x10;
	else
		m[ftl_oob_off(&g, p) + rnd() % sizeof(struct ftl_oob)] ^= 0x04;
	lost[l] = true;
	snprintf(what, sizeof(what), "%s (OOB %u)", name[how], oob);
	check(what, m, isz, lost);
	free(m);
}

/* Case 3: the block of the last flushed page erased (data 0xff, OOB 0). */
static void lost_block(uint32_t oob)
{
	struct ftl_create_opts c = opts(oob);
	struct nand_backing *b;
	struct ftl *f = fresh(&c, false, &b, false);
	struct ftl_geom g = f->g;
	bool lost[NLPN] = { false };
	uint32_t blk, id = workload(f, 500, 10 + (int)(rnd() % 30));
	uint64_t isz;
	uint8_t *m;

	put(f, 7, id);
	T_CHECK(ftl_flush(f) == 0, "flush");
	blk = where(f, 7) / g.ppb;
	for (uint32_t l = 0; l < NLPN; l++)
		lost[l] = f->log.map[l] < FTL_DAMAGED && f->log.map[l] / g.ppb == blk;
	m = crash(f, b, &isz);
	for (uint64_t p = (uint64_t)blk * g.ppb; p < (uint64_t)(blk + 1) * g.ppb;
	     p++) {
		memset(m + ftl_page_off(&g, p), 0xff, g.ps);
		memset(m + ftl_oob_off(&g, p), 0, g.oob);
	}
	check(oob == 48 ? "the last flushed page's block lost (OOB 48)" :
	      "the last flushed page's block lost (OOB 64)", m, isz, lost);
	free(m);
}

/* Case 4: an older version of the last flushed page programmed over it
 * (data and OOB), on a 48-byte OOB (no erase stamps). */
static void misdirected(void)
{
	struct ftl_create_opts c = opts(48);
	struct nand_backing *b;
	struct ftl *f = fresh(&c, false, &b, false);
	struct ftl_geom g = f->g;
	bool lost[NLPN] = { false };
	uint32_t old, now, id = workload(f, 300, 5);
	uint64_t isz;
	uint8_t *m;

	put(f, 9, id++);
	T_CHECK(ftl_flush(f) == 0, "flush");
	old = where(f, 9);
	put(f, 9, id);
	T_CHECK(ftl_flush(f) == 0, "flush");
	now = where(f, 9);
	m = crash(f, b, &isz);
	memcpy(m + ftl_page_off(&g, now), m + ftl_page_off(&g, old), g.ps);
	memcpy(m + ftl_oob_off(&g, now), m + ftl_oob_off(&g, old), g.oob);
	lost[9] = true;
	check("an older version programmed over the last flushed page", m, isz,
	      lost);
	free(m);
}

/* Case 5: a flushed trim record whose OOB is damaged. */
static void lost_trim(void)
{
	struct ftl_create_opts c = opts(64);
	struct nand_backing *b;
	struct ftl *f = fresh(&c, false, &b, false);
	struct ftl_geom g = f->g;
	bool lost[NLPN] = { false };
	uint8_t *m, oob[1024];
	uint64_t isz, tp = 0;

	workload(f, 200, 0);
	for (uint32_t l = 40; l < 48; l++)
		put(f, l, 90000 + l);
	T_CHECK(ftl_flush(f) == 0, "flush");
	T_CHECK(ftl_discard(f, 40 * 4096, 8 * 4096) == 0, "discard");
	T_CHECK(ftl_flush(f) == 0, "flush");
	for (uint32_t l = 40; l < 48; l++)
		cur[l] = 0;
	/* the trim record: the host stream's newest page */
	tp = (uint64_t)f->log.st[STREAM_HOST].blk * g.ppb + f->log.st[STREAM_HOST].wp - 1;
	T_CHECK(nand_read_oob(f->nand, tp, oob) == 0 &&
		((struct ftl_oob *)oob)->kind == FTL_OOB_TRIM, "trim record");
	m = crash(f, b, &isz);
	m[ftl_oob_off(&g, tp) + 9] ^= 0x80;     /* its lpn (range count) */
	/* every logical page reads as before: the trimmed ones zeroes */
	check("a flushed trim record's OOB damaged", m, isz, lost);
	free(m);
}

/* Case 6: the flush summary destroyed and a page it lists lost: nothing
 * tells which logical page that was; the open must refuse. */
static void summary_and_page(void)
{
	struct ftl_create_opts c = opts(64);
	struct nand_backing *b;
	struct ftl *f = fresh(&c, false, &b, false);
	struct ftl_geom g = f->g;
	uint32_t id = workload(f, 300, 0), blk, l = 5;
	uint8_t *m, *rep;
	uint64_t isz, sp;
	struct ftl *h;
	int rc;

	put(f, l, id);
	T_CHECK(ftl_flush(f) == 0, "flush");
	blk = where(f, l) / g.ppb;
	sp = (uint64_t)f->log.st[STREAM_GC].blk * g.ppb + f->log.st[STREAM_GC].wp - 1;
	T_CHECK(f->fmark.last.sum_ppn == sp, "the summary at %llu, the mark says %u",
		(unsigned long long)sp, f->fmark.last.sum_ppn);
	m = crash(f, b, &isz);
	m[ftl_page_off(&g, sp) + 100] ^= 1;     /* the summary's data */
	for (uint64_t p = (uint64_t)blk * g.ppb; p < (uint64_t)(blk + 1) * g.ppb;
	     p++)
		m[ftl_oob_off(&g, p) + 1] ^= 0xff;  /* every record there */
	rc = open_img(m, isz, &h);
	T_CHECK(rc == -EUCLEAN, "summary and listed page lost: open %d, want "
		"-EUCLEAN", rc);
	if (!rc)
		ftl_abandon(h);
	rep = malloc(isz);
	T_CHECK(fsck_img(m, isz, false, NULL) == 4, "fsck, want 4");
	T_CHECK(fsck_img(m, isz, true, rep) == 1, "--repair, want 1");
	T_CHECK(fsck_img(rep, isz, false, NULL) == 0, "fsck after repair");
	rc = open_img(rep, isz, &h);
	T_CHECK(rc == 0, "open after repair %d", rc);
	if (!rc)
		ftl_abandon(h);
	free(rep);
	free(m);
}

/* Format: create sets OCT_SB_F_FLUSH_SUM; the flag with an OOB too small
 * for the flush record is refused; a damaged flush mark copy is ignored
 * (the other one is used), both damaged: recovery goes on without one. */
static void format(void)
{
	struct ftl_create_opts c = opts(64);
	struct nand_backing *b;
	struct ftl *f = fresh(&c, false, &b, false);
	struct ftl_geom g;
	struct oct_sb sb;
	uint64_t isz, gen;
	uint8_t *m;
	struct ftl *h;

	T_CHECK((f->sb.flags & OCT_SB_F_FLUSH_SUM) && f->g.flush_sum,
		"create sets OCT_SB_F_FLUSH_SUM");
	T_CHECK(ftl_geom_compute(&g, SIZE, FTL_ALIGN_1M, 4096, 16, 40, 250) ==
		0 && ftl_sb_build(&sb, &g) == 0, "a 40-byte OOB geometry");
	sb.flags |= OCT_SB_F_FLUSH_SUM;
	sb.crc = 0;
	sb.crc = oct_crc32c(0, &sb, OCT_SB_SIZE);
	T_CHECK(ftl_sb_decode(&sb, &g) == -EBADMSG, "flush summaries with a "
		"40-byte OOB accepted");
	workload(f, 100, 3);
	workload(f, 10, 3);             /* two marks: both copies written */
	gen = f->fmark.last.gen;
	m = crash(f, b, &isz);
	m[(gen & 1 ? FTL_FMARK_OFF1 : FTL_FMARK_OFF0) + 40] ^= 1;
	T_CHECK(open_img(m, isz, &h) == 0, "open, newest mark damaged");
	if (!t_failures) {
		T_CHECK(h->fmark.bad == 1 && h->fmark.last.gen == gen - 1, "mark copies: %u "
			"bad, gen %llu used (newest %llu)", h->fmark.bad,
			(unsigned long long)h->fmark.last.gen, (unsigned long long)gen);
		ftl_abandon(h);
	}
	m[(gen & 1 ? FTL_FMARK_OFF0 : FTL_FMARK_OFF1) + 40] ^= 1;
	T_CHECK(open_img(m, isz, &h) == 0, "open, both marks damaged");
	if (!t_failures)
		ftl_abandon(h);
	T_CHECK(fsck_img(m, isz, false, NULL) == 0, "two damaged marks: fsck "
		"notes them only");
	free(m);
}

/* ---- 7: power cuts inside a flush ------------------------------------ */

#define CUT_IMAGES 6
struct cut {
	struct nand_backing *b;
	uint64_t isz, seed;
	int at, n;                      /* cut at write @at; writes seen */
	uint8_t *img[CUT_IMAGES];
};

static void on_write(void *ctx)
{
	struct cut *c = ctx;

	if (++c->n == c->at)
		for (int i = 0; i < CUT_IMAGES; i++)
			nand_mem_crash_image(c->b, c->seed + (uint64_t)i, i % 2,
					     c->img[i]);
	nand_mem_set_trigger(c->b, 1, on_write, c);
}

/* One run: the same seeded workload, then a flush cut at its @at-th
 * backing write (0: only count them).  Returns the flush's writes. */
static int flush_cut(uint64_t seed, int at, uint32_t oob)
{
	struct ftl_create_opts c = opts(oob);
	static uint32_t before[NLPN];
	uint8_t w[4096], r[4096];
	struct nand_backing *b;
	struct ftl *f;
	struct cut k = { .at = at, .seed = seed * 31 + (uint64_t)at };
	uint32_t id;

	rs = seed;
	f = fresh(&c, false, &b, true);
	id = workload(f, 300, 0);
	memcpy(before, cur, sizeof(before));    /* flushed: the floor */
	for (int i = 0; i < 24; i++)
		put(f, (uint32_t)(rnd() % NLPN), id++);
	k.b = b;
	k.isz = f->g.image_size;
	for (int i = 0; at && i < CUT_IMAGES; i++)
		k.img[i] = malloc(k.isz);
	nand_mem_set_trigger(b, 1, on_write, &k);
	T_CHECK(ftl_flush(f) == 0, "flush");
	nand_mem_set_trigger(b, 0, NULL, NULL);
	ftl_abandon(f);
	b->ops->destroy(b);
	for (int i = 0; at && i < CUT_IMAGES; i++) {
		struct ftl *h;
		int rc = open_img(k.img[i], k.isz, &h);

		T_CHECK(rc == 0, "cut at write %d of the flush, image %d: open "
			"%d", at, i, rc);
		for (uint32_t l = 0; !rc && l < NLPN; l++) {
			int e = ftl_read(h, r, (uint64_t)l * 4096, 4096);
			bool ok = false;

			fill(w, l, cur[l]);
			if (!cur[l])
				memset(w, 0, sizeof(w));
			ok = !e && !memcmp(r, w, 4096);
			fill(w, l, before[l]);
			if (!before[l])
				memset(w, 0, sizeof(w));
			ok = ok || (!e && !memcmp(r, w, 4096));
			if (!ok) {
				T_CHECK(0, "cut at write %d of the flush, "
					"image %d: logical page %u reads %d, "
					"neither before nor after", at, i, l, e);
				break;
			}
		}
		if (!rc)
			ftl_abandon(h);
		rc = fsck_img(k.img[i], k.isz, false, NULL);
		T_CHECK(rc == 0, "cut at write %d of the flush, image %d: fsck "
			"%d", at, i, rc);
		free(k.img[i]);
	}
	return k.n;
}

static void power_cuts(uint32_t oob)
{
	uint64_t seed = rnd() | 1;
	int n = flush_cut(seed, 0, oob);

	/* the summary page and the flush mark (syncs are no writes) */
	T_CHECK(n >= 2, "a flush after host pages writes %d times", n);
	for (int at = 1; at <= n && !t_failures; at++)
		flush_cut(seed, at, oob);
	fprintf(stderr, "OOB %u: power cuts at each of the %d backing writes "
		"of a flush, %d images each: no EIO, no older data, fsck "
		"clean\n", oob, n, CUT_IMAGES);
}

/* ---- 8: cost ----------------------------------------------------------- */

static void cost(bool old)
{
	struct ftl_create_opts c = opts(64);
	struct nand_backing *b;
	struct ftl *f = fresh(&c, old, &b, false);
	uint64_t isz = ftl_test_image_size(&c);
	struct ftl_stats a, z;
	const int n = 300;
	uint8_t zero[FTL_FMARK_BYTES] = { 0 }, *m;
	uint32_t id = 1;

	for (uint32_t l = 0; l < NLPN / 2; l++) /* half full: little GC */
		put(f, l, id++);
	T_CHECK(ftl_flush(f) == 0, "flush");
	ftl_stats_get(f, &a);
	for (int i = 0; i < n; i++) {
		put(f, (uint32_t)(rnd() % (NLPN / 2)), id++);
		T_CHECK(ftl_flush(f) == 0, "flush");
		T_CHECK(ftl_flush(f) == 0, "flush");    /* nothing new */
	}
	ftl_stats_get(f, &z);
	fprintf(stderr, "%s format, 4 KiB write + flush x %d on a half-full "
		"%u MiB image: %.2f page programs per flush (1 host, %.2f "
		"summary, %.2f GC, %.2f checkpoint)\n", old ? "older" : "new",
		n, SIZE >> 20, (double)(z.page_programs - a.page_programs) / n,
		(double)(z.fsum_pages - a.fsum_pages) / n,
		(double)(z.gc_relocations - a.gc_relocations) / n,
		(double)(z.page_programs - a.page_programs - (uint64_t)n -
			 (z.fsum_pages - a.fsum_pages) -
			 (z.gc_relocations - a.gc_relocations)) / n);
	T_EQ_U64(z.fsum_pages - a.fsum_pages, old ? 0 : n,
		 "one summary page per flush after a write, none else");
	T_CHECK(z.page_programs - a.page_programs <=
		(uint64_t)n * (old ? 3 : 5) / 2, "%llu programs for %d flushes",
		(unsigned long long)(z.page_programs - a.page_programs), n);
	/* writes without a flush: none; 400 pages then a flush: 3 */
	ftl_stats_get(f, &a);
	for (int i = 0; i < 400; i++)
		put(f, (uint32_t)(rnd() % NLPN), id++);
	ftl_stats_get(f, &z);
	T_EQ_U64(z.fsum_pages - a.fsum_pages, 0, "no flush, no summary");
	T_CHECK(ftl_flush(f) == 0, "flush");
	ftl_stats_get(f, &z);
	T_CHECK(old ? z.fsum_pages == a.fsum_pages :
		z.fsum_pages - a.fsum_pages ==
		(400 + FTL_FSUM_PER_PAGE(4096) - 1) / FTL_FSUM_PER_PAGE(4096) ||
		z.ckpt_writes > a.ckpt_writes, "400 pages, one flush: %llu "
		"summary pages", (unsigned long long)(z.fsum_pages - a.fsum_pages));
	T_CHECK(old == !memcmp(nand_mem_bytes(b, NULL) + FTL_FMARK_OFF0, zero,
			       sizeof(zero)), "flush mark %s",
		old ? "written into an older image" : "not written");
	T_CHECK(ftl_close(f) == 0, "close");
	m = malloc(isz);
	memcpy(m, nand_mem_bytes(b, NULL), isz);
	T_CHECK(fsck_img(m, isz, false, NULL) == 0, "fsck");
	free(m);
	b->ops->destroy(b);
}

int main(void)
{
	rs = t_seed() | 1;
	null = fopen("/dev/null", "w");
	snprintf(path, sizeof(path), "%s/ftl-flushproof-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	format();
	for (int how = 0; how < 3; how++) {
		last_page(64, how);
		last_page(48, how);
	}
	lost_block(64);
	lost_block(48);
	misdirected();
	lost_trim();
	summary_and_page();
	power_cuts(64);
	power_cuts(48);
	cost(false);
	cost(true);
	unlink(path);
	fclose(null);
	return t_result();
}
