/* SPDX-License-Identifier: MIT */
/*
 * A create cut short: a power cut (or a kill -9) at EVERY write of
 * ftl_create, for odd and 1m images, with and without factory bad blocks.
 * From each cut, three images (two power cuts, torn or not, and a kill's:
 * every write so far whole) must be either refused by the open
 * (-EBADMSG: no valid superblock, the create did not finish) with fsck
 * not calling them clean, or open as the empty device the create was
 * making: every sector zeroes, writes and a flush taken, fsck clean after
 * the close, the data there at the next open.  Never an image that opens
 * with anything but zeroes in it, or one fsck calls clean that the open
 * refuses.  A create run again over each (as create --force does) gives a
 * clean, empty image.  The last cut (the superblock's sync) must open.
 * A fresh seed per run, printed; OCTANT_SEED replays it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE   (1u << 20)
#define IMAGES 3                /* per cut: two power cuts, a kill -9 */

static uint64_t rs;
static char img[256];
static FILE *null;
static uint8_t *shots[IMAGES], *rbuf;

struct cut_ctx {
	struct nand_backing *m;
	uint64_t seed;
	bool fired;
};

static void fire(void *ctx)
{
	struct cut_ctx *c = ctx;

	for (int j = 0; j < IMAGES - 1; j++)
		nand_mem_crash_image(c->m, c->seed * 31 + (uint64_t)j, j != 0,
				     shots[j]);
	nand_mem_kill_image(c->m, shots[IMAGES - 1]);
	nand_mem_power_off(c->m);
	c->fired = true;
}

static void store(const uint8_t *p, uint64_t isz)
{
	int fd = open(img, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	T_CHECK(fd >= 0 && write(fd, p, isz) == (ssize_t)isz, "store");
	close(fd);
}

/* The image at @img opens as an empty device that takes writes and keeps
 * them; fsck clean after its close.  @what names the case. */
static bool empty_and_usable(const char *what)
{
	struct ftl *f = NULL;
	uint64_t size;
	uint8_t w[4096];
	int r = ftl_open(img, NULL, &f);

	if (r) {
		T_CHECK(0, "%s: open %d", what, r);
		return false;
	}
	size = ftl_size(f);
	T_CHECK(size == SIZE, "%s: size %llu", what, (unsigned long long)size);
	r = ftl_read(f, rbuf, 0, SIZE);
	for (uint32_t i = 0; !r && i < SIZE; i++)
		if (rbuf[i]) {
			T_CHECK(0, "%s: byte %u reads %#x, not zero", what, i,
				rbuf[i]);
			break;
		}
	T_CHECK(r == 0, "%s: read %d", what, r);
	t_fill_tag(w, sizeof(w), rs);
	T_CHECK(ftl_write(f, w, SIZE / 2, sizeof(w), 0) == 0 &&
		ftl_flush(f) == 0, "%s: write and flush", what);
	T_CHECK(ftl_close(f) == 0, "%s: close", what);
	r = ftl_fsck(img, false, null, false);
	T_CHECK(r == 0, "%s: fsck after use %d", what, r);
	f = NULL;
	if (ftl_open(img, NULL, &f)) {
		T_CHECK(0, "%s: reopen", what);
		return false;
	}
	r = ftl_read(f, rbuf, SIZE / 2, sizeof(w));
	T_CHECK(r == 0 && !memcmp(rbuf, w, sizeof(w)), "%s: data after "
		"reopen (%d)", what, r);
	ftl_close(f);
	return true;
}

/* One crash image of a create cut at write @k: refused or empty. */
static int check_shot(const struct ftl_create_opts *c, uint64_t isz,
		      const uint8_t *shot, const char *what)
{
	struct nand_backing *b;
	struct ftl *f = NULL;
	int r, fk, opened;

	store(shot, isz);
	fk = ftl_fsck(img, false, null, false);
	r = ftl_open(img, NULL, &f);
	if (!r) {
		ftl_abandon(f);         /* nothing written: as it was */
		store(shot, isz);
		T_CHECK(fk == 0 || fk == 4, "%s: fsck %d of an image that "
			"opens", what, fk);
		opened = empty_and_usable(what);
	} else {
		T_CHECK(r == -EBADMSG, "%s: open refused with %d, not "
			"-EBADMSG", what, r);
		T_CHECK(fk != 0, "%s: fsck calls clean an image the open "
			"refuses (%d)", what, r);
		opened = 0;
	}
	/* create again over it (create --force: a file is truncated, a
	 * device's metadata zeroed; the same here) */
	if (nand_backing_mem(isz, false, &b) == 0) {
		nand_mem_load(b, shot);
		T_CHECK(ftl_test_create_reused(b, c) == 0, "%s: create "
			"again", what);
		store(nand_mem_bytes(b, &(uint64_t){ 0 }), isz);
		b->ops->destroy(b);
		T_CHECK(ftl_fsck(img, false, null, false) == 0,
			"%s: fsck of the image created again", what);
		empty_and_usable(what);
	}
	return opened;
}

/* An image made with @c and written all over, closed: what a create on
 * a reused medium (create --force on a device) replaces. */
static uint8_t *old_image(const struct ftl_create_opts *c, uint64_t isz)
{
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint8_t *p = malloc(isz), *w = malloc(SIZE);
	uint64_t n;

	t_fill_tag(w, SIZE, rs ^ 0x01d);
	if (!p || !w || nand_backing_mem(isz, false, &b)) {
		T_CHECK(0, "old image: memory");
		free(w);
		free(p);
		return NULL;
	}
	nand_mem_hold(b);
	T_CHECK(ftl_create_backing(b, c) == 0 &&
		ftl_open_backing(b, NULL, &f) == 0, "old image: create, open");
	if (f) {
		T_CHECK(ftl_write(f, w, 0, SIZE, 0) == 0, "old image: write");
		T_CHECK(ftl_close(f) == 0, "old image: close");
	}
	memcpy(p, nand_mem_bytes(b, &n), isz);
	b->ops->destroy(b);
	free(w);
	return p;
}

/* Is the image at @img the old one, whole (every byte as old_image
 * wrote it)?  Opened read-only: nothing written. */
static bool is_old(void)
{
	struct ftl_open_opts ro = { .readonly = true };
	struct ftl *f = NULL;
	uint8_t *w = malloc(SIZE);
	bool old;

	if (!w || ftl_open(img, &ro, &f)) {
		free(w);
		return false;
	}
	t_fill_tag(w, SIZE, rs ^ 0x01d);
	old = ftl_read(f, rbuf, 0, SIZE) == 0 && !memcmp(rbuf, w, SIZE);
	ftl_close(f);
	free(w);
	return old;
}

static void run(const char *name, const struct ftl_create_opts *c,
		bool reused)
{
	uint64_t isz = ftl_test_image_size(c), k;
	uint8_t *old = reused ? old_image(c, isz) : NULL;
	int kept_old = 0;
	int cuts = 0, opened = 0, refused = 0;
	bool last_opened = false;
	char what[128];

	for (int j = 0; j < IMAGES; j++)
		shots[j] = malloc(isz);
	for (k = 1; t_failures < 5; k++) {
		struct cut_ctx cc = { .seed = rs + k };
		struct nand_backing *m;
		int r;

		if (nand_backing_mem(isz, true, &m)) {
			T_CHECK(0, "mem");
			break;
		}
		cc.m = m;
		if (old) {
			nand_mem_load(m, old);
			r = m->ops->sync(m);    /* the old image, durable */
		}
		nand_mem_set_trigger(m, k, fire, &cc);
		r = old ? ftl_test_create_reused(m, c) : ftl_create_backing(m, c);
		m->ops->destroy(m);
		if (!cc.fired) {
			T_CHECK(r == 0, "%s: create with no cut: %d", name, r);
			break;
		}
		cuts++;
		for (int j = 0; j < IMAGES; j++) {
			int o;

			snprintf(what, sizeof(what), "%s: cut at write %llu "
				 "(image %d)", name, (unsigned long long)k, j);
			if (old) {      /* the old image, untouched, is fine */
				store(shots[j], isz);
				if (is_old()) {
					kept_old++;
					continue;
				}
			}
			o = check_shot(c, isz, shots[j], what);
			opened += o;
			refused += !o;
			if (j == IMAGES - 1)
				last_opened = o;
		}
	}
	fprintf(stderr, "%s: %d writes in a create, cut at each (%d images): "
		"%d refused, %d opened empty, %d the old image whole\n", name,
		cuts, cuts * IMAGES, refused, opened, kept_old);
	free(old);
	/* the last write is the superblock's: a kill after it keeps it */
	T_CHECK(cuts >= 3 && refused > 0 && last_opened, "%s: cuts %d, "
		"refused %d, the kill after the last write opened %d", name,
		cuts, refused, last_opened);
	for (int j = 0; j < IMAGES; j++)
		free(shots[j]);
}

/* Factory bad blocks of an image made with @c (-1: it could not be). */
static int64_t factory_bad(const struct ftl_create_opts *c)
{
	struct nand_backing *b;
	struct ftl *f = NULL;
	struct ftl_stats st;
	int64_t n = -1;

	if (nand_backing_mem(ftl_test_image_size(c), false, &b))
		return -1;
	if (!ftl_create_backing(b, c) && !ftl_open_backing(b, NULL, &f)) {
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
	struct ftl_create_opts odd = { .size = SIZE, .align = FTL_ALIGN_ODD,
		.pages_per_block = 8, .op_permille = 250 };
	struct ftl_create_opts onem = { .size = SIZE, .align = FTL_ALIGN_1M };
	struct ftl_create_opts bad = odd;

	rs = t_seed() | 1;
	bad.bad_block_rate = 0.02;
	/* the first seed from rs that marks one at least */
	for (bad.bad_block_seed = rs; factory_bad(&bad) < 1 &&
	     bad.bad_block_seed < rs + 100; bad.bad_block_seed++)
		;
	T_CHECK(factory_bad(&bad) >= 1, "no factory bad block in 100 seeds");
	null = fopen("/dev/null", "w");
	rbuf = malloc(SIZE);
	snprintf(img, sizeof(img), "%s/ftl-create-cut-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	run("odd", &odd, false);
	run("1m", &onem, false);
	run("odd, factory bad blocks", &bad, false);
	run("1m over an old image (a device)", &onem, true);
	run("odd over an old image (a device)", &odd, true);
	unlink(img);
	free(rbuf);
	fclose(null);
	return t_result();
}
