/* SPDX-License-Identifier: MIT */
/*
 * The newest checkpoint slot lost whole (its blocks erased, as the fuzz
 * oracle's "block erased" damage does) after data was written and flushed
 * past the previous slot's roll-forward sequence limit (its seq +
 * seq_gap).  The slot then reads as never used, so nothing says a newer
 * checkpoint existed but the pages numbered above that limit.  Before the
 * fix the open used the previous slot silently and dropped those pages:
 * flushed writes read back as older data or zeroes, and fsck said clean.
 * Now, for each case:
 *  - fsck reports the lost checkpoint (exit 4);
 *  - the open rolls forward without the limit, every flushed sector reads
 *    back, and the stats say a checkpoint was lost;
 *  - fsck --repair ends clean (exit 1, then 0) with the data intact.
 * Cases: delta format, crash (base + a delta record in the lost slot);
 * delta format, clean close (the lost slot ends with a clean delta);
 * the version-3 format (no deltas: one base per slot), crash.
 * Deterministic (no random draws).
 *
 * Inspects engine internals (struct ftl, ftl-int.h): checkpoints written
 * on demand, their generation and the sequence gap (f->ck).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"
#include "ftl-tagged.h"

static struct ftl *mk(struct nand_backing **bp, bool delta)
{
	struct ftl_create_opts c = { .size = 32u << 20, .align = FTL_ALIGN_1M,
		.pages_per_block = 4 };
	uint64_t sz = delta ? ftl_test_image_size(&c) :
			      ftl_test_image_size_full(&c);
	struct nand_backing *b;
	struct ftl *f = NULL;

	if (!sz || nand_backing_mem(sz, false, &b) ||
	    (delta ? ftl_create_backing(b, &c) :
		     ftl_test_create_backing_full(b, &c))) {
		T_CHECK(0, "create (delta %d)", delta);
		exit(t_result());
	}
	nand_mem_hold(b);
	if (ftl_open_backing(b, NULL, &f)) {
		T_CHECK(0, "open");
		exit(t_result());
	}
	T_CHECK(f->g.ckpt_delta == delta, "format: delta %d", f->g.ckpt_delta);
	*bp = b;
	return f;
}

static int ckpt(struct ftl *f, bool base)
{
	int r;

	ftl_lock(&f->lock);
	if (base)
		ftl_ckpt_force_base(f);
	r = ftl_ckpt_write(f, false);
	ftl_unlock(&f->lock);
	T_CHECK(r == 0, "checkpoint: %d", r);
	return r;
}

/* Every page of the slot of checkpoint @gen erased (data 0xff, OOB 0). */
static void lose_slot(struct nand_backing *b, const struct ftl_geom *g,
		      uint64_t gen)
{
	uint64_t n, p0 = (gen % FTL_CKPT_SLOTS) * g->slot_blocks * g->ppb;
	uint8_t *img = nand_mem_bytes(b, &n);

	for (uint64_t p = p0; p < p0 + (uint64_t)g->slot_blocks * g->ppb; p++) {
		memset(img + ftl_page_off(g, p), 0xff, g->ps);
		memset(img + ftl_oob_off(g, p), 0, g->oob);
	}
}

static void save(struct nand_backing *b, const char *path, const char *what)
{
	uint64_t n;
	uint8_t *img = nand_mem_bytes(b, &n);
	FILE *fp = fopen(path, "w");

	T_CHECK(fp && fwrite(img, 1, n, fp) == n, "%s: save image", what);
	if (fp)
		fclose(fp);
}

static void run(bool delta, bool clean, const char *what)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct nand_backing *b;
	struct ftl *f = mk(&b, delta), *g = NULL;
	struct ftl_geom geo = f->g;
	struct ftl_stats st;
	uint64_t gen, limit, half, tag = 1, lo = 0;
	FILE *null = fopen("/dev/null", "w");
	char path[512];
	int r;

	memset(tt_tags, 0, sizeof(tt_tags));
	f->ck.interval = UINT32_MAX / 2;      /* only the ones forced here */
	tt_write_range(f, 0, 64, tag++);
	(void)ckpt(f, true);                    /* the slot that survives */
	limit = f->ck.seq + f->ck.seq_gap;
	half = f->ck.seq + f->ck.seq_gap / 2;
	while (f->log.seq < half && tag < 4000) {
		tt_write_range(f, lo, 64, tag++);
		lo = (lo + 64) % TT_SPAN;
	}
	(void)ckpt(f, true);                    /* the slot to be lost */
	gen = f->ck.gen;
	while (f->log.seq < limit + 256 && tag < 4000) {
		tt_write_range(f, lo, 64, tag++);
		lo = (lo + 64) % TT_SPAN;
		if (delta && f->log.seq > half + f->ck.seq_gap / 4 &&
		    f->ck.didx == 0)
			(void)ckpt(f, false);   /* a delta record too */
	}
	T_CHECK(f->ck.gen == gen && (!delta || f->ck.didx >= 1),
		"%s: newest checkpoint gen %llu (want %llu), %u deltas", what,
		(unsigned long long)f->ck.gen, (unsigned long long)gen,
		f->ck.didx);
	fprintf(stderr, "%s: seq %llu, previous slot's limit %llu, gap %llu\n",
		what, (unsigned long long)f->log.seq, (unsigned long long)limit,
		(unsigned long long)f->ck.seq_gap);
	if (clean)
		T_CHECK(ftl_close(f) == 0, "%s: close", what);
	else
		ftl_abandon(f);
	lose_slot(b, &geo, gen);

	snprintf(path, sizeof(path), "%s/ftl-ckpt-lost-%d.img", dir,
		 (int)getpid());
	save(b, path, what);
	r = ftl_fsck(path, false, null, false);
	T_CHECK(r == 4, "%s: fsck %d (want 4: a lost checkpoint)", what, r);

	g = tt_reopen_rolled(b, what);
	if (g) {
		ftl_stats_get(g, &st);
		T_CHECK(st.ckpt_lost == 1, "%s: stats ckpt_lost %llu", what,
			(unsigned long long)st.ckpt_lost);
		ftl_close(g);
	}
	b->ops->destroy(b);

	r = ftl_fsck(path, true, null, false);
	T_CHECK(r == 1, "%s: fsck --repair %d (want 1)", what, r);
	r = ftl_fsck(path, false, null, false);
	T_CHECK(r == 0, "%s: fsck after repair %d (want 0)", what, r);
	g = NULL;
	r = ftl_open(path, NULL, &g);
	T_CHECK(r == 0, "%s: open after repair %d", what, r);
	if (!r) {
		(void)tt_verify(g, what);
		ftl_close(g);
	}
	unlink(path);
	fclose(null);
}

/*
 * Two cheaper proofs, for a newest valid checkpoint that is clean without
 * a mount marker (a clean mount, no roll-forward at all, before):
 * - @create_lost: the slot of generation 2 erased on an image whose only
 *   mount started from it (its marker and delta records are in that
 *   slot): generation 1 is left, but create writes 1 and 2, so 2 was
 *   lost.  (Fuzz oracle image seed 33021: every write read as zeroes.)
 * - else: the mount marker page of a clean checkpoint damaged (an OOB
 *   byte flipped) after writes and a crash before any checkpoint: a page
 *   there that does not check out is taken as a marker.
 * Both: fsck exit 4, the open rolls forward and reads every flushed
 * sector, fsck --repair ends clean.
 */
static void clean_lost(bool create_lost, const char *what)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct nand_backing *b;
	struct ftl *f = mk(&b, true), *g = NULL;
	struct ftl_geom geo = f->g;
	FILE *null = fopen("/dev/null", "w");
	uint64_t gen, n, tag = 1, marker;
	char path[512];
	int r;

	memset(tt_tags, 0, sizeof(tt_tags));
	if (!create_lost) {             /* a clean close, a clean reopen */
		tt_write_range(f, 0, 64, tag++);
		T_CHECK(ftl_close(f) == 0, "%s: close", what);
		nand_mem_hold(b);
		f = NULL;
		T_CHECK(ftl_open_backing(b, NULL, &f) == 0 &&
			f->mnt.kind == FTL_MOUNT_CLEAN, "%s: reopen", what);
		if (!f)
			exit(t_result());
	}
	gen = f->ck.gen;
	marker = (gen % FTL_CKPT_SLOTS) * geo.slot_blocks * geo.ppb + f->ck.mark;
	for (int i = 0; i < (create_lost ? 40 : 4); i++) {
		tt_write_range(f, (uint64_t)(i * 64) % TT_SPAN, 64, tag++);
		if (create_lost && i % 8 == 7)
			(void)ckpt(f, false);   /* deltas in the same slot */
	}
	T_CHECK(f->ck.gen == gen, "%s: gen %llu -> %llu", what,
		(unsigned long long)gen, (unsigned long long)f->ck.gen);
	ftl_abandon(f);
	if (create_lost) {
		T_CHECK(gen == 2, "%s: the mount was from generation %llu",
			what, (unsigned long long)gen);
		lose_slot(b, &geo, gen);
	} else {
		uint8_t *img = nand_mem_bytes(b, &n);

		img[ftl_oob_off(&geo, marker) + 3] ^= 0x10;
	}
	snprintf(path, sizeof(path), "%s/ftl-ckpt-lost-%d.img", dir,
		 (int)getpid());
	save(b, path, what);
	r = ftl_fsck(path, false, null, false);
	T_CHECK(r == 4, "%s: fsck %d (want 4)", what, r);
	g = tt_reopen_rolled(b, what);
	if (g) {
		ftl_close(g);
	}
	b->ops->destroy(b);
	r = ftl_fsck(path, true, null, false);
	T_CHECK(r == 1, "%s: fsck --repair %d (want 1)", what, r);
	r = ftl_fsck(path, false, null, false);
	T_CHECK(r == 0, "%s: fsck after repair %d (want 0)", what, r);
	r = ftl_open(path, NULL, &g);
	T_CHECK(r == 0, "%s: open after repair %d", what, r);
	if (!r) {
		(void)tt_verify(g, what);
		ftl_close(g);
	}
	unlink(path);
	fclose(null);
}

int main(void)
{
	run(true, false, "delta format, crash");
	run(true, true, "delta format, clean close");
	run(false, false, "version-3 format, crash");
	clean_lost(true, "generation 2 of create lost, writes since");
	clean_lost(false, "mount marker damaged, writes since");
	return t_result();
}
