/* SPDX-License-Identifier: MIT */
/* The nand fault model: spec parsing, seeded draws, ECC (see nand-fault.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nand-int.h"

struct inj {
	uint64_t ppn;
	uint32_t cw, bits;
};

struct nand_fm {
	struct nand_fault_spec s;
	uint32_t ppb, page_size;
	uint64_t draws;               /* atomic: one per random draw */
	struct inj *inj;              /* injected errors (tests) */
	size_t ninj, cap;
};

static int perr(char *err, size_t len, const char *fmt, const char *a,
		const char *b)
{
	if (err && len)
		snprintf(err, len, fmt, a, b);
	return -EINVAL;
}

static int parse_prob(const char *key, const char *v, double max, double *out,
		      char *err, size_t len)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (!*v || *end || errno || !(d >= 0 && d <= max))
		return perr(err, len, max == 1 ?
			    "faults: %s=%s: expected a probability from 0 to 1" :
			    "faults: %s=%s: expected a rate from 0 to 0.5",
			    key, v);
	*out = d;
	return 0;
}

static int parse_uint(const char *key, const char *v, uint64_t max,
		      uint64_t *out, char *err, size_t len)
{
	char *end;
	unsigned long long u;

	errno = 0;
	u = strtoull(v, &end, 0);
	if (!*v || *end || errno || *v == '-' || u > max)
		return perr(err, len, "faults: %s=%s: expected a whole number "
			    "in range", key, v);
	*out = u;
	return 0;
}

/* Parse a spec string (see nand-fault.h). */
int nand_fault_parse(const char *spec, struct nand_fault_spec *out,
		     char *err, size_t errlen)
{
	char buf[512], *rest, *tok;
	struct nand_fault_spec s = { 0 };
	uint64_t u;
	int r = 0;

	if (!spec || !*spec)
		return perr(err, errlen, "faults: empty spec%s%s", "", "");
	if (strlen(spec) >= sizeof(buf))
		return perr(err, errlen, "faults: spec too long%s%s", "", "");
	strcpy(buf, spec);
	rest = buf;
	while (!r && (tok = strsep(&rest, ","))) {
		char *v = strchr(tok, '=');

		if (!*tok)
			return perr(err, errlen, "faults: empty item in "
				    "'%s'%s", spec, "");
		if (!v)
			return perr(err, errlen, "faults: '%s': expected "
				    "key=value%s", tok, "");
		*v++ = 0;
		if (!strcmp(tok, "program"))
			r = parse_prob(tok, v, 1, &s.program_p, err, errlen);
		else if (!strcmp(tok, "erase"))
			r = parse_prob(tok, v, 1, &s.erase_p, err, errlen);
		else if (!strcmp(tok, "bitflip"))
			r = parse_prob(tok, v, 0.5, &s.bitflip, err, errlen);
		else if (!strcmp(tok, "seed")) {
			r = parse_uint(tok, v, UINT64_MAX, &s.seed, err, errlen);
			s.seed_set = true;
		} else if (!strcmp(tok, "ecc")) {
			r = parse_uint(tok, v, 4096, &u, err, errlen);
			s.ecc_bits = (uint32_t)u;
			if (!r && !u)
				r = perr(err, errlen, "faults: %s=%s: the ECC "
					 "must correct at least 1 bit", tok, v);
		} else if (!strcmp(tok, "cw")) {
			r = parse_uint(tok, v, 16384, &u, err, errlen);
			s.cw = (uint32_t)u;
			if (!r && (u < 512 || (u & (u - 1))))
				r = perr(err, errlen, "faults: %s=%s: codeword "
					 "must be a power of two >= 512", tok, v);
		} else
			return perr(err, errlen, "faults: unknown key '%s' "
				    "(program, erase, bitflip, seed, ecc, cw)%s",
				    tok, "");
	}
	if (r)
		return r;
	if (!s.ecc_bits)
		s.ecc_bits = NAND_FAULT_ECC_DEFAULT;
	if (!s.cw)
		s.cw = NAND_FAULT_CW_DEFAULT;
	*out = s;
	return 0;
}

/* A spec back as a string. */
int nand_fault_format(const struct nand_fault_spec *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "program=%g,erase=%g,bitflip=%g,seed=%llu,"
			 "ecc=%u,cw=%u", s->program_p, s->erase_p, s->bitflip,
			 (unsigned long long)s->seed,
			 s->ecc_bits ? s->ecc_bits : NAND_FAULT_ECC_DEFAULT,
			 s->cw ? s->cw : NAND_FAULT_CW_DEFAULT);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

int nand_fm_create(const struct nand_fault_spec *s, const struct nand_geom *g,
		   struct nand_fm **out)
{
	struct nand_fm *m;

	if (s->cw && (g->page_size % s->cw || g->page_size / s->cw > 64))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->s = *s;
	if (!m->s.ecc_bits)
		m->s.ecc_bits = NAND_FAULT_ECC_DEFAULT;
	if (!m->s.cw)
		m->s.cw = g->page_size < NAND_FAULT_CW_DEFAULT ?
			  g->page_size : NAND_FAULT_CW_DEFAULT;
	m->ppb = g->ppb;
	m->page_size = g->page_size;
	*out = m;
	return 0;
}

void nand_fm_destroy(struct nand_fm *m)
{
	if (!m)
		return;
	free(m->inj);
	free(m);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Uniform in [0, 1): the next draw of the seeded stream, tied to @what. */
static double draw(struct nand_fm *m, uint64_t what)
{
	uint64_t k = __atomic_fetch_add(&m->draws, 1, __ATOMIC_RELAXED);

	return (double)(mix(m->s.seed ^ mix(what ^ mix(k))) >> 11) * 0x1p-53;
}

bool nand_fm_program_fails(struct nand_fm *m, uint64_t ppn)
{
	return m->s.program_p > 0 && draw(m, ppn * 3 + 1) < m->s.program_p;
}

bool nand_fm_erase_fails(struct nand_fm *m, uint32_t blk)
{
	return m->s.erase_p > 0 && draw(m, (uint64_t)blk * 3 + 2) < m->s.erase_p;
}

/* Poisson(@lambda) by inversion, capped. */
static uint32_t poisson(struct nand_fm *m, uint64_t what, double lambda)
{
	double u = draw(m, what), p = exp(-lambda), s = p;
	uint32_t k = 0;

	while (u > s && k < 1024) {
		k++;
		p *= lambda / k;
		s += p;
	}
	return k;
}

int nand_fm_read(struct nand_fm *m, uint64_t ppn, uint32_t ec, uint32_t off,
		 void *buf, uint32_t len, struct nand_ecc *e)
{
	uint32_t cw = m->s.cw, c0 = off / cw, c1 = (off + len - 1) / cw;
	double x = 1 + ec / NAND_FAULT_EC_SCALE;
	double lambda = m->s.bitflip * x * x * 8.0 * cw;
	uint8_t *b = buf;
	int r = 0;

	memset(e, 0, sizeof(*e));
	for (uint32_t c = c0; c <= c1; c++) {
		uint32_t bits = lambda > 0 ? poisson(m, ppn * 64 + c, lambda) : 0;

		for (size_t i = 0; i < m->ninj; i++)
			if (m->inj[i].ppn == ppn && m->inj[i].cw == c)
				bits += m->inj[i].bits;
		if (!bits)
			continue;
		if (bits <= m->s.ecc_bits) {
			e->corrected += bits;
			if (bits > e->max_corrected)
				e->max_corrected = bits;
			continue;
		}
		/* beyond the ECC: the data comes back damaged */
		e->bad_cw |= 1ull << c;
		r = -EBADMSG;
		for (uint32_t i = 0; i < bits && i < 64; i++) {
			uint32_t bit = (uint32_t)(mix(ppn ^ mix(c * 131u + i)) %
						  (8ull * cw));
			uint64_t at = (uint64_t)c * cw + bit / 8;

			if (at >= off && at < (uint64_t)off + len)
				b[at - off] ^= (uint8_t)(1u << (bit % 8));
		}
	}
	return r;
}

int nand_fm_inject(struct nand_fm *m, uint64_t ppn, uint32_t cw, uint32_t bits)
{
	if (cw >= m->page_size / m->s.cw)
		return -EINVAL;
	for (size_t i = 0; i < m->ninj; i++)
		if (m->inj[i].ppn == ppn && m->inj[i].cw == cw) {
			m->inj[i].bits = bits;
			return 0;
		}
	if (m->ninj == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct inj *p = realloc(m->inj, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->inj = p;
		m->cap = cap;
	}
	m->inj[m->ninj++] = (struct inj){ ppn, cw, bits };
	return 0;
}

/* An erase heals the block's injected errors. */
void nand_fm_erased(struct nand_fm *m, uint32_t blk)
{
	size_t j = 0;

	for (size_t i = 0; i < m->ninj; i++)
		if (m->inj[i].ppn / m->ppb != blk)
			m->inj[j++] = m->inj[i];
	m->ninj = j;
}

uint32_t nand_fm_cw(const struct nand_fm *m)
{
	return m->s.cw;
}

uint32_t nand_fm_ecc(const struct nand_fm *m)
{
	return m->s.ecc_bits;
}
