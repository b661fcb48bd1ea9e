/* SPDX-License-Identifier: MIT */
/*
 * oct_crc32c (hardware chains, three interleaved lanes for long buffers)
 * against a bitwise reference: the standard check value, every length
 * around the lane sizes, random lengths and split points (a CRC continued
 * across calls), unaligned starts.  Seeded (OCTANT_SEED).
 */
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "test.h"

static uint32_t ref(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
	}
	return ~crc;
}

int main(void)
{
	static uint8_t buf[40000];
	uint64_t rs = t_seed() | 1;
	unsigned bad = 0;

	T_EQ_U64(oct_crc32c(0, "123456789", 9), 0xE3069283u, "check value");
	for (size_t i = 0; i < sizeof(buf); i += 8) {
		uint64_t v = t_xorshift(&rs);
		memcpy(buf + i, &v, sizeof(v) <= sizeof(buf) - i ? 8 : sizeof(buf) - i);
	}
	/* every length up to 3 lanes and a bit (2040 + 64), odd offsets */
	for (size_t len = 0; len <= 4200 && bad < 5; len++) {
		size_t off = len % 7;
		if (oct_crc32c(0, buf + off, len) != ref(0, buf + off, len)) {
			bad++;
			T_CHECK(0, "length %zu at offset %zu", len, off);
		}
	}
	/* random lengths, continued across a random split */
	for (int i = 0; i < 2000 && bad < 5; i++) {
		size_t len = (size_t)(t_xorshift(&rs) % 32768);
		size_t off = (size_t)(t_xorshift(&rs) % 64);
		size_t cut = len ? (size_t)(t_xorshift(&rs) % len) : 0;
		uint32_t a = oct_crc32c(oct_crc32c(7, buf + off, cut),
					buf + off + cut, len - cut);
		if (a != ref(7, buf + off, len)) {
			bad++;
			T_CHECK(0, "length %zu offset %zu split %zu", len, off, cut);
		}
	}
	T_EQ_U64(bad, 0, "mismatches");
	return t_result();
}
