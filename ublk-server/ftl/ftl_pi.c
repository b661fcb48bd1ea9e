/* SPDX-License-Identifier: MIT */
/*
 * Protection information (OCT_SB_F_PI, create --integrity t10dif): the
 * T10-DIF CRC16 guard of every 512-byte sector kept in its page's OOB
 * (struct ftl_oob_pi, ftl-format.h), T10-DIF type 1 tuples built from it
 * for a read, the kernel's tuples checked on a write.  Below ftl_append.c,
 * which fills the guards at program time; the reads and writes that carry
 * tuples, above ftl_read/ftl_write, are ftl_pi_io.c.
 * docs/engine.md ("Protection information").
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

#define PI_POLY 0x8bb7u

/* Slicing by 8: pi_tab[k][n] is the CRC of byte n followed by k zero
 * bytes, so 8 bytes take 8 independent lookups (a byte at a time ran at
 * ~50 MB/s on this machine, a third of a core at 4K QD32). */
static uint16_t pi_tab[8][256];
static pthread_once_t pi_once = PTHREAD_ONCE_INIT;

static void pi_tab_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		unsigned c = i << 8;

		for (int k = 0; k < 8; k++)
			c = c & 0x8000 ? (c << 1) ^ PI_POLY : c << 1;
		pi_tab[0][i] = (uint16_t)c;
	}
	for (unsigned k = 1; k < 8; k++)
		for (unsigned i = 0; i < 256; i++)
			pi_tab[k][i] = (uint16_t)((unsigned)pi_tab[k - 1][i] << 8 ^
				pi_tab[0][pi_tab[k - 1][i] >> 8]);
}

uint16_t ftl_pi_crc16(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	unsigned c = 0;
	size_t i = 0;

	pthread_once(&pi_once, pi_tab_init);
	for (; i + 8 <= len; i += 8, p += 8)
		c = pi_tab[7][p[0] ^ (c >> 8)] ^ pi_tab[6][p[1] ^ (c & 0xff)] ^
		    pi_tab[5][p[2]] ^ pi_tab[4][p[3]] ^ pi_tab[3][p[4]] ^
		    pi_tab[2][p[5]] ^ pi_tab[1][p[6]] ^ pi_tab[0][p[7]];
	for (; i < len; i++, p++)
		c = ((c << 8) ^ pi_tab[0][((c >> 8) ^ *p) & 0xff]) & 0xffff;
	return (uint16_t)c;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* One tuple: @guard, app tag 0, ref tag the low 32 bits of @sector. */
void ftl_pi_tuple(uint8_t *t, uint16_t guard, uint64_t sector)
{
	uint32_t ref = (uint32_t)sector;

	put_be16(t, guard);
	put_be16(t + 2, 0);
	t[4] = (uint8_t)(ref >> 24);
	t[5] = (uint8_t)(ref >> 16);
	t[6] = (uint8_t)(ref >> 8);
	t[7] = (uint8_t)ref;
}

void ftl_pi_generate(const void *buf, void *pi, uint64_t sector, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ftl_pi_tuple((uint8_t *)pi + i * FTL_PI_TUPLE,
			  ftl_pi_crc16((const uint8_t *)buf + i * FTL_SECTOR,
				       FTL_SECTOR), sector + i);
}

long ftl_pi_check(const void *buf, const void *pi, uint64_t sector, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *t = (const uint8_t *)pi + i * FTL_PI_TUPLE;

		if (get_be16(t) != ftl_pi_crc16((const uint8_t *)buf +
						i * FTL_SECTOR, FTL_SECTOR) ||
		    get_be32(t + 4) != (uint32_t)(sector + i))
			return (long)i;
	}
	return -1;
}

bool ftl_pi_fits(const struct ftl_geom *g)
{
	uint32_t room = g->oob - (g->oob_stamp ? NAND_STAMP_SIZE : 0);

	return g->oob >= FTL_OOB_FLUSH_MIN &&
	       g->ps / FTL_SECTOR <= 255 &&
	       FTL_OOB_PI_AT + FTL_OOB_PI_SIZE(g->ps) <= room;
}

static uint32_t pi_crc(const void *oob, const uint8_t *rec, uint32_t size)
{
	struct ftl_oob_pi h;
	uint32_t c;

	memcpy(&h, rec, sizeof(h));
	h.crc = 0;
	c = oct_crc32c(((const struct ftl_oob *)oob)->crc, &h, sizeof(h));
	return oct_crc32c(c, rec + sizeof(h), size - sizeof(h));
}

void ftl_pi_fill(const struct ftl_geom *g, void *oob, const void *data)
{
	uint8_t *rec = (uint8_t *)oob + FTL_OOB_PI_AT;
	uint32_t n = g->ps / FTL_SECTOR;
	struct ftl_oob_pi h = { .magic = FTL_OOB_PI_MAGIC,
		.version = FTL_OOB_PI_VERSION, .nsect = (uint8_t)n };

	if (!g->pi)
		return;
	for (uint32_t i = 0; i < n; i++)
		put_be16(rec + sizeof(h) + 2 * i,
			 ftl_pi_crc16((const uint8_t *)data + i * FTL_SECTOR,
				      FTL_SECTOR));
	memcpy(rec, &h, sizeof(h));
	h.crc = pi_crc(oob, rec, FTL_OOB_PI_SIZE(g->ps));
	memcpy(rec, &h, sizeof(h));
}

bool ftl_pi_guards(const struct ftl_geom *g, const void *oob,
		   uint16_t *guard)
{
	const uint8_t *rec = (const uint8_t *)oob + FTL_OOB_PI_AT;
	uint32_t n = g->ps / FTL_SECTOR;
	struct ftl_oob_pi h;

	if (!g->pi)
		return false;
	memcpy(&h, rec, sizeof(h));
	if (h.magic != FTL_OOB_PI_MAGIC || h.version != FTL_OOB_PI_VERSION ||
	    h.nsect != n || h.crc != pi_crc(oob, rec, FTL_OOB_PI_SIZE(g->ps)))
		return false;
	for (uint32_t i = 0; i < n; i++)
		guard[i] = get_be16(rec + sizeof(h) + 2 * i);
	return true;
}

bool ftl_pi_page_ok(const struct ftl_geom *g, const void *oob,
		    const void *data)
{
	uint16_t guard[FTL_MAX_PAGE / FTL_SECTOR];

	if (!ftl_pi_guards(g, oob, guard))
		return false;
	for (uint32_t s = 0; s < g->ps / FTL_SECTOR; s++)
		if (guard[s] != ftl_pi_crc16((const uint8_t *)data +
					     s * FTL_SECTOR, FTL_SECTOR))
			return false;
	return true;
}

bool ftl_has_pi(const struct ftl *f)
{
	return f->g.pi;
}
