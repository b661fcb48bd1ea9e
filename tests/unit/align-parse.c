/* SPDX-License-Identifier: MIT */
/* libalign: "LOG/PHYS[/OFFSET]" specs, validation, descriptions, sizes. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "align.h"
#include "test.h"

static void test_topology_parse(void)
{
	/* min 0: PHYS; opt 8192: untouched (the preset below) */
	static const struct { const char *spec; int rc; uint32_t ls, ps, off, min, opt; } c[] = {
		{ "512/4096/3584", 0, 512, 4096, 3584, 0, 8192 },
		{ "512/4096",      0, 512, 4096, 0, 0, 8192 },
		{ "512/4096/0",    0, 512, 4096, 0, 0, 8192 },
		{ "4096/4096",     0, 4096, 4096, 0, 0, 8192 },
		{ "512/512",       0, 512, 512, 0, 0, 8192 },
		{ "512/16384/512", 0, 512, 16384, 512, 0, 8192 },
		/* IO_MIN / IO_OPT (issue 32): a 3-disk stripe, a USB bridge */
		{ "512/4096/0/12288/36864", 0, 512, 4096, 0, 12288, 36864 },
		{ "512/512/0/512/33553920", 0, 512, 512, 0, 512, 33553920 },
		{ "512/4096/0/4096/196608", 0, 512, 4096, 0, 4096, 196608 },
		{ "512/4096/0/4096/0", 0, 512, 4096, 0, 4096, 0 },
		{ "512/4096/8192/12288", 0, 512, 4096, 8192, 12288, 8192 }, /* below io_min */
		{ "512/4096/0/1000", -EINVAL },   /* io_min not a multiple of LOG */
		{ "512/4096/0/2048", -EINVAL },   /* io_min below PHYS */
		{ "512/4096/3584/0", -EINVAL },   /* io_min 0 */
		{ "512/4096/0/4096/100", -EINVAL }, /* io_opt not a multiple of LOG */
		{ "512/4096/0/4096/4096/1", -EINVAL },
		{ "512/4096/12288/12288", -EINVAL }, /* offset >= granularity */
		{ "512/4096/0/", -EINVAL },
		{ "512/4096/0/4096/", -EINVAL },
		{ "512/4096/4096", -EINVAL }, /* offset >= physical */
		{ "512/4096/100",  -EINVAL }, /* not a multiple of logical */
		{ "4096/512",      -EINVAL }, /* physical < logical */
		{ "500/4096",      -EINVAL }, /* not a power of two */
		{ "256/4096",      -EINVAL }, /* logical < 512 */
		{ "512/3000",      -EINVAL },
		{ "512",           -EINVAL },
		{ "",              -EINVAL },
		{ "512/",          -EINVAL },
		{ "/4096",         -EINVAL },
		{ "512/4096/",     -EINVAL },
		{ "512/4096x",     -EINVAL },
		{ "-512/4096",     -EINVAL },
		{ "512/-4096",     -EINVAL },
		{ " 512/4096",     -EINVAL },
		{ "512/99999999999999999999", -EINVAL },
		{ "512/4294967296", -EINVAL },
		{ "0/0",           -EINVAL },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = { .size = 12345 * 4096, .io_opt = 8192 };
		int rc = align_topology_parse(c[i].spec, &t);

		T_CHECK(rc == c[i].rc, "'%s': rc %d want %d", c[i].spec, rc, c[i].rc);
		if (rc || c[i].rc)
			continue;
		T_CHECK(t.logical == c[i].ls && t.physical == c[i].ps &&
			t.alignment_offset == c[i].off &&
			t.io_min == (c[i].min ? c[i].min : c[i].ps) &&
			t.source == ALIGN_SRC_OVERRIDE, "'%s': fields", c[i].spec);
		T_CHECK(t.size == 12345 * 4096 && t.io_opt == c[i].opt,
			"'%s': size / io_opt (%u)", c[i].spec, t.io_opt);
		T_CHECK(align_topology_validate(&t) == 0, "'%s' valid", c[i].spec);
	}
	T_CHECK(align_topology_parse(NULL, NULL) == -EINVAL, "NULL");
}

static void test_validate(void)
{
	struct align_topology ok = { .logical = 512, .physical = 4096,
		.alignment_offset = 3584, .io_min = 4096, .io_opt = 1 << 20,
		.erase_block = 1 << 20, .size = 1 << 30 };
	struct align_topology t;

	T_CHECK(align_topology_validate(&ok) == 0, "ok");
#define BAD(field, val) do { t = ok; t.field = val;                        \
	T_CHECK(align_topology_validate(&t) == -EINVAL, #field " = " #val); \
} while (0)
	BAD(logical, 0);
	BAD(logical, 1000);
	BAD(logical, 8192);          /* > physical */
	BAD(physical, 0);
	BAD(physical, 6144);
	BAD(alignment_offset, 4096); /* >= granularity */
	BAD(alignment_offset, 100);
	BAD(io_min, 1000);
	BAD(io_opt, 1000);
	BAD(erase_block, 100);
	BAD(size, 1000);
#undef BAD
	t = ok;
	t.io_min = 65536;
	t.alignment_offset = 8192;   /* below io_min: the kernel allows it */
	T_CHECK(align_topology_validate(&t) == 0, "offset below io_min");
	T_CHECK(align_topology_validate(NULL) == -EINVAL, "NULL");
}

static void test_describe(void)
{
	struct align_topology t = { .logical = 512, .physical = 4096,
		.alignment_offset = 3584, .io_min = 4096, .io_opt = 262144,
		.source = ALIGN_SRC_IMAGE };
	char buf[256];
	int n;

	n = align_topology_describe(&t, buf, sizeof(buf));
	T_CHECK(n > 0 && !strcmp(buf, "512/4096 offset 3584 io_min 4096 "
				 "io_opt 262144 (image)"), "describe: '%s'", buf);
	t.erase_block = 262144;
	t.size = 1 << 30;
	t.misaligned = true;
	t.source = ALIGN_SRC_DEVICE;
	align_topology_describe(&t, buf, sizeof(buf));
	T_CHECK(!strcmp(buf, "512/4096 offset 3584 misaligned io_min 4096 "
			"io_opt 262144 erase_block 262144 size 1073741824 "
			"(device)"), "describe full: '%s'", buf);
	struct align_topology z = { .logical = 512, .physical = 512 };
	n = align_topology_describe(&z, buf, 8);
	T_CHECK(n == (int)strlen("512/512 offset 0 (unknown)") && strlen(buf) == 7,
		"describe truncates: %d '%s'", n, buf);
}

static void test_sizes(void)
{
	static const struct { const char *s; uint32_t sector; int rc; uint64_t want; } c[] = {
		{ "4096", 512, 0, 4096 },
		{ "64K", 512, 0, 65536 },
		{ "64k", 512, 0, 65536 },
		{ "1MiB", 512, 0, 1 << 20 },
		{ "1M", 512, 0, 1 << 20 },
		{ "2G", 512, 0, 2ull << 30 },
		{ "1.5GiB", 512, 0, 3ull << 29 },
		{ "0.5K", 512, 0, 512 },
		{ "1T", 512, 0, 1ull << 40 },
		{ "1TiB", 512, 0, 1ull << 40 },
		{ "1KB", 512, 0, 1000 },           /* decimal, as util-linux */
		{ "1MB", 512, 0, 1000000 },
		{ "1GB", 512, 0, 1000000000 },
		{ "1.5MB", 512, 0, 1500000 },
		{ "100s", 512, 0, 51200 },
		{ "100s", 4096, 0, 409600 },
		{ "2047S", 512, 0, 2047 * 512 },
		{ "123b", 512, 0, 123 },
		{ "16777215T", 512, 0, 16777215ull << 40 },
		{ "16777216T", 512, -EINVAL },     /* 2^64: overflow */
		{ "18446744073709551615", 512, 0, UINT64_MAX },
		{ "18446744073709551616", 512, -EINVAL },
		{ "99999999999999999999999", 512, -EINVAL },
		{ "0", 512, -EINVAL },
		{ "0K", 512, -EINVAL },
		{ "0.0M", 512, -EINVAL },
		{ "", 512, -EINVAL },
		{ "K", 512, -EINVAL },
		{ "-1", 512, -EINVAL },
		{ "-1M", 512, -EINVAL },
		{ "+1M", 512, -EINVAL },
		{ " 1M", 512, -EINVAL },
		{ "1M ", 512, -EINVAL },
		{ "1 M", 512, -EINVAL },
		{ "1X", 512, -EINVAL },
		{ "1MiBx", 512, -EINVAL },
		{ "1Mi", 512, -EINVAL },
		{ "1..5M", 512, -EINVAL },
		{ "1.5", 512, -EINVAL },           /* not whole bytes */
		{ "0.3K", 512, -EINVAL },
		{ "1.5s", 512, -EINVAL },          /* not whole sectors */
		{ "2.0s", 512, 0, 1024 },
		{ "0.5s", 512, -EINVAL },
		{ "8.125s", 4096, -EINVAL },
		{ "10s", 0, -EINVAL },             /* no sector size */
		{ "0x1000", 512, -EINVAL },
		{ "1e6", 512, -EINVAL },
		{ "1.0000000000000000000000001G", 512, -EINVAL },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t v = 42;
		int rc = align_parse_size(c[i].s, c[i].sector, &v);

		T_CHECK(rc == c[i].rc, "'%s': rc %d want %d", c[i].s, rc, c[i].rc);
		if (!c[i].rc)
			T_EQ_U64(v, c[i].want, "'%s'", c[i].s);
		else
			T_EQ_U64(v, 42, "'%s': output untouched on error", c[i].s);
	}
	T_CHECK(align_parse_size(NULL, 512, NULL) == -EINVAL, "NULL");
}

int main(void)
{
	test_topology_parse();
	test_validate();
	test_describe();
	test_sizes();
	return t_result();
}
