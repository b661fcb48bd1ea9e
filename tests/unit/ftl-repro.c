/* SPDX-License-Identifier: MIT */
/*
 * Regression images (tests/data/repro, see its README): images left by
 * power-cut runs and image mutation that broke recovery, checkpoint
 * fallback and fsck.  Each is opened, written and checked as a user would:
 * writes must succeed, fsck must tell the truth, and no NAND rule may be
 * broken afterwards.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): the newest
 * checkpoint's slot (f->ck) and the map (f->log) to damage them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

static char img[256];
static FILE *out;

/* Unpack tests/data/repro/@name.img.gz into img; false (and a SKIP) if
 * gzip or the data are missing. */
static bool unpack(const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "tests/data/repro/%s.img.gz", name);
	t_unpack(rel, img);
	fprintf(stderr, "--- %s\n", name);
	return true;
}

static int fsck(bool repair)
{
	int r = ftl_fsck(img, repair, out, false);

	fflush(out);
	return r;
}

/* Write @n 4 KiB pages spread over the device, flush; all must succeed. */
static void write_some(struct ftl *f, int n, const char *what)
{
	uint8_t buf[4096];
	uint64_t size = ftl_size(f);

	for (int i = 0; i < n; i++) {
		uint64_t off = ((uint64_t)i * 7919 * 4096) % (size - 4096);
		int r;

		off &= ~4095ull;
		memset(buf, 0x40 + i, sizeof(buf));
		r = ftl_write(f, buf, off, sizeof(buf), 0);
		if (r) {
			T_CHECK(r == 0, "%s: write %d at %llu: %d", what, i,
				(unsigned long long)off, r);
			return;
		}
	}
	T_CHECK(ftl_flush(f) == 0, "%s: flush", what);
}

static void check_stats(struct ftl *f, const char *what)
{
	struct ftl_stats st;

	ftl_stats_get(f, &st);
	T_EQ_U64(st.nand_violations, 0, "%s: NAND rule violations", what);
	T_CHECK(st.free_blocks > 0, "%s: %llu free blocks", what,
		(unsigned long long)st.free_blocks);
}

/* Bug 1: roll-forward left 0 free blocks, every write -ENOSPC. */
static void enospc(void)
{
	struct ftl *f = NULL;

	unpack("powercut-enospc");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "open");
	if (!f)
		return;
	write_some(f, 64, "enospc");
	check_stats(f, "enospc after writes");
	T_CHECK(ftl_close(f) == 0, "close");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "reopen");
	if (f) {
		write_some(f, 64, "enospc after reopen");
		T_CHECK(ftl_close(f) == 0, "close");
	}
	T_EQ_U64(fsck(false), 0, "enospc: fsck after writes");
}

/* Bug 1 again (seed 2080798636, cut 2080804878401881, long mode, 1m): a
 * crash during GC; recovery kept the victims' pages and dropped their
 * copies, so the GC blocks, taken from the reserve, held only garbage and
 * GC had nowhere to copy to: 0 free blocks, ENOSPC. */
static void enospc_gc(void)
{
	for (int cb = 0; cb < 2; cb++) {
		struct ftl_open_opts o = { .gc = cb ? FTL_GC_COST_BENEFIT :
					   FTL_GC_GREEDY };
		struct ftl *f = NULL;

		unpack("powercut-enospc-gc");
		fprintf(stderr, "(%s GC)\n", cb ? "cost-benefit" : "greedy");
		T_CHECK(ftl_open(img, &o, &f) == 0, "open");
		if (!f)
			return;
		write_some(f, 64, "enospc-gc");
		check_stats(f, "enospc-gc after writes");
		T_CHECK(ftl_close(f) == 0, "close");
		T_EQ_U64(fsck(false), 0, "enospc-gc: fsck after writes");
	}
}

/* Bug 2: the stream's block reopened at page 7 but the NAND write pointer
 * left at 8: the first write is EIO and a violation is persisted. */
static void eio(void)
{
	struct ftl *f = NULL;

	unpack("powercut-eio");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "open");
	if (!f)
		return;
	write_some(f, 64, "eio");
	check_stats(f, "eio");
	T_CHECK(ftl_close(f) == 0, "close");
	T_EQ_U64(fsck(false), 0, "eio: fsck after writes");
}

/* Bug 3: the two newest checkpoints damaged: repair falls back to an
 * older one, and the engine then programs a block it did not erase. */
static void old_ckpt(void)
{
	struct ftl *f = NULL;
	int r;

	unpack("repair-old-checkpoint");
	T_EQ_U64(fsck(false), 4, "old checkpoint: fsck reports the damage");
	r = fsck(true);
	T_CHECK(r == 1 || r == 4, "old checkpoint: fsck --repair: %d", r);
	T_CHECK(ftl_open(img, NULL, &f) == 0, "open");
	if (!f)
		return;
	write_some(f, 1, "old checkpoint");
	check_stats(f, "old checkpoint");
	T_CHECK(ftl_close(f) == 0, "close");
	T_EQ_U64(fsck(false), 0, "old checkpoint: fsck after repair + a write");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "reopen");
	if (!f)
		return;
	write_some(f, 64, "old checkpoint");
	check_stats(f, "old checkpoint");
	T_CHECK(ftl_close(f) == 0, "close");
	T_EQ_U64(fsck(false), 0, "old checkpoint: fsck after more writes");
}

/*
 * Issue 28 item 8 (repro erase-count-overflow): one OOB record's erase
 * count forged to 0xffffffff, its crc recomputed.  3c48226 took it as the
 * block's count: stats died with SIGFPE (the histogram's span wrapped to
 * 0), writes failed with EOVERFLOW at that block's erase, fsck said clean.
 * The record does not check out now: fsck reports it, stats run, writes
 * over the whole device twice succeed, --repair ends clean.
 */
static void erase_count_overflow(void)
{
	struct ftl_stats st;
	struct ftl *f = NULL;
	int r;

	unpack("erase-count-overflow");
	T_EQ_U64(fsck(false), 4, "erase count: fsck reports the record");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "erase count: open");
	if (!f)
		return;
	ftl_stats_get(f, &st);
	T_CHECK(st.erase_max <= NAND_EC_MAX, "erase count: max %u", st.erase_max);
	write_some(f, 8192, "erase count");
	check_stats(f, "erase count");
	T_CHECK(ftl_close(f) == 0, "erase count: close");
	r = fsck(true);
	T_CHECK(r == 0 || r == 1, "erase count: fsck --repair: %d", r);
	T_EQ_U64(fsck(false), 0, "erase count: fsck after repair");
}

/*
 * Issue 28 item 2: an image 3c48226 turned read-only when the tmpfs under
 * it was full (repro backing-faults/enospc-readonly; 2 factory bad
 * blocks, the spares absorb 9).  The flag is kept (EROFS) until fsck
 * --repair, which reports it (exit 4) and clears it (exit 1); then the
 * image takes writes.
 */
static void enospc_readonly(void)
{
	static uint8_t buf[4096];
	struct ftl *f = NULL;

	unpack("enospc-readonly");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "enospc-readonly: open");
	if (!f)
		return;
	T_EQ_U64(ftl_write(f, buf, 0, sizeof(buf), 0), -EROFS,
		 "enospc-readonly: the flag is kept until repaired");
	T_CHECK(ftl_close(f) == 0, "enospc-readonly: close");
	T_EQ_U64(fsck(false), 4, "enospc-readonly: fsck reports the flag");
	T_EQ_U64(fsck(true), 1, "enospc-readonly: fsck --repair clears it");
	T_EQ_U64(fsck(false), 0, "enospc-readonly: fsck after repair");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "enospc-readonly: reopen");
	if (!f)
		return;
	write_some(f, 512, "enospc-readonly");
	check_stats(f, "enospc-readonly");
	T_CHECK(ftl_close(f) == 0, "enospc-readonly: close");
	T_EQ_U64(fsck(false), 0, "enospc-readonly: fsck after writes");
}

/*
 * Oracle images (tests/fuzz/found, image seeds 1017/3, 1028/3, 1013/4):
 * an older checkpoint slot damaged on a clean image (repair rewrote too
 * few slots: "1 damaged checkpoint" stayed, exit 4); one bit of an
 * unwritten page's OOB past the open block's write pointer (called a NAND
 * violation, and --repair could not fix it); two pages programmed at the
 * wrong address (repair said repaired, then 4 writes programmed a block
 * holding a stray page: NAND rule broken).  --repair must end clean, and
 * the repaired image must take writes and stay clean.
 */
static void oracle_repair(const char *name)
{
	struct ftl *f = NULL;
	int r;

	unpack(name);
	r = fsck(true);
	T_CHECK(r == 0 || r == 1, "%s: fsck --repair: %d", name, r);
	T_EQ_U64(fsck(false), 0, "%s: fsck after repair", name);
	T_CHECK(ftl_open(img, NULL, &f) == 0, "%s: open", name);
	if (!f)
		return;
	write_some(f, 16, name);
	check_stats(f, name);
	T_CHECK(ftl_close(f) == 0, "%s: close", name);
	T_EQ_U64(fsck(false), 0, "%s: fsck after repair and writes", name);
}

/*
 * Oracle images 1031/6 (one bit of the newest checkpoint header: open
 * rolls forward from the one before) and 1036/4 (a block erased): a map
 * entry of the older checkpoint pointed into a block erased and reused
 * since, and sector 63 served sector 127's data.  After the open, every
 * entry into a flash page must match that page's OOB record (or be
 * FTL_DAMAGED: reads fail with EIO), and reads never fail otherwise.
 */
static void stale_entry(const char *name)
{
	struct ftl_open_opts ro = { .readonly = true };
	uint8_t oob[1024], buf[4096];
	const struct ftl_oob *o = (const struct ftl_oob *)oob;
	struct ftl *f = NULL;
	uint32_t bad = 0, damaged = 0;

	unpack(name);
	T_CHECK(ftl_open(img, &ro, &f) == 0, "%s: open", name);
	if (!f)
		return;
	for (uint32_t l = 0; l < f->g.nlpn; l++) {
		uint32_t p = f->log.map[l];

		if (p == FTL_DAMAGED)
			damaged++;
		if (p >= FTL_DAMAGED)
			continue;
		if (nand_read_oob(f->nand, p, oob) || !ftl_oob_ok(o) ||
		    o->kind != FTL_OOB_DATA || o->lpn != l) {
			fprintf(stderr, "%s: logical page %u -> flash page %u: "
				"not its record\n", name, l, p);
			bad++;
		}
	}
	T_EQ_U64(bad, 0, "%s: map entries into pages of other records", name);
	T_CHECK(damaged > 0, "%s: the lost pages are FTL_DAMAGED", name);
	for (uint64_t off = 0; off + 4096 <= ftl_size(f); off += 4096) {
		int r = ftl_read(f, buf, off, 4096);

		T_CHECK(r == 0 || r == -EIO, "%s: read at %llu: %d", name,
			(unsigned long long)off, r);
	}
	ftl_close(f);
}

static void fill(uint8_t *p, uint32_t lpn, int version)
{
	for (int i = 0; i < 4096; i++)
		p[i] = (uint8_t)(lpn * 31 + (uint32_t)version * 7 + (uint32_t)i);
}

static int read_lpn(struct ftl *f, uint32_t lpn, uint8_t *buf)
{
	return ftl_read(f, buf, (uint64_t)lpn * 4096, 4096);
}

/*
 * Bug 4: a page written and flushed after the last checkpoint, then
 * damaged (one byte), was taken for a torn write: roll-forward served the
 * older version and fsck said clean.  Built here (the image in the shared
 * repro folder predates the flush records): version 1 of logical pages
 * 0..7, flush, version 2, flush, more writes, flush, crash; one byte of
 * version 2 of page 3 changed.
 */
static void flushed_damage(void)
{
	struct ftl_create_opts c = { .size = 1u << 20, .align = FTL_ALIGN_1M,
		.pages_per_block = 8, .op_permille = 250 };
	uint64_t isz = ftl_test_image_size(&c), bsz;
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint8_t w[4096], r[4096], *bytes, *copy = malloc(isz);
	uint64_t ckpt0, ppn;
	int fd, rc;

	fprintf(stderr, "--- flushed page damaged after the checkpoint\n");
	T_CHECK(isz && copy && nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "open");
	if (!f)
		return;
	ckpt0 = f->ck.gen;
	for (int v = 1; v <= 2; v++) {
		for (uint32_t l = 0; l < 8; l++) {
			fill(w, l, v);
			T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0,
				"write");
		}
		T_CHECK(ftl_flush(f) == 0, "flush");
	}
	for (uint32_t l = 100; l < 104; l++) {   /* they record the flush */
		fill(w, l, 1);
		T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0, "write");
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
	T_EQ_U64(f->ck.gen, ckpt0, "no checkpoint since the writes");
	ppn = ftl_page_off(&f->g, f->log.map[3]);   /* its byte offset */
	bytes = nand_mem_bytes(b, &bsz);
	memcpy(copy, bytes, isz);
	ftl_abandon(f);                 /* the crash */
	copy[ppn + 3343] ^= 0x20;
	fd = open(img, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	T_CHECK(fd >= 0 && write(fd, copy, isz) == (ssize_t)isz, "store");
	close(fd);
	free(copy);

	T_EQ_U64(fsck(false), 4, "damaged flushed page: fsck reports it");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "open");
	if (!f)
		return;
	rc = read_lpn(f, 3, r);
	T_CHECK(rc == -EIO, "damaged flushed page reads %d (%s), want EIO", rc,
		rc ? "error" : r[0] == (uint8_t)(3 * 31 + 7) ? "the older version"
		: "data");
	for (uint32_t l = 0; l < 8; l++) {
		if (l == 3)
			continue;
		fill(w, l, 2);
		T_CHECK(read_lpn(f, l, r) == 0 && !memcmp(r, w, 4096),
			"page %u reads its flushed version", l);
	}
	T_CHECK(ftl_close(f) == 0, "close");
	T_EQ_U64(fsck(false), 4, "still reported after a mount");
	rc = fsck(true);
	T_EQ_U64(rc, 1, "fsck --repair");
	T_EQ_U64(fsck(false), 0, "clean after repair");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "open after repair");
	if (!f)
		return;
	memset(w, 0, sizeof(w));
	T_CHECK(read_lpn(f, 3, r) == 0 && !memcmp(r, w, 4096),
		"repaired page reads zeroes, never the older version");
	fill(w, 3, 3);
	T_CHECK(ftl_write(f, w, 3 * 4096, 4096, 0) == 0 &&
		read_lpn(f, 3, r) == 0 && !memcmp(r, w, 4096), "rewritten");
	T_CHECK(ftl_close(f) == 0, "close");
}

/* Store the bytes of mem backing @b (engine @f, abandoned: a crash) in img,
 * with byte @at flipped (none if @at is 0). */
static void crash_to_file(struct ftl *f, struct nand_backing *b, uint64_t isz,
			  uint64_t at)
{
	uint64_t bsz;
	uint8_t *copy = malloc(isz), *bytes = nand_mem_bytes(b, &bsz);
	int fd;

	memcpy(copy, bytes, isz);
	ftl_abandon(f);
	if (at)
		copy[at] ^= 0x20;
	fd = open(img, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	T_CHECK(fd >= 0 && write(fd, copy, isz) == (ssize_t)isz, "store");
	close(fd);
	free(copy);
}

/*
 * Bug 5: after an unclean shutdown fsck excused every damaged checkpoint
 * slot (as if the crash had torn it) and reported an older damaged slot
 * only after the next mount.  Only the slot the next checkpoint was being
 * written to may be torn by a crash.
 */
static void old_slot_damaged(void)
{
	struct ftl_create_opts c = { .size = 1u << 20, .align = FTL_ALIGN_ODD,
		.pages_per_block = 8, .op_permille = 250 };
	uint64_t isz = ftl_test_image_size(&c), gen, slot_page;
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint8_t w[4096];

	fprintf(stderr, "--- older checkpoint slot damaged, unclean shutdown\n");
	memset(w, 0x33, sizeof(w));
	T_CHECK(nand_backing_mem(isz, false, &b) == 0, "mem");
	T_CHECK(ftl_create_backing(b, &c) == 0, "create");
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0, "open");
	if (!f)
		return;
	/* crash twice: the newest checkpoint is not a clean one */
	for (int i = 0; i < 3; i++) {
		T_CHECK(ftl_write(f, w, 0, sizeof(w), 0) == 0 &&
			ftl_flush(f) == 0, "write");
		ftl_lock(&f->lock);
		T_CHECK(ftl_ckpt_write(f, false) == 0, "checkpoint");
		ftl_unlock(&f->lock);
	}
	gen = f->ck.gen;
	/* the slot of gen - 2: neither the newest nor the one a crash cuts */
	slot_page = ftl_ckpt_slot_page(f, gen - 2, 0);
	crash_to_file(f, b, isz, ftl_page_off(&f->g, slot_page) + 100);
	T_EQ_U64(fsck(false), 4, "damaged older slot after a crash: reported");
	T_EQ_U64(fsck(true), 1, "repaired");
	T_EQ_U64(fsck(false), 0, "clean after repair");
}

int main(void)
{
	snprintf(img, sizeof(img), "%s/ftl-repro-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	out = stderr;
	enospc();
	enospc_gc();
	eio();
	old_ckpt();
	oracle_repair("oracle-old-slot");
	oracle_repair("oracle-stray-past-wp");
	oracle_repair("oracle-misdirected-repair");
	oracle_repair("oracle-1000-1");
	stale_entry("oracle-stale-entry");
	stale_entry("oracle-stale-entry-lost-block");
	oracle_repair("oracle-1115-6");
	flushed_damage();
	old_slot_damaged();
	erase_count_overflow();
	enospc_readonly();
	unlink(img);
	return t_result();
}
