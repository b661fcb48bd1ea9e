/* SPDX-License-Identifier: MIT */
/*
 * Image-format robustness: every superblock field corrupted (in both
 * copies, with and without a matching crc), every checkpoint header field
 * and the checkpoint payload corrupted, a truncated / grown image, another
 * version.  Each must be detected: an error (never a crash), fsck exit 4,
 * and the image bytes unchanged by info / fsck / a failed open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"
#include "test.h"

static char img[256];
static uint8_t *orig;
static size_t isz;
static struct ftl_geom g;

static uint8_t *load(size_t *n)
{
	int fd = open(img, O_RDONLY);
	off_t sz = lseek(fd, 0, SEEK_END);
	uint8_t *b = malloc((size_t)sz + 1);

	*n = pread(fd, b, (size_t)sz, 0) == sz ? (size_t)sz : 0;
	close(fd);
	return b;
}

static uint32_t file_crc(void)
{
	size_t n;
	uint8_t *b = load(&n);
	uint32_t c = oct_crc32c(0, b, n) ^ (uint32_t)n;

	free(b);
	return c;
}

/* The image as it is must be rejected / reported, and stay unchanged. */
static void expect_bad(const char *what, bool info_too, bool open_too)
{
	struct ftl_open_opts ro = { .readonly = true }, rw = { 0 };
	struct ftl_info info;
	struct ftl *f = NULL;
	FILE *null = fopen("/dev/null", "w");
	uint32_t before = file_crc();
	int r;

	if (info_too) {
		r = ftl_info_read(img, &info);
		T_CHECK(r == -EBADMSG || r == -EPROTONOSUPPORT || r == -EINVAL,
			"%s: info %d", what, r);
	}
	r = ftl_fsck(img, false, null, false);
	T_CHECK(r == 4, "%s: fsck %d", what, r);
	r = ftl_fsck(img, false, null, true);
	T_CHECK(r == 4, "%s: fsck --json %d", what, r);
	if (open_too) {
		r = ftl_open(img, &ro, &f);
		T_CHECK(r < 0, "%s: read-only open %d", what, r);
		if (!r)
			ftl_close(f);
		r = ftl_open(img, &rw, &f);
		T_CHECK(r < 0, "%s: open %d", what, r);
		if (!r)
			ftl_close(f);
	}
	T_CHECK(file_crc() == before, "%s: image changed", what);
	fclose(null);
}

static void sb_fields(void)
{
	static const struct { const char *name; size_t off, len; bool info; } fl[] = {
#define F(x, i) { #x, offsetof(struct oct_sb, x), sizeof(((struct oct_sb *)0)->x), i }
		F(magic, true), F(version, true), F(crc, true), F(sb_size, true),
		F(align_mode, true), F(align_shift, true), F(logical_size, true),
		F(logical_sectors, true), F(page_size, true), F(oob_size, true),
		F(pages_per_block, true), F(nblocks, true), F(flash_offset, true),
		F(oob_offset, true), F(op_permille, true), F(ckpt_blocks, true),
		F(uuid, false), F(create_time, true), F(flags, true),
		F(pe_cycles, true), F(reserved, true),
#undef F
	};
	uint8_t *b = malloc(isz);

	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		for (int fix = 0; fix < 2; fix++) {
			char what[64];
			bool detectable = !(fix && !strcmp(fl[i].name, "create_time"));

			if (fix && !strcmp(fl[i].name, "crc"))
				continue;
			memcpy(b, orig, isz);
			for (int c = 0; c < 2; c++) {
				struct oct_sb *sb = (struct oct_sb *)
					(b + (c ? OCT_SB_COPY_OFFSET : 0));
				for (size_t k = 0; k < fl[i].len; k++)
					((uint8_t *)sb)[fl[i].off + k] ^= 0xa5;
				if (fix) {
					sb->crc = 0;
					sb->crc = oct_crc32c(0, sb, OCT_SB_SIZE);
				}
			}
			t_store(img, b, isz);
			snprintf(what, sizeof(what), "superblock %s%s", fl[i].name,
				 fix ? " (crc fixed)" : "");
			if (detectable)
				expect_bad(what, fl[i].info || !fix, true);
		}
	}
	free(b);
}

/* One superblock copy damaged (or of another version, crc valid): a
 * read-only open and fsck write nothing; a writer's open writes the copy
 * in use over a damaged one (ftl_open.c, sb_mend), not over another
 * version's; fsck is then clean. */
static void sb_mend(void)
{
	FILE *null = fopen("/dev/null", "w");
	struct ftl_open_opts ro = { .readonly = true };
	uint8_t *b = malloc(isz), *a;
	struct ftl *f = NULL;
	uint32_t c0;
	size_t n;

	for (int copy = 0; copy < 2; copy++) {
		size_t at = copy ? OCT_SB_COPY_OFFSET : 0;

		memcpy(b, orig, isz);
		b[at + 100] ^= 0x10;            /* create_time: its crc fails */
		t_store(img, b, isz);
		c0 = file_crc();
		T_EQ_U64(ftl_fsck(img, false, null, false), 4,
			 "copy %d damaged: fsck", copy);
		T_CHECK(ftl_open(img, &ro, &f) == 0 && ftl_close(f) == 0,
			"copy %d damaged: read-only open", copy);
		T_CHECK(file_crc() == c0, "copy %d damaged: a read-only open "
			"or fsck wrote", copy);
		f = NULL;
		T_CHECK(ftl_open(img, NULL, &f) == 0 && ftl_close(f) == 0,
			"copy %d damaged: open", copy);
		a = load(&n);
		T_CHECK(n == isz && !memcmp(a, orig, OCT_SB_SIZE) &&
			!memcmp(a + OCT_SB_COPY_OFFSET, orig, OCT_SB_SIZE),
			"copy %d damaged: not mended by a writer's open", copy);
		free(a);
		T_EQ_U64(ftl_fsck(img, false, null, false), 0,
			 "copy %d mended: fsck", copy);
	}
	/* copy 0 of another version: copy 1 serves, copy 0 stays */
	memcpy(b, orig, isz);
	((struct oct_sb *)b)->version = 2;
	((struct oct_sb *)b)->crc = 0;
	((struct oct_sb *)b)->crc = oct_crc32c(0, b, OCT_SB_SIZE);
	t_store(img, b, isz);
	f = NULL;
	T_CHECK(ftl_open(img, NULL, &f) == 0 && ftl_close(f) == 0,
		"copy 0 of another version: open on copy 1");
	a = load(&n);
	T_CHECK(n == isz && !memcmp(a, b, OCT_SB_SIZE),
		"copy 0 of another version: overwritten");
	free(a);
	free(b);
	fclose(null);
}

/* Byte offsets of the header page and its OOB of checkpoint @gen. */
static void ckpt_where(uint64_t gen, size_t *page, size_t *oob)
{
	uint64_t ppn = (gen % FTL_CKPT_SLOTS) * g.slot_blocks * g.ppb;

	*page = (size_t)ftl_page_off(&g, ppn);
	*oob = (size_t)ftl_oob_off(&g, ppn);
}

static void fix_page(uint8_t *b, size_t page, size_t oob)
{
	struct ftl_oob *o = (struct ftl_oob *)(b + oob);

	o->data_crc = oct_crc32c(0, b + page, g.ps);
	o->crc = 0;
	o->crc = oct_crc32c(0, o, sizeof(*o));
}

static void ckpt_fields(void)
{
	static const struct { const char *name; size_t off, len; } fl[] = {
#define F(x) { #x, offsetof(struct ftl_ckpt_hdr, x), sizeof(((struct ftl_ckpt_hdr *)0)->x) }
		F(magic), F(version), F(hdr_size), F(gen), F(seq), F(flags),
		F(payload_pages), F(nlpn), F(nblocks), F(payload_crc), F(uuid),
		F(open), F(write_time), F(cnt), F(xopen), F(crc),
#undef F
	};
	static const char *semantic[] = { "magic", "version", "hdr_size", "gen",
		"seq", "payload_pages", "nlpn", "nblocks", "payload_crc", "uuid",
		"open", "flags", "xopen" };
	uint8_t *b = malloc(isz);
	size_t p2, o2, p1, o1;

	ckpt_where(2, &p2, &o2);
	ckpt_where(1, &p1, &o1);
	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		for (int mode = 0; mode < 3; mode++) {
			/* 0: newest copy raw; 1: both copies raw; 2: both, all
			 * crcs recomputed (semantic checks only) */
			struct ftl_ckpt_hdr *h;
			bool sem = false;
			char what[80];

			for (size_t k = 0; k < sizeof(semantic) / sizeof(*semantic); k++)
				sem |= !strcmp(semantic[k], fl[i].name);
			if (mode == 2 && !sem)
				continue;
			memcpy(b, orig, isz);
			for (int c = 0; c < (mode ? 2 : 1); c++) {
				size_t pg = c ? p1 : p2, oo = c ? o1 : o2;
				h = (struct ftl_ckpt_hdr *)(b + pg);
				for (size_t k = 0; k < fl[i].len; k++)
					b[pg + fl[i].off + k] ^= 0x5a;
				if (mode == 2) {
					h->crc = 0;
					h->crc = oct_crc32c(0, h, sizeof(*h));
					fix_page(b, pg, oo);
				}
			}
			t_store(img, b, isz);
			snprintf(what, sizeof(what), "checkpoint %s (%s)", fl[i].name,
				 mode == 0 ? "newest copy" : mode == 1 ? "both copies" :
				 "both, crcs fixed");
			/* one bad copy: detected by fsck, the image still opens */
			expect_bad(what, false, mode > 0);
			if (mode == 0) {
				struct ftl_open_opts ro = { .readonly = true };
				struct ftl *f;
				int r = ftl_open(img, &ro, &f);
				T_CHECK(r == 0, "%s: the older copy should open", what);
				if (!r)
					ftl_close(f);
			}
		}
	}
	/* payload: one map byte of the newest checkpoint */
	memcpy(b, orig, isz);
	b[p2 + ftl_page_off(&g, 1) - ftl_page_off(&g, 0) + 3] ^= 1;
	t_store(img, b, isz);
	expect_bad("checkpoint payload", false, false);
	/* both: nothing valid left */
	memcpy(b, orig, isz);
	b[p2 + ftl_page_off(&g, 1) - ftl_page_off(&g, 0) + 3] ^= 1;
	b[p1 + ftl_page_off(&g, 1) - ftl_page_off(&g, 0) + 3] ^= 1;
	t_store(img, b, isz);
	expect_bad("checkpoint payloads", false, true);
	free(b);
}

/*
 * An OOB record whose sequence number is at or past FTL_SEQ_MAX (CRC
 * valid) is damaged: fuzz input image-scan-seq-wrap gave one page
 * 0xffffffffffffffdc; a --scan open took it as the newest, the counter
 * wrapped past 2^64, and after writes and a clean close every checkpoint
 * had a seq below a block's mtime: the image no longer opened.  Recovery
 * must ignore such a record, and a clean close must leave an image that
 * opens.
 */
static void seq_wrap(void)
{
	struct ftl_create_opts c = { .size = 1 << 20, .align = FTL_ALIGN_ODD,
		.pages_per_block = 16 };
	struct ftl_open_opts scan = { .scan = true };
	struct ftl_geom sg;
	uint8_t buf[4096], *b;
	struct ftl *f;
	size_t n;
	bool patched = false;
	int r;

	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "seq wrap: create");
	ftl_create_opts_geom(&c, &sg);
	T_CHECK(ftl_open(img, NULL, &f) == 0, "seq wrap: open");
	for (int i = 0; i < 40; i++) {
		memset(buf, i + 1, sizeof(buf));
		T_CHECK(ftl_write(f, buf, (uint64_t)(i % 20) * 4096, 4096, 0) == 0,
			"seq wrap: write %d", i);
	}
	T_CHECK(ftl_close(f) == 0, "seq wrap: close");
	b = load(&n);
	for (uint64_t p = (uint64_t)sg.ckpt_blocks * sg.ppb;
	     p < (uint64_t)sg.nblocks * sg.ppb && !patched; p++) {
		struct ftl_oob *o = (struct ftl_oob *)(b + ftl_oob_off(&sg, p));

		if (!ftl_oob_ok(o) || o->kind != FTL_OOB_DATA)
			continue;
		o->seq = 0xffffffffffffffdcull;
		o->crc = 0;
		o->crc = oct_crc32c(0, o, sizeof(*o));
		patched = true;
	}
	T_CHECK(patched, "seq wrap: a data page to patch");
	t_store(img, b, n);
	free(b);
	T_CHECK(ftl_open(img, &scan, &f) == 0, "seq wrap: --scan open");
	for (int i = 0; i < 40; i++) {
		memset(buf, 0x80 + i, sizeof(buf));
		T_CHECK(ftl_write(f, buf, (uint64_t)(i % 20) * 4096, 4096, 0) == 0,
			"seq wrap: write after scan %d", i);
	}
	T_CHECK(ftl_close(f) == 0, "seq wrap: clean close");
	r = ftl_open(img, NULL, &f);
	T_CHECK(r == 0, "seq wrap: opens after the clean close: %d", r);
	if (!r) {
		for (int i = 20; i < 40; i++) {
			T_CHECK(ftl_read(f, buf, (uint64_t)(i % 20) * 4096, 4096) == 0 &&
				buf[0] == 0x80 + i && buf[4095] == 0x80 + i,
				"seq wrap: page %d reads back", i % 20);
		}
		ftl_close(f);
	}
	unlink(img);
}

/*
 * Roll-forward checks sequence numbers against the log: a record above
 * ckpt_seq + seq_gap (no page can be numbered past it) is damaged, even
 * with a valid crc.  An older version of a logical page whose record was
 * given such a number must not win over the newest one.
 */
static void seq_log(void)
{
	struct ftl_create_opts c = { .size = 1 << 20, .align = FTL_ALIGN_ODD,
		.pages_per_block = 16 };
	struct ftl_geom sg;
	uint8_t buf[4096], *b;
	struct ftl *f;
	size_t n;
	bool patched = false;
	int r;

	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "seq log: create");
	ftl_create_opts_geom(&c, &sg);
	T_CHECK(ftl_open(img, NULL, &f) == 0, "seq log: open");
	for (int v = 1; v <= 2; v++) {
		memset(buf, v, sizeof(buf));
		T_CHECK(ftl_write(f, buf, 5 * 4096 - 512, 4096, 0) == 0,
			"seq log: write version %d", v);
		T_CHECK(ftl_flush(f) == 0, "seq log: flush");
	}
	ftl_abandon(f);                 /* a crash: the next open rolls forward */
	b = load(&n);
	for (uint64_t p = (uint64_t)sg.ckpt_blocks * sg.ppb;
	     p < (uint64_t)sg.nblocks * sg.ppb && !patched; p++) {
		struct ftl_oob *o = (struct ftl_oob *)(b + ftl_oob_off(&sg, p));

		if (!ftl_oob_ok(o) || o->kind != FTL_OOB_DATA || o->lpn != 5 ||
		    b[ftl_page_off(&sg, p)] != 1)
			continue;
		o->seq = 1ull << 40;    /* below FTL_SEQ_MAX, far past the log */
		o->crc = 0;
		o->crc = oct_crc32c(0, o, sizeof(*o));
		patched = true;
	}
	T_CHECK(patched, "seq log: version 1 found");
	t_store(img, b, n);
	free(b);
	r = ftl_open(img, NULL, &f);
	T_CHECK(r == 0, "seq log: open: %d", r);
	if (!r) {
		r = ftl_read(f, buf, 5 * 4096 - 512, 4096);
		T_CHECK(r == 0 && buf[0] == 2, "seq log: logical page 5 reads "
			"version %d (%d), not the older one with a wild seq",
			buf[0], r);
		ftl_close(f);
	}
	unlink(img);
}

/* Flash page holding logical page @lpn in image @b (DATA record, newest). */
static int64_t page_of(const uint8_t *b, const struct ftl_geom *sg, uint32_t lpn)
{
	int64_t best = -1;
	uint64_t bs = 0;

	for (uint64_t p = (uint64_t)sg->ckpt_blocks * sg->ppb;
	     p < (uint64_t)sg->nblocks * sg->ppb; p++) {
		const struct ftl_oob *o =
			(const struct ftl_oob *)(b + ftl_oob_off(sg, p));
		if (ftl_oob_ok(o) && o->kind == FTL_OOB_DATA && o->lpn == lpn &&
		    o->seq > bs) {
			bs = o->seq;
			best = (int64_t)p;
		}
	}
	return best;
}

/*
 * Reads check each page against its OOB record (oracle seeds 1042/5,
 * 1031/6, 1011/1: a bit flip the ECC did not see, another page's data
 * after a misdirected program or a stale map entry, an erased page):
 * EIO, counted, never served as good data.
 */
static void read_verify(void)
{
	struct ftl_create_opts c = { .size = 1 << 20, .align = FTL_ALIGN_ODD,
		.pages_per_block = 16 };
	struct ftl_geom sg;
	uint8_t buf[4096], *b, *clean;
	struct ftl_stats st;
	struct ftl *f;
	size_t n;
	int64_t p1, p2;

	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "verify: create");
	ftl_create_opts_geom(&c, &sg);
	T_CHECK(ftl_open(img, NULL, &f) == 0, "verify: open");
	for (int i = 1; i <= 3; i++) {
		memset(buf, i, sizeof(buf));
		/* logical page i holds bytes i*4096-512 ... (odd shift) */
		T_CHECK(ftl_write(f, buf, (uint64_t)i * 4096 - 512, 4096, 0) == 0,
			"verify: write %d", i);
	}
	T_CHECK(ftl_close(f) == 0, "verify: close");
	clean = load(&n);
	p1 = page_of(clean, &sg, 1);
	p2 = page_of(clean, &sg, 2);
	T_CHECK(p1 >= 0 && p2 >= 0, "verify: pages found");
	if (p1 < 0 || p2 < 0)
		return;
	for (int k = 0; k < 3; k++) {
		const char *what[] = { "bit flip", "misdirected page", "erased page" };
		int r;

		b = malloc(n);
		memcpy(b, clean, n);
		if (k == 0) {
			b[ftl_page_off(&sg, p1) + 1000] ^= 0x10;
		} else if (k == 1) {
			memcpy(b + ftl_page_off(&sg, p1),
			       b + ftl_page_off(&sg, p2), sg.ps);
			memcpy(b + ftl_oob_off(&sg, p1),
			       b + ftl_oob_off(&sg, p2), sg.oob);
		} else {
			memset(b + ftl_page_off(&sg, p1), 0xff, sg.ps);
			memset(b + ftl_oob_off(&sg, p1), 0xff, sg.oob);
		}
		t_store(img, b, n);
		free(b);
		if (ftl_open(img, NULL, &f)) {
			T_CHECK(0, "verify: %s: open", what[k]);
			continue;
		}
		r = ftl_read(f, buf, 4096 - 512, 4096);
		T_CHECK(r == -EIO, "verify: %s: whole-page read gives %d", what[k], r);
		r = ftl_read(f, buf, 4096, 512);
		T_CHECK(r == -EIO, "verify: %s: one-sector read gives %d", what[k], r);
		r = ftl_read(f, buf, 2 * 4096 - 512, 4096);
		T_CHECK(r == 0 && buf[0] == 2 && buf[4095] == 2,
			"verify: %s: the next page still reads (%d)", what[k], r);
		ftl_stats_get(f, &st);
		T_CHECK(st.read_crc_errors == 2, "verify: %s: %llu read_crc_errors",
			what[k], (unsigned long long)st.read_crc_errors);
		ftl_close(f);
	}
	free(clean);
	unlink(img);
}

int main(void)
{
	struct ftl_create_opts c = { .size = 1 << 20, .align = FTL_ALIGN_ODD,
		.pages_per_block = 16 };
	uint8_t *b;
	size_t n;

	snprintf(img, sizeof(img), "%s/ftl-format.%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	seq_wrap();
	seq_log();
	read_verify();
	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "create");
	ftl_create_opts_geom(&c, &g);
	orig = load(&isz);
	T_EQ_U64(isz, g.image_size, "image size");

	sb_fields();
	ckpt_fields();

	/* truncated, grown, empty */
	t_store(img, orig, isz - 4096);
	expect_bad("truncated", true, true);
	b = calloc(1, isz + 4096);
	memcpy(b, orig, isz);
	t_store(img, b, isz + 4096);
	expect_bad("grown", true, true);
	t_store(img, orig, 100);
	expect_bad("100-byte file", true, true);
	free(b);

	/* other version (crc valid) */
	b = malloc(isz);
	memcpy(b, orig, isz);
	for (int k = 0; k < 2; k++) {
		struct oct_sb *sb = (struct oct_sb *)(b + (k ? OCT_SB_COPY_OFFSET : 0));
		sb->version = 2;
		sb->crc = 0;
		sb->crc = oct_crc32c(0, sb, OCT_SB_SIZE);
	}
	t_store(img, b, isz);
	{
		struct ftl_info info;
		struct ftl *f;
		T_CHECK(ftl_info_read(img, &info) == -EPROTONOSUPPORT, "version");
		T_CHECK(ftl_open(img, NULL, &f) == -EPROTONOSUPPORT, "version");
	}
	free(b);

	sb_mend();

	/* and the pristine image is clean */
	t_store(img, orig, isz);
	n = 0;
	{
		FILE *null = fopen("/dev/null", "w");
		T_CHECK(ftl_fsck(img, false, null, false) == 0, "clean image");
		fclose(null);
	}
	(void)n;
	unlink(img);
	free(orig);
	return t_result();
}
