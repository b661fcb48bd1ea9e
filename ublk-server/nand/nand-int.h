/* SPDX-License-Identifier: MIT */
/* Between nand.c and nand_fault.c.  Not a public API. */
#ifndef OCTANT_NAND_INT_H
#define OCTANT_NAND_INT_H

#include "nand.h"

struct nand_fm;

int nand_fm_create(const struct nand_fault_spec *s, const struct nand_geom *g,
		   struct nand_fm **out);
void nand_fm_destroy(struct nand_fm *m);
/* Should this program / erase fail? */
bool nand_fm_program_fails(struct nand_fm *m, uint64_t ppn);
bool nand_fm_erase_fails(struct nand_fm *m, uint32_t blk);
/* Pass a read of [off, off+len) of page @ppn (block erase count @ec)
 * through the ECC: 0, or -EBADMSG with bits flipped in @buf. */
int nand_fm_read(struct nand_fm *m, uint64_t ppn, uint32_t ec, uint32_t off,
		 void *buf, uint32_t len, struct nand_ecc *e);
int nand_fm_inject(struct nand_fm *m, uint64_t ppn, uint32_t cw,
		   uint32_t bits);
void nand_fm_erased(struct nand_fm *m, uint32_t blk);
uint32_t nand_fm_cw(const struct nand_fm *m);
uint32_t nand_fm_ecc(const struct nand_fm *m);

#endif
