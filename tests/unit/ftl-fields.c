/* SPDX-License-Identifier: MIT */
/*
 * Fields read from the medium are checked against their range where they
 * are read (issue 28, item 8).  Each case forges one field of an image
 * file with every checksum recomputed, as /work/shared/repro/
 * erase-count-overflow did (an OOB erase count of 0xffffffff: stats died
 * with SIGFPE, writes failed EOVERFLOW, fsck said clean), and asks that
 * the record does not check out: fsck reports it (exit 4), the engine
 * never takes the value, stats and writes go on, --repair ends clean.
 *  - set_ec: an OOB record's erase count past NAND_EC_MAX;
 *  - set_stream: an OOB data record's stream (only 0 and 1 write data);
 *  - trim_range: a trim record's range past the device (data crc fixed);
 *  - stamp_gen: erase stamps with generation 0xffffffff in every free
 *    block (the next erase of such a block overflowed);
 *  - ckpt_ec: a checkpoint block-table erase count past NAND_EC_MAX in
 *    both checkpoints (payload, page and header crcs fixed): no valid
 *    checkpoint;
 *  - wear_out: a block whose erase count reaches NAND_EC_MAX (set
 *    through the test seam) is retired at its next erase, not an error.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): forges block states
 * and marks them for the checkpoint (ftl_ckpt_blk_dirty).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"
#include "test.h"

static char img[64];
static struct ftl_create_opts c = { .size = 1 << 20, .align = FTL_ALIGN_ODD,
	.pages_per_block = 16 };
static struct ftl_geom g;
static FILE *null;

static uint8_t *load(size_t *n)
{
	int fd = open(img, O_RDONLY);
	off_t sz = lseek(fd, 0, SEEK_END);
	uint8_t *b = malloc((size_t)sz + 1);

	*n = pread(fd, b, (size_t)sz, 0) == sz ? (size_t)sz : 0;
	close(fd);
	return b;
}

static void store(uint8_t *b, size_t n)
{
	int fd = open(img, O_WRONLY);

	T_CHECK(pwrite(fd, b, n, 0) == (ssize_t)n, "store");
	close(fd);
	free(b);
}

/* Recompute the crc of the OOB record at @o, and of the flush record
 * after it (its crc is seeded with the record's). */
static void reseal(uint8_t *oob)
{
	struct ftl_oob *o = (struct ftl_oob *)oob;
	struct ftl_oob_flush *x = (struct ftl_oob_flush *)(oob + sizeof(*o));

	o->crc = 0;
	o->crc = oct_crc32c(0, o, sizeof(*o));
	if (x->magic == FTL_OOB_FLUSH_MAGIC) {
		x->crc = 0;
		x->crc = oct_crc32c(o->crc, x, sizeof(*x));
	}
}

static struct ftl_oob *oob_at(uint8_t *b, uint64_t ppn)
{
	return (struct ftl_oob *)(b + ftl_oob_off(&g, ppn));
}

/* A fresh image, @n 4 KiB writes over 20 logical pages (then a flush,
 * 5 more writes, a flush, one more write: every page before the last one
 * is below a recorded flush), then a crash (no checkpoint since the
 * open: the next open rolls forward over all of it).  With @trim a
 * discard of page 3 comes after the first writes. */
static void make(int n, bool trim)
{
	struct ftl *f;
	uint8_t buf[4096];

	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "create");
	T_CHECK(ftl_open(img, NULL, &f) == 0, "open");
	for (int i = 0; i < n + 6; i++) {
		memset(buf, i + 1, sizeof(buf));
		T_CHECK(ftl_write(f, buf, (uint64_t)(i % 20) * 4096 + 3584,
				  4096, 0) == 0, "write %d", i);
		if (i == 10 && trim)
			T_CHECK(ftl_discard(f, 3 * 4096 + 3584, 4096) == 0,
				"discard");
		if (i == n - 1 || i == n + 4)
			T_CHECK(ftl_flush(f) == 0, "flush");
	}
	ftl_abandon(f);
}

/* Is data page @p the newest of its logical page (the one the map holds:
 * a stale copy's damage is no loss, and revision 3's summaries know it)? */
static bool newest(uint8_t *b, uint64_t p)
{
	const struct ftl_oob *o = oob_at(b, p);

	if (o->kind != FTL_OOB_DATA)
		return true;
	for (uint64_t q = (uint64_t)g.ckpt_blocks * g.ppb;
	     q < (uint64_t)g.nblocks * g.ppb; q++)
		if (q != p && ftl_oob_ok(oob_at(b, q)) &&
		    oob_at(b, q)->kind == FTL_OOB_DATA &&
		    oob_at(b, q)->lpn == o->lpn && oob_at(b, q)->seq > o->seq)
			return false;
	return true;
}

/* The data (or trim) record in the middle of the first data block that
 * has one on each side: a page before the last recorded flush (for data,
 * the newest copy of its logical page). */
static uint64_t middle_page(uint8_t *b, uint8_t kind)
{
	for (uint64_t p = (uint64_t)g.ckpt_blocks * g.ppb + 1;
	     p + 1 < (uint64_t)g.nblocks * g.ppb; p++)
		if (p % g.ppb && (p + 1) % g.ppb && ftl_oob_ok(oob_at(b, p)) &&
		    oob_at(b, p)->kind == kind &&
		    ftl_oob_ok(oob_at(b, p - 1)) && ftl_oob_ok(oob_at(b, p + 1)) &&
		    newest(b, p))
			return p;
	T_CHECK(0, "no page of kind %u to forge", kind);
	return 0;
}

static int fsck(bool repair)
{
	return ftl_fsck(img, repair, null, false);
}

/* After the forge: fsck reports it; the engine opens, stats run and stay
 * in range, 400 whole-page writes over the device (GC through every
 * block, a damaged page rewritten whole) succeed;
 * --repair then ends clean and the image opens again. */
static void after(const char *what, bool reported)
{
	struct ftl_stats st;
	struct ftl *f = NULL;
	uint8_t buf[4096];
	int r;

	r = fsck(false);
	T_CHECK(r == (reported ? 4 : 0), "%s: fsck %d", what, r);
	r = ftl_open(img, NULL, &f);
	T_CHECK(r == 0, "%s: open %d", what, r);
	if (r)
		return;
	ftl_stats_get(f, &st);
	T_CHECK(st.erase_max <= NAND_EC_MAX, "%s: erase_max %u", what,
		st.erase_max);
	for (int i = 0; i < 400 && !r; i++) {
		memset(buf, 0x80 + i % 64, sizeof(buf));
		/* whole flash pages (odd: 3584 past a 4 KiB multiple): a
		 * partial write over a page reported damaged fails EIO */
		r = ftl_write(f, buf, (uint64_t)(i % 200) * 4096 + 3584, 4096,
			      0);
		T_CHECK(r == 0, "%s: write %d: %d", what, i, r);
	}
	ftl_stats_get(f, &st);
	T_CHECK(st.erase_max <= NAND_EC_MAX && st.block_erases > 0,
		"%s: erase_max %u, %llu erases", what, st.erase_max,
		(unsigned long long)st.block_erases);
	T_CHECK(ftl_close(f) == 0, "%s: close", what);
	r = fsck(true);
	T_CHECK(r == 0 || r == 1, "%s: fsck --repair %d", what, r);
	r = fsck(false);
	T_CHECK(r == 0, "%s: fsck after repair %d", what, r);
	r = ftl_open(img, NULL, &f);
	T_CHECK(r == 0, "%s: reopen %d", what, r);
	if (!r)
		ftl_close(f);
}

/* One field of a data record below the last flush set by @set (then
 * resealed): reported, never taken. */
static void forge_oob(const char *what, void (*set)(struct ftl_oob *o))
{
	size_t n;
	uint8_t *b;
	uint64_t p;

	make(40, false);
	b = load(&n);
	p = middle_page(b, FTL_OOB_DATA);
	set(oob_at(b, p));
	reseal((uint8_t *)oob_at(b, p));
	store(b, n);
	after(what, true);
}

static void set_ec(struct ftl_oob *o) { o->ec = 0xffffffffu; }
static void set_stream(struct ftl_oob *o) { o->stream = 9; }

static void trim_range(void)
{
	size_t n;
	uint8_t *b;
	uint64_t p;
	struct ftl_trim *t;

	make(40, true);
	b = load(&n);
	p = middle_page(b, FTL_OOB_TRIM);
	t = (struct ftl_trim *)(b + ftl_page_off(&g, p));
	T_CHECK(t->magic == FTL_TRIM_MAGIC && t->n == 1, "a trim record");
	t->r[0].lpn = g.nlpn + 5;
	oob_at(b, p)->data_crc = oct_crc32c(0, t, g.ps);
	reseal((uint8_t *)oob_at(b, p));
	store(b, n);
	after("trim range past the device", true);
}

/* An erase stamp of generation @gen in page 0's OOB of block @blk. */
static void erase_stamp(uint8_t *b, uint32_t blk, uint32_t gen)
{
	uint64_t ppn = (uint64_t)blk * g.ppb;
	uint8_t *s = b + ftl_oob_off(&g, ppn) + g.oob - NAND_STAMP_SIZE;
	uint16_t magic = 0x5347;
	uint32_t p = (uint32_t)ppn, crc;

	memset(b + ftl_oob_off(&g, ppn), 0, g.oob);
	memcpy(s, &gen, 4);
	memcpy(s + 4, &magic, 2);
	s[6] = 1;                       /* version */
	s[7] = 2;                       /* erase stamp */
	memcpy(s + 8, &p, 4);
	crc = oct_crc32c(0, s, 12);
	memcpy(s + 12, &crc, 4);
}

static void stamp_gen(void)
{
	size_t n;
	uint8_t *b;

	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "create");
	b = load(&n);
	T_CHECK(g.oob_stamp, "a layout with erase stamps");
	for (uint32_t blk = g.ckpt_blocks; blk < g.nblocks; blk++)
		erase_stamp(b, blk, 0xffffffffu);
	store(b, n);
	after("erase stamps of generation 0xffffffff", false);
}

/* The checkpoint of generation @gen: its block table's erase count of
 * block @blk set to @ec, the payload page, its OOB, the payload crc and
 * the header (and its page's OOB) resealed. */
static void ckpt_ec(uint8_t *b, uint64_t gen, uint32_t blk, uint32_t ec)
{
	uint64_t s0 = (gen % FTL_CKPT_SLOTS) * g.slot_blocks * g.ppb;
	uint64_t at = (uint64_t)g.nlpn * 4 + (uint64_t)blk * 16;
	uint32_t i = (uint32_t)(at / g.ps), crc = 0;
	struct ftl_ckpt_hdr *h = (struct ftl_ckpt_hdr *)(b + ftl_page_off(&g, s0));
	uint8_t *pg = b + ftl_page_off(&g, s0 + 1 + i), blank[FTL_MAX_PAGE];

	T_CHECK(oob_at(b, s0 + 1 + i)->kind == FTL_OOB_CKPT,
		"payload page %u programmed", i);
	memcpy(pg + at % g.ps, &ec, 4);
	oob_at(b, s0 + 1 + i)->data_crc = oct_crc32c(0, pg, g.ps);
	reseal((uint8_t *)oob_at(b, s0 + 1 + i));
	for (uint32_t k = 0; k < g.payload_pages; k++) {
		struct ftl_oob *o = oob_at(b, s0 + 1 + k);

		ftl_ckpt_blank_page(&g, k, blank);
		crc = oct_crc32c(crc, o->kind ? b + ftl_page_off(&g, s0 + 1 + k) :
				 blank, g.ps);
	}
	h->payload_crc = crc;
	h->crc = 0;
	h->crc = oct_crc32c(0, h, sizeof(*h));
	oob_at(b, s0)->data_crc = oct_crc32c(0, h, g.ps);
	reseal((uint8_t *)oob_at(b, s0));
}

static void ckpt_ec_case(void)
{
	struct ftl_open_opts scan = { .scan = true };
	struct ftl *f = NULL;
	size_t n;
	uint8_t *b;
	int r;

	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "create");
	b = load(&n);
	ckpt_ec(b, 1, g.ckpt_blocks, NAND_EC_MAX + 1);
	ckpt_ec(b, 2, g.ckpt_blocks, NAND_EC_MAX + 1);
	store(b, n);
	r = fsck(false);
	T_CHECK(r == 4, "checkpoint erase count past NAND_EC_MAX: fsck %d", r);
	r = ftl_open(img, NULL, &f);
	T_CHECK(r == -EBADMSG, "checkpoint erase count: open %d", r);
	if (!r)
		ftl_close(f);
	r = ftl_open(img, &scan, &f);
	T_CHECK(r == 0, "checkpoint erase count: --scan open %d", r);
	if (!r)
		ftl_close(f);
	r = fsck(true);
	T_CHECK(r == 1, "checkpoint erase count: fsck --repair %d", r);
	r = fsck(false);
	T_CHECK(r == 0, "checkpoint erase count: fsck after repair %d", r);
}

/* A full block at the erase-count ceiling fails its next erase (worn out)
 * and is retired; writes go on and every page reads back. */
static void wear_out(void)
{
	struct ftl_stats st;
	struct ftl *f = NULL;
	uint8_t buf[4096], rd[4096];
	uint32_t worn = FTL_NONE;
	int r = 0;

	c.op_permille = 1000;           /* spares for a retired block */
	ftl_create_opts_geom(&c, &g);
	make(40, false);
	c.op_permille = 0;
	T_CHECK(ftl_open(img, NULL, &f) == 0, "wear: open");
	if (!f)
		return;
	ftl_lock(&f->lock);
	for (uint32_t blk = g.ckpt_blocks; blk < g.nblocks; blk++)
		if (f->idx.state[blk] == FTL_BLK_FULL && worn == FTL_NONE)
			worn = blk;
	T_CHECK(worn != FTL_NONE, "wear: a full block");
	/* what a count forged past the range would give too (0xffffffff:
	 * the nand keeps at most NAND_EC_MAX) */
	nand_set_block(f->nand, worn, g.ppb, 0xffffffffu);
	ftl_ckpt_blk_dirty(f, worn);
	ftl_unlock(&f->lock);
	for (int i = 0; i < 400 && !r; i++) {
		memset(buf, 0x40 + i % 64, sizeof(buf));
		r = ftl_write(f, buf, (uint64_t)(i % 200) * 4096, 4096, 0);
		T_CHECK(r == 0, "wear: write %d: %d", i, r);
	}
	ftl_stats_get(f, &st);
	T_CHECK(ftl_bb_is(f, worn, NULL) && st.bad_blocks_grown == 1 &&
		st.erase_fails >= 1 && !st.read_only && st.erase_max <= NAND_EC_MAX,
		"wear: block %u retired (%llu grown, %llu erase fails, max %u)",
		worn, (unsigned long long)st.bad_blocks_grown,
		(unsigned long long)st.erase_fails, st.erase_max);
	T_CHECK(ftl_close(f) == 0, "wear: close");
	r = ftl_open(img, NULL, &f);
	T_CHECK(r == 0, "wear: reopen %d", r);
	for (int i = 200; i < 400 && !r; i++) {
		bool ok = ftl_read(f, rd, (uint64_t)(i % 200) * 4096, 4096) == 0 &&
			  rd[0] == 0x40 + i % 64 && rd[4095] == 0x40 + i % 64;

		T_CHECK(ok, "wear: page %d reads back", i % 200);
		if (!ok)
			break;
	}
	if (!r)
		ftl_close(f);
	r = fsck(false);
	T_CHECK(r == 0, "wear: fsck %d", r);
}

int main(void)
{
	snprintf(img, sizeof(img), "/tmp/octant-ftl-fields-%d.img", (int)getpid());
	null = fopen("/dev/null", "w");
	ftl_create_opts_geom(&c, &g);
	forge_oob("OOB erase count 0xffffffff", set_ec);
	forge_oob("OOB data record of stream 9", set_stream);
	trim_range();
	stamp_gen();
	ckpt_ec_case();
	wear_out();
	unlink(img);
	fclose(null);
	return t_result();
}
