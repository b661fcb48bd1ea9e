/* SPDX-License-Identifier: MIT */
#include "crc32c.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CRC_POLY 0x82F63B78u            /* reflected Castagnoli */

/*
 * Slicing-by-8: eight 256-entry tables (8 KiB), one 8-byte load and
 * eight lookups a word.  About 1 byte a cycle natively (a fifth of the
 * crc32 instruction with three lanes), but plain loads and xors, which
 * QEMU's TCG translates into host code, so it is the fast one in a TCG
 * guest.  The _run functions work on the raw register (no inversion).
 */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_tab_once = PTHREAD_ONCE_INIT;

static void crc_tab_init(void)
{
	for (unsigned b = 0; b < 256; b++) {
		uint32_t c = b;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC_POLY & (0u - (c & 1u)));
		crc_tab[0][b] = c;
	}
	for (unsigned b = 0; b < 256; b++)
		for (unsigned t = 1; t < 8; t++)
			crc_tab[t][b] = (crc_tab[t - 1][b] >> 8) ^
					crc_tab[0][crc_tab[t - 1][b] & 0xff];
}

static uint32_t crc32c_tab_run(uint32_t c, const unsigned char *p, size_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		v ^= c;
		c = crc_tab[7][v & 0xff] ^ crc_tab[6][(v >> 8) & 0xff] ^
		    crc_tab[5][(v >> 16) & 0xff] ^ crc_tab[4][(v >> 24) & 0xff] ^
		    crc_tab[3][(v >> 32) & 0xff] ^ crc_tab[2][(v >> 40) & 0xff] ^
		    crc_tab[1][(v >> 48) & 0xff] ^ crc_tab[0][v >> 56];
		p += 8;
		len -= 8;
	}
#endif
	while (len--)
		c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
	return c;
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>

/*
 * The crc32 instruction has a latency of 3 cycles and a throughput of
 * one a cycle: one dependency chain uses a third of it.  Buffers of at
 * least CRC_TRIPLE bytes run as three chains over three CRC_LANE-byte
 * lanes, joined by shifting a lane's CRC over the next lane's length
 * (a linear map of the 32-bit register: four 256-entry tables) -- about
 * twice as fast for a 4 KiB page.
 */
#define CRC_LANE   680u                 /* 85 words: 4080 of a 4096 page */
#define CRC_TRIPLE (3u * CRC_LANE)

__attribute__((target("sse4.2")))
static uint64_t crc32c_hw_run(uint64_t c, const unsigned char *p, size_t len)
{
	while (len >= 8) {
		uint64_t v;
		__builtin_memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return c;
}

/*
 * shift[k][b]: the register (b << 8k) after CRC_LANE zero bytes.  The
 * shift is linear in the register, so the 32 single-bit images (taken
 * with the table path: no crc32 instruction, which a TCG guest runs a
 * bit at a time) give every entry by xor.
 */
static uint32_t crc_shift[4][256];
static pthread_once_t crc_shift_once = PTHREAD_ONCE_INIT;

static void crc_shift_init(void)
{
	static const unsigned char zero[CRC_LANE];
	uint32_t bit[32];

	pthread_once(&crc_tab_once, crc_tab_init);
	for (unsigned i = 0; i < 32; i++)
		bit[i] = crc32c_tab_run(1u << i, zero, CRC_LANE);
	for (unsigned k = 0; k < 4; k++)         /* b's image: b less its top bit, xor that bit's */
		for (unsigned b = 1, top = 0; b < 256; b++) {
			if (b == 2u << top)
				top++;
			crc_shift[k][b] = crc_shift[k][b ^ (1u << top)] ^ bit[8 * k + top];
		}
}

static uint32_t crc_shift_lane(uint32_t c)
{
	return crc_shift[0][c & 0xff] ^ crc_shift[1][(c >> 8) & 0xff] ^
	       crc_shift[2][(c >> 16) & 0xff] ^ crc_shift[3][c >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw3(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

	if (len >= CRC_TRIPLE)
		pthread_once(&crc_shift_once, crc_shift_init);
	while (len >= CRC_TRIPLE) {
		const unsigned char *q = p + CRC_LANE, *r = p + 2 * CRC_LANE;
		uint64_t c1 = 0, c2 = 0;

		for (unsigned i = 0; i < CRC_LANE; i += 8) {
			uint64_t a, b, d;
			__builtin_memcpy(&a, p + i, 8);
			__builtin_memcpy(&b, q + i, 8);
			__builtin_memcpy(&d, r + i, 8);
			c = _mm_crc32_u64(c, a);
			c1 = _mm_crc32_u64(c1, b);
			c2 = _mm_crc32_u64(c2, d);
		}
		c = crc_shift_lane((uint32_t)c) ^ (uint32_t)c1;
		c = crc_shift_lane((uint32_t)c) ^ (uint32_t)c2;
		p += CRC_TRIPLE;
		len -= CRC_TRIPLE;
	}
	return (uint32_t)crc32c_hw_run(c, p, len);
}

/* cpuid once: in a virtual machine every cpuid is a trap to the hypervisor */
static int have_sse42(void)
{
	static int have = -1;
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
	unsigned a, b, c, d;

	if (h < 0) {
		h = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) != 0;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h;
}
#endif

static const char *const impl_name[OCT_CRC32C_NIMPL] = {
	[OCT_CRC32C_HW3] = "hw3", [OCT_CRC32C_HW1] = "hw1",
	[OCT_CRC32C_TABLE] = "table",
};

int oct_crc32c_impl_ok(enum oct_crc32c_impl impl)
{
	switch (impl) {
	case OCT_CRC32C_HW3:
	case OCT_CRC32C_HW1:
#if defined(__x86_64__)
		return have_sse42();
#else
		return 0;
#endif
	case OCT_CRC32C_TABLE:
		return 1;
	default:
		return 0;
	}
}

const char *oct_crc32c_impl_name(enum oct_crc32c_impl impl)
{
	return (unsigned)impl < OCT_CRC32C_NIMPL ? impl_name[impl] : NULL;
}

/* the raw register through @impl (no inversion) */
static uint32_t crc_run(enum oct_crc32c_impl impl, uint32_t c,
			const unsigned char *p, size_t len)
{
	switch (impl) {
#if defined(__x86_64__)
	case OCT_CRC32C_HW3:
		return crc32c_hw3(c, p, len);
	case OCT_CRC32C_HW1:
		return (uint32_t)crc32c_hw_run(c, p, len);
#endif
	default:
		pthread_once(&crc_tab_once, crc_tab_init);
		return crc32c_tab_run(c, p, len);
	}
}

uint32_t oct_crc32c_with(enum oct_crc32c_impl impl, uint32_t crc,
			 const void *buf, size_t len)
{
	return ~crc_run(impl, ~crc, buf, len);
}

/*
 * Calibration: the best of CALIB_REPS timings of hw3 and table over one
 * 4 KiB page (the size of nearly every CRC the engine takes), interleaved
 * so that a preemption hurts one sample, not one implementation.  hw1 is
 * not timed: below CRC_TRIPLE bytes hw3 is hw1, above it hw3 is faster
 * natively and the same under TCG.  Natively ~0.2 us (hw3) and ~2.5 us
 * (table) a pass, ~60 us in all with the tables' first touch; in a TCG
 * guest (~30 and ~10 us a pass) a few milliseconds with the translation
 * of the code, once per process.
 */
#define CALIB_BYTES 4096u
#define CALIB_REPS  3

static int chosen = -1;                 /* enum oct_crc32c_impl once set */
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int crc_forced(void)
{
	const char *e = getenv("OCTANT_CRC32C");

	if (!e || !*e)
		return -1;
	for (int i = 0; i < OCT_CRC32C_NIMPL; i++)
		if (strcmp(e, impl_name[i]) == 0 && oct_crc32c_impl_ok(i))
			return i;
	fprintf(stderr, "octant: OCTANT_CRC32C=%s is not an available "
		"implementation (hw3, hw1, table); calibrating instead\n", e);
	return -1;
}

static void crc_choose(void)
{
	static unsigned char buf[CALIB_BYTES];
	uint64_t best[OCT_CRC32C_NIMPL];
	volatile uint32_t sink = 0;
	int pick = crc_forced();

	if (pick < 0) {
		for (unsigned i = 0; i < CALIB_BYTES; i++)
			buf[i] = (unsigned char)(i * 131u + 7u);
		for (int i = 0; i < OCT_CRC32C_NIMPL; i++) {
			best[i] = UINT64_MAX;
			if (oct_crc32c_impl_ok(i) && i != OCT_CRC32C_HW1) /* warm */
				sink ^= crc_run(i, 0, buf, CALIB_BYTES);
		}
		for (int r = 0; r < CALIB_REPS; r++)
			for (int i = 0; i < OCT_CRC32C_NIMPL; i++) {
				if (!oct_crc32c_impl_ok(i) || i == OCT_CRC32C_HW1)
					continue;
				uint64_t t0 = now_ns();
				sink ^= crc_run(i, (uint32_t)r, buf, CALIB_BYTES);
				uint64_t dt = now_ns() - t0;
				if (dt < best[i])
					best[i] = dt;
			}
		/* in enum order (hw3 first): a tie keeps the earlier one */
		for (int i = 0; i < OCT_CRC32C_NIMPL; i++)
			if (best[i] != UINT64_MAX &&
			    (pick < 0 || best[i] < best[pick]))
				pick = i;
	}
	(void)sink;
	if (pick != OCT_CRC32C_HW3 && pick != OCT_CRC32C_HW1)
		pthread_once(&crc_tab_once, crc_tab_init);
	__atomic_store_n(&chosen, pick, __ATOMIC_RELEASE);
}

enum oct_crc32c_impl oct_crc32c_chosen(void)
{
	int c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);

	if (c < 0) {
		pthread_once(&chosen_once, crc_choose);
		c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
	}
	return (enum oct_crc32c_impl)c;
}

uint32_t oct_crc32c(uint32_t crc, const void *buf, size_t len)
{
	enum oct_crc32c_impl impl = oct_crc32c_chosen();
	const unsigned char *p = buf;

	crc = ~crc;
#if defined(__x86_64__)
	if (impl == OCT_CRC32C_HW3)
		return ~crc32c_hw3(crc, p, len);
	if (impl == OCT_CRC32C_HW1)
		return ~(uint32_t)crc32c_hw_run(crc, p, len);
#endif
	return ~crc32c_tab_run(crc, p, len);
}
