/* SPDX-License-Identifier: MIT */
/*
 * Bad blocks: the table on the medium (two copies in the superblock area,
 * see ftl-format.h and docs/image-format.md), factory bad blocks drawn at
 * create, blocks going bad in use (a program or erase failed, or a page
 * could not be read back: ftl_retire_block in ftl_append.c takes them out
 * of their stream, the table here records them; ftl_maint.c moves their
 * valid pages), and the spare budget: when more blocks have gone bad than
 * the spare area can absorb, the device turns read-only (every flushed
 * sector stays readable).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"

static const uint32_t bbt_off[2] = { FTL_BBT_OFF0, FTL_BBT_OFF1 };

/* Bad blocks the spare area absorbs: the data blocks beyond the logical
 * size, less GC's reserve, one open block per stream and two blocks of
 * slack so that GC always finds a victim with room to gain. */
static uint32_t bb_limit(const struct ftl_geom *g)
{
	uint32_t need = (g->nlpn + g->ppb - 1) / g->ppb + FTL_GC_RESERVE +
			FTL_NSTREAMS + 2;
	uint32_t lim = g->data_blocks > need ? g->data_blocks - need : 0;

	return lim < FTL_BBT_MAX ? lim : (uint32_t)FTL_BBT_MAX;
}

static uint32_t tab_crc(const struct ftl_bbt_hdr *h, const uint32_t *e)
{
	struct ftl_bbt_hdr t = *h;

	t.crc = 0;
	return oct_crc32c(oct_crc32c(0, &t, sizeof(t)), e,
			  (size_t)h->count * 4);
}

/* One copy of the current table into @buf (FTL_BBT_BYTES). */
static void encode(struct ftl *f, uint64_t gen, uint8_t *buf)
{
	struct ftl_bbt_hdr *h = (struct ftl_bbt_hdr *)buf;

	memset(buf, 0, FTL_BBT_BYTES);
	memcpy(h->magic, FTL_BBT_MAGIC, 8);
	h->version = FTL_BBT_VERSION;
	h->hdr_size = sizeof(*h);
	h->gen = gen;
	h->nblocks = f->g.nblocks;
	h->count = f->bb.n;
	h->limit = f->bb.limit;
	h->flags = f->bb.worn_out ? FTL_BBT_RDONLY : 0;
	memcpy(h->uuid, f->sb.uuid, 16);
	memcpy(buf + sizeof(*h), f->bb.tab, (size_t)f->bb.n * 4);
	h->crc = tab_crc(h, (const uint32_t *)(buf + sizeof(*h)));
}

/* Both copies into a superblock area being created (generation 1). */
void ftl_bbt_encode(struct ftl *f, uint8_t *area)
{
	f->bb.gen = 1;
	encode(f, 1, area + FTL_BBT_OFF0);
	encode(f, 1, area + FTL_BBT_OFF1);
}

/* Check one copy; 0 valid, 1 all zero, -EBADMSG damaged. */
static int check_copy(struct ftl *f, const uint8_t *p)
{
	const struct ftl_bbt_hdr *h = (const struct ftl_bbt_hdr *)p;
	const uint32_t *e = (const uint32_t *)(p + sizeof(*h));
	bool zero = true;

	for (uint32_t i = 0; i < FTL_BBT_BYTES && zero; i++)
		zero = !p[i];
	if (zero)
		return 1;
	if (memcmp(h->magic, FTL_BBT_MAGIC, 8) || h->version != FTL_BBT_VERSION ||
	    h->hdr_size != sizeof(*h) || h->count > FTL_BBT_MAX ||
	    tab_crc(h, e) != h->crc || h->nblocks != f->g.nblocks ||
	    h->limit != bb_limit(&f->g) || (h->flags & ~FTL_BBT_RDONLY) ||
	    h->pad || memcmp(h->uuid, f->sb.uuid, 16) || !h->gen ||
	    h->gen >= FTL_BBT_GEN_MAX)
		return -EBADMSG;
	for (uint32_t i = 0; i < h->count; i++) {
		uint32_t b = e[i] & ~FTL_BBT_GROWN;

		if (b < f->g.ckpt_blocks || b >= f->g.nblocks)
			return -EBADMSG;
		for (uint32_t j = 0; j < i; j++)
			if ((e[j] & ~FTL_BBT_GROWN) == b)
				return -EBADMSG;
	}
	return 0;
}

/* More bad blocks than the spares absorb (or a full table): the one
 * reason for the read-only flag, and a fact of the table itself, so a
 * flag set without it (by an engine that took a full backing for used-up
 * spares) is known unjustified (fsck; ftl_bb_clear_ro). */
static bool spares_gone(const struct ftl *f)
{
	return f->bb.n > f->bb.limit || f->bb.n >= FTL_BBT_MAX;
}

/* Load the newest valid copy from the superblock area (OCT_SB_AREA bytes):
 * 0, or -EBADMSG when a table exists and no copy of it is valid. */
int ftl_bbt_load(struct ftl *f, const uint8_t *area)
{
	const struct ftl_bbt_hdr *best = NULL;
	int st[2];

	f->bb.limit = bb_limit(&f->g);
	f->bb.n = 0;
	f->bb.gen = 0;
	for (int i = 0; i < 2; i++) {
		const struct ftl_bbt_hdr *h =
			(const struct ftl_bbt_hdr *)(area + bbt_off[i]);

		st[i] = check_copy(f, area + bbt_off[i]);
		if (!st[i] && (!best || h->gen > best->gen))
			best = h;
	}
	if (!best)
		return st[0] == 1 && st[1] == 1 ? 0 : -EBADMSG;
	f->bb.n = best->count;
	f->bb.gen = best->gen;
	memcpy(f->bb.tab, best + 1, (size_t)best->count * 4);
	f->bb.worn_out = (best->flags & FTL_BBT_RDONLY) || spares_gone(f);
	return 0;
}

/* The table says read-only although the spares still absorb its bad
 * blocks (engines up to 3c48226 took a full backing during GC for used-up
 * spares and wrote the flag).  The engine keeps it (writes fail EROFS)
 * until fsck --repair clears it. */
bool ftl_bb_ro_unjustified(const struct ftl *f)
{
	return f->bb.worn_out && !spares_gone(f);
}

/* Write the table (the copy not holding the newest generation), flush. */
static int store(struct ftl *f)
{
	struct nand_backing *b = nand_backing(f->nand);
	uint8_t buf[FTL_BBT_BYTES];
	uint64_t gen = f->bb.gen + 1;
	int r;

	if (gen >= FTL_BBT_GEN_MAX)
		return -EOVERFLOW;      /* never write one a load refuses */
	encode(f, gen, buf);
	r = b->ops->pwrite(b, buf, sizeof(buf), bbt_off[gen & 1]);
	if (!r)
		r = b->ops->sync(b);
	if (!r)
		f->bb.gen = gen;
	return r;
}

/* Write the table if the mount changed it (read-write opens). */
int ftl_bb_sync(struct ftl *f)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	if (!f->bb.dirty || f->readonly)
		return 0;
	r = store(f);
	if (!r)
		f->bb.dirty = false;
	return r;
}

/* Is @blk in the table (and did it go bad in use)? */
bool ftl_bb_is(const struct ftl *f, uint32_t blk, bool *grown)
{
	for (uint32_t i = 0; i < f->bb.n; i++)
		if ((f->bb.tab[i] & ~FTL_BBT_GROWN) == blk) {
			if (grown)
				*grown = f->bb.tab[i] & FTL_BBT_GROWN;
			return true;
		}
	return false;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static bool factory_bad(uint32_t b, double rate, uint64_t seed)
{
	return (double)(mix(seed ^ mix(b)) >> 11) * 0x1p-53 < rate;
}

/* Would the draw of ftl_bb_factory() fit the spares?  0, -EINVAL (rate),
 * -ENOSPC (too many): create checks before it touches anything. */
int ftl_bb_factory_check(const struct ftl_geom *g, double rate, uint64_t seed)
{
	uint32_t n = 0;

	if (!(rate >= 0 && rate < 1))
		return -EINVAL;
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks && rate > 0; b++)
		n += factory_bad(b, rate, seed);
	return n > bb_limit(g) ? -ENOSPC : 0;
}

/* Create: each data block is factory-bad with probability @rate (drawn
 * from @seed).  -ENOSPC when more than the spares absorb. */
int ftl_bb_factory(struct ftl *f, double rate, uint64_t seed)
{
	f->bb.limit = bb_limit(&f->g);
	if (!(rate >= 0 && rate < 1))
		return -EINVAL;
	for (uint32_t b = f->g.ckpt_blocks; b < f->g.nblocks && rate > 0; b++) {
		if (!factory_bad(b, rate, seed))
			continue;
		if (f->bb.n >= f->bb.limit)
			return -ENOSPC;
		f->bb.tab[f->bb.n++] = b;
		f->idx.state[b] = FTL_BLK_BAD;
		nand_mark_bad(f->nand, b, true);
	}
	return 0;
}

/* fsck --repair of a table with no valid copy: zero both copies (= no
 * table); the next open rebuilds it from the checkpoint's block states. */
int ftl_bbt_reset(struct nand_backing *b)
{
	static const uint8_t zero[FTL_BBT_BYTES];
	int r = 0;

	for (int i = 0; i < 2 && !r; i++)
		r = b->ops->pwrite(b, zero, sizeof(zero), bbt_off[i]);
	return r ? r : b->ops->sync(b);
}

/* Mount: the table overrides what checkpoint and recovery say; a block
 * the checkpoint knows as bad but the table does not (a torn or reset
 * table) joins the table (written by ftl_bb_sync on a read-write open). */
void ftl_bb_apply(struct ftl *f)
{
	for (uint32_t b = f->g.ckpt_blocks; b < f->g.nblocks; b++) {
		if (f->idx.state[b] != FTL_BLK_BAD || ftl_bb_is(f, b, NULL))
			continue;
		if (f->bb.n < FTL_BBT_MAX) {
			f->bb.tab[f->bb.n++] = b | FTL_BBT_GROWN;
			f->bb.dirty = true;
		} else {
			f->idx.state[b] = FTL_BLK_FULL;     /* no room: not bad */
		}
	}
	if (spares_gone(f))
		f->bb.worn_out = true;
	else if (f->bb.worn_out)
		fprintf(stderr, "ublk-flash: the bad-block table says read-only "
			"with %u bad blocks (the spare area absorbs %u): not "
			"justified, fsck --repair clears it\n", f->bb.n,
			f->bb.limit);
	for (uint32_t i = 0; i < f->bb.n; i++) {
		uint32_t b = f->bb.tab[i] & ~FTL_BBT_GROWN;

		f->idx.state[b] = FTL_BLK_BAD;
		f->log.fdirty[b] = 0;
		nand_mark_bad(f->nand, b, true);
		for (unsigned s = 0; s < FTL_NFRONT; s++)
			if (f->log.st[s].blk == b)
				f->log.st[s].blk = FTL_NONE;
	}
	f->maint.retire_scan = f->bb.n > 0;
	f->maint.retire_next = f->g.ckpt_blocks;
}

void ftl_bb_relimit(struct ftl *f)
{
	f->bb.limit = bb_limit(&f->g);
}

/* Write the table; a failure is said in the log. */
static int store_logged(struct ftl *f)
{
	int r = store(f);

	if (r)
		fprintf(stderr, "ublk-flash: writing the bad-block table "
			"failed: %s\n", strerror(-r));
	return r;
}

/* The spares are used up (spares_gone): read-only from now on, persisted
 * in the table, said once in the log. */
static int worn_out(struct ftl *f)
{
	__atomic_store_n(&f->bb.worn_out, true, __ATOMIC_RELEASE);
	if (f->bb.ro_fn)
		f->bb.ro_fn(f->bb.ro_ctx); /* a frontend tells the kernel */
	fprintf(stderr, "ublk-flash: %u bad blocks, more than the spare area "
		"absorbs (%u): the device is read-only from now on (all "
		"written data stays readable)\n", f->bb.n, f->bb.limit);
	return store_logged(f);
}

/* fsck --repair (read-write open, f->lock held): clear a read-only flag
 * the table does not justify (ftl_bb_ro_unjustified); 0 when there is
 * none, 1 cleared, or -errno writing the table. */
int ftl_bb_clear_ro(struct ftl *f)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	if (!ftl_bb_ro_unjustified(f) || f->readonly)
		return 0;
	f->bb.worn_out = false;
	r = store_logged(f);
	if (r) {
		f->bb.worn_out = true;
		return r;
	}
	return 1;
}

/*
 * Block @blk went bad in use (f->lock held; ftl_retire_block, which also
 * takes it out of its stream): it goes into the table (written and flushed
 * before anything else happens) and leaves the free list; its valid pages
 * are moved by ftl_retire_move() (ftl_maint.c) from ftl_balance().  Past
 * the spare budget the device turns read-only.  -EIO: not a data block.
 */
int ftl_bb_grown(struct ftl *f, uint32_t blk, const char *why)
{
	FTL_ASSERT_HELD(&f->lock);
	if (blk < f->g.ckpt_blocks || blk >= f->g.nblocks)
		return -EIO;
	ftl_free_drop(f, blk);
	ftl_set_state(f, blk, FTL_BLK_BAD);
	nand_mark_bad(f->nand, blk, true);
	ftl_retire_note(f, blk);
	if (ftl_bb_is(f, blk, NULL))
		return 0;
	if (nand_block_ec(f->nand, blk) >= NAND_EC_MAX)
		why = "worn out: erase count at NAND_EC_MAX";
	fprintf(stderr, "ublk-flash: block %u retired (%s), %u of %u spare "
		"blocks used\n", blk, why, f->bb.n + 1, f->bb.limit);
	if (f->bb.n < FTL_BBT_MAX)
		f->bb.tab[f->bb.n++] = blk | FTL_BBT_GROWN;
	if (spares_gone(f) && !f->bb.worn_out)
		return worn_out(f);
	return store_logged(f);
}

bool ftl_read_only(struct ftl *f)
{
	return f->readonly || __atomic_load_n(&f->bb.worn_out, __ATOMIC_ACQUIRE);
}

bool ftl_on_read_only(struct ftl *f, void (*fn)(void *ctx), void *ctx)
{
	bool worn;

	ftl_lock(&f->lock);
	worn = f->bb.worn_out;
	f->bb.ro_fn = worn ? NULL : fn;
	f->bb.ro_ctx = ctx;
	ftl_unlock(&f->lock);
	return worn;
}

void ftl_bb_stats(struct ftl *f, struct ftl_stats *st)
{
	for (uint32_t i = 0; i < f->bb.n; i++) {
		if (f->bb.tab[i] & FTL_BBT_GROWN)
			st->bad_blocks_grown++;
		else
			st->bad_blocks_factory++;
	}
	st->bad_block_limit = f->bb.limit;
	st->read_only = f->bb.worn_out;
}
