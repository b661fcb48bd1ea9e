/* SPDX-License-Identifier: MIT */
/*
 * Erase stamps in the engine (OCT_SB_F_OOB_STAMP): new images carry the
 * flag, images without it still open and erase by zeroing.  On a full
 * device under overwrites (GC erasing blocks full of valid records): the
 * old records stay on the backing (no zeroing), yet the block reads as
 * erased; a roll-forward, a full --scan rebuild and fsck find every page's
 * newest data and no stale page.  Power cuts inside operations (the
 * memory backing's crash model, cut by a write trigger) over erase and
 * reprogram cycles: every logical page reads its newest flushed version or
 * a newer one, never an older one.  A fresh seed per run (printed; replay
 * with OCTANT_SEED); OCTANT_LONG=1: up to 10x more cuts, within the long
 * budget (test.h).
 *
 * Inspects engine internals (struct ftl, ftl-int.h): block states (f->idx)
 * find free blocks to plant stamps in; superblock flags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"
#include "ftl-tagged.h"

#define SIZE (2u << 20)         /* 512 logical pages */
#define NLPN (SIZE / 4096)
#define PPB  8u

static uint64_t rs;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

/* Does page @l read @tag (0: zeroes)? */
static bool reads(struct ftl *f, uint64_t l, uint64_t *got)
{
	static uint8_t buf[4096], want[4096];
	uint64_t lpn, tag;

	*got = UINT64_MAX;
	if (ftl_read(f, buf, l * 4096, 4096))
		return false;
	memset(want, 0, sizeof(want));
	if (!memcmp(buf, want, sizeof(buf))) {
		*got = 0;
		return true;
	}
	memcpy(&lpn, buf, 8);
	memcpy(&tag, buf + 8, 8);
	tt_stamp(want, lpn, tag);
	*got = tag;
	return lpn == l && !memcmp(buf, want, sizeof(buf));
}

/* Old records of blocks that were erased and not programmed since: still
 * on the backing (no zeroing), but no OOB read shows them. */
static int stale_but_hidden(struct ftl *f, struct nand_backing *b)
{
	struct nand *n = ftl_test_nand(f);
	uint8_t *img = nand_mem_bytes(b, NULL), boob[PPB * 64];
	int found = 0;

	for (uint32_t blk = f->g.ckpt_blocks; blk < f->g.nblocks; blk++) {
		bool raw = false;

		if (f->idx.state[blk] != FTL_BLK_FREE || !nand_block_ec(n, blk))
			continue;
		for (uint32_t pg = 1; pg < PPB && !raw; pg++)
			raw = ftl_oob_ok((const struct ftl_oob *)(img +
				ftl_oob_off(&f->g, (uint64_t)blk * PPB + pg)));
		if (!raw)
			continue;
		found++;
		T_CHECK(nand_read_block_oob(n, blk, boob) == 0, "block oob");
		for (size_t i = 0; i < sizeof(boob); i++)
			if (boob[i]) {
				T_CHECK(0, "erased block %u shows a stale "
					"record (page %zu)", blk, i / 64);
				break;
			}
	}
	return found;
}

static int fsck_mem(struct nand_backing *b, uint64_t isz, char *out,
		    size_t outlen)
{
	char path[] = "/tmp/ftl-stamp-XXXXXX";
	int fd = mkstemp(path), r = -1;
	FILE *o;

	if (fd < 0)
		return -1;
	if (write(fd, nand_mem_bytes(b, NULL), isz) == (ssize_t)isz) {
		o = fmemopen(out, outlen, "w");
		r = ftl_fsck(path, false, o, false);
		fclose(o);
	}
	close(fd);
	unlink(path);
	return r;
}

/* Overwrite a full device until GC erased blocks full of valid records;
 * reopen (roll-forward, scan) and fsck see only the newest data. */
static void gc_erases(void)
{
	struct nand_backing *b;
	struct ftl *f = tt_create(&b, SIZE, PPB, false), *g;
	struct ftl_open_opts scan = { .scan = true };
	struct nand_counters c0, c1;
	uint64_t isz = f->g.image_size, got, tag = 1;
	static char out[65536];
	int r, found;

	T_CHECK(f->sb.flags & OCT_SB_F_OOB_STAMP, "new image without stamps");
	tt_write_range(f, 0, NLPN, tag++);
	nand_counters_get(ftl_test_nand(f), &c0);
	for (int i = 0; i < 4 * (int)NLPN; i++) {
		uint64_t l = rnd() % NLPN, n = 1 + rnd() % 4;

		tt_write_range(f, l, l + n > NLPN ? NLPN - l : n, tag++);
	}
	nand_counters_get(ftl_test_nand(f), &c1);
	T_CHECK(c1.erases - c0.erases > 50, "only %llu erases",
		(unsigned long long)(c1.erases - c0.erases));
	found = stale_but_hidden(f, b);
	T_CHECK(found > 0, "no erased block still holds its old records on "
		"the backing (the erase zeroed them?)");
	fprintf(stderr, "%d free blocks hold hidden old records; %llu erases\n",
		found, (unsigned long long)(c1.erases - c0.erases));
	ftl_abandon(f);                 /* a crash after the last flush */
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &g) == 0, "reopen");
	for (uint64_t l = 0; g && l < NLPN; l++)
		if (!reads(g, l, &got) || got != tt_tags[l]) {
			T_CHECK(0, "roll-forward: page %llu", (unsigned long long)l);
			break;
		}
	if (g)
		ftl_abandon(g);
	nand_mem_hold(b);
	g = NULL;
	T_CHECK(ftl_open_backing(b, &scan, &g) == 0, "scan");
	for (uint64_t l = 0; g && l < NLPN; l++)
		if (!reads(g, l, &got) || got != tt_tags[l]) {
			T_CHECK(0, "scan: page %llu reads tag %llu, want %llu",
				(unsigned long long)l, (unsigned long long)got,
				(unsigned long long)tt_tags[l]);
			break;
		}
	if (g)
		T_CHECK(ftl_close(g) == 0, "close");
	r = fsck_mem(b, isz, out, sizeof(out));
	T_CHECK(r == 0 && !strstr(out, "stale"), "fsck %d: %s", r, out);
	b->ops->destroy(b);
}

/* An image without the flag (made before it) opens, and erases zero. */
static void unstamped_image(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = PPB };
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint64_t got;

	T_CHECK(nand_backing_mem(ftl_test_image_size(&c), false, &b) == 0 &&
		ftl_test_create_backing_nostamp(b, &c) == 0, "create");
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "open");
	if (!f)
		return;
	T_CHECK(!(f->sb.flags & OCT_SB_F_OOB_STAMP) && !f->g.oob_stamp,
		"flag on an unstamped image");
	memset(tt_tags, 0, sizeof(tt_tags));
	tt_write_range(f, 0, NLPN, 1);
	for (int i = 0; i < 2 * (int)NLPN; i++)
		tt_write_range(f, rnd() % NLPN, 1, 2 + (uint64_t)i);
	T_CHECK(stale_but_hidden(f, b) == 0, "an unstamped erase left records");
	T_CHECK(ftl_close(f) == 0, "close");
	f = NULL;
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "reopen");
	for (uint64_t l = 0; f && l < NLPN; l++)
		if (!reads(f, l, &got) || got != tt_tags[l]) {
			T_CHECK(0, "unstamped: page %llu", (unsigned long long)l);
			break;
		}
	if (f)
		ftl_close(f);
	b->ops->destroy(b);
}

/* ---- power cuts inside operations ------------------------------------ */

static uint64_t flushed[NLPN], last[NLPN], cut_flushed[NLPN], cut_last[NLPN];
static uint8_t *cut_img;
static struct nand_backing *cut_b;
static bool cut_done;
static uint64_t cut_seed, erases_at_sync, cut_erases_pending;
static struct ftl *cut_f;

static void on_cut(void *ctx)
{
	struct nand_counters c;

	(void)ctx;
	nand_mem_crash_image(cut_b, cut_seed, true, cut_img);
	memcpy(cut_flushed, flushed, sizeof(flushed));
	memcpy(cut_last, last, sizeof(last));
	nand_counters_get(ftl_test_nand(cut_f), &c);
	cut_erases_pending = c.erases - erases_at_sync;
	cut_done = true;
}

/* Open the image of the cut, check every page against the oracle; then
 * the recovered engine takes writes (into blocks the cut left, stamped
 * with what it learned from the medium), and a crash after their flush
 * keeps them all. */
static void check_cut(uint64_t isz, unsigned seed, int k)
{
	static uint64_t now[NLPN];
	static uint8_t buf[4096];
	struct nand_backing *m;
	struct ftl *g = NULL;
	uint64_t got, tag = UINT64_MAX / 2 + (uint64_t)k * 64;
	int r;

	if (nand_backing_mem(isz, false, &m))
		return;
	nand_mem_load(m, cut_img);
	r = ftl_open_backing(m, NULL, &g);
	T_CHECK(r == 0, "seed %u cut %d: open %d", seed, k, r);
	if (!g) {
		m->ops->destroy(m);
		return;
	}
	for (uint64_t l = 0; l < NLPN; l++) {
		bool ok = reads(g, l, &got);

		if (ok && got < cut_flushed[l])
			ok = false;
		if (ok && got > cut_last[l])
			ok = false;
		if (!ok) {
			T_CHECK(0, "seed %u cut %d: page %llu reads tag %llu, "
				"flushed %llu, newest %llu", seed, k,
				(unsigned long long)l, (unsigned long long)got,
				(unsigned long long)cut_flushed[l],
				(unsigned long long)cut_last[l]);
			break;
		}
		now[l] = got;
	}
	for (int i = 0; i < 48 && !t_failures; i++) {
		uint64_t l = rnd() % NLPN;

		tt_stamp(buf, l, ++tag);
		T_CHECK(ftl_write(g, buf, l * 4096, 4096, 0) == 0, "write after");
		now[l] = tag;
	}
	T_CHECK(ftl_flush(g) == 0, "flush after");
	nand_mem_hold(m);
	ftl_abandon(g);
	g = NULL;
	r = ftl_open_backing(m, NULL, &g);
	T_CHECK(r == 0, "seed %u cut %d: reopen %d", seed, k, r);
	for (uint64_t l = 0; g && !t_failures && l < NLPN; l++)
		if (!reads(g, l, &got) || got != now[l])
			T_CHECK(0, "seed %u cut %d: after writes and a crash, "
				"page %llu reads tag %llu, flushed %llu", seed, k,
				(unsigned long long)l, (unsigned long long)got,
				(unsigned long long)now[l]);
	if (g)
		ftl_abandon(g);
	else
		m->ops->destroy(m);
}

static void powercuts(unsigned seed, int cuts)
{
	struct nand_backing *b;
	struct ftl *f = tt_create(&b, SIZE, PPB, true);
	uint64_t isz = f->g.image_size, tag = 1;
	static uint8_t buf[4096];
	int with_erase = 0, k;

	cut_img = malloc(isz);
	cut_b = b;
	cut_f = f;
	/* fill: every block holds valid records before the cuts start */
	for (uint64_t l = 0; l < NLPN; l++) {
		tt_stamp(buf, l, tag);
		T_CHECK(ftl_write(f, buf, l * 4096, 4096, 0) == 0, "fill");
		last[l] = tag++;
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
	memcpy(flushed, last, sizeof(last));
	for (k = 0; k < cuts && t_long_more(k, 2000) && !t_failures; k++) {
		struct nand_counters c;

		cut_done = false;
		cut_seed = rnd();
		nand_mem_set_trigger(b, 1 + rnd() % 64, on_cut, NULL);
		while (!cut_done) {
			uint64_t l = rnd() % NLPN, op = rnd() % 16;

			if (op == 0) {
				T_CHECK(ftl_flush(f) == 0, "flush");
				memcpy(flushed, last, sizeof(last));
				nand_counters_get(ftl_test_nand(f), &c);
				erases_at_sync = c.erases;
				continue;
			}
			last[l] = tag;
			tt_stamp(buf, l, tag++);
			T_CHECK(ftl_write(f, buf, l * 4096, 4096,
					  op == 1 ? FTL_FUA : 0) == 0, "write");
			if (op == 1)
				flushed[l] = last[l];
		}
		with_erase += cut_erases_pending > 0;
		check_cut(isz, seed, k);
	}
	nand_mem_set_trigger(b, 0, NULL, NULL);
	t_long_covered("cuts", k, cuts);
	fprintf(stderr, "%d cuts, %d with an erase since the last sync\n",
		k, with_erase);
	T_CHECK(with_erase > 0, "no cut after an erase: %d", with_erase);
	ftl_abandon(f);
	nand_mem_power_off(b);
	b->ops->destroy(b);
	free(cut_img);
}

int main(void)
{
	unsigned seed = t_seed();

	rs = (uint64_t)seed * 2654435761u | 1;
	gc_erases();
	unstamped_image();
	powercuts(seed, t_long() ? 20000 : 2000);
	return t_result();
}
