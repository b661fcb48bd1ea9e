/* SPDX-License-Identifier: MIT */
/* The set's on-medium header (ftl-set-format.h): layout at create, seal,
 * check and load at open. */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"
#include "ftl-set-int.h"
#include "oct-format.h"

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static uint64_t hdr_shift(const struct ftl_set_hdr *h)
{
	return h->align_mode == OCT_ALIGN_ODD ? FTL_SECTOR : 0;
}

uint64_t ftl_set_part_stripes(const struct ftl_set_hdr *h, unsigned i)
{
	uint64_t k = FTL_SET_DIV_UP(h->logical_size + hdr_shift(h), h->stripe);
	uint64_t n = k / h->nparts + (i < k % h->nparts);

	return n ? n : 1;
}

struct ftl_create_opts ftl_set_part_opts(const struct ftl_create_opts *c,
					 const struct ftl_set_hdr *h,
					 unsigned i)
{
	struct ftl_create_opts p = *c;

	p.size = ftl_set_part_stripes(h, i) * h->stripe;
	p.align = FTL_ALIGN_1M;         /* the set carries the odd shift */
	p.max_size = 0;
	p.bad_block_seed = c->bad_block_seed + i;
	return p;
}

struct ftl_open_opts ftl_set_part_open_opts(const struct ftl_open_opts *o,
					    unsigned i,
					    struct nand_fault_spec *spec)
{
	struct ftl_open_opts p = *o;

	if (o->faults) {
		*spec = *o->faults;
		spec->seed += i;
		p.faults = spec;
	}
	return p;
}

/* Stripe @stripe for page size @ps: 0 or -EINVAL. */
static int stripe_ok(uint64_t stripe, uint32_t ps)
{
	return pow2(stripe) && stripe >= ps && stripe % ps == 0 &&
	       stripe <= FTL_SET_STRIPE_MAX ? 0 : -EINVAL;
}

int ftl_set_hdr_layout(const struct ftl_create_opts *c, unsigned nparts,
		       uint64_t stripe, struct ftl_set_hdr *h)
{
	uint32_t ps = c->page_size ? c->page_size : 4096;
	uint64_t at = FTL_SET_AREA;

	if (c->integrity || (c->max_size && c->max_size > c->size))
		return -EOPNOTSUPP;     /* PI, grow: not through a set yet */
	if ((c->align != FTL_ALIGN_ODD && c->align != FTL_ALIGN_1M) ||
	    nparts < FTL_SET_MIN_PARTS || nparts > FTL_SET_MAX_PARTS ||
	    !c->size || c->size % FTL_SECTOR || c->size > (1ull << 50))
		return -EINVAL;
	if (!stripe)
		stripe = FTL_SET_STRIPE;
	if (stripe_ok(stripe, ps))
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->align_mode = c->align == FTL_ALIGN_ODD ? OCT_ALIGN_ODD : OCT_ALIGN_1M;
	h->logical_size = c->size;
	h->page_size = ps;
	h->nparts = nparts;
	h->stripe = stripe;
	for (unsigned i = 0; i < nparts; i++) {
		struct ftl_create_opts p = ftl_set_part_opts(c, h, i);
		uint64_t len = ftl_test_image_size(&p);

		if (!len)
			return -EINVAL;
		h->parts[i].off = at;
		h->parts[i].len = len;
		at = FTL_SET_ROUND_UP(at + len, FTL_SET_ALIGN);
	}
	return 0;
}

void ftl_set_hdr_seal(struct ftl_set_hdr *h)
{
	memcpy(h->magic, FTL_SET_MAGIC, sizeof(h->magic));
	h->version = FTL_SET_VERSION;
	h->hdr_size = FTL_SET_HDR_SIZE;
	h->crc = 0;
	h->crc = oct_crc32c(0, h, sizeof(*h));
}

int ftl_set_hdr_check(const struct ftl_set_hdr *h, uint64_t bsize)
{
	uint64_t end = FTL_SET_AREA;

	if (h->hdr_size != FTL_SET_HDR_SIZE ||
	    (h->align_mode != OCT_ALIGN_ODD && h->align_mode != OCT_ALIGN_1M) ||
	    !h->logical_size || h->logical_size % FTL_SECTOR ||
	    h->logical_size > (1ull << 50) ||
	    (h->page_size != 4096 && h->page_size != 8192 &&
	     h->page_size != 16384) ||
	    h->nparts < FTL_SET_MIN_PARTS || h->nparts > FTL_SET_MAX_PARTS ||
	    stripe_ok(h->stripe, h->page_size))
		return -EBADMSG;
	for (unsigned i = 0; i < FTL_SET_MAX_PARTS; i++) {
		const struct ftl_set_part_rec *p = &h->parts[i];

		if (i >= h->nparts) {
			if (p->off || p->len)
				return -EBADMSG;
			continue;
		}
		/* in order, aligned, no overlap, inside the backing */
		if (p->off % FTL_SET_ALIGN || p->off < end || !p->len ||
		    p->len > (1ull << 52) || p->off > (1ull << 60) ||
		    p->off + p->len > bsize)
			return -EBADMSG;
		end = p->off + p->len;
	}
	return 0;
}

static const uint64_t hdr_at[2] = { FTL_SET_COPY0, FTL_SET_COPY1 };

int ftl_set_hdr_load(struct nand_backing *b, uint64_t bsize,
		     struct ftl_set_hdr *h, int *bad)
{
	struct ftl_set_hdr t[2];
	bool good[2] = { false, false }, other[2] = { false, false };
	int err = 0, used = -1;

	for (int c = 0; c < 2; c++) {
		uint32_t crc;

		if (hdr_at[c] + sizeof(t[c]) > bsize ||
		    b->ops->pread(b, &t[c], sizeof(t[c]), hdr_at[c]) ||
		    memcmp(t[c].magic, FTL_SET_MAGIC, sizeof(t[c].magic)))
			continue;       /* no copy here */
		if (!err)
			err = -EBADMSG; /* a set: the error unless one is good */
		crc = t[c].crc;
		t[c].crc = 0;
		if (oct_crc32c(0, &t[c], sizeof(t[c])) != crc)
			continue;
		t[c].crc = crc;
		if (t[c].version != FTL_SET_VERSION) {
			err = -EPROTONOSUPPORT;
			other[c] = true;        /* a newer tool's: left alone */
			continue;
		}
		if (ftl_set_hdr_check(&t[c], bsize))
			continue;
		good[c] = true;
		if (used < 0)
			used = c;
	}
	if (used < 0)
		return err;
	*h = t[used];
	if (bad) {
		*bad = 0;
		for (int c = 0; c < 2; c++)
			if (c != used && !other[c] &&
			    (!good[c] || memcmp(&t[c], h, sizeof(*h))))
				*bad |= 1 << c;
	}
	return 1;
}

int ftl_set_hdr_mend(struct nand_backing *b, const struct ftl_set_hdr *h,
		     int bad, bool say)
{
	return nand_backing_mend(b, h, sizeof(*h), hdr_at, bad,
				 say ? "set header" : NULL, "it was damaged");
}
