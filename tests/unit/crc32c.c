/* SPDX-License-Identifier: MIT */
/*
 * oct_crc32c and every implementation behind it (hw3: crc32 instruction,
 * three lanes for long buffers; hw1: one chain; table: slicing-by-8)
 * against a bitwise reference and against each other: the standard
 * check value and the iSCSI vectors (RFC 3720 B.4), every length around
 * the lane sizes and the 8-byte words, random lengths, alignments and
 * split points (a CRC continued across calls).  The calibration picks an
 * available one; OCTANT_CRC32C forces each (checked in a child process,
 * since the choice is made once per process).  Seeded (OCTANT_SEED).
 */
#include <limits.h>
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

#define NI OCT_CRC32C_NIMPL

/* crc through implementation @i, or oct_crc32c for i == NI */
static uint32_t crc_by(int i, uint32_t crc, const void *p, size_t len)
{
	return i == NI ? oct_crc32c(crc, p, len) : oct_crc32c_with(i, crc, p, len);
}

static const char *name_of(int i)
{
	return i == NI ? "oct_crc32c" : oct_crc32c_impl_name(i);
}

static void vectors(int i)
{
	uint8_t v[32];

	T_EQ_U64(crc_by(i, 0, "123456789", 9), 0xE3069283u, "%s: check value", name_of(i));
	memset(v, 0, sizeof(v));
	T_EQ_U64(crc_by(i, 0, v, 32), 0x8A9136AAu, "%s: 32 zeros", name_of(i));
	memset(v, 0xff, sizeof(v));
	T_EQ_U64(crc_by(i, 0, v, 32), 0x62A8AB43u, "%s: 32 x 0xff", name_of(i));
	for (int k = 0; k < 32; k++)
		v[k] = (uint8_t)k;
	T_EQ_U64(crc_by(i, 0, v, 32), 0x46DD794Eu, "%s: 0..31", name_of(i));
	for (int k = 0; k < 32; k++)
		v[k] = (uint8_t)(31 - k);
	T_EQ_U64(crc_by(i, 0, v, 32), 0x113FDB5Cu, "%s: 31..0", name_of(i));
	T_EQ_U64(crc_by(i, 0, NULL, 0), 0, "%s: empty", name_of(i));
}

/* the child's answer to OCTANT_CRC32C=@name: the name it then uses, after what it said */
static int forced(const char *self, const char *name, char *out, size_t len)
{
	char cmd[PATH_MAX + 64];
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "OCTANT_CRC32C=%s '%s' --chosen 2>&1", name, self);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	/* all of it (a child writing into a closed pipe would die of SIGPIPE) */
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	while (fgetc(f) != EOF)
		;
	return pclose(f);
}

int main(int argc, char **argv)
{
	static uint8_t buf[40000];
	char self[PATH_MAX];
	uint64_t rs;
	unsigned bad = 0, nok = 0;
	ssize_t n;

	if (argc > 1 && strcmp(argv[1], "--chosen") == 0) {
		printf("%s\n", oct_crc32c_impl_name(oct_crc32c_chosen()));
		return 0;
	}
	rs = t_seed() | 1;
	for (int i = 0; i < NI; i++) {
		T_CHECK(oct_crc32c_impl_name(i) != NULL, "implementation %d has a name", i);
		nok += oct_crc32c_impl_ok(i) != 0;
	}
	T_CHECK(oct_crc32c_impl_ok(OCT_CRC32C_TABLE), "the table path runs anywhere");
	T_CHECK(oct_crc32c_impl_name(NI) == NULL, "no name past the last");
	fprintf(stderr, "%u implementations here; calibration picked %s\n", nok,
		oct_crc32c_impl_name(oct_crc32c_chosen()));
	T_CHECK(oct_crc32c_impl_ok(oct_crc32c_chosen()), "the chosen one runs here");

	for (size_t i = 0; i < sizeof(buf); i += 8) {
		uint64_t v = t_xorshift(&rs);
		memcpy(buf + i, &v, sizeof(v) <= sizeof(buf) - i ? 8 : sizeof(buf) - i);
	}
	for (int i = 0; i <= NI; i++) {
		if (i < NI && !oct_crc32c_impl_ok(i)) {
			fprintf(stderr, "%s: not on this CPU, not tested\n", name_of(i));
			continue;
		}
		vectors(i);
		/* every length up to 3 lanes and a bit (2040 + 64), every offset mod 8 */
		for (size_t len = 0; len <= 4200 && bad < 5; len++) {
			size_t off = len % 8 + (len / 8) % 3;
			if (crc_by(i, 0, buf + off, len) != ref(0, buf + off, len)) {
				bad++;
				T_CHECK(0, "%s: length %zu at offset %zu", name_of(i), len, off);
			}
		}
		/* random lengths and alignments, continued across a random split */
		for (int k = 0; k < 1500 && bad < 5; k++) {
			size_t len = (size_t)(t_xorshift(&rs) % 32768);
			size_t off = (size_t)(t_xorshift(&rs) % 64);
			size_t cut = len ? (size_t)(t_xorshift(&rs) % len) : 0;
			uint32_t seed = (uint32_t)t_xorshift(&rs);
			uint32_t a = crc_by(i, crc_by(i, seed, buf + off, cut),
					    buf + off + cut, len - cut);
			if (a != ref(seed, buf + off, len)) {
				bad++;
				T_CHECK(0, "%s: length %zu offset %zu split %zu", name_of(i),
					len, off, cut);
			}
		}
	}
	/* all against each other on pages at random alignments */
	for (int k = 0; k < 300 && bad < 5; k++) {
		size_t off = (size_t)(t_xorshift(&rs) % 4096);
		size_t len = k % 2 ? 4096 : (size_t)(t_xorshift(&rs) % 8192);
		uint32_t want = oct_crc32c_with(OCT_CRC32C_TABLE, 0, buf + off, len);
		for (int i = 0; i <= NI; i++)
			if ((i == NI || oct_crc32c_impl_ok(i)) &&
			    crc_by(i, 0, buf + off, len) != want) {
				bad++;
				T_CHECK(0, "%s != table: length %zu offset %zu", name_of(i),
					len, off);
			}
	}
	T_EQ_U64(bad, 0, "mismatches");

	/* OCTANT_CRC32C forces each available one; a bad name is said and ignored */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		T_CHECK(0, "readlink /proc/self/exe");
		return t_result();
	}
	self[n] = 0;
	for (int i = 0; i < NI; i++) {
		char got[256];
		if (!oct_crc32c_impl_ok(i))
			continue;
		T_EQ_U64(forced(self, name_of(i), got, sizeof(got)), 0, "child for %s", name_of(i));
		got[strcspn(got, "\n")] = 0;
		T_CHECK(strcmp(got, name_of(i)) == 0, "OCTANT_CRC32C=%s gave '%s'", name_of(i), got);
	}
	{
		char got[256];
		T_EQ_U64(forced(self, "nosuch", got, sizeof(got)), 0, "child for nosuch");
		T_CHECK(strstr(got, "OCTANT_CRC32C=nosuch") != NULL,
			"a bad name is reported: '%s'", got);
	}
	return t_result();
}
