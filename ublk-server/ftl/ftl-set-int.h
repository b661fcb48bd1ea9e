/* SPDX-License-Identifier: MIT */
/* Inside the set (ftl_set*.c): its state and the header's helpers. */
#ifndef OCTANT_FTL_SET_INT_H
#define OCTANT_FTL_SET_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ftl-set-format.h"
#include "ftl-set.h"

#define FTL_SET_ROUND_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define FTL_SET_DIV_UP(x, a)   (((x) + (a) - 1) / (a))

struct ftl_set {
	struct nand_backing *b;      /* the image, owned */
	struct ftl *part[FTL_SET_MAX_PARTS]; /* nparts engines, each owning
	                                its window of b */
	unsigned nparts;             /* 1 (a plain image) .. MAX_PARTS */
	uint64_t stripe;             /* bytes, a power of two; a plain
	                                image: 2^62 (no cut) */
	unsigned stripe_log;         /* log2(stripe) */
	uint64_t shift;              /* 512 odd set, else 0: flash byte y =
	                                logical byte + shift */
	uint64_t size;               /* exported bytes */
	enum ftl_align_mode align;
	int fd;                      /* a set opened by path: the image's
	                                descriptor holding its lock (flock),
	                                else -1 (a plain image's is its
	                                engine's) */
	bool readonly;               /* opened read-only */
	struct nand_fault_spec faults[FTL_SET_MAX_PARTS]; /* each part's
	                                fault model (ftl_set_part_open_opts),
	                                as long as the part: its engine keeps
	                                the open options */
};

/* Fill @s as a plain image, one part: part[0] is open already. */
int ftl_set_plain_fill(struct ftl_set *s);

/* Stripes of the set's flash byte space part @i owns (at least one): its
 * engine's logical size is that times the stripe. */
uint64_t ftl_set_part_stripes(const struct ftl_set_hdr *h, unsigned i);

/* Is header @h (crc already checked) sound for a backing of @bsize bytes
 * (UINT64_MAX: unknown)?  0 or -EBADMSG. */
int ftl_set_hdr_check(const struct ftl_set_hdr *h, uint64_t bsize);
/* Seal @h: hdr_size, version, magic, crc. */
void ftl_set_hdr_seal(struct ftl_set_hdr *h);
/* Read the header of the image on @b (@bsize bytes, UINT64_MAX unknown):
 * 1 and *@h, the first valid copy; 0 no copy says FTL_SET_MAGIC (a plain
 * engine image, or nothing); -EBADMSG / -EPROTONOSUPPORT (ftl-set.h).
 * With 1, *@bad (unless NULL): a bit per copy that is not the same valid
 * header (damaged, torn, missing), to report (fsck) and mend; a copy of
 * another version (a newer tool's) is not counted. */
int ftl_set_hdr_load(struct nand_backing *b, uint64_t bsize,
		     struct ftl_set_hdr *h, int *bad);
/* Write @h over the copies in @bad, then sync (a writer's open, fsck
 * --repair); with @say, one line a copy on stderr.  0 or -errno. */
int ftl_set_hdr_mend(struct nand_backing *b, const struct ftl_set_hdr *h,
		     int bad, bool say);
/* Fill @h's geometry for create options @c, @nparts, @stripe (0: the
 * default): every field but magic, version, crc, uuid and time. */
int ftl_set_hdr_layout(const struct ftl_create_opts *c, unsigned nparts,
		       uint64_t stripe, struct ftl_set_hdr *h);
/* The create options of part @i of the set laid out in @h. */
struct ftl_create_opts ftl_set_part_opts(const struct ftl_create_opts *c,
					 const struct ftl_set_hdr *h,
					 unsigned i);
/* The open options of part @i: @o's, with a fault model (o->faults)
 * drawing from seed + i (as factory bad blocks do at create: part 0 gets
 * the set's seed, and each part its own faults); *@spec holds that
 * model and must outlive the part (the engine keeps the options).  The
 * seed printed by serve replays every part. */
struct ftl_open_opts ftl_set_part_open_opts(const struct ftl_open_opts *o,
					    unsigned i,
					    struct nand_fault_spec *spec);

#endif
