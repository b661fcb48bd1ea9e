/* SPDX-License-Identifier: MIT */
/*
 * nand fault model: how the emulated NAND fails, seeded and reproducible.
 * A spec string "program=P,erase=P,bitflip=RATE,seed=N[,ecc=BITS][,cw=BYTES]"
 * sets
 *   program  probability that a page program fails (status FAIL: the page
 *            is consumed, nothing readable is written, -NAND_EFAIL)
 *   erase    probability that a block erase fails (block left as it was,
 *            -NAND_EFAIL)
 *   bitflip  raw bit-error rate (per bit per read) of a fresh block; it
 *            grows with the block's erase count ec as
 *            rber(ec) = bitflip * (1 + ec / 1000)^2
 *   seed     the seed of every random draw (same seed + same operations
 *            = same faults)
 *   ecc      bits the ECC corrects per codeword (default 8)
 *   cw       codeword size, bytes (default 512; divides the page)
 * Each read draws the raw bit errors of every codeword it touches
 * (Poisson, mean rber * 8 * cw), adds errors injected with
 * nand_fault_inject_bits() (persistent until the block is erased): up to
 * ecc bits are corrected (counted), more make the codeword uncorrectable
 * (the read fails with -EBADMSG and reports which codewords).
 * Blocks marked bad with nand_mark_bad() fail every program and erase.
 * See docs/engine.md for the sources of the model.
 */
#ifndef OCTANT_NAND_FAULT_H
#define OCTANT_NAND_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NAND_FAULT_ECC_DEFAULT 8u
#define NAND_FAULT_CW_DEFAULT  512u
#define NAND_FAULT_EC_SCALE    1000.0   /* rber(ec) = bitflip*(1+ec/this)^2 */

struct nand_fault_spec {
	double program_p, erase_p, bitflip;
	uint64_t seed;
	bool seed_set;                /* seed= given (else the caller draws) */
	uint32_t ecc_bits, cw;        /* 0: defaults */
};

/* Parse @spec into @out.  On error returns -EINVAL and writes a one-line
 * reason into @err (@errlen bytes). */
int nand_fault_parse(const char *spec, struct nand_fault_spec *out,
		     char *err, size_t errlen);
/* Print @s back as a spec string (with defaults filled in). */
int nand_fault_format(const struct nand_fault_spec *s, char *buf, size_t len);

/* Result of one read through the ECC. */
struct nand_ecc {
	uint32_t corrected;           /* bits corrected, all codewords */
	uint32_t max_corrected;       /* most bits corrected in one codeword */
	uint64_t bad_cw;              /* bit i: codeword i of the page failed */
};

#endif /* OCTANT_NAND_FAULT_H */
