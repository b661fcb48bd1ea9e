/* SPDX-License-Identifier: MIT */
/*
 * Write pointers rebuilt from the OOB records (docs/engine.md, "Zone state
 * machine", Recovery).  A random workload of writes, appends, FUA writes,
 * flushes, finishes and resets, checked against a model, is cut again and
 * again:
 *  - kill -9 (the bytes as they are: the page cache survives): every zone
 *    comes back with exactly its write pointer and data (open zones as
 *    CLOSED, finished ones FULL), and fsck finds no problem where no
 *    earlier power cut left a torn page;
 *  - a power cut (the memory backing's crash model: the last sync, then
 *    a prefix or any subset of the later writes, one torn): each write
 *    pointer lies between the flushed one and the one before the cut;
 *    flushed pages read back exactly, later ones below the recovered
 *    write pointer read back or fail with EIO, never other data; past it
 *    zeroes;
 *  - a power cut inside a reset (at each of its writes): pages read their
 *    data, EIO or zeroes, never other data.
 * After each cut the workload goes on over the recovered medium, and the
 * NAND rules are never broken.  Seed printed; replay with OCTANT_SEED.
 */
#include <errno.h>

#include "image-fsck.h"
#include "zoned-test.h"

#define TAG_EIO 0xffffffffu   /* a page that may read EIO (torn) */
#define LIMIT 6u              /* open and active zones (of 16): the
                                 workload meets the limits */

struct mzone {
	uint32_t wp;                   /* pages */
	bool finished;
	uint32_t tag[ZT_ZPAGES];       /* 0: zeroes */
};

static struct mzone cur[ZT_NZONES], dur[ZT_NZONES];
static uint64_t rng;
static uint32_t next_tag = 1;
static uint8_t page[ZN_LBS * 4], rpage[ZN_LBS];

static uint64_t rnd(void)
{
	return t_xorshift(&rng);
}

static void synced(void)
{
	memcpy(dur, cur, sizeof(dur));
}

static void one_op(struct zn *z)
{
	uint32_t i = (uint32_t)(rnd() % ZT_NZONES), n, k = (uint32_t)(rnd() % 16);
	struct mzone *m = &cur[i];
	uint64_t at = 0;
	int r;

	if (k < 10) {                          /* write or append */
		n = 1 + (uint32_t)(rnd() % 4);
		if (m->finished || m->wp + n > ZT_ZPAGES)
			return;
		for (uint32_t p = 0; p < n; p++)
			zt_fill(page + p * ZN_LBS, i, m->wp + p, next_tag + p);
		bool fua = rnd() % 8 == 0;
		if (k < 5)
			r = zn_write(z, (uint64_t)i * ZT_ZSECT + m->wp * 8, n * 8,
				     page, fua ? ZN_FUA : 0);
		else
			r = zn_append(z, (uint64_t)i * ZT_ZSECT, n * 8, page,
				      fua ? ZN_FUA : 0, &at);
		if (r == -ETOOMANYREFS || r == -EOVERFLOW)
			return;
		T_EQ_U64(r, 0, "write zone %u at %u, %u pages", i, m->wp, n);
		if (r)
			return;
		if (k >= 5)
			T_EQ_U64(at, (uint64_t)i * ZT_ZSECT + m->wp * 8, "append at");
		for (uint32_t p = 0; p < n; p++)
			m->tag[m->wp + p] = next_tag + p;
		next_tag += n;
		m->wp += n;
		if (fua)
			synced();
	} else if (k < 12) {
		T_EQ_U64(zn_flush(z), 0, "flush");
		synced();
	} else if (k < 13) {
		r = zn_mgmt(z, ZN_OP_FINISH, (uint64_t)i * ZT_ZSECT, false);
		if (r == -EOVERFLOW)
			return;
		T_EQ_U64(r, 0, "finish %u", i);
		if (!m->finished && m->wp < ZT_ZPAGES) {
			m->finished = true;
			synced();    /* a finish that did something syncs */
		}
	} else if (k < 15) {
		T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, (uint64_t)i * ZT_ZSECT, false),
			 0, "reset %u", i);
		if (m->wp || m->finished) {
			memset(m, 0, sizeof(*m));
			synced();    /* a reset that did something syncs */
		}
	} else {
		r = zn_mgmt(z, ZN_OP_CLOSE, (uint64_t)i * ZT_ZSECT, false);
		T_CHECK(r == 0 || r == -EIO, "close %u: %d", i, r);
	}
}

/* Check zone @i after a crash against the flushed (dur) and last (cur)
 * states; @exact for a kill -9.  The model becomes what was recovered.
 * A zone the open finished (more partly written zones than active ones
 * allowed) reads as its pages up to the cut, then zeroes. */
static void check_zone(struct zn *z, uint32_t i, bool exact)
{
	struct mzone *d = &dur[i], *c = &cur[i];
	struct zn_zone r = zt_zone(z, i);
	uint32_t rwp = (uint32_t)((r.wp - r.start) / 8);
	uint32_t dwp = d->finished ? ZT_ZPAGES : d->wp;
	uint32_t cwp = c->finished ? ZT_ZPAGES : c->wp;
	bool autofin = !exact && !c->finished && r.cond == ZN_COND_FULL;
	uint32_t top = autofin ? cwp : rwp;  /* pages that may hold data */

	if (exact)
		T_EQ_U64(rwp, cwp, "zone %u: wp after kill -9", i);
	if (!autofin) {
		T_CHECK(rwp >= dwp && rwp <= cwp,
			"zone %u: wp %u, flushed %u, last %u", i, rwp, dwp, cwp);
		T_EQ_U64(r.cond, rwp == 0 ? ZN_COND_EMPTY : rwp == ZT_ZPAGES ?
			 ZN_COND_FULL : ZN_COND_CLOSED,
			 "zone %u: condition (wp %u)", i, rwp);
	}
	for (uint32_t p = 0; p < ZT_ZPAGES; p++) {
		int e = zn_read(z, (uint64_t)i * ZT_ZSECT + p * 8, 8, rpage);
		uint32_t want = p < dwp ? d->tag[p] : p < top ? c->tag[p] : 0;
		bool zero = e == 0 && !rpage[0] && !rpage[ZN_LBS - 1];

		if (p >= dwp && p < top && !exact &&
		    (e == -EIO || (autofin && zero))) {
			c->tag[p] = e ? TAG_EIO : 0;  /* torn / cut off */
			continue;
		}
		if (want == TAG_EIO && e == -EIO)
			continue;
		T_EQ_U64(e, 0, "zone %u page %u read (flushed wp %u, wp %u)", i,
			 p, dwp, rwp);
		if (want && want != TAG_EIO) {
			zt_fill(page, i, p, want);
			T_CHECK(!memcmp(page, rpage, ZN_LBS),
				"zone %u page %u: tag %u expected", i, p, want);
		} else if (!want) {
			T_CHECK(zero, "zone %u page %u: zeroes expected", i, p);
		}
	}
	if (autofin)
		c->finished = true;
	if (!c->finished) {            /* finished ones were flushed */
		c->wp = rwp;
		for (uint32_t p = rwp; p < ZT_ZPAGES; p++)
			c->tag[p] = 0;
	}
}

/* What a kill -9 left (@size bytes of @b) is a stop, never damage: fsck
 * exit 0, unless an earlier power cut left a torn page below a write
 * pointer (the model's TAG_EIO: it may read EIO, and fsck rightly
 * reports it).  Counts the strict checks in *strict. */
static void kill_fsck(struct nand_backing *b, uint64_t size, int *strict)
{
	uint64_t n;
	char *rep;
	int r;

	for (uint32_t i = 0; i < ZT_NZONES; i++)
		for (uint32_t p = 0; p < cur[i].wp; p++)
			if (cur[i].tag[p] == TAG_EIO)
				return;
	r = t_fsck_image(T_FSCK_ZONED, nand_mem_bytes(b, &n), size, &rep);
	T_CHECK(r == 0, "fsck after a kill -9: %d: %s", r, rep ? rep : "");
	free(rep);
	(*strict)++;
}

static int kill_fscks;  /* kill -9 images fsck'd strictly */

static struct zn *reopen(struct nand_backing **b, struct zn *z, bool kill,
			 uint64_t size, uint64_t seed)
{
	struct nand_backing *nb;
	struct zn *nz = NULL;

	if (kill) {
		nb = zt_copy(*b, true);
		kill_fsck(nb, size, &kill_fscks);
	} else {
		uint8_t *img = malloc(size);

		if (!img || nand_backing_mem(size, true, &nb))
			exit(T_EXIT_FAIL);
		T_CHECK(nand_mem_crash_image(*b, seed, true, img) >= 0,
			"crash image");
		nand_mem_load(nb, img);
		free(img);
	}
	nand_mem_power_off(*b);         /* the old engine writes nothing more */
	zn_close(z);
	(*b)->ops->destroy(*b);
	*b = nb;
	T_EQ_U64(zt_open(nb, LIMIT, LIMIT, &nz), 0, "open after a %s",
		 kill ? "kill -9" : "power cut");
	if (!nz)
		exit(t_result());
	uint32_t closed = 0;

	for (uint32_t i = 0; i < ZT_NZONES; i++) {
		check_zone(nz, i, kill);
		closed += zt_zone(nz, i).cond == ZN_COND_CLOSED;
	}
	T_CHECK(closed <= zn_geom(nz)->max_active, "%u zones active after "
		"an open, %u allowed", closed, zn_geom(nz)->max_active);
	synced();
	return nz;
}

/* The power goes off under @z on @b (both freed); a fresh medium holding
 * the crash image @img (freed too) comes back. */
static struct nand_backing *power_cut(struct nand_backing *b, struct zn *z,
				      uint8_t *img, uint64_t size)
{
	struct nand_backing *nb;

	nand_mem_power_off(b);
	zn_close(z);
	b->ops->destroy(b);
	if (nand_backing_mem(size, false, &nb))
		exit(T_EXIT_FAIL);
	nand_mem_load(nb, img);
	free(img);
	return nb;
}

struct cut {
	struct nand_backing *b;
	uint8_t *img;
	uint64_t seed;
	bool fired;
};

static void fire(void *ctx)
{
	struct cut *c = ctx;

	nand_mem_crash_image(c->b, c->seed, true, c->img);
	c->fired = true;
}

/* Power cut at each write of a reset of a zone of two full blocks. */
static void cut_in_reset(void)
{
	for (uint64_t at = 1; at <= 3; at++) {
		uint64_t size;
		struct nand_backing *b = zt_medium(true, &size), *nb;
		uint8_t *img = malloc(size);
		struct zn *z;
		struct nand_counters nc;

		T_EQ_U64(zt_open(b, 0, 0, &z), 0, "open");
		memset(cur, 0, sizeof(cur));
		for (uint32_t p = 0; p < ZT_ZPAGES; p++) {
			zt_fill(page, 3, p, 500 + p);
			cur[3].tag[p] = 500 + p;
			T_EQ_U64(zn_write(z, 3 * ZT_ZSECT + p * 8, 8, page, 0), 0, "w");
		}
		cur[3].wp = ZT_ZPAGES;
		T_EQ_U64(zn_flush(z), 0, "flush");
		synced();
		/* the reset writes two erase stamps; cut after the @at-th write
		 * (3: after both, before its sync) with random subsets */
		struct cut cut = { b, img, rnd(), false };

		nand_mem_set_trigger(b, at, fire, &cut);
		T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 3 * ZT_ZSECT, false), 0, "reset");
		if (!cut.fired)
			nand_mem_crash_image(b, cut.seed, true, img);
		T_CHECK(at == 3 || cut.fired, "cut at write %u of the reset",
			(unsigned)at);
		nand_mem_set_trigger(b, 0, NULL, NULL);
		nb = power_cut(b, z, img, size);
		T_EQ_U64(zt_open(nb, 0, 0, &z), 0, "open after a cut in a reset");
		for (uint32_t p = 0; z && p < ZT_ZPAGES; p++) {
			int e = zn_read(z, 3 * ZT_ZSECT + p * 8, 8, rpage);

			zt_fill(page, 3, p, 500 + p);
			T_CHECK(e == -EIO || (e == 0 && (!memcmp(page, rpage, ZN_LBS) ||
			       (rpage[0] == 0 && rpage[ZN_LBS - 1] == 0))),
				"page %u after a cut in a reset: %d", p, e);
		}
		if (!z)
			continue;
		/* the zone goes on: reset, rewrite, no NAND rule broken */
		T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 3 * ZT_ZSECT, false), 0, "reset");
		for (uint32_t p = 0; p < ZT_ZPAGES; p++) {
			zt_fill(page, 3, p, 900 + p);
			T_EQ_U64(zn_write(z, 3 * ZT_ZSECT + p * 8, 8, page, 0), 0, "w");
		}
		nand_counters_get(zn_nand(z), &nc);
		T_EQ_U64(nc.violations, 0, "NAND rules after a cut in a reset");
		zn_close(z);
		nb->ops->destroy(nb);
	}
}

/*
 * Regression (seed 1175325884): a power cut left more zones partly
 * written than active zones allowed, zones the lost writes had filled.
 * max_active 2: zones 2 and 3 hold 15 flushed pages, then a last page
 * each (FULL, not flushed) and zones 0 and 1 some pages (not flushed);
 * cut with many seeds: the open finishes the excess (flushed pages stay),
 * never fails, and counts active zones right (the second bug: a reset
 * then refused a write with -EOVERFLOW).
 */
static void excess_active(void)
{
	int finished_some = 0;

	for (uint64_t seed = 1; seed <= 48 && !t_failures; seed++) {
		uint64_t size;
		struct nand_backing *b = zt_medium(true, &size), *nb;
		uint8_t *img = malloc(size);
		static const uint32_t zone[4] = { 2, 3, 0, 1 };
		struct zn_counters c;
		struct zn *z;
		uint32_t closed = 0, bad = 0;

		T_EQ_U64(zt_open(b, 2, 2, &z), 0, "open 2/2");
		for (uint32_t k = 0; k < 4 && z; k++) {
			uint32_t i = zone[k], n = k < 2 ? ZT_ZPAGES - 1 : 3;

			if (k == 2) {
				T_EQ_U64(zn_flush(z), 0, "flush");
				for (uint32_t j = 2; j < 4; j++)
					bad += zn_write(z, j * ZT_ZSECT +
							(ZT_ZPAGES - 1) * 8, 8,
							page, 0) != 0;
			}
			for (uint32_t p = 0; p < n; p++) {
				zt_fill(page, i, p, 7000 + p);
				bad += zn_write(z, i * ZT_ZSECT + p * 8, 8, page,
						0) != 0;
			}
		}
		T_EQ_U64(bad, 0, "writes refused before the cut");
		T_CHECK(nand_mem_crash_image(b, seed, false, img) >= 0, "crash");
		nb = power_cut(b, z, img, size);
		T_EQ_U64(zt_open(nb, 2, 2, &z), 0, "open after the cut (seed %u)",
			 (unsigned)seed);
		if (!z)
			continue;
		for (uint32_t i = 0; i < 4; i++)
			closed += zt_zone(z, i).cond == ZN_COND_CLOSED;
		for (uint32_t i = 2; i < 4; i++)
			for (uint32_t p = 0; p < ZT_ZPAGES - 1; p++) {
				zt_fill(page, i, p, 7000 + p);
				bad += zn_read(z, i * ZT_ZSECT + p * 8, 8, rpage) ||
				       memcmp(page, rpage, ZN_LBS);
			}
		T_EQ_U64(bad, 0, "flushed pages lost or wrong (seed %u)",
			 (unsigned)seed);
		T_CHECK(closed <= 2, "%u active after the cut", closed);
		zn_counters_get(z, &c);
		finished_some += c.recovery_finishes > 0;
		/* the accounting holds: reset all, then two zones open again */
		T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 0, true), 0, "reset all");
		T_EQ_U64(zn_write(z, 5 * ZT_ZSECT, 8, page, 0), 0, "write 5");
		T_EQ_U64(zn_write(z, 6 * ZT_ZSECT, 8, page, 0), 0, "write 6");
		T_EQ_U64(zn_write(z, 7 * ZT_ZSECT, 8, page, 0), -EOVERFLOW,
			 "a third active zone");
		zn_close(z);
		nb->ops->destroy(nb);
	}
	T_CHECK(finished_some > 0, "no seed left excess active zones");
	fprintf(stderr, "excess active zones finished at open: %d of 48 cuts\n",
		finished_some);
}

int main(void)
{
	unsigned seed = t_seed();
	int rounds = t_long() ? 400 : 60;
	struct nand_backing *b;
	struct nand_counters nc;
	struct zn *z;
	uint64_t size;

	rng = (uint64_t)seed * 2654435761u | 1;
	b = zt_medium(true, &size);
	T_EQ_U64(zt_open(b, LIMIT, LIMIT, &z), 0, "open");
	for (int round = 0; round < rounds && !t_failures; round++) {
		int ops = 1 + (int)(rnd() % 40);

		for (int k = 0; k < ops; k++)
			one_op(z);
		z = reopen(&b, z, rnd() % 3 == 0, size, rnd());
		nand_counters_get(zn_nand(z), &nc);
		T_EQ_U64(nc.violations, 0, "NAND rules (round %d)", round);
	}
	zn_close(z);
	b->ops->destroy(b);
	fprintf(stderr, "kill -9 images with no torn page: %d, fsck clean\n",
		kill_fscks);
	cut_in_reset();
	excess_active();
	return t_result();
}
