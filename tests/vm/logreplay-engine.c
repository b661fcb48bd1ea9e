/* SPDX-License-Identifier: MIT */
/*
 * logreplay-engine — replays a dm-log-writes log (one captured in the guest
 * by tests/vm/guest/crash-replay.sh --keep) straight into the engine on the
 * host, on a memory backing that keeps every medium write since its last
 * sync, and cuts the power at EVERY FLUSH/FUA point of the log:
 *
 *   logreplay-engine LOG --align odd|1m [--every K] [--seed S]
 *
 * A FLUSH entry is ftl_flush() before its data, a FUA write is ftl_write()
 * with FTL_FUA, a discard ftl_discard().  At each point (every K-th with
 * --every) the image a power cut would leave now is built
 * (nand_mem_crash_image: everything synced, then a prefix or a subset of the
 * later medium writes, one torn), opened in a fresh engine (roll-forward),
 * and every sector the log wrote must read back as its durable value (as of
 * the last FLUSH, or its FUA write) or one of the values written to it since
 * — never older, torn or garbage.  Sectors discarded since their last
 * durable write are not checked.
 * Ends with "logreplay-engine: entries E points P cut C failures F" and
 * exits 1 when F > 0 (2 usage, 3 I/O or a bad log).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "lw-log.h"

#define SS 512u

struct hist {			/* values a sector took since its last barrier */
	uint64_t *v;
	uint32_t n, cap;
};

struct eng {
	uint64_t nsec;
	uint8_t *cur, *dur;	/* newest value, durable value */
	uint8_t *dknown;	/* 1: dur is what the sector must hold (at least) */
	uint8_t *written;	/* 1: the log wrote the sector */
	struct hist *h;
	uint64_t *dirty;	/* sectors with a history, to clear at a barrier */
	uint64_t ndirty, capdirty;
};

static uint64_t sec_hash(const uint8_t *p)
{
	uint64_t x = 0xcbf29ce484222325ULL;

	for (unsigned i = 0; i < SS; i++)
		x = (x ^ p[i]) * 0x100000001b3ULL;
	return x;
}

static int push_hist(struct eng *e, uint64_t s, uint64_t v)
{
	struct hist *h = &e->h[s];

	if (!h->n) {
		if (e->ndirty == e->capdirty) {
			uint64_t c = e->capdirty ? e->capdirty * 2 : 4096;
			uint64_t *d = realloc(e->dirty, c * sizeof(*d));

			if (!d)
				return -ENOMEM;
			e->dirty = d;
			e->capdirty = c;
		}
		e->dirty[e->ndirty++] = s;
	}
	if (h->n == h->cap) {
		uint32_t c = h->cap ? h->cap * 2 : 2;
		uint64_t *v2 = realloc(h->v, c * sizeof(*v2));

		if (!v2)
			return -ENOMEM;
		h->v = v2;
		h->cap = c;
	}
	h->v[h->n++] = v;
	return 0;
}

/* barrier: every sector written so far is durable with its newest value. */
static void barrier(struct eng *e)
{
	for (uint64_t i = 0; i < e->ndirty; i++) {
		uint64_t s = e->dirty[i];

		memcpy(e->dur + s * SS, e->cur + s * SS, SS);
		e->dknown[s] = 1;
		e->h[s].n = 0;
	}
	e->ndirty = 0;
}

/* check: the engine @g (opened on a crash image) against the model. */
static int check(struct eng *e, struct ftl *g, uint64_t index, uint8_t *buf,
		 uint64_t bufsec)
{
	uint64_t bad = 0, first = 0;

	for (uint64_t s = 0; s < e->nsec; s += bufsec) {
		uint64_t n = e->nsec - s < bufsec ? e->nsec - s : bufsec, k;

		for (k = 0; k < n && !e->written[s + k]; k++)
			;
		if (k == n)
			continue;
		if (ftl_read(g, buf, s * SS, n * SS)) {
			fprintf(stderr, "logreplay-engine: entry %" PRIu64
				": read at sector %" PRIu64 " failed\n", index, s);
			return 1;
		}
		for (k = 0; k < n; k++) {
			uint64_t x = s + k, hv;
			const uint8_t *p = buf + k * SS;
			bool ok;

			if (!e->written[x] || (!e->dknown[x] && !e->h[x].n))
				continue;
			ok = e->dknown[x] && !memcmp(p, e->dur + x * SS, SS);
			if (!ok && e->h[x].n) {
				hv = sec_hash(p);
				for (uint32_t i = 0; i < e->h[x].n && !ok; i++)
					ok = e->h[x].v[i] == hv;
				if (!ok && !e->dknown[x])
					ok = true;	/* discarded: anything older */
			}
			if (!ok && !bad++)
				first = x;
		}
	}
	if (bad)
		fprintf(stderr, "logreplay-engine: entry %" PRIu64 ": %" PRIu64
			" sectors lost, torn or older than flushed after the "
			"power cut (first: sector %" PRIu64 ")\n", index, bad,
			first);
	return bad ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: logreplay-engine LOG --align odd|1m "
		"[--every K] [--seed S]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct ftl_create_opts c = { .align = FTL_ALIGN_1M };
	uint64_t every = 1, seed = 1, points = 0, cuts = 0, fails = 0;
	uint64_t maxend = 0, isz;
	struct nand_backing *b = NULL, *m;
	struct eng e = { 0 };
	struct ftl *f = NULL, *g;
	uint8_t *data = NULL, *img, *rbuf;
	size_t datasz = 0;
	struct lr_log l;
	struct lr_ent en;
	int ret, align_set = 0;

	if (argc < 2)
		return usage();
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--align")) {
			align_set = 1;
			if (!strcmp(argv[i + 1], "odd"))
				c.align = FTL_ALIGN_ODD;
			else if (strcmp(argv[i + 1], "1m"))
				return usage();
		} else if (!strcmp(argv[i], "--every")) {
			every = strtoull(argv[i + 1], NULL, 0);
		} else if (!strcmp(argv[i], "--seed")) {
			seed = strtoull(argv[i + 1], NULL, 0);
		} else {
			return usage();
		}
	}
	if (!align_set || !every || argc % 2)
		return usage();

	/* pass 1: the device size the log needs */
	if ((ret = lr_open_log(&l, argv[1])))
		return ret;
	if (l.ss != SS)
		return lr_err(3, "%s: sector size %u (only 512 is handled)",
			      argv[1], l.ss);
	while (!(ret = lr_next(&l, &en))) {
		if (en.sector + en.nr > maxend)
			maxend = en.sector + en.nr;
		l.pos += lr_data_len(&l, &en);
		l.index++;
	}
	if (ret > 1)
		return ret;
	c.size = ((maxend * SS) + (1 << 20) - 1) & ~((uint64_t)(1 << 20) - 1);
	e.nsec = c.size / SS;
	isz = ftl_test_image_size(&c);
	e.cur = calloc(e.nsec, SS);
	e.dur = calloc(e.nsec, SS);
	e.dknown = malloc(e.nsec);
	e.written = calloc(e.nsec, 1);
	e.h = calloc(e.nsec, sizeof(*e.h));
	img = malloc(isz);
	rbuf = malloc(1 << 20);
	if (!isz || !e.cur || !e.dur || !e.dknown || !e.written || !e.h ||
	    !img || !rbuf)
		return lr_err(3, "out of memory (device %" PRIu64 " bytes)",
			      c.size);
	memset(e.dknown, 1, e.nsec);	/* a fresh engine reads zeroes */
	if (nand_backing_mem(isz, true, &b) || ftl_create_backing(b, &c))
		return lr_err(3, "cannot create a %" PRIu64 "-byte engine",
			      c.size);
	nand_mem_hold(b);
	if (ftl_open_backing(b, NULL, &f))
		return lr_err(3, "cannot open the engine");

	/* pass 2: replay, cut at the points */
	close(l.fd);
	free(l.hdr);
	if ((ret = lr_open_log(&l, argv[1])))
		return ret;
	while (!(ret = lr_next(&l, &en))) {
		uint64_t dlen = lr_data_len(&l, &en), off = en.sector * SS;

		if (en.flags & LW_FLUSH) {
			if (ftl_flush(f))
				return lr_err(3, "entry %" PRIu64 ": flush",
					      l.index);
			barrier(&e);
		}
		if (en.flags & LW_DISCARD) {
			if (ftl_discard(f, off, en.nr * SS))
				return lr_err(3, "entry %" PRIu64 ": discard",
					      l.index);
			for (uint64_t s = en.sector; s < en.sector + en.nr; s++)
				e.dknown[s] = 0;
		} else if (dlen) {
			bool fua = en.flags & LW_FUA;

			if (dlen > datasz) {
				free(data);
				datasz = dlen;
				if (!(data = malloc(datasz)))
					return lr_err(3, "out of memory");
			}
			if (lr_pread(l.fd, data, dlen, l.pos))
				return lr_err(3, "entry %" PRIu64 ": short log",
					      l.index);
			if (ftl_write(f, data, off, dlen, fua ? FTL_FUA : 0))
				return lr_err(3, "entry %" PRIu64 ": write",
					      l.index);
			memcpy(e.cur + off, data, dlen);
			for (uint64_t k = 0; k < en.nr; k++) {
				uint64_t s = en.sector + k;

				e.written[s] = 1;
				if (fua) {
					memcpy(e.dur + s * SS, data + k * SS, SS);
					e.dknown[s] = 1;
					e.h[s].n = 0;	/* stale in dirty[]: harmless */
				} else if (push_hist(&e, s, sec_hash(data + k * SS))) {
					return lr_err(3, "out of memory");
				}
			}
		}
		l.pos += dlen;
		if (en.flags & (LW_FLUSH | LW_FUA) && ++points % every == 0) {
			nand_mem_crash_image(b, seed * 1000003 + points, true,
					     img);
			cuts++;
			if (nand_backing_mem(isz, false, &m))
				return lr_err(3, "out of memory");
			nand_mem_load(m, img);
			if (ftl_open_backing(m, NULL, &g)) {
				fprintf(stderr, "logreplay-engine: entry %"
					PRIu64 ": open after the power cut "
					"failed\n", l.index);
				m->ops->destroy(m);
				fails++;
			} else {
				fails += (uint64_t)check(&e, g, l.index, rbuf,
							 (1 << 20) / SS);
				ftl_abandon(g);
			}
		}
		l.index++;
	}
	if (ret > 1)
		return ret;
	ftl_abandon(f);
	b->ops->destroy(b);
	printf("logreplay-engine: entries %" PRIu64 " points %" PRIu64
	       " cut %" PRIu64 " failures %" PRIu64 "\n", l.nr_entries,
	       points, cuts, fails);
	return fails ? 1 : 0;
}
