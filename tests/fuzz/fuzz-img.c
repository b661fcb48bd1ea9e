/* SPDX-License-Identifier: MIT */
/* Base images and patch decoding for the engine fuzzers (see fuzz-img.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "fuzz-img.h"

struct base {
	uint8_t *img;
	uint64_t size;
	struct ftl_geom g;
	int err;
	bool built;
};

static struct base bases[FZ_NBASES];

/* Geometry A: odd, 64 KiB, 4 pages per block, 48-byte OOB (9 data blocks
 * for 17 logical pages: GC and several checkpoints in a short workload).
 * Geometry B: 1 MiB mode, 128 KiB, 8 pages per block, 64-byte OOB. */
static const struct ftl_create_opts geo_a = {
	.size = 64 << 10, .align = FTL_ALIGN_ODD, .page_size = 4096,
	.pages_per_block = 4, .oob_size = 48, .op_permille = 70,
};
static const struct ftl_create_opts geo_b = {
	.size = 128 << 10, .align = FTL_ALIGN_1M, .page_size = 4096,
	.pages_per_block = 8, .oob_size = 64, .op_permille = 250,
};

static uint64_t xs(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A fixed, seeded workload: whole and partial pages, trims, flushes. */
static int workload(struct ftl *f, uint64_t seed, int ops)
{
	static uint8_t buf[16384];
	uint64_t s = seed | 1, size = ftl_size(f);
	int r = 0;

	for (int i = 0; i < ops && !r; i++) {
		uint64_t k = xs(&s), len, off;

		len = (k % 4 == 0) ? 512 * (1 + xs(&s) % 8) : 4096 * (1 + xs(&s) % 4);
		if (len > size)
			len = size;
		off = (xs(&s) % ((size - len) / 512 + 1)) * 512;
		memset(buf, (int)(i & 0xff), len);
		memcpy(buf, &off, sizeof(off));
		switch (k % 16) {
		case 0:
			r = ftl_discard(f, off, len);
			break;
		case 1:
			r = ftl_flush(f);
			break;
		case 2:
			r = ftl_write(f, buf, off, len, FTL_FUA);
			break;
		default:
			r = ftl_write(f, buf, off, len, 0);
			break;
		}
	}
	return r;
}

#define FZ_UUID "octant-fuzz-uuid"   /* 16 bytes */

/* Make a base image byte-identical from run to run: fixed uuid, zero
 * times, mount duration and time served, then every checksum
 * recomputed. */
static void normalize(uint8_t *img, uint64_t size, const struct ftl_geom *g)
{
	struct oct_sb *sb;

	for (int c = 0; c < 2; c++) {
		sb = (struct oct_sb *)(img + (c ? OCT_SB_COPY_OFFSET : 0));
		memcpy(sb->uuid, FZ_UUID, 16);
		sb->create_time = 0;
	}
	for (int c = 0; c < 2; c++) {   /* the flush marks name it too */
		struct ftl_fmark *m = (struct ftl_fmark *)(img +
			(c ? FTL_FMARK_OFF1 : FTL_FMARK_OFF0));

		if (memcmp(m->magic, FTL_FMARK_MAGIC, 8))
			continue;
		memcpy(m->uuid, FZ_UUID, 16);
		m->crc = 0;
		m->crc = oct_crc32c(0, m, sizeof(*m));
	}
	for (uint32_t slot = 0; slot < FTL_CKPT_SLOTS; slot++) {
		uint64_t p = (uint64_t)slot * g->slot_blocks * g->ppb;
		struct ftl_ckpt_hdr *h =
			(struct ftl_ckpt_hdr *)(img + ftl_page_off(g, p));

		if (memcmp(h->magic, FTL_CKPT_MAGIC, 8))
			continue;
		memcpy(h->uuid, FZ_UUID, 16);
		h->write_time = 0;
		h->cnt.last_mount_time = 0;
		h->cnt.last_mount_us = 0;
		h->cnt.power_on_seconds = 0;
	}
	fz_fixup(img, size, g, FZ_FIX_SB | FZ_FIX_CKPT);
}

static int build(unsigned i, struct base *bs)
{
	const struct ftl_create_opts *o = (i == 3 || i == 4) ? &geo_b : &geo_a;
	struct nand_backing *b = NULL;
	struct ftl *f = NULL;
	uint64_t size = ftl_test_image_size(o);
	int r;

	r = ftl_create_opts_geom(o, &bs->g);
	if (!r)
		r = nand_backing_mem(size, false, &b);
	if (!r)
		r = ftl_create_backing(b, o);
	if (r)
		goto out;
	/* each step: hold the backing so that the engine's close leaves it */
#define OPEN() do { nand_mem_hold(b); r = ftl_open_backing(b, NULL, &f); \
		    if (r) { b->ops->destroy(b); goto out; } } while (0)
	switch (i) {
	case 0:                 /* fresh from create */
		break;
	case 1:                 /* written, trimmed, closed cleanly */
		OPEN();
		r = workload(f, 11, 200);
		ftl_close(f);
		break;
	case 2:                 /* GC, checkpoints, then a crash */
		OPEN();
		r = workload(f, 22, 400);
		ftl_abandon(f);
		break;
	case 3:                 /* clean, reopened (mount marker), crash */
		OPEN();
		r = workload(f, 33, 150);
		ftl_close(f);
		if (r)
			break;
		OPEN();
		r = workload(f, 34, 50);
		ftl_abandon(f);
		break;
	case 4:                 /* 1m mode, closed cleanly */
		OPEN();
		r = workload(f, 44, 300);
		ftl_close(f);
		break;
	default:                /* crash right after a flush */
		OPEN();
		r = workload(f, 55, 100);
		if (!r)
			r = ftl_flush(f);
		ftl_abandon(f);
		break;
	}
#undef OPEN
	if (r)
		goto out;
	bs->size = size;
	bs->img = malloc(size);
	if (!bs->img) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(bs->img, nand_mem_bytes(b, NULL), size);
	normalize(bs->img, size, &bs->g);
out:
	if (b)
		b->ops->destroy(b);
	return r;
}

int fz_base(unsigned i, const uint8_t **img, uint64_t *size,
	    struct ftl_geom *g)
{
	struct base *bs = &bases[i % FZ_NBASES];

	if (!bs->built) {
		bs->err = build(i % FZ_NBASES, bs);
		bs->built = true;
		if (bs->err) {  /* the engine failed its own workload: say so */
			fprintf(stderr, "fuzz-img: base image %u cannot be built: "
				"%s\n", i % FZ_NBASES, strerror(-bs->err));
			abort();
		}
	}
	if (bs->err)
		return bs->err;
	*img = bs->img;
	*size = bs->size;
	*g = bs->g;
	return 0;
}

static uint8_t *page_data(uint8_t *img, const struct ftl_geom *g, uint64_t p)
{
	return img + ftl_page_off(g, p);
}

static struct ftl_oob *page_oob(uint8_t *img, const struct ftl_geom *g,
				uint64_t p)
{
	return (struct ftl_oob *)(img + ftl_oob_off(g, p));
}

static void fix_oob(struct ftl_oob *o)
{
	o->crc = 0;
	o->crc = oct_crc32c(0, o, sizeof(*o));
}

void fz_fixup(uint8_t *img, uint64_t size, const struct ftl_geom *g,
	      unsigned fix)
{
	uint64_t total = (uint64_t)g->nblocks * g->ppb;
	uint64_t spp = (uint64_t)g->slot_blocks * g->ppb;   /* pages a slot */

	(void)size;
	if (fix & FZ_FIX_DATA)
		for (uint64_t p = 0; p < total; p++)
			if (page_oob(img, g, p)->magic == FTL_OOB_MAGIC)
				page_oob(img, g, p)->data_crc =
					oct_crc32c(0, page_data(img, g, p), g->ps);
	if (fix & FZ_FIX_CKPT) {
		for (uint32_t slot = 0; slot < FTL_CKPT_SLOTS; slot++) {
			uint64_t p0 = slot * spp;
			struct ftl_ckpt_hdr *h =
				(struct ftl_ckpt_hdr *)page_data(img, g, p0);
			uint32_t crc = 0, np;

			if (!memcmp(h->magic, FTL_CKPT_MAGIC, 8)) {
				np = h->payload_pages < spp - 1 ?
				     h->payload_pages : (uint32_t)(spp - 1);
				for (uint32_t i = 1; i <= np; i++) {
					const uint8_t *d = page_data(img, g, p0 + i);
					uint8_t blank[FTL_MAX_PAGE];
					const uint8_t *o = (const uint8_t *)
						page_oob(img, g, p0 + i);
					bool erased = h->version >= 3;

					/* v3: a blank OOB = the blank payload page */
					for (uint32_t k = 0; k < g->oob && erased; k++)
						erased = !o[k];
					if (erased) {
						ftl_ckpt_blank_page(g, i - 1, blank);
						d = blank;
					}
					crc = oct_crc32c(crc, d, g->ps);
				}
				h->payload_crc = crc;
				h->crc = 0;
				h->crc = oct_crc32c(0, h, sizeof(*h));
			}
			for (uint64_t p = p0; p < p0 + spp; p++) {
				struct ftl_oob *o = page_oob(img, g, p);

				if (o->magic != FTL_OOB_MAGIC)
					continue;
				o->data_crc = oct_crc32c(0, page_data(img, g, p),
							 g->ps);
				fix_oob(o);
			}
		}
	}
	if (fix & FZ_FIX_OOB)
		for (uint64_t p = 0; p < total; p++) {
			struct ftl_oob *o = page_oob(img, g, p);
			struct ftl_oob_flush x;

			if (o->magic != FTL_OOB_MAGIC)
				continue;
			fix_oob(o);
			/* its flush record is seeded with that crc */
			memcpy(&x, o + 1, sizeof(x));
			if (g->oob >= FTL_OOB_FLUSH_MIN &&
			    x.magic == FTL_OOB_FLUSH_MAGIC)
				ftl_oob_set_flushed(g, o, p, x.flushed);
		}
	if (fix & FZ_FIX_SB)
		for (int c = 0; c < 2; c++) {
			struct oct_sb *sb = (struct oct_sb *)(img +
					     (c ? OCT_SB_COPY_OFFSET : 0));
			sb->crc = 0;
			sb->crc = oct_crc32c(0, sb, OCT_SB_SIZE);
		}
}

/* Copy @len bytes of @src into the region [@lo, @lo + @span) of @img at
 * @lo + @off, cut at the region's end. */
static void put(uint8_t *img, uint64_t lo, uint64_t span, uint64_t off,
		const uint8_t *src, size_t len)
{
	off %= span;
	if (len > span - off)
		len = (size_t)(span - off);
	memcpy(img + lo + off, src, len);
}

int fz_apply(const uint8_t *d, size_t n, struct fz_image *out)
{
	const struct ftl_geom *g = &out->g;
	const uint8_t *base;
	uint64_t total, spp;
	size_t pos = 3;
	int r;

	memset(out, 0, sizeof(*out));
	if (n < 3)
		return -EINVAL;
	r = fz_base(d[0], &base, &out->size, &out->g);
	if (r)
		return r;
	out->base = d[0] % FZ_NBASES;
	out->fix = d[1];
	out->flags = d[2];
	out->img = malloc(out->size);
	if (!out->img)
		return -ENOMEM;
	memcpy(out->img, base, out->size);
	total = (uint64_t)g->nblocks * g->ppb;
	spp = (uint64_t)g->slot_blocks * g->ppb;
	while (pos + 6 <= n) {
		unsigned region = d[pos] % 8;
		uint64_t idx = (uint64_t)d[pos + 1] | (uint64_t)d[pos + 2] << 8;
		uint64_t off = (uint64_t)d[pos + 3] | (uint64_t)d[pos + 4] << 8;
		size_t len = d[pos + 5];
		const uint8_t *src = d + pos + 6;
		uint64_t p, q;

		pos += 6;
		if (len > n - pos)
			len = n - pos;
		pos += len;
		switch (region) {
		case FZ_R_SB:
			put(out->img, (idx & 1) * OCT_SB_COPY_OFFSET, OCT_SB_SIZE,
			    off, src, len);
			break;
		case FZ_R_CKPT:
			p = (idx % FTL_CKPT_SLOTS) * spp + (idx / FTL_CKPT_SLOTS) % spp;
			put(out->img, ftl_page_off(g, p), g->ps, off, src, len);
			break;
		case FZ_R_OOB:
			p = idx % total;
			put(out->img, ftl_oob_off(g, p), g->oob, off, src, len);
			break;
		case FZ_R_DATA:
			p = idx % total;
			put(out->img, ftl_page_off(g, p), g->ps, off, src, len);
			break;
		case FZ_R_RAW:
			put(out->img, 0, out->size, idx << 16 | off, src, len);
			break;
		case FZ_R_COPY:
			p = idx % total;
			q = off % total;
			memmove(page_data(out->img, g, q), page_data(out->img, g, p),
				g->ps);
			memmove(page_oob(out->img, g, q), page_oob(out->img, g, p),
				g->oob);
			break;
		case FZ_R_ERASE:
			p = (idx % g->nblocks) * g->ppb;
			memset(page_data(out->img, g, p), 0xff, (size_t)g->ppb * g->ps);
			memset(page_oob(out->img, g, p), 0, (size_t)g->ppb * g->oob);
			break;
		default:        /* FZ_R_BBT: no bad-block table yet */
			break;
		}
	}
	fz_fixup(out->img, out->size, g, out->fix);
	return 0;
}

int fz_backing(const uint8_t *img, uint64_t size, struct nand_backing **out)
{
	int r = nand_backing_mem(size, false, out);

	if (!r)
		nand_mem_load(*out, img);
	return r;
}
