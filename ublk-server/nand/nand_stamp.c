/* SPDX-License-Identifier: MIT */
/*
 * Erase stamps (oob_stamp; see nand.h).
 *
 * The last NAND_STAMP_SIZE bytes of each page's OOB slot: a program stamp
 * (the block's generation when the page was programmed) or, in page 0
 * only, an erase stamp (the generation the erase started).  A block's
 * current generation is page 0's stamp (0 when it holds none: a block
 * never erased since the image was created).  A page's OOB is current
 * when it holds a program stamp of the current generation; every other
 * OOB reads as erased (zeroes), as the zeroing erase left it.
 *
 * Why a stale page can never pass for current: an erase takes a generation
 * above every stamp in the block (gmax, read from the medium once when not
 * known yet) and above its erase count, and writes it into page 0, so a
 * page programmed before the erase carries a lower one; programs after it
 * carry the new one.  So nothing older than the erase matches page 0.
 * Power cuts (any in-order subset of the writes since the last sync, one
 * torn at 512-byte sectors; an OOB never crosses a sector,
 * nand_stamp_geom_ok, so an OOB is all old or all new):
 *  - the erase stamp lost, page 0's program kept: page 0 carries the new
 *    generation, the stale pages stay hidden;
 *  - the erase stamp kept, page 0's program lost: page 0 is an erase stamp
 *    (its OOB reads zero, as the zeroing erase left it), later pages of the
 *    new generation still count (the FTL ignores a block whose page 0 is
 *    blank, and checks it before reuse, as before);
 *  - both lost: page 0 still holds the old generation: the old pages show
 *    as they would had the zeroing writes been lost, those of the new
 *    generation are hidden; none of them was flushed (a page programmed
 *    after an unflushed write to page 0 was not flushed either).
 * In every case a later erase still goes above every stamp left in the
 * block (gmax is read from the medium, never taken from the checkpoint).
 */
#include <stddef.h>
#include <string.h>

#include "crc32c.h"
#include "nand-int.h"

#define STAMP_MAGIC   0x5347u   /* "GS" */
#define STAMP_VERSION 1u

struct nand_stamp {
	uint32_t gen;         /* the block's generation */
	uint16_t magic;       /* STAMP_MAGIC */
	uint8_t  version;     /* STAMP_VERSION */
	uint8_t  kind;        /* STAMP_PROG / STAMP_ERASE */
	uint32_t ppn;         /* the page it belongs to */
	uint32_t crc;         /* crc32c of the 12 bytes before */
} __attribute__((packed));
_Static_assert(sizeof(struct nand_stamp) == NAND_STAMP_SIZE, "stamp size");

/* Stamps need an OOB that no 512-byte sector boundary cuts (a torn write
 * then leaves each OOB old or new, never an old record under a new stamp):
 * a power of two up to 512 bytes, page size and flash offset multiples of
 * 512, room for a record before the stamp. */
bool nand_stamp_geom_ok(const struct nand_geom *g)
{
	uint32_t o = g->oob_size;

	return g->oob_inline && o >= 2 * NAND_STAMP_SIZE && o <= 512 &&
	       !(o & (o - 1)) && g->page_size % 512 == 0 &&
	       g->flash_off % 512 == 0;
}

/* Write the stamp of page @ppn into @tail (NAND_STAMP_SIZE bytes). */
void nand_stamp_fill(uint8_t *tail, uint64_t ppn, uint8_t kind,
		     uint32_t gen)
{
	struct nand_stamp s = { .gen = gen, .magic = STAMP_MAGIC,
		.version = STAMP_VERSION, .kind = kind, .ppn = (uint32_t)ppn };

	s.crc = oct_crc32c(0, &s, offsetof(struct nand_stamp, crc));
	memcpy(tail, &s, sizeof(s));
}

void nand_stamp_put(const struct nand *n, uint8_t *oob, uint64_t ppn,
		    uint8_t kind, uint32_t gen)
{
	nand_stamp_fill(oob + n->g.oob_size - NAND_STAMP_SIZE, ppn, kind, gen);
}

/* The kind of stamp in @oob, page @ppn's (0: none) and its generation. */
static int stamp_get(const struct nand *n, uint64_t ppn, const uint8_t *oob,
		     uint32_t *gen)
{
	struct nand_stamp s;

	memcpy(&s, oob + n->g.oob_size - NAND_STAMP_SIZE, sizeof(s));
	if (s.magic != STAMP_MAGIC || s.version != STAMP_VERSION ||
	    s.ppn != (uint32_t)ppn || s.gen > NAND_EC_MAX ||
	    s.crc != oct_crc32c(0, &s, offsetof(struct nand_stamp, crc)))
		return 0;       /* above the ceiling: damaged or forged */
	if (s.kind != STAMP_PROG &&
	    (s.kind != STAMP_ERASE || ppn % n->g.ppb))
		return 0;
	*gen = s.gen;
	return s.kind;
}

/* Block @blk's generation as page 0's OOB @oob0 says. */
static uint32_t page0_gen(const struct nand *n, uint32_t blk,
			  const uint8_t *oob0)
{
	uint32_t gen = 0;

	return stamp_get(n, (uint64_t)blk * n->g.ppb, oob0, &gen) ? gen : 0;
}

/* Remember what the medium says, unless the nand knows already (a program
 * or an erase of this nand stores, it never loses to a reader). */
static void gen_learn(struct nand *n, uint32_t blk, uint32_t gen)
{
	uint64_t exp = 0;

	__atomic_compare_exchange_n(&n->gcur[blk], &exp, GEN_KNOWN | gen,
				    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void nand_gen_set(struct nand *n, uint32_t blk, uint32_t gen)
{
	__atomic_store_n(&n->gcur[blk], GEN_KNOWN | gen, __ATOMIC_RELEASE);
	__atomic_store_n(&n->gmax[blk], GEN_KNOWN | gen, __ATOMIC_RELEASE);
}

/* Block @blk's current generation: known, or read from page 0's OOB (one
 * small read, once). */
int nand_cur_gen(struct nand *n, uint32_t blk, uint32_t *gen)
{
	uint64_t v = __atomic_load_n(&n->gcur[blk], __ATOMIC_ACQUIRE);
	uint8_t oob[512];
	int r;

	if (!(v & GEN_KNOWN)) {
		r = bk_pread(n, oob, n->g.oob_size,
			     oob_at(n, (uint64_t)blk * n->g.ppb));
		if (r)
			return r;
		gen_learn(n, blk, page0_gen(n, blk, oob));
		v = __atomic_load_n(&n->gcur[blk], __ATOMIC_ACQUIRE);
	}
	*gen = (uint32_t)v;
	return 0;
}

/* The OOB of page @ppn as handed out (block generation @gen): the record
 * when its page carries a program stamp of @gen (the stamp bytes read
 * zero), else all zero. */
static void stamp_view(const struct nand *n, uint64_t ppn, uint8_t *oob,
		       uint32_t gen)
{
	uint32_t os = n->g.oob_size, g;

	if (stamp_get(n, ppn, oob, &g) == STAMP_PROG && g == gen)
		memset(oob + os - NAND_STAMP_SIZE, 0, NAND_STAMP_SIZE);
	else
		memset(oob, 0, os);
}

/* @count raw OOBs of block @blk from page @pg in @buf: learn what they say
 * (page 0's generation; the highest stamp when they are the whole block),
 * then turn them into the view handed out. */
int nand_stamp_view_pages(struct nand *n, uint32_t blk, uint32_t pg,
			  uint32_t count, uint8_t *buf)
{
	uint32_t os = n->g.oob_size, gen, mx = 0, g2;
	uint64_t first = (uint64_t)blk * n->g.ppb;
	int r;

	if (!pg)
		gen_learn(n, blk, page0_gen(n, blk, buf));
	if (!pg && count == n->g.ppb) {
		for (uint32_t i = 0; i < count; i++)
			if (stamp_get(n, first + i, buf + (size_t)i * os, &g2) &&
			    g2 > mx)
				mx = g2;
		uint64_t exp = 0;

		__atomic_compare_exchange_n(&n->gmax[blk], &exp, GEN_KNOWN | mx,
					    false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
	r = nand_cur_gen(n, blk, &gen);
	if (r)
		return r;
	for (uint32_t i = 0; i < count; i++)
		stamp_view(n, first + pg + i, buf + (size_t)i * os, gen);
	return 0;
}
