/* SPDX-License-Identifier: MIT */
/*
 * The sector-history model the power-cut tests share: every 512-byte
 * sector written carries a stamp (write id, sector number, a keyed
 * pattern), so a read tells which write it holds, zeroes, or garbage; the
 * history keeps the ids a sector may legitimately hold after a crash (the
 * newest durable one and every later one).  The includer defines SIZE (the
 * disk's bytes) and NSECT.
 * One translation unit per test, so the state is file-static here.
 */
#ifndef OCTANT_SECTOR_HISTORY_H
#define OCTANT_SECTOR_HISTORY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

struct hist {
	uint32_t *v, n, cap;
};

static struct hist h[NSECT];
static uint64_t rs;
static uint32_t next_id = 1;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static uint64_t mix(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdull;
	a ^= a >> 33;
	return a;
}

static void stamp(uint8_t *s, uint32_t id, uint32_t sect)
{
	memcpy(s, &id, 4);
	memcpy(s + 4, &sect, 4);
	for (int i = 8; i < 512; i += 8) {
		uint64_t v = mix(((uint64_t)id << 32 | sect) + (uint64_t)i);
		memcpy(s + i, &v, 8);
	}
}

/* The id a sector holds, 0 for zeroes, -1 for garbage. */
static int64_t decode(const uint8_t *s, uint32_t sect)
{
	uint8_t want[512];
	uint32_t id, se;

	for (int i = 0; i < 512; i++)
		if (s[i])
			goto nonzero;
	return 0;
nonzero:
	memcpy(&id, s, 4);
	memcpy(&se, s + 4, 4);
	if (se != sect || !id)
		return -1;
	stamp(want, id, sect);
	return memcmp(want, s, 512) ? -1 : (int64_t)id;
}

static void push(uint32_t sect, uint32_t id)
{
	struct hist *x = &h[sect];

	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 4;
		x->v = realloc(x->v, x->cap * sizeof(*x->v));
	}
	x->v[x->n++] = id;
}

static void barrier(uint32_t sect)
{
	h[sect].v[0] = h[sect].v[h[sect].n - 1];
	h[sect].n = 1;
}

static bool allowed(uint32_t sect, uint32_t id)
{
	for (uint32_t i = 0; i < h[sect].n; i++)
		if (h[sect].v[i] == id)
			return true;
	return false;
}

/* Does every sector of @buf (the whole disk, read after cut @seed) hold a
 * value its history allows?  The first that does not fails the test. */
static bool hist_verify(const uint8_t *buf, uint64_t seed)
{
	for (uint32_t s = 0; s < NSECT; s++) {
		int64_t id = decode(buf + (size_t)s * 512, s);

		if (id < 0 || !allowed(s, (uint32_t)id)) {
			T_CHECK(0, "seed %llu: sector %u reads %lld, allowed "
				"%u..%u (%u values)", (unsigned long long)seed, s,
				(long long)id, h[s].v[0], h[s].v[h[s].n - 1],
				h[s].n);
			return false;
		}
	}
	return true;
}

/* The next workload operation: a kind k (0..99), a length and an offset
 * (sector-aligned, half of them also 4K-aligned) inside the SIZE-byte
 * disk the includer defines. */
static void pick_op(uint64_t *k, uint32_t *len, uint32_t *off)
{
	*k = rnd() % 100;
	*len = (uint32_t)(1 + rnd() % (*k < 40 ? 8 : 128)) * 512;
	*off = (uint32_t)(rnd() % ((SIZE - *len) / 512 + 1)) * 512;
	if (rnd() % 2)
		*off &= ~4095u;
}

/* Stamp @len bytes at @w for a new write at @off; returns its id. */
static uint32_t stamp_write(uint8_t *w, uint32_t off, uint32_t len)
{
	uint32_t id = next_id++;

	for (uint32_t s = 0; s < len / 512; s++)
		stamp(w + s * 512, id, off / 512 + s);
	return id;
}

#endif
