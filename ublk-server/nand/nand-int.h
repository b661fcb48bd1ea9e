/* SPDX-License-Identifier: MIT */
/* Between nand.c, nand_fault.c and nand_guard.c.  Not a public API. */
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
/* Run @fn(@ctx), a copy from or to a file mapping, with a SIGBUS at an
 * address in [@lo, @lo + @len) taken as the copy's failure: 0 when @fn
 * ran to its end, -EFAULT when it faulted (abandoned where it was), else
 * -errno without running it (no guard slot free, the handler could not be
 * installed).  Only memcpy-like work in @fn: no locks, no allocation. */
int nand_guarded(const void *lo, size_t len, void (*fn)(void *ctx),
		 void *ctx);
uint32_t nand_fm_cw(const struct nand_fm *m);
uint32_t nand_fm_ecc(const struct nand_fm *m);

#endif
