/* SPDX-License-Identifier: MIT */
/*
 * A create cut short: a power cut (or a kill -9) at EVERY write of a
 * create, for engine images (odd, 1m, with factory bad blocks) and sets of
 * 2 parts, on a fresh medium and over an old image written all over (a
 * reused device: the create zeroes it first).  From each cut, three images
 * (two power cuts, torn or not, and a kill's: every write so far whole)
 * must be one of:
 *  - refused by the open (-EBADMSG: no valid superblock or set header, the
 *    create did not finish), and fsck does not call it clean;
 *  - the empty device the create was making: every sector zeroes, writes
 *    and a flush taken, fsck clean after the close, the data there at the
 *    next open;
 *  - (over an old image) the old image whole, every byte as it was (one
 *    superblock copy may be zeroed by a torn wipe: fsck exit 4, and
 *    --repair rewrites it).
 * Never an image that opens with anything else in it: a create over a
 * device cut inside its one zeroing write left the old superblock over
 * half-zeroed metadata, an old image that opened and read EIO
 * (nand_backing_wipe now zeroes the superblock area first, synced).  A
 * create again over each crash image (create --force) gives a clean,
 * empty image.  The kill after the last write (the superblock's, or the
 * set header's) must open.  Everything goes through the set API, which
 * opens a plain image as a set of one part (ftl-set.h).  A fresh seed per
 * run, printed; OCTANT_SEED replays it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cut-test.h"
#include "ftl-int.h"
#include "ftl-set.h"
#include "test.h"

#define SIZE   (1u << 20)
#define IMAGES 3                /* per cut: two power cuts, a kill -9 */

struct kind {
	const char *name;
	struct ftl_create_opts o;
	unsigned nparts;        /* 1: an engine image */
	bool reused;            /* over an old image */
};

static uint64_t rs;
static char img[256];
static FILE *null;
static uint8_t *rbuf, *oldw;

static uint64_t image_size(const struct kind *k)
{
	return k->nparts > 1 ? ftl_set_image_size(&k->o, k->nparts, 65536) :
			       ftl_test_image_size(&k->o);
}

/* The create of @k on @b: on a fresh medium (zeroes), or a reused one. */
static int make(const struct kind *k, struct nand_backing *b, bool reused)
{
	if (k->nparts > 1)
		return reused ? ftl_test_set_create_reused(b, &k->o, k->nparts,
							   65536) :
				ftl_set_create_backing(b, &k->o, k->nparts,
						       65536);
	return reused ? ftl_test_create_reused(b, &k->o) :
			ftl_create_backing(b, &k->o);
}

/* The image at @img opens as an empty device that takes writes and keeps
 * them; fsck clean after its close. */
static void empty_and_usable(const char *what)
{
	struct ftl_set *s = NULL;
	uint8_t w[4096];
	int r = ftl_set_open(img, NULL, &s);

	if (r) {
		T_CHECK(0, "%s: open %d", what, r);
		return;
	}
	T_CHECK(ftl_set_size(s) == SIZE, "%s: size %llu", what,
		(unsigned long long)ftl_set_size(s));
	r = ftl_set_read(s, rbuf, 0, SIZE);
	for (uint32_t i = 0; !r && i < SIZE; i++)
		if (rbuf[i]) {
			T_CHECK(0, "%s: byte %u reads %#x, not zero", what, i,
				rbuf[i]);
			break;
		}
	T_CHECK(r == 0, "%s: read %d", what, r);
	t_fill_tag(w, sizeof(w), rs);
	T_CHECK(ftl_set_write(s, w, SIZE / 2 - 4096, sizeof(w), 0) == 0 &&
		ftl_set_flush(s) == 0, "%s: write and flush", what);
	T_CHECK(ftl_set_close(s) == 0, "%s: close", what);
	r = ftl_set_fsck(img, false, null, false);
	T_CHECK(r == 0, "%s: fsck after use %d", what, r);
	s = NULL;
	if (ftl_set_open(img, NULL, &s)) {
		T_CHECK(0, "%s: reopen", what);
		return;
	}
	r = ftl_set_read(s, rbuf, SIZE / 2 - 4096, sizeof(w));
	T_CHECK(r == 0 && !memcmp(rbuf, w, sizeof(w)), "%s: data after "
		"reopen (%d)", what, r);
	ftl_set_close(s);
}

/* An image of @k written all over and closed: what a create on a reused
 * medium (create --force on a device) replaces. */
static uint8_t *old_image(const struct kind *k, uint64_t isz)
{
	struct nand_backing *b;
	struct ftl_set *s = NULL;
	uint8_t *p = malloc(isz);
	uint64_t n;

	if (!p || nand_backing_mem(isz, false, &b)) {
		T_CHECK(0, "old image: memory");
		free(p);
		return NULL;
	}
	nand_mem_hold(b);
	T_CHECK(make(k, b, false) == 0 && ftl_set_open_backing(b, NULL, &s) == 0,
		"%s: old image: create, open", k->name);
	if (s) {
		T_CHECK(ftl_set_write(s, oldw, 0, SIZE, 0) == 0,
			"old image: write");
		T_CHECK(ftl_set_close(s) == 0, "old image: close");
	}
	memcpy(p, nand_mem_bytes(b, &n), isz);
	b->ops->destroy(b);
	return p;
}

/* Read-only (nothing written): 1 the image at @img opens and reads as the
 * old image whole, 0 it opens and reads otherwise, -errno the open's. */
static int opens_as_old(void)
{
	struct ftl_open_opts ro = { .readonly = true };
	struct ftl_set *s = NULL;
	int r = ftl_set_open(img, &ro, &s);

	if (r)
		return r;
	r = ftl_set_read(s, rbuf, 0, SIZE) == 0 && !memcmp(rbuf, oldw, SIZE);
	ftl_set_close(s);
	return r;
}

/* One crash image: 0 refused, 1 opened empty, 2 the old image whole. */
static int check_shot(const struct kind *k, uint64_t isz, const uint8_t *shot,
		      const char *what)
{
	struct nand_backing *b;
	int r, fk, how;

	t_store(img, shot, isz);
	fk = ftl_set_fsck(img, false, null, false);
	r = opens_as_old();
	if (r == 1 && k->reused) {
		/* a torn wipe of the superblock area may have zeroed one
		 * copy: fsck says so (exit 4), --repair rewrites it */
		if (fk == 4)
			T_CHECK(ftl_set_fsck(img, true, null, false) == 1 &&
				ftl_set_fsck(img, false, null, false) == 0 &&
				opens_as_old() == 1, "%s: the old image whole, "
				"repaired: not clean, or not the old one", what);
		else
			T_CHECK(fk == 0, "%s: the old image whole, fsck %d",
				what, fk);
		how = 2;
	} else if (r >= 0) {
		empty_and_usable(what);
		how = 1;
	} else {
		T_CHECK(r == -EBADMSG, "%s: open refused with %d, not "
			"-EBADMSG", what, r);
		T_CHECK(fk != 0, "%s: fsck calls clean an image the open "
			"refuses (%d)", what, r);
		how = 0;
	}
	/* create again over it (create --force: a file is truncated, a
	 * device's metadata zeroed; the same here) */
	if (nand_backing_mem(isz, false, &b) == 0) {
		nand_mem_load(b, shot);
		T_CHECK(make(k, b, true) == 0, "%s: create again", what);
		t_store(img, nand_mem_bytes(b, &(uint64_t){ 0 }), isz);
		b->ops->destroy(b);
		T_CHECK(ftl_set_fsck(img, false, null, false) == 0,
			"%s: fsck of the image created again", what);
		empty_and_usable(what);
	}
	return how;
}

struct run_ctx {
	const struct kind *k;
	uint64_t isz;
	int seen[3], last;
};

static int run_make(struct nand_backing *m, void *arg)
{
	const struct kind *k = ((struct run_ctx *)arg)->k;

	return make(k, m, k->reused);
}

static void run_check(void *arg, uint64_t n, int j, const uint8_t *image)
{
	struct run_ctx *c = arg;
	char what[160];

	snprintf(what, sizeof(what), "%s: cut at write %llu (image %d)",
		 c->k->name, (unsigned long long)n, j);
	c->last = check_shot(c->k, c->isz, image, what);
	c->seen[c->last]++;
}

static void run(const struct kind *k)
{
	struct run_ctx c = { .k = k, .isz = image_size(k), .last = -1 };
	uint8_t *old = k->reused ? old_image(k, c.isz) : NULL;
	int cuts, r = -1;

	cuts = cut_each_write(c.isz, old, rs, IMAGES, run_make, run_check, &c,
			      &r);
	T_CHECK(cuts < 0 || t_failures || r == 0, "%s: create with no cut: %d",
		k->name, r);
	fprintf(stderr, "%s: %d writes in a create, cut at each (%d images): "
		"%d refused, %d opened empty, %d the old image whole\n",
		k->name, cuts, cuts * IMAGES, c.seen[0], c.seen[1], c.seen[2]);
	/* the last write is the superblock's (or the header's): a kill
	 * after it keeps it */
	T_CHECK(cuts >= 3 && c.seen[0] > 0 && c.last == 1, "%s: cuts %d, "
		"refused %d, the kill after the last write: %d", k->name, cuts,
		c.seen[0], c.last);
	free(old);
}

/* Factory bad blocks of an image made with @o (-1: it could not be). */
static int64_t factory_bad(const struct ftl_create_opts *o)
{
	struct nand_backing *b;
	struct ftl *f = NULL;
	struct ftl_stats st;
	int64_t n = -1;

	if (nand_backing_mem(ftl_test_image_size(o), false, &b))
		return -1;
	if (!ftl_create_backing(b, o) && !ftl_open_backing(b, NULL, &f)) {
		ftl_stats_get(f, &st);
		n = (int64_t)st.bad_blocks_factory;
		ftl_close(f);           /* destroys @b */
	} else {
		b->ops->destroy(b);
	}
	return n;
}

int main(void)
{
	const struct ftl_create_opts odd = { .size = SIZE,
		.align = FTL_ALIGN_ODD, .pages_per_block = 8,
		.op_permille = 250 };
	const struct ftl_create_opts onem = { .size = SIZE,
		.align = FTL_ALIGN_1M };
	struct kind k[] = {
		{ "odd", odd, 1, false },
		{ "1m", onem, 1, false },
		{ "odd, factory bad blocks", odd, 1, false },
		{ "1m over an old image (a device)", onem, 1, true },
		{ "odd over an old image (a device)", odd, 1, true },
		{ "a set of 2 parts, odd", odd, 2, false },
		{ "a set of 2 parts over an old set (a device)", odd, 2, true },
	};
	struct ftl_create_opts *bad = &k[2].o;

	rs = t_seed() | 1;
	bad->bad_block_rate = 0.02;
	/* the first seed from rs that marks one at least */
	for (bad->bad_block_seed = rs; factory_bad(bad) < 1 &&
	     bad->bad_block_seed < rs + 100; bad->bad_block_seed++)
		;
	T_CHECK(factory_bad(bad) >= 1, "no factory bad block in 100 seeds");
	null = fopen("/dev/null", "w");
	rbuf = malloc(SIZE);
	oldw = malloc(SIZE);
	t_fill_tag(oldw, SIZE, rs ^ 0x01d);
	snprintf(img, sizeof(img), "%s/ftl-create-cut-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		run(&k[i]);
	unlink(img);
	free(rbuf);
	free(oldw);
	fclose(null);
	return t_result();
}
