/* SPDX-License-Identifier: MIT */
/*
 * The nand fault model: spec parsing and its errors, seeded program/erase
 * failures at the requested rates, ECC (errors up to its strength are
 * corrected and invisible, beyond it the read fails for exactly the
 * codewords hit), raw bit errors growing with erase count, bad blocks.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "nand.h"
#include "test.h"

static struct nand *mk(struct nand_geom *g)
{
	struct nand_backing *b;
	struct nand *n;
	uint64_t size;

	g->oob_off = g->flash_off + (uint64_t)g->nblocks * g->ppb * g->page_size;
	size = g->oob_off + (uint64_t)g->nblocks * g->ppb * g->oob_size;
	if (nand_backing_mem(size, false, &b) || nand_create(b, g, &n))
		return NULL;
	for (uint32_t k = 0; k < g->nblocks; k++)
		nand_set_block(n, k, 0, 0);
	return n;
}

static void parse_cases(void)
{
	struct nand_fault_spec s;
	char err[200], out[200];
	static const char *bad[] = {
		"", "program", "program=2", "program=-0.1", "erase=x",
		"bitflip=0.9", "seed=-1", "seed=12a", "ecc=0", "cw=1000",
		"cw=256", "colour=1", "program=0.1,,erase=0.1",
	};

	T_CHECK(nand_fault_parse("program=0.001,erase=1e-3,bitflip=1e-6,seed=42",
				 &s, err, sizeof(err)) == 0, "%s", err);
	T_CHECK(s.program_p == 0.001 && s.erase_p == 0.001 &&
		s.bitflip == 1e-6 && s.seed == 42 && s.seed_set, "values");
	T_EQ_U64(s.ecc_bits, NAND_FAULT_ECC_DEFAULT, "ecc default");
	T_EQ_U64(s.cw, 512, "codeword default");
	T_CHECK(nand_fault_parse("ecc=40,cw=1024", &s, err, sizeof(err)) == 0 &&
		s.ecc_bits == 40 && s.cw == 1024 && !s.seed_set, "ecc, cw");
	T_CHECK(nand_fault_format(&s, out, sizeof(out)) == 0 &&
		strstr(out, "ecc=40,cw=1024"), "format: %s", out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		T_CHECK(nand_fault_parse(bad[i], &s, err, sizeof(err)) == -EINVAL &&
			!strncmp(err, "faults: ", 8) && !strchr(err, '\n'),
			"'%s' refused with one line: '%s'", bad[i], err);
	}
}

int main(void)
{
	struct nand_geom g = { .page_size = 4096, .oob_size = 64, .ppb = 16,
		.nblocks = 64, .flash_off = 4096 };
	struct nand_fault_spec s;
	struct nand_counters c;
	struct nand_ecc e;
	uint8_t data[4096], oob[64], rd[4096];
	unsigned seed = t_seed();
	uint32_t pf = 0, ef = 0;
	struct nand *n;
	char err[200];

	parse_cases();
	n = mk(&g);
	T_CHECK(n, "nand");
	if (!n)
		return t_result();
	memset(data, 0x5a, sizeof(data));
	memset(oob, 0x11, sizeof(oob));

	/* program / erase failures at about the requested rate */
	T_CHECK(nand_fault_parse("program=0.1,erase=0.2", &s, err,
				 sizeof(err)) == 0, "%s", err);
	s.seed = seed;
	T_CHECK(nand_set_fault_model(n, &s, 0) == 0, "model");
	for (int round = 0; round < 10; round++)
		for (uint32_t b = 0; b < g.nblocks; b++) {
			for (uint32_t p = 0; p < g.ppb; p++) {
				int r = nand_program(n, (uint64_t)b * g.ppb + p,
						     data, oob);
				T_CHECK(r == 0 || r == -NAND_EFAIL, "program rc %d", r);
				pf += r == -NAND_EFAIL;
			}
			ef += nand_erase(n, b) == -NAND_EFAIL;
			nand_set_block(n, b, 0, nand_block_ec(n, b));
		}
	nand_counters_get(n, &c);
	T_EQ_U64(c.program_fails, pf, "program fails counted");
	T_EQ_U64(c.erase_fails, ef, "erase fails counted");
	T_CHECK(pf > 10240 * 0.08 && pf < 10240 * 0.12, "program fails %u / 10240", pf);
	T_CHECK(ef > 640 * 0.14 && ef < 640 * 0.26, "erase fails %u / 640", ef);
	T_EQ_U64(c.violations, 0, "a failed program never violates the rules");

	/* ECC: 8 bits per 512 B corrected; 9 fail exactly that codeword */
	T_CHECK(nand_fault_parse("ecc=8", &s, err, sizeof(err)) == 0, "%s", err);
	T_CHECK(nand_set_fault_model(n, &s, 0) == 0, "model");
	T_CHECK(nand_erase(n, 3) == 0 && nand_program(n, 3 * g.ppb, data, oob) == 0,
		"page");
	T_CHECK(nand_fault_inject_bits(n, 3 * g.ppb, 2, 8) == 0, "inject 8");
	T_CHECK(nand_fault_inject_bits(n, 3 * g.ppb, 5, 9) == 0, "inject 9");
	T_CHECK(nand_fault_inject_bits(n, 3 * g.ppb, 8, 1) == -EINVAL, "cw range");
	memset(rd, 0, sizeof(rd));
	T_CHECK(nand_read_ecc(n, 3 * g.ppb, 1024, rd, 512, &e) == 0 &&
		!memcmp(rd, data, 512) && e.corrected == 8 && e.max_corrected == 8,
		"8 bits: corrected, invisible (%u)", e.corrected);
	T_CHECK(nand_read_ecc(n, 3 * g.ppb, 0, rd, 2560, &e) == 0 &&
		!memcmp(rd, data, 2560), "codewords 0-4 read fine");
	T_CHECK(nand_read_ecc(n, 3 * g.ppb, 0, rd, 4096, &e) == -EBADMSG &&
		e.bad_cw == 1u << 5, "9 bits: codeword 5 only (%#llx)",
		(unsigned long long)e.bad_cw);
	T_CHECK(memcmp(rd + 2560, data + 2560, 512) != 0,
		"an uncorrectable codeword comes back damaged");
	T_CHECK(!memcmp(rd + 3072, data + 3072, 1024), "the rest intact");
	T_CHECK(nand_read_ecc(n, 3 * g.ppb, 3072, rd, 1024, &e) == 0,
		"codewords after it read fine");
	nand_counters_get(n, &c);
	T_EQ_U64(c.ecc_uncorrectable, 1, "uncorrectable codewords counted");
	T_CHECK(nand_erase(n, 3) == 0 && nand_program(n, 3 * g.ppb, data, oob) == 0 &&
		nand_read(n, 3 * g.ppb, 0, rd, 4096) == 0, "an erase heals");

	/* raw bit errors grow with the erase count */
	{
		uint64_t fresh, worn;

		T_CHECK(nand_fault_parse("bitflip=2e-5,ecc=64", &s, err,
					 sizeof(err)) == 0, "%s", err);
		s.seed = seed;
		T_CHECK(nand_set_fault_model(n, &s, 0) == 0, "model");
		nand_set_block(n, 4, 1, 0);
		nand_set_block(n, 5, 1, 3000);
		nand_counters_get(n, &c);
		fresh = c.ecc_corrected_bits;
		for (int i = 0; i < 2000; i++)
			nand_read(n, 4 * g.ppb, 0, rd, 4096);
		nand_counters_get(n, &c);
		fresh = c.ecc_corrected_bits - fresh;
		worn = c.ecc_corrected_bits;
		for (int i = 0; i < 2000; i++)
			nand_read(n, 5 * g.ppb, 0, rd, 4096);
		nand_counters_get(n, &c);
		worn = c.ecc_corrected_bits - worn;
		/* mean 2e-5 * 32768 * 2000 = 1311 fresh, 16x at ec 3000 */
		T_CHECK(fresh > 1000 && fresh < 1650, "fresh: %llu bits",
			(unsigned long long)fresh);
		T_CHECK(worn > 12 * fresh && worn < 20 * fresh,
			"worn (ec 3000): %llu bits", (unsigned long long)worn);
	}

	/* the system area below the first faulty block is spared */
	T_CHECK(nand_fault_parse("program=1,erase=1", &s, err, sizeof(err)) == 0,
		"%s", err);
	T_CHECK(nand_set_fault_model(n, &s, 8) == 0, "model from block 8");
	T_CHECK(nand_erase(n, 7) == 0 && nand_program(n, 7 * g.ppb, data, oob) == 0,
		"block 7 is good");
	T_CHECK(nand_erase(n, 8) == -NAND_EFAIL, "block 8 fails");

	/* a bad block fails every program and erase */
	nand_set_fault_model(n, NULL, 0);
	nand_set_block(n, 6, 0, 0);
	nand_mark_bad(n, 6, true);
	T_CHECK(nand_is_bad(n, 6) && nand_program(n, 6 * g.ppb, data, oob) == -NAND_EFAIL &&
		nand_erase(n, 6) == -NAND_EFAIL, "bad block");
	nand_destroy(n);
	return t_result();
}
