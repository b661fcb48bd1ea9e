/* SPDX-License-Identifier: MIT */
/* Geometry, superblock encode/decode/validate, OOB records, the blank
 * checkpoint payload page. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/*
 * Derive the whole layout from the create parameters.  -EINVAL when they
 * are out of range.  Layout: superblock area, then the flash (checkpoint
 * slots first, then data blocks) with each page's OOB right after its data
 * (OCT_SB_F_OOB_INLINE; ftl_geom_layout() gives the older one: flash, then
 * an OOB area).
 */
int ftl_geom_compute(struct ftl_geom *g, uint64_t size, enum ftl_align_mode a,
		     uint32_t ps, uint32_t ppb, uint32_t oob, uint32_t op)
{
	uint64_t t, nblk;
	int r;

	memset(g, 0, sizeof(*g));
	if (a != FTL_ALIGN_ODD && a != FTL_ALIGN_1M)
		return -EINVAL;
	if (ps != 4096 && ps != 8192 && ps != 16384)
		return -EINVAL;
	if (!pow2(ppb) || ppb < 4 || ppb > 1024)
		return -EINVAL;
	if (oob < sizeof(struct ftl_oob) || oob > 1024 || oob % 8)
		return -EINVAL;
	if (op < 10 || op > 10000)
		return -EINVAL;
	if (!size || size % FTL_SECTOR || size > (1ull << 50))
		return -EINVAL;
	g->align = a;
	g->shift = a == FTL_ALIGN_ODD ? 512 : 0;
	g->size = size;
	g->ps = ps;
	g->ppb = ppb;
	g->oob = oob;
	g->op = op;
	g->pe_cycles = FTL_PE_DEFAULT;
	t = div_up(size + g->shift, ps);
	if (t >= FTL_UNMAPPED / 2)
		return -EINVAL;
	g->nlpn = (uint32_t)t;
	t = div_up((uint64_t)g->nlpn * (1000 + op), 1000);
	nblk = div_up(t, ppb);
	if (nblk < div_up(g->nlpn, ppb) + FTL_MIN_SPARE)
		nblk = div_up(g->nlpn, ppb) + FTL_MIN_SPARE;
	g->data_blocks = (uint32_t)nblk;
	g->flash_off = div_up(OCT_SB_AREA, ps) * ps;
	g->oob_inline = true;
	r = ftl_geom_ckpt(g, true);
	g->oob_stamp = !r && ftl_geom_stamp_ok(g);
	g->flush_sum = oob >= FTL_OOB_FLUSH_MIN;
	g->ckpt_open = true;
	return r;
}

/*
 * Size the checkpoint slots: base (header, payload, marker page), plus
 * FTL_CKPT_DELTA_K x the payload for delta records with @delta
 * (OCT_SB_F_CKPT_DELTA).  Sets nblocks and image_size, keeps the layout.
 */
int ftl_geom_ckpt(struct ftl_geom *g, bool delta)
{
	uint64_t payload, slot;

	g->ckpt_delta = delta;
	g->ckpt_blocks = 0;
	/* the block table covers the checkpoint blocks too: iterate */
	for (int i = 0; i < 3; i++) {
		payload = (uint64_t)g->nlpn * 4 +
			  (uint64_t)(g->data_blocks + g->ckpt_blocks) *
			  sizeof(struct ftl_ckpt_blk);
		g->payload_pages = (uint32_t)div_up(payload, g->ps);
		slot = g->payload_pages + 2ull +
		       (delta ? (uint64_t)FTL_CKPT_DELTA_K * g->payload_pages : 0);
		if (slot > UINT32_MAX / FTL_CKPT_SLOTS)
			return -EINVAL;
		g->slot_blocks = (uint32_t)div_up(slot, g->ppb);
		g->ckpt_blocks = FTL_CKPT_SLOTS * g->slot_blocks;
	}
	if (g->room > g->size) {        /* slots of the size it may grow to */
		struct ftl_geom t;

		if (ftl_geom_compute(&t, g->room, g->align, g->ps, g->ppb,
				     g->oob, g->op) || ftl_geom_ckpt(&t, delta))
			return -EINVAL;
		if (t.slot_blocks > g->slot_blocks) {
			g->slot_blocks = t.slot_blocks;
			g->ckpt_blocks = t.ckpt_blocks;
			payload = (uint64_t)g->nlpn * 4 +
				  (uint64_t)(g->data_blocks + g->ckpt_blocks) *
				  sizeof(struct ftl_ckpt_blk);
			g->payload_pages = (uint32_t)div_up(payload, g->ps);
		}
	}
	if ((uint64_t)g->data_blocks + g->ckpt_blocks > UINT32_MAX / g->ppb)
		return -EINVAL;
	g->nblocks = g->data_blocks + g->ckpt_blocks;
	g->image_size = g->flash_off +
			(uint64_t)g->nblocks * g->ppb * (g->ps + g->oob);
	ftl_geom_layout(g, g->oob_inline);
	return 0;
}

/* The geometry @g0 grows to at @size (ftl_grow.c): 0, or -errno (see
 * ftl_grow). */
int ftl_geom_grow(const struct ftl_geom *g0, uint64_t size,
		     struct ftl_geom *g1)
{
	int r;

	if (!size || size % FTL_SECTOR)
		return -EINVAL;
	if (size < g0->size)
		return -ERANGE;
	if (!g0->oob_inline)
		return -EOPNOTSUPP;
	r = ftl_geom_compute(g1, size, g0->align, g0->ps, g0->ppb, g0->oob,
			     g0->op);
	if (r)
		return r;
	g1->room = g0->room > size ? g0->room : 0;
	r = ftl_geom_ckpt(g1, g0->ckpt_delta);
	if (r)
		return r;
	ftl_geom_layout(g1, true);
	g1->oob_stamp = g0->oob_stamp;
	g1->flush_sum = g0->flush_sum;
	g1->ckpt_open = g0->ckpt_open;
	g1->pe_cycles = g0->pe_cycles;
	return g1->ckpt_blocks == g0->ckpt_blocks &&
	       g1->slot_blocks == g0->slot_blocks &&
	       g1->flash_off == g0->flash_off ? 0 : -EFBIG;
}

/* The largest size @g0's checkpoint slots hold (sectors, binary search:
 * the slots needed grow with the size). */
uint64_t ftl_geom_grow_max(const struct ftl_geom *g0)
{
	uint64_t lo = g0->size / FTL_SECTOR, hi = (1ull << 50) / FTL_SECTOR;
	struct ftl_geom t;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (ftl_geom_grow(g0, mid * FTL_SECTOR, &t) == 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo * FTL_SECTOR;
}

/* Is @size bytes of a file (or a block device: @blkdev) right for an image
 * of geometry @g: its size exactly; a device at least that; a file longer
 * by whole erase blocks, at most up to what the image can grow to (a grow
 * cut short before its superblock: ftl_grow.c). */
bool ftl_geom_size_ok(const struct ftl_geom *g, uint64_t size, bool blkdev)
{
	uint64_t blk = (uint64_t)g->ppb * (g->ps + g->oob);
	struct ftl_geom t;

	if (size == g->image_size || (blkdev && size > g->image_size))
		return true;
	if (size < g->image_size || (size - g->image_size) % blk ||
	    !g->oob_inline)
		return false;
	return !ftl_geom_grow(g, ftl_geom_grow_max(g), &t) &&
	       size <= t.image_size;
}

/* The nand geometry of @g. */
struct nand_geom ftl_nand_geom(const struct ftl_geom *g)
{
	return (struct nand_geom){ .page_size = g->ps, .oob_size = g->oob,
		.ppb = g->ppb, .nblocks = g->nblocks,
		.flash_off = g->flash_off, .oob_off = g->oob_off,
		.oob_inline = g->oob_inline, .oob_stamp = g->oob_stamp };
}

/* Can @g's layout carry erase stamps (OCT_SB_F_OOB_STAMP): inline, the
 * nand's rule (no OOB crosses a 512-byte sector), and room for the stamp
 * after the OOB and flush records (FTL_OOB_FLUSH_MIN bytes)? */
bool ftl_geom_stamp_ok(const struct ftl_geom *g)
{
	struct nand_geom ng = ftl_nand_geom(g);

	ng.oob_stamp = true;
	return g->oob >= FTL_OOB_FLUSH_MIN + NAND_STAMP_SIZE &&
	       nand_stamp_geom_ok(&ng);
}

/* Choose the layout (see ftl-int.h). */
void ftl_geom_layout(struct ftl_geom *g, bool oob_inline)
{
	g->oob_inline = oob_inline;
	if (!oob_inline)
		g->oob_stamp = false;
	g->oob_off = g->flash_off + (oob_inline ? g->ps :
				     (uint64_t)g->nblocks * g->ppb * g->ps);
}

/* Fill a superblock for geometry @g (fresh uuid and time). */
int ftl_sb_build(struct oct_sb *sb, const struct ftl_geom *g)
{
	int fd;

	memset(sb, 0, sizeof(*sb));
	memcpy(sb->magic, OCT_SB_MAGIC, 8);
	sb->version = OCT_SB_VERSION;
	sb->sb_size = OCT_SB_SIZE;
	sb->align_mode = g->align == FTL_ALIGN_ODD ? OCT_ALIGN_ODD : OCT_ALIGN_1M;
	sb->align_shift = g->shift;
	sb->logical_size = FTL_SECTOR;
	sb->logical_sectors = g->size / FTL_SECTOR;
	sb->page_size = g->ps;
	sb->oob_size = g->oob;
	sb->pages_per_block = g->ppb;
	sb->nblocks = g->nblocks;
	sb->flash_offset = g->flash_off;
	sb->oob_offset = g->oob_off;
	sb->op_permille = g->op;
	sb->ckpt_blocks = g->ckpt_blocks;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, sb->uuid, 16) != 16) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
		memcpy(sb->uuid, &t, 8);
		memcpy(sb->uuid + 8, &sb, sizeof(void *));
	}
	if (fd >= 0)
		close(fd);
	sb->uuid[6] = (sb->uuid[6] & 0x0f) | 0x40;
	sb->uuid[8] = (sb->uuid[8] & 0x3f) | 0x80;
	sb->create_time = (uint64_t)time(NULL);
	sb->flags = (g->oob_inline ? OCT_SB_F_OOB_INLINE : 0) |
		    (g->ckpt_delta ? OCT_SB_F_CKPT_DELTA : 0) |
		    (g->oob_stamp ? OCT_SB_F_OOB_STAMP : 0) |
		    (g->flush_sum ? OCT_SB_F_FLUSH_SUM : 0) |
		    (g->pi ? OCT_SB_F_PI : 0) |
		    (g->ckpt_open ? OCT_SB_F_CKPT_OPEN : 0);
	sb->pe_cycles = g->pe_cycles;
	sb->ckpt_sectors = g->room > g->size ? g->room / FTL_SECTOR : 0;
	sb->crc = 0;
	sb->crc = oct_crc32c(0, sb, OCT_SB_SIZE);
	return 0;
}

/*
 * Check one superblock copy and derive the geometry: -EBADMSG (bad magic,
 * crc or an inconsistent field), -EPROTONOSUPPORT (another version).
 */
int ftl_sb_decode(const struct oct_sb *in, struct ftl_geom *g)
{
	struct oct_sb sb = *in;
	enum ftl_align_mode a;
	int r = oct_sb_check(&sb);

	if (r)
		return r;
	if (sb.sb_size != OCT_SB_SIZE || sb.logical_size != FTL_SECTOR)
		return -EBADMSG;
	if (sb.align_mode == OCT_ALIGN_ODD && sb.align_shift == 512)
		a = FTL_ALIGN_ODD;
	else if (sb.align_mode == OCT_ALIGN_1M && sb.align_shift == 0)
		a = FTL_ALIGN_1M;
	else
		return -EBADMSG;
	if (sb.logical_sectors > (1ull << 50) / FTL_SECTOR)
		return -EBADMSG;
	if (ftl_geom_compute(g, sb.logical_sectors * FTL_SECTOR, a, sb.page_size,
			     sb.pages_per_block, sb.oob_size, sb.op_permille))
		return -EBADMSG;
	if (sb.flags & ~OCT_SB_F_KNOWN)
		return -EBADMSG;
	if (sb.ckpt_sectors && (sb.ckpt_sectors <= sb.logical_sectors ||
				sb.ckpt_sectors > (1ull << 50) / FTL_SECTOR))
		return -EBADMSG;
	g->room = sb.ckpt_sectors * FTL_SECTOR;
	if (ftl_geom_ckpt(g, sb.flags & OCT_SB_F_CKPT_DELTA))
		return -EBADMSG;
	ftl_geom_layout(g, sb.flags & OCT_SB_F_OOB_INLINE);
	/* stamps: only where they fit (a builder never sets it elsewhere) */
	g->oob_stamp = sb.flags & OCT_SB_F_OOB_STAMP;
	if (g->oob_stamp && !ftl_geom_stamp_ok(g))
		return -EBADMSG;
	/* summaries carry the flush in their flush record: room for it */
	g->flush_sum = sb.flags & OCT_SB_F_FLUSH_SUM;
	if (g->flush_sum && g->oob < FTL_OOB_FLUSH_MIN)
		return -EBADMSG;
	g->pi = sb.flags & OCT_SB_F_PI;
	g->ckpt_open = sb.flags & OCT_SB_F_CKPT_OPEN;
	if (g->pi && !ftl_pi_fits(g))
		return -EBADMSG;
	if (g->nblocks != sb.nblocks || g->flash_off != sb.flash_offset ||
	    g->oob_off != sb.oob_offset || g->ckpt_blocks != sb.ckpt_blocks)
		return -EBADMSG;
	for (size_t i = 0; i < sizeof(sb.reserved); i++)
		if (sb.reserved[i])
			return -EBADMSG;
	if (sb.pe_cycles > FTL_PE_MAX)
		return -EBADMSG;
	if (sb.pe_cycles)       /* else not recorded: the default */
		g->pe_cycles = sb.pe_cycles;
	return 0;
}

/*
 * Pick the superblock from the OCT_SB_AREA bytes at @area: copy 0, else
 * copy 1.  *bad_copies gets a bit per invalid copy.  Returns copy 0's error
 * when neither is valid (unless copy 1 says "other version").
 */
int ftl_sb_load(const uint8_t *area, size_t len, struct oct_sb *sb,
		struct ftl_geom *g, int *bad_copies)
{
	static const size_t where[2] = { 0, OCT_SB_COPY_OFFSET };
	int r, first = -EBADMSG, ok = -1;
	struct ftl_geom tmp;

	*bad_copies = 0;
	for (int i = 0; i < 2; i++) {
		if (where[i] + OCT_SB_SIZE > len) {
			*bad_copies |= 1 << i;
			continue;
		}
		r = ftl_sb_decode((const struct oct_sb *)(area + where[i]), &tmp);
		if (r) {
			*bad_copies |= 1 << i;
			if (i == 0 || (first == -EBADMSG && r != -EBADMSG))
				first = r;
			continue;
		}
		if (ok < 0) {
			ok = i;
			*g = tmp;
			memcpy(sb, area + where[i], sizeof(*sb));
		} else if (memcmp(area + where[i], sb, OCT_SB_SIZE)) {
			*bad_copies |= 1 << i;   /* valid but different */
		}
	}
	return ok < 0 ? first : 0;
}

/* Fill an OOB record (data crc computed over @ps bytes of @data). */
void ftl_oob_fill_crc(struct ftl_oob *o, uint8_t kind, uint16_t stream,
		      uint32_t lpn, uint64_t seq, uint32_t ec,
		      uint32_t data_crc)
{
	o->magic = FTL_OOB_MAGIC;
	o->kind = kind;
	o->version = FTL_FMT_VERSION;
	o->stream = stream;
	o->lpn = lpn;
	o->data_crc = data_crc;
	o->seq = seq;
	o->ec = ec;
	o->crc = 0;
	o->crc = oct_crc32c(0, o, sizeof(*o));
}

void ftl_oob_fill(struct ftl_oob *o, uint8_t kind, uint16_t stream,
		  uint32_t lpn, uint64_t seq, uint32_t ec, const void *data,
		  uint32_t ps)
{
	ftl_oob_fill_crc(o, kind, stream, lpn, seq, ec,
			 data ? oct_crc32c(0, data, ps) : 0);
}

/* The crc of flush record @x (crc 0) after OOB record @o: seeded with the
 * record's crc, and on images with flush summaries with the flash page it
 * belongs to (version 2: a record programmed elsewhere does not check
 * out). */
static uint32_t flush_crc(const struct ftl_geom *g, const struct ftl_oob *o,
			  const struct ftl_oob_flush *x, uint64_t ppn)
{
	uint32_t seed = o->crc, p = (uint32_t)ppn;

	if (g->flush_sum)
		seed = oct_crc32c(seed, &p, sizeof(p));
	return oct_crc32c(seed, x, sizeof(*x));
}

/* Add the flush record after the OOB record @oob (filled) of flash page
 * @ppn, if the OOB area has room. */
void ftl_oob_set_flushed(const struct ftl_geom *g, void *oob, uint64_t ppn,
			 uint64_t flushed)
{
	const struct ftl_oob *o = oob;
	struct ftl_oob_flush x = { .flushed = flushed,
		.magic = FTL_OOB_FLUSH_MAGIC,
		.version = g->flush_sum ? FTL_OOB_FLUSH_VERSION_AT :
					  FTL_OOB_FLUSH_VERSION };

	if (g->oob < FTL_OOB_FLUSH_MIN)
		return;
	x.crc = flush_crc(g, o, &x, ppn);
	memcpy((uint8_t *)oob + sizeof(*o), &x, sizeof(x));
}

/* The flush record of OOB area @oob (whose record is valid) of flash page
 * @ppn: true and its value in *val when it checks out. */
static bool flush_rec(const struct ftl_geom *g, const void *oob, uint64_t ppn,
		      uint64_t *val)
{
	const struct ftl_oob *o = oob;
	struct ftl_oob_flush x;
	uint32_t crc;

	if (g->oob < FTL_OOB_FLUSH_MIN)
		return false;
	memcpy(&x, (const uint8_t *)oob + sizeof(*o), sizeof(x));
	crc = x.crc;
	x.crc = 0;
	*val = x.flushed;
	return x.magic == FTL_OOB_FLUSH_MAGIC && !x.pad &&
	       x.version == (g->flush_sum ? FTL_OOB_FLUSH_VERSION_AT :
					    FTL_OOB_FLUSH_VERSION) &&
	       flush_crc(g, o, &x, ppn) == crc && x.flushed < o->seq;
}

uint64_t ftl_oob_flushed(const struct ftl_geom *g, const void *oob,
			 uint64_t ppn)
{
	uint64_t v;

	return flush_rec(g, oob, ppn, &v) ? v : 0;
}

bool ftl_oob_at(const struct ftl_geom *g, const void *oob, uint64_t ppn)
{
	const struct ftl_oob *o = oob;
	uint64_t v;

	if (!ftl_oob_ok(o))
		return false;
	/* checkpoint pages carry no flush record (their slot page index
	 * and generation place them) */
	if (!g->flush_sum || o->kind == FTL_OOB_CKPT ||
	    o->kind == FTL_OOB_MOUNT)
		return true;
	return flush_rec(g, oob, ppn, &v);
}

/* Is @o a well-formed OOB record (magic, version, crc, every field in
 * its range)? */
bool ftl_oob_ok(const struct ftl_oob *o)
{
	struct ftl_oob t = *o;

	/* a sequence number (or generation) at or past FTL_SEQ_MAX was never
	 * written (ckpt_write refuses first): the record is damaged, however
	 * its crc came out; taken as the newest it wrapped the counter.  So
	 * is an erase count past NAND_EC_MAX (taken as the block's, its next
	 * erase overflowed) and a stream no writer of that kind uses (data, trim
	 * and flush-summary pages: a host or GC stream). */
	if (t.magic != FTL_OOB_MAGIC || t.version != FTL_FMT_VERSION ||
	    t.kind < FTL_OOB_DATA || t.kind > FTL_OOB_FSUM ||
	    t.seq >= FTL_SEQ_MAX || t.ec > NAND_EC_MAX ||
	    (t.kind <= FTL_OOB_TRIM || t.kind == FTL_OOB_FSUM ?
	     t.stream >= FTL_NSTREAMS :
	     t.kind == FTL_OOB_MOUNT ? t.stream != FTL_CKPT_STREAM_BASE :
	     t.stream < FTL_CKPT_STREAM_BASE || t.stream > FTL_CKPT_STREAM_DHDR))
		return false;
	t.crc = 0;
	return oct_crc32c(0, &t, sizeof(t)) == o->crc;
}

/*
 * Payload page @i of an empty engine's checkpoint: map bytes 0xff
 * (FTL_UNMAPPED), block-table and tail bytes 0.  Version 3 leaves payload
 * pages equal to it unprogrammed (blank OOB); a reader takes a payload
 * page with a blank OOB as this, and the payload crc in the header (over
 * every page's content, as before) rejects a checkpoint torn before a page
 * that was not blank.
 */
void ftl_ckpt_blank_page(const struct ftl_geom *g, uint32_t i, uint8_t *buf)
{
	uint64_t ps = g->ps, lo = (uint64_t)i * ps, m = (uint64_t)g->nlpn * 4;

	memset(buf, 0, ps);
	if (lo < m)
		memset(buf, 0xff, m - lo < ps ? m - lo : ps);
}

static bool all_byte(const void *q, uint64_t n, uint8_t v)
{
	const uint8_t *p = q;

	return !n || (p[0] == v && !memcmp(p, p + 1, n - 1));
}

/* Is @buf (payload page @i) what ftl_ckpt_blank_page() gives? */
bool ftl_ckpt_page_blank(const struct ftl_geom *g, uint32_t i,
			 const uint8_t *buf)
{
	uint64_t ps = g->ps, lo = (uint64_t)i * ps, m = (uint64_t)g->nlpn * 4;
	uint64_t nm = lo < m ? (m - lo < ps ? m - lo : ps) : 0;

	return all_byte(buf, nm, 0xff) && all_byte(buf + nm, ps - nm, 0);
}

/* Is @oob (@n bytes) blank, all zero (erased, or never programmed)? */
bool ftl_oob_blank(const void *oob, size_t n)
{
	return all_byte(oob, n, 0);
}
