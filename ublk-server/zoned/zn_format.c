/* SPDX-License-Identifier: MIT */
/* Zoned images: geometry, superblock and OOB records (zn-format.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "zn-format.h"

#define ZN_OOB_MIN 64u    /* record (32) + erase stamp (16), power of 2 */
#define ZN_OOB_MAX 512u
#define ZN_SB_FLAGS (OCT_SB_F_ZONED | OCT_SB_F_OOB_INLINE | OCT_SB_F_OOB_STAMP)

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The open and active limit of @nzones zones: one eighth of them, at
 * least ZN_LIMIT_MIN, at most ZN_LIMIT_MAX and the zones (docs/engine.md,
 * "Zone state machine": each active zone holds one partly programmed
 * erase block, the open blocks a NAND part tolerates). */
static uint32_t zn_limit(uint32_t nzones)
{
	uint32_t l = nzones / 8;

	if (l < ZN_LIMIT_MIN)
		l = ZN_LIMIT_MIN;
	if (l > ZN_LIMIT_MAX)
		l = ZN_LIMIT_MAX;
	return l < nzones ? l : nzones;
}

static void nand_geom_of(const struct zn_geom *g, uint32_t oob,
			 struct nand_geom *ng)
{
	memset(ng, 0, sizeof(*ng));
	ng->page_size = g->page_size;
	ng->oob_size = oob;
	ng->ppb = g->ppb;
	ng->nblocks = g->nzones * g->zone_blocks;
	ng->flash_off = OCT_SB_AREA;     /* a multiple of ZN_LBS */
	ng->oob_off = ng->flash_off + g->page_size;
	ng->oob_inline = true;
	ng->oob_stamp = true;
}

uint64_t zn_image_size(const struct nand_geom *ng)
{
	return ng->flash_off + (uint64_t)ng->nblocks * ng->ppb *
	       (ng->page_size + ng->oob_size);
}

int zn_create_geom(const struct zn_create_opts *o, struct zn_geom *g,
		   struct nand_geom *ng, char *why, size_t len)
{
	uint64_t zs = o->zone_size ? o->zone_size : ZN_ZONE_DEFAULT;
	uint32_t ppb = o->ppb ? o->ppb : 64;
	uint32_t oob = o->oob_size ? o->oob_size : ZN_OOB_MIN;
	uint64_t bsz = (uint64_t)ppb * ZN_LBS, nz;

	if (!pow2(ppb) || ppb < 4 || ppb > 1024) {
		snprintf(why, len, "pages per block %u: a power of two from 4 to 1024",
			 ppb);
		return -EINVAL;
	}
	if (!pow2(oob) || oob < ZN_OOB_MIN || oob > ZN_OOB_MAX) {
		snprintf(why, len, "OOB size %u: a zoned image needs a power of two "
			 "from %u to %u (its record and the erase stamp)", oob,
			 ZN_OOB_MIN, ZN_OOB_MAX);
		return -EINVAL;
	}
	if (!pow2(zs) || zs < bsz || zs / bsz > (1u << 16)) {
		snprintf(why, len, "zone size %llu: a power of two, from one erase "
			 "block (%llu bytes) to 65536 of them",
			 (unsigned long long)zs, (unsigned long long)bsz);
		return -EINVAL;
	}
	nz = (o->size + zs - 1) / zs;
	if (!o->size || nz * (zs / bsz) > UINT32_MAX / 2) {
		snprintf(why, len, "size %llu: from one zone to 2^31 erase blocks",
			 (unsigned long long)o->size);
		return -EINVAL;
	}
	memset(g, 0, sizeof(*g));
	g->page_size = ZN_LBS;
	g->ppb = ppb;
	g->zone_blocks = (uint32_t)(zs / bsz);
	g->nzones = (uint32_t)nz;
	g->max_open = g->max_active = zn_limit(g->nzones);
	g->pe_cycles = o->pe_cycles;
	nand_geom_of(g, oob, ng);
	return 0;
}

static void fresh_uuid(uint8_t *u)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, u, 16) != 16) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;

		memcpy(u, &t, 8);
		memcpy(u + 8, &u, sizeof(void *));
	}
	if (fd >= 0)
		close(fd);
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
}

void zn_sb_build(struct oct_sb *sb, const struct zn_geom *g,
		 const struct nand_geom *ng, uint32_t pe_cycles)
{
	struct zn_sb_ext e = { .version = ZN_SB_VERSION,
			       .zone_blocks = g->zone_blocks,
			       .max_open = g->max_open,
			       .max_active = g->max_active };

	memset(sb, 0, sizeof(*sb));
	memcpy(sb->magic, OCT_SB_MAGIC, 8);
	sb->version = OCT_SB_VERSION;
	sb->sb_size = OCT_SB_SIZE;
	sb->align_mode = OCT_ALIGN_1M;
	sb->align_shift = 0;
	sb->logical_size = ZN_LBS;
	sb->logical_sectors = (uint64_t)ng->nblocks * ng->ppb;
	sb->page_size = ng->page_size;
	sb->oob_size = ng->oob_size;
	sb->pages_per_block = ng->ppb;
	sb->nblocks = ng->nblocks;
	sb->flash_offset = ng->flash_off;
	sb->oob_offset = ng->oob_off;
	fresh_uuid(sb->uuid);
	sb->create_time = (uint64_t)time(NULL);
	sb->flags = ZN_SB_FLAGS;
	sb->pe_cycles = pe_cycles;
	memcpy(sb->reserved, &e, sizeof(e));
	sb->crc = oct_crc32c(0, sb, OCT_SB_SIZE);
}

int zn_sb_decode(const struct oct_sb *in, struct zn_geom *g,
		 struct nand_geom *ng)
{
	struct oct_sb sb = *in;
	struct zn_sb_ext e;
	struct zn_create_opts o = { 0 };
	char why[160];
	int r = oct_sb_check(&sb);

	if (r)
		return r;
	if (!(sb.flags & OCT_SB_F_ZONED))
		return -ENOTTY;
	memcpy(&e, sb.reserved, sizeof(e));
	if (e.version != ZN_SB_VERSION)
		return -EPROTONOSUPPORT;
	for (size_t i = sizeof(e); i < sizeof(sb.reserved); i++)
		if (sb.reserved[i])
			return -EBADMSG;
	if (sb.flags != ZN_SB_FLAGS || sb.sb_size != OCT_SB_SIZE ||
	    sb.align_mode != OCT_ALIGN_1M || sb.align_shift ||
	    sb.logical_size != ZN_LBS || sb.page_size != ZN_LBS ||
	    sb.op_permille || sb.ckpt_blocks || !e.zone_blocks ||
	    sb.nblocks % e.zone_blocks)
		return -EBADMSG;
	o.ppb = sb.pages_per_block;
	o.oob_size = sb.oob_size;
	o.zone_size = (uint64_t)e.zone_blocks * sb.pages_per_block * ZN_LBS;
	o.size = (uint64_t)(sb.nblocks / e.zone_blocks) * o.zone_size;
	if (zn_create_geom(&o, g, ng, why, sizeof(why)) ||
	    ng->nblocks != sb.nblocks || ng->flash_off != sb.flash_offset ||
	    ng->oob_off != sb.oob_offset ||
	    sb.logical_sectors != (uint64_t)ng->nblocks * ng->ppb ||
	    !e.max_open || e.max_open > g->nzones || !e.max_active ||
	    e.max_active > g->nzones || e.max_open > e.max_active)
		return -EBADMSG;
	g->max_open = e.max_open;
	g->max_active = e.max_active;
	g->pe_cycles = sb.pe_cycles;
	return 0;
}

static const uint64_t zn_sb_at[2] = { 0, OCT_SB_COPY_OFFSET };

int zn_sb_read(struct nand_backing *b, struct oct_sb *sb, struct zn_geom *g,
	       struct nand_geom *ng, int *bad)
{
	struct oct_sb t[2];
	int r[2], first = -EBADMSG, used = -1;

	for (int i = 0; i < 2; i++) {
		struct zn_geom tg;
		struct nand_geom tng;

		r[i] = b->ops->pread(b, &t[i], sizeof(t[i]), zn_sb_at[i]);
		if (!r[i])
			r[i] = zn_sb_decode(&t[i], used < 0 ? g : &tg,
					    used < 0 ? ng : &tng);
		if (!r[i] && used < 0)
			used = i;
		if (r[i] && (i == 0 || (first == -EBADMSG &&
					r[i] != -EBADMSG)))
			first = r[i];
	}
	if (used < 0)
		return first;
	*sb = t[used];
	if (bad) {      /* another version's copy (a newer tool's) stays */
		*bad = 0;
		for (int i = 0; i < 2; i++)
			if (i != used && r[i] != -EPROTONOSUPPORT &&
			    (r[i] || memcmp(&t[i], sb, sizeof(*sb))))
				*bad |= 1 << i;
	}
	return 0;
}

int zn_sb_mend(struct nand_backing *b, const struct oct_sb *sb, int bad,
	       bool say)
{
	return nand_backing_mend(b, sb, sizeof(*sb), zn_sb_at, bad,
				 say ? "superblock" : NULL, "it was damaged");
}

void zn_oob_fill(struct zn_oob *o, uint8_t kind, uint32_t zone,
		 uint32_t zpage, const void *data, uint32_t page_size,
		 uint32_t ec)
{
	memset(o, 0, sizeof(*o));
	o->magic = ZN_OOB_MAGIC;
	o->kind = kind;
	o->version = ZN_OOB_VERSION;
	o->zone = zone;
	o->zpage = zpage;
	o->data_crc = oct_crc32c(0, data, page_size);
	o->ec = ec;
	o->crc = oct_crc32c(0, o, sizeof(*o));
}

bool zn_oob_ok(const void *oob, uint32_t zone, uint32_t zpage, uint8_t kind)
{
	struct zn_oob o;
	uint32_t crc;

	memcpy(&o, oob, sizeof(o));
	crc = o.crc;
	o.crc = 0;
	return o.magic == ZN_OOB_MAGIC && o.version == ZN_OOB_VERSION &&
	       oct_crc32c(0, &o, sizeof(o)) == crc && o.zone == zone &&
	       o.zpage == zpage && !o.pad && !o.reserved &&
	       (o.kind == ZN_OOB_DATA || o.kind == ZN_OOB_FINISH) &&
	       (!kind || o.kind == kind) && o.ec < NAND_EC_MAX;
}
