/* SPDX-License-Identifier: MIT */
/*
 * Protection information (create --integrity t10dif, OCT_SB_F_PI,
 * ftl_pi.c): the CRC16 T10-DIF guard of every sector is in its page's OOB
 * record whichever path programmed the page (sector writes with their
 * read-modify-write, whole-page runs, GC relocations); reads hand out
 * T10-DIF type 1 tuples that check; a write whose tuple does not match its
 * sector is refused; one flipped bit in a page's data, which fails the
 * whole page with EIO without PI, leaves the other sectors readable and
 * gives exactly the damaged sector a tuple that does not check; so does a
 * codeword the ECC cannot correct (always, even where the damage matched
 * the guard); a page whose PI record is damaged too stays EIO; the OOB
 * must hold the record.  Both alignments.  Seeded (OCTANT_SEED).
 *
 * An image file (its host runs go the unlocked vectored path, a memory
 * backing's do not).  Inspects engine internals (ftl-int.h): the map and
 * the OOB records.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE  (1u << 20)
#define NSECT (SIZE / 512)
#define PS    4096u

static uint8_t model[SIZE], rd[SIZE], pi[NSECT * FTL_PI_TUPLE];
static uint64_t rs;
static char img[64];

/* Flip bit @bit of the image byte at @off. */
static void flip(uint64_t off, unsigned bit)
{
	int fd = open(img, O_RDWR);
	uint8_t v = 0;

	T_CHECK(fd >= 0 && pread(fd, &v, 1, (off_t)off) == 1, "read %s", img);
	v ^= (uint8_t)(1u << bit);
	T_CHECK(pwrite(fd, &v, 1, (off_t)off) == 1, "write %s", img);
	close(fd);
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = t_xorshift(&rs);
		memcpy(p + i, &v, 8);
	}
}

/* The CRC16 T10-DIF (polynomial 0x8bb7, init 0, no reflection) a bit at
 * a time: the reference. */
static uint16_t crc16_bits(const uint8_t *p, size_t n)
{
	unsigned c = 0;

	for (size_t i = 0; i < n; i++) {
		c ^= (unsigned)p[i] << 8;
		for (int k = 0; k < 8; k++)
			c = (c & 0x8000 ? (c << 1) ^ 0x8bb7 : c << 1) & 0xffff;
	}
	return (uint16_t)c;
}

/* Every mapped page's PI record: valid, the guards of its data. */
static void check_records(struct ftl *f, const char *when)
{
	uint8_t page[PS], oob[1024];
	uint16_t guard[PS / 512];
	uint32_t bad = 0, n = 0;

	for (uint32_t l = 0; l < f->g.nlpn; l++) {
		uint32_t ppn = ftl_map_get(f, l);

		if (ppn >= FTL_DAMAGED)
			continue;
		n++;
		if (nand_read_raw(f->nand, ppn, page) ||
		    nand_read_oob(f->nand, ppn, oob) ||
		    !ftl_pi_guards(&f->g, oob, guard)) {
			bad++;
			continue;
		}
		for (uint32_t s = 0; s < PS / 512; s++)
			bad += guard[s] != ftl_pi_crc16(page + s * 512, 512);
	}
	T_CHECK(n > 0 && bad == 0, "%s: %u of %u pages without their guards",
		when, bad, n);
}

/* Tuples of [s0, s1) that do not check, as a count; *first the first. */
static uint32_t bad_tuples(const uint8_t *buf, const uint8_t *t, uint64_t s0,
			   uint64_t s1, uint64_t *first)
{
	uint32_t n = 0;

	*first = UINT64_MAX;
	for (uint64_t s = s0; s < s1; s++)
		if (ftl_pi_check(buf + (s - s0) * 512, t + (s - s0) *
				 FTL_PI_TUPLE, s, 1) >= 0) {
			if (!n++)
				*first = s;
		}
	return n;
}

static void scenario(enum ftl_align_mode align)
{
	struct ftl_create_opts c = { .size = SIZE, .align = align,
		.pages_per_block = 8, .op_permille = 250, .oob_size = 128,
		.integrity = true };
	const char *an = align == FTL_ALIGN_ODD ? "odd" : "1m";
	uint64_t first, sec;
	struct ftl_geom g;
	struct ftl *f = NULL;
	uint8_t t[FTL_PI_TUPLE];
	uint32_t lpn, ppn, s, sect_in_page;
	int fd, r;

	strcpy(img, "/tmp/ftl-pi-XXXXXX");
	fd = mkstemp(img);
	T_CHECK(fd >= 0, "mkstemp");
	close(fd);
	c.force = true;
	T_CHECK(ftl_create(img, &c) == 0, "%s: create", an);
	r = ftl_open(img, NULL, &f);
	T_CHECK(r == 0 && ftl_has_pi(f), "%s: open: %d", an, r);
	if (r) {
		unlink(img);
		return;
	}
	g = f->g;

	/* random sector writes (RMW), then runs of whole pages, three times
	 * over: GC relocates pages meanwhile */
	memset(model, 0, sizeof(model));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 600; i++) {
			uint64_t s0 = t_xorshift(&rs) % (NSECT - 8);
			uint32_t n = 1 + (uint32_t)(t_xorshift(&rs) % 8);

			fill(model + s0 * 512, n * 512);
			ftl_pi_generate(model + s0 * 512, pi, s0, n);
			T_CHECK(ftl_write_pi(f, model + s0 * 512, pi, s0 * 512,
					     n * 512, 0) == 0, "sector write");
		}
		fill(model, SIZE / 2);          /* runs of pages, half the disk */
		T_CHECK(ftl_write(f, model, 0, SIZE / 2, 0) == 0, "run write");
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
	check_records(f, an);
	T_CHECK(ftl_read_pi(f, rd, pi, 0, SIZE) == 0 &&
		!memcmp(rd, model, SIZE), "%s: read all", an);
	T_EQ_U64(bad_tuples(rd, pi, 0, NSECT, &first), 0, "%s: tuples", an);

	/* a tuple that does not match is refused, nothing written */
	ftl_pi_generate(model + 4096, t, 8, 1);
	t[1] ^= 1;
	T_CHECK(ftl_write_pi(f, rd, t, 8 * 512, 512, 0) == -EILSEQ,
		"%s: bad guard refused", an);
	ftl_pi_generate(model + 4096, t, 9, 1);         /* sector 9's ref */
	T_CHECK(ftl_write_pi(f, model + 4096, t, 8 * 512, 512, 0) == -EILSEQ,
		"%s: bad ref tag refused", an);
	T_CHECK(ftl_read(f, rd, 0, SIZE) == 0 && !memcmp(rd, model, SIZE),
		"%s: nothing written", an);
	T_CHECK(ftl_close(f) == 0, "close");

	/* one bit of one sector of a page, on the medium */
	T_CHECK(ftl_open(img, NULL, &f) == 0, "reopen");
	lpn = 1 + (uint32_t)(t_xorshift(&rs) % (g.nlpn - 2));
	sect_in_page = (uint32_t)(t_xorshift(&rs) % (PS / 512));
	ppn = ftl_map_get(f, lpn);
	flip(ftl_page_off(&g, ppn) + sect_in_page * 512 + t_xorshift(&rs) % 512,
	     (unsigned)(t_xorshift(&rs) % 8));
	sec = ((uint64_t)lpn * PS + sect_in_page * 512 - g.shift) / 512;
	{
		uint64_t lo = ((uint64_t)lpn * PS - g.shift) / 512;

		T_CHECK(ftl_read(f, rd, lo * 512, PS) == -EIO,
			"%s: without PI the whole page fails", an);
		T_CHECK(ftl_read_pi(f, rd, pi, lo * 512, PS) == 0,
			"%s: with PI it is served", an);
		T_EQ_U64(bad_tuples(rd, pi, lo, lo + 8, &first), 1,
			 "%s: one sector flagged", an);
		T_EQ_U64(first, sec, "%s: the damaged one", an);
		for (s = 0; s < 8; s++)
			if (lo + s != sec)
				T_CHECK(!memcmp(rd + s * 512, model + (lo + s) *
						512, 512), "%s: sector %llu", an,
					(unsigned long long)(lo + s));
		/* the whole device: the same single sector */
		T_CHECK(ftl_read_pi(f, rd, pi, 0, SIZE) == 0, "%s: all", an);
		T_EQ_U64(bad_tuples(rd, pi, 0, NSECT, &first), 1,
			 "%s: one in all", an);
		T_EQ_U64(first, sec, "%s: the damaged one in all", an);
	}

	/* fsck: the damaged page is a problem; a good page whose PI record
	 * alone is damaged is a note (its data reads; nothing to repair) */
	{
		uint32_t l2 = lpn % (g.nlpn - 2) + 1 == lpn ? lpn + 1 :
			      lpn % (g.nlpn - 2) + 1, p2 = ftl_map_get(f, l2);
		char *txt = NULL;
		size_t tlen = 0;
		FILE *out;

		T_CHECK(ftl_close(f) == 0, "close for fsck");
		flip(ftl_oob_off(&g, p2) + FTL_OOB_PI_AT + 10, 2);
		out = open_memstream(&txt, &tlen);
		T_EQ_U64(ftl_fsck(img, false, out, false), 4, "%s: fsck", an);
		fclose(out);
		T_CHECK(txt && strstr(txt, "data does not match its CRC") &&
			strstr(txt, "PI record (T10-DIF guards) does not check "
				    "out"), "%s: fsck says: %s", an, txt);
		free(txt);
		T_CHECK(ftl_open(img, NULL, &f) == 0, "reopen after fsck");
		T_CHECK(ftl_read_pi(f, rd, pi, ((uint64_t)l2 * PS - g.shift) /
				    512 * 512, 512) == 0, "%s: its data reads", an);
	}
	/* its PI record damaged too: nothing can be told good */
	flip(ftl_oob_off(&g, ppn) + FTL_OOB_PI_AT + 9, 4);
	T_CHECK(ftl_read_pi(f, rd, pi, sec * 512, 512) == -EIO,
		"%s: record damaged: EIO", an);
	T_CHECK(ftl_close(f) == 0, "close 2");

	/* beyond the ECC: that codeword's sector, always flagged */
	{
		static struct nand_fault_spec fs;
		struct ftl_open_opts o = { 0 };
		char err[200];

		T_CHECK(nand_fault_parse("ecc=4", &fs, err, sizeof(err)) == 0,
			"%s", err);
		fs.seed = rs;
		o.faults = &fs;
		T_CHECK(ftl_open(img, &o, &f) == 0, "reopen faults");
		lpn = (lpn + 7) % (g.nlpn - 2) + 1;
		ppn = ftl_map_get(f, lpn);
		T_CHECK(nand_fault_inject_bits(f->nand, ppn, 2, 5) == 0,
			"inject");
		sec = ((uint64_t)lpn * PS + 2 * 512 - g.shift) / 512;
		T_CHECK(ftl_read(f, rd, sec * 512, 512) == -EIO,
			"%s: ecc: EIO without PI", an);
		T_CHECK(ftl_read_pi(f, rd, pi, (sec - 2) * 512, PS) == 0,
			"%s: ecc: served with PI", an);
		T_EQ_U64(bad_tuples(rd, pi, sec - 2, sec + 6, &first), 1,
			 "%s: ecc: one flagged", an);
		T_EQ_U64(first, sec, "%s: ecc: that one", an);
		T_CHECK(ftl_close(f) == 0, "close 3");
	}
	unlink(img);
}

int main(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.oob_size = 64, .integrity = true };
	struct nand_backing *b;
	struct ftl *f;
	uint8_t t[8];

	rs = t_seed() | 1;
	/* the CRC16 T10-DIF check value; a bit at a time for every length
	 * up to 600 (the engine slices by 8) */
	T_EQ_U64(ftl_pi_crc16("123456789", 9), 0xd0db, "crc16 t10dif");
	fill(model, 4096);
	for (size_t n = 0; n <= 600; n++)
		T_EQ_U64(ftl_pi_crc16(model + n % 7, n), crc16_bits(model + n % 7, n),
			 "crc16 of %zu bytes", n);
	/* no room for the record: refused */
	T_CHECK(nand_backing_mem(ftl_test_image_size(&c), false, &b) == 0 &&
		ftl_create_backing(b, &c) == -EINVAL, "oob 64 refused");
	b->ops->destroy(b);
	/* an image without PI has none to give */
	c.integrity = false;
	T_CHECK(nand_backing_mem(ftl_test_image_size(&c), false, &b) == 0 &&
		ftl_create_backing(b, &c) == 0, "plain create");
	nand_mem_hold(b);
	T_CHECK(ftl_open_backing(b, NULL, &f) == 0 && !ftl_has_pi(f) &&
		ftl_read_pi(f, rd, t, 0, 512) == -EOPNOTSUPP, "no PI");
	ftl_close(f);
	b->ops->destroy(b);

	scenario(FTL_ALIGN_1M);
	scenario(FTL_ALIGN_ODD);
	return t_result();
}
