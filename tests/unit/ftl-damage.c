/* SPDX-License-Identifier: MIT */
/*
 * Media damage after a crash: a random workload of whole-page writes and
 * flushes ending with a flush, a crash (nothing programmed after that
 * flush), then one bit of one mapped page flipped: in its data, or (a
 * third of the flips) in its OOB record.  Whatever the page -- older than
 * the last checkpoint (the checkpoint's map names it), or written since
 * (the flush summaries list it, ftl_fsum.c) -- its logical page must read
 * EIO (never an older version, never zeroes), fsck must report it (exit
 * 4) and --repair must leave a clean image; every other logical page
 * reads its newest value.  (Before flush summaries the workload had to
 * record its last flush with one more write, and damage to an OOB record
 * was found only when the records around it bracketed it.)  A fresh seed
 * per run (OCTANT_SEED replays); 150 trials, 1,500 with OCTANT_LONG=1
 * (at least 150, more while the long budget lasts: test.h).
 *
 * Every 10th trial also cuts --repair itself, at EVERY write it makes,
 * starting from the crashed, damaged image (and, one time in two, a
 * superblock copy damaged too): from each cut, three images (two power
 * cuts, torn or not, and a kill -9's: every write so far whole) must
 * take a second --repair (exit 0 or 1, never 4 or an error), then pass
 * fsck (exit 0) and read every logical page as written, the damaged one
 * as zeroes (repair unmapped it).  A repair cut short never makes things
 * worse than the damage it set out to fix.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): the newest
 * checkpoint's sequence number (f->ck) and the map (f->log) pick the page
 * to damage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cut-test.h"
#include "ftl-int.h"
#include "test.h"

#define SIZE  (1u << 20)
#define NLPN  (SIZE / 4096)

static uint64_t rs;
static char img[256], cutimg[264];
static FILE *null;
static int nfsck[2];                    /* fsck exit 4: data / OOB damage */
static int ncut[2];                     /* repairs cut at every write, writes */

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static void fill(uint8_t *p, uint32_t lpn, uint32_t id)
{
	for (uint32_t i = 0; i < 4096; i += 4) {
		uint32_t v = (lpn * 2654435761u) ^ (id * 40503u) ^ i;
		memcpy(p + i, &v, 4);
	}
}

/* The highest flush record in the OOB area of image @m. */
static uint64_t image_flushed(const uint8_t *m, const struct ftl_geom *g)
{
	uint64_t best = 0, pages = (uint64_t)g->nblocks * g->ppb;

	for (uint64_t p = 0; p < pages; p++) {
		const uint8_t *oob = m + ftl_oob_off(g, p);
		uint64_t fl;

		if (!ftl_oob_ok((const struct ftl_oob *)oob))
			continue;
		fl = ftl_oob_flushed(g, oob, p);
		if (fl > best)
			best = fl;
	}
	return best;
}


/* ---- --repair cut at every write --------------------------------------- */

#define CUT_IMAGES 3            /* per cut: two power cuts, a kill -9 */


/* Crash image @shot of a repair cut at write @k: a second repair takes
 * it, fsck passes, and every logical page reads as written (@victim, the
 * damaged one, as zeroes). */
static void cut_check(int n, uint64_t k, int j, const uint8_t *shot,
		      uint64_t isz, const uint32_t *cur, uint32_t victim)
{
	uint8_t w[4096], r[4096];
	struct ftl *f = NULL;
	int fd, rc;

	fd = open(cutimg, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	T_CHECK(fd >= 0 && write(fd, shot, isz) == (ssize_t)isz, "store cut");
	close(fd);
	rc = ftl_fsck(cutimg, true, null, false);
	T_CHECK(rc == 0 || rc == 1, "trial %d: --repair cut at its write %llu "
		"(image %d): the next --repair exits %d", n,
		(unsigned long long)k, j, rc);
	rc = ftl_fsck(cutimg, false, null, false);
	T_CHECK(rc == 0, "trial %d: --repair cut at its write %llu (image "
		"%d), repaired again: fsck %d", n, (unsigned long long)k, j, rc);
	if (ftl_open(cutimg, NULL, &f)) {
		T_CHECK(0, "trial %d: open after the cut at write %llu (image "
			"%d)", n, (unsigned long long)k, j);
		return;
	}
	for (uint32_t l = 0; l < NLPN; l++) {
		rc = ftl_read(f, r, (uint64_t)l * 4096, 4096);
		fill(w, l, cur[l]);
		if (!cur[l] || l == victim)
			memset(w, 0, sizeof(w));
		if (rc || memcmp(r, w, sizeof(w))) {
			T_CHECK(0, "trial %d: --repair cut at its write %llu "
				"(image %d): lpn %u%s reads %d%s", n,
				(unsigned long long)k, j, l,
				l == victim ? " (the damaged one)" : "", rc,
				rc ? "" : " / wrong data");
			break;
		}
	}
	T_CHECK(ftl_close(f) == 0, "close after the cut");
}

/* Cut --repair of damaged image @m at each of its writes in turn. */
static int repair_cuts(int n, const uint8_t *m, uint64_t isz,
		       const uint32_t *cur, uint32_t victim)
{
	struct cut_ctx cc = { .nshots = CUT_IMAGES };
	uint64_t k;

	for (int j = 0; j < CUT_IMAGES; j++)
		cc.shots[j] = malloc(isz);
	for (k = 1; t_failures < 5; k++) {
		struct nand_backing *b;
		int rc;

		if (nand_backing_mem(isz, true, &b)) {
			T_CHECK(0, "mem");
			break;
		}
		nand_mem_load(b, m);
		cc.m = b;
		cc.seed = rs + k;
		cc.fired = false;
		nand_mem_set_trigger(b, k, cut_fire, &cc);
		rc = ftl_fsck_backing(b, 0, isz, true, null, false);
		b->ops->destroy(b);
		if (!cc.fired) {
			T_CHECK(rc == 1, "trial %d: --repair with no cut: %d",
				n, rc);
			break;
		}
		for (int j = 0; j < CUT_IMAGES; j++)
			cut_check(n, k, j, cc.shots[j], isz, cur, victim);
	}
	for (int j = 0; j < CUT_IMAGES; j++)
		free(cc.shots[j]);
	return (int)k - 1;
}

static void trial(int n)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 8, .op_permille = 250 };
	static uint32_t cur[NLPN];
	uint64_t isz = ftl_test_image_size(&c), bsz, ckpt_seq, fl, seq;
	uint8_t w[4096], r[4096], *m = malloc(isz), oob[1024];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;
	struct ftl_geom g;
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint32_t id = 1, victim = 0, ppn;
	int fd, rc, ops = 20 + (int)(rnd() % 300);
	bool in_oob = rnd() % 3 == 0;

	memset(cur, 0, sizeof(cur));
	if (!m || nand_backing_mem(isz, false, &b) || ftl_create_backing(b, &c) ||
	    ftl_open_backing(b, NULL, &f)) {
		T_CHECK(0, "trial %d: setup", n);
		free(m);
		return;
	}
	g = f->g;
	for (int i = 0; i < ops; i++) {
		uint32_t l = (uint32_t)(rnd() % NLPN);

		fill(w, l, id);
		T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0, "write");
		cur[l] = id++;
		if (rnd() % 8 == 0)
			T_CHECK(ftl_flush(f) == 0, "flush");
	}
	T_CHECK(ftl_flush(f) == 0, "flush");  /* the last program: none after */
	/* the victim: a mapped page, newer than the checkpoint 3 times in 4 */
	ckpt_seq = f->ck.seq;
	for (int tries = 0; tries < 1000; tries++) {
		victim = 1 + (uint32_t)(rnd() % (NLPN - 1));
		ppn = f->log.map[victim];
		if (!cur[victim] || ppn >= FTL_DAMAGED ||
		    nand_read_oob(f->nand, ppn, oob))
			continue;
		if ((o->seq > ckpt_seq) == (rnd() % 4 != 0))
			break;
	}
	ppn = f->log.map[victim];
	T_CHECK(ppn < FTL_DAMAGED && nand_read_oob(f->nand, ppn, oob) == 0,
		"victim");
	seq = o->seq;
	memcpy(m, nand_mem_bytes(b, &bsz), isz);
	ftl_abandon(f);                 /* the crash */
	fl = image_flushed(m, &g);
	if (fl < ckpt_seq)
		fl = ckpt_seq;
	if (in_oob)
		m[ftl_oob_off(&g, ppn) + rnd() % 32] ^=
			(uint8_t)(1u << (rnd() % 8));
	else
		m[ftl_page_off(&g, ppn) + rnd() % g.ps] ^=
			(uint8_t)(1u << (rnd() % 8));
	fd = open(img, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	T_CHECK(fd >= 0 && write(fd, m, isz) == (ssize_t)isz, "store");
	close(fd);
	if (n % 10 == 0) {
		/* one time in two a superblock copy damaged as well */
		if (rnd() % 2)
			m[(rnd() % 2 ? OCT_SB_COPY_OFFSET : 0) +
			  rnd() % OCT_SB_SIZE] ^= (uint8_t)(1u << (rnd() % 8));
		ncut[0]++;
		ncut[1] += repair_cuts(n, m, isz, cur, victim);
	}
	free(m);

	rc = ftl_fsck(img, false, null, false);
	T_CHECK(rc == 4, "trial %d: page %u (lpn %u, seq %llu, checkpoint "
		"%llu, flushed %llu) damaged (%s): fsck %d", n, ppn, victim,
		(unsigned long long)seq, (unsigned long long)ckpt_seq,
		(unsigned long long)fl, in_oob ? "OOB" : "data", rc);
	nfsck[in_oob] += rc == 4;
	if (ftl_open(img, NULL, &f)) {
		T_CHECK(0, "trial %d: open", n);
		return;
	}
	for (uint32_t l = 0; l < NLPN; l++) {
		rc = ftl_read(f, r, (uint64_t)l * 4096, 4096);
		fill(w, l, cur[l]);
		if (!cur[l])
			memset(w, 0, sizeof(w));
		if (l == victim) {
			T_CHECK(rc == -EIO, "trial %d: damaged lpn %u (%s, seq "
				"%llu, checkpoint %llu, flushed %llu) reads %d%s",
				n, l, in_oob ? "OOB" : "data",
				(unsigned long long)seq,
				(unsigned long long)ckpt_seq,
				(unsigned long long)fl, rc, rc ? "" :
				memcmp(r, w, sizeof(w)) ? " (older data)" :
				" (its data)");
			continue;
		}
		if (rc || memcmp(r, w, sizeof(w))) {
			T_CHECK(0, "trial %d: lpn %u reads %d / wrong data", n,
				l, rc);
			break;
		}
	}
	T_CHECK(ftl_close(f) == 0, "close");
	rc = ftl_fsck(img, true, null, false);
	T_CHECK(rc == 1, "trial %d: repair %d", n, rc);
	rc = ftl_fsck(img, false, null, false);
	T_CHECK(rc == 0, "trial %d: after repair %d", n, rc);
}

int main(void)
{
	int n = t_long() ? 1500 : 150, i;

	rs = t_seed() | 1;
	null = fopen("/dev/null", "w");
	snprintf(img, sizeof(img), "%s/ftl-damage-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	snprintf(cutimg, sizeof(cutimg), "%s.cut", img);
	for (i = 0; i < n && t_long_more(i, 150) && t_failures < 5; i++)
		trial(i);
	t_long_covered("trials", i, n);
	fprintf(stderr, "%d trials; fsck reported %d data and %d OOB damages; "
		"%d repairs cut at each of their %d writes (%d images)\n",
		i, nfsck[0], nfsck[1], ncut[0], ncut[1], ncut[1] * CUT_IMAGES);
	T_CHECK(ncut[0] > 0 && ncut[1] >= 2 * ncut[0], "repair cuts: %d of %d "
		"writes", ncut[0], ncut[1]);
	unlink(img);
	unlink(cutimg);
	fclose(null);
	return t_result();
}
