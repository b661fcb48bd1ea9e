/* SPDX-License-Identifier: MIT */
/*
 * Backing calls per host operation on an image file (the nand's
 * backing_reads / backing_writes counters, one per pread/pwrite/preadv/
 * pwritev/fdatasync): a 4 KiB random write on a fresh device (write
 * amplification 1) costs at most 1.1 backing writes, a 1 MiB sequential
 * write at most 4 (program runs), a 1 MiB sequential read at most 4
 * backing reads, a 1 MiB sequential overwrite of a full device (GC erases
 * whole blocks) almost none; on a full device GC reads each victim in one
 * run and programs its copies in runs (at most 0.1 backing writes per
 * copied page, erases, syncs and checkpoints included).  Data read back
 * must match, also after a
 * killed server (no sync) reopens.  Randomised
 * (offsets): prints its seed, replays with OCTANT_SEED.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-int.h"
#include "test.h"

#define MIB (1u << 20)

int main(void)
{
	struct ftl_create_opts c = { .size = 64 * MIB, .align = FTL_ALIGN_1M,
		.pages_per_block = 256 };
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[512];
	struct nand_counters n0, n1;
	struct ftl *f;
	uint8_t *buf = malloc(MIB), *chk = malloc(MIB);
	uint64_t rs = t_seed() | 1;
	unsigned nw = 2000, nr = 16;
	double wpw, rpr;
	int fd;

	if (!buf || !chk)
		T_SKIP("out of memory");
	snprintf(path, sizeof(path), "%s/ftl-iopath-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		T_SKIP("cannot create a file in %s", dir);
	close(fd);
	T_CHECK(ftl_create(path, &c) == 0, "create");
	T_CHECK(ftl_open(path, NULL, &f) == 0, "open");
	if (t_failures)
		goto out;

	/* 4 KiB random writes, fresh device: no GC, WA 1 */
	nand_counters_get(ftl_test_nand(f), &n0);
	for (unsigned i = 0; i < nw; i++) {
		uint64_t pg = t_xorshift(&rs) % (c.size / 4096);
		t_fill_tag(buf, 4096, pg);
		T_CHECK(ftl_write(f, buf, pg * 4096, 4096, 0) == 0, "write %u", i);
	}
	nand_counters_get(ftl_test_nand(f), &n1);
	wpw = (double)(n1.backing_writes - n0.backing_writes) / nw;
	fprintf(stderr, "4K random write, WA 1: %.3f backing writes per write "
		"(%llu programs)\n", wpw,
		(unsigned long long)(n1.programs - n0.programs));
	T_CHECK(wpw <= 1.1, "%.3f backing writes per 4 KiB write (max 1.1)", wpw);

	/* 1 MiB sequential writes (whole pages: program runs, one backing
	 * write per open block's worth, checkpoints included), then 1 MiB
	 * sequential reads */
	nand_counters_get(ftl_test_nand(f), &n0);
	for (unsigned i = 0; i < nr; i++) {
		t_fill_tag(buf, MIB, 1000 + i);
		T_CHECK(ftl_write(f, buf, (uint64_t)(32 + i) * MIB, MIB, 0) == 0,
			"seq write %u", i);
	}
	nand_counters_get(ftl_test_nand(f), &n1);
	wpw = (double)(n1.backing_writes - n0.backing_writes) / nr;
	fprintf(stderr, "1 MiB sequential write: %.2f backing writes per "
		"write\n", wpw);
	T_CHECK(wpw <= 4, "%.2f backing writes per 1 MiB write (max 4)", wpw);
	nand_counters_get(ftl_test_nand(f), &n0);
	for (unsigned i = 0; i < nr; i++) {
		T_CHECK(ftl_read(f, buf, (uint64_t)(32 + i) * MIB, MIB) == 0,
			"seq read %u", i);
		t_fill_tag(chk, MIB, 1000 + i);
		T_CHECK(!memcmp(buf, chk, MIB), "data of MiB %u", 32 + i);
	}
	nand_counters_get(ftl_test_nand(f), &n1);
	rpr = (double)(n1.backing_reads - n0.backing_reads) / nr;
	fprintf(stderr, "1 MiB sequential read: %.2f backing reads per read\n",
		rpr);
	T_CHECK(rpr <= 4, "%.2f backing reads per 1 MiB read (max 4)", rpr);

	/* unaligned 4 KiB reads (two parts of pages): one run each */
	nand_counters_get(ftl_test_nand(f), &n0);
	t_fill_tag(chk, MIB, 1000);
	for (unsigned i = 0; i < 16; i++) {
		uint64_t at = (uint64_t)i * 8192 + 512 * (1 + i % 7);
		T_CHECK(ftl_read(f, buf, 32 * MIB + at, 4096) == 0 &&
			!memcmp(buf, chk + at, 4096), "unaligned read %u", i);
	}
	nand_counters_get(ftl_test_nand(f), &n1);
	rpr = (double)(n1.backing_reads - n0.backing_reads) / 16;
	fprintf(stderr, "unaligned 4 KiB read: %.2f backing reads per read\n",
		rpr);
	T_CHECK(rpr <= 2, "%.2f backing reads per unaligned 4 KiB read (max 2)",
		rpr);

	/* aligned 4 KiB reads: one backing read each */
	nand_counters_get(ftl_test_nand(f), &n0);
	for (unsigned i = 0; i < 16; i++) {
		uint64_t at = (uint64_t)(i * 37 % 256) * 4096;
		T_CHECK(ftl_read(f, buf, 32 * MIB + at, 4096) == 0 &&
			!memcmp(buf, chk + at, 4096), "aligned read %u", i);
	}
	nand_counters_get(ftl_test_nand(f), &n1);
	rpr = (double)(n1.backing_reads - n0.backing_reads) / 16;
	fprintf(stderr, "aligned 4 KiB read: %.2f backing reads per read\n",
		rpr);
	T_CHECK(rpr <= 1, "%.2f backing reads per 4 KiB read (max 1)", rpr);

	/* a damaged page inside a run: that read fails with EIO, counted
	 * once; the pages around it still read */
	{
		uint32_t lpn = (uint32_t)(33 * MIB / 4096 + 100);
		uint64_t at = ftl_page_off(ftl_test_geom(f), ftl_map_get(f, lpn)) + 123;
		struct ftl_stats s0, s1;
		uint8_t x;

		fd = open(path, O_RDWR);
		T_CHECK(fd >= 0 && pread(fd, &x, 1, (off_t)at) == 1, "peek");
		x ^= 0x40;
		T_CHECK(pwrite(fd, &x, 1, (off_t)at) == 1, "damage");
		close(fd);
		ftl_stats_get(f, &s0);
		T_CHECK(ftl_read(f, buf, 33 * MIB, MIB) == -EIO, "damaged run");
		ftl_stats_get(f, &s1);
		T_EQ_U64(s1.read_crc_errors - s0.read_crc_errors, 1,
			 "one CRC error");
		T_CHECK(ftl_read(f, buf, 33 * MIB, 100 * 4096) == 0 &&
			ftl_read(f, buf, 33 * MIB + 101 * 4096, MIB - 101 * 4096) == 0,
			"the pages around it read");
		t_fill_tag(chk, MIB, 1001);
		T_CHECK(!memcmp(buf, chk + 101 * 4096, MIB - 101 * 4096),
			"data after the damaged page");
	}

	/* a full device, 4 KiB random writes: GC reads its victims in runs
	 * (one backing read per victim on layout 1.1, not one per page) */
	{
		struct ftl_stats s0, s1;
		uint64_t rel, hw = 6000;
		double rpp, opw, wpp;

		for (uint64_t off = 0; off < c.size; off += MIB) {
			t_fill_tag(buf, MIB, off);
			T_CHECK(ftl_write(f, buf, off, MIB, 0) == 0, "fill");
		}
		ftl_stats_get(f, &s0);
		nand_counters_get(ftl_test_nand(f), &n0);
		for (uint64_t i = 0; i < hw; i++) {
			uint64_t pg = t_xorshift(&rs) % (c.size / 4096);
			t_fill_tag(buf, 4096, pg);
			T_CHECK(ftl_write(f, buf, pg * 4096, 4096, 0) == 0, "w");
		}
		ftl_stats_get(f, &s1);
		nand_counters_get(ftl_test_nand(f), &n1);
		rel = s1.gc_relocations - s0.gc_relocations;
		rpp = rel ? (double)(n1.backing_reads - n0.backing_reads) / rel : 0;
		opw = (double)(n1.backing_reads - n0.backing_reads +
			       n1.backing_writes - n0.backing_writes) / hw;
		fprintf(stderr, "4K random write, full device: WA %.2f, %.2f "
			"backing calls per write, %.3f backing reads per GC "
			"relocation\n", (double)(hw + rel) / hw, opw, rpp);
		T_CHECK(rel > 0, "GC relocated pages");
		T_CHECK(rpp <= 0.5, "%.3f backing reads per relocated page "
			"(GC reads victims in runs: max 0.5)", rpp);
		/* and programs the copies in runs: every backing write beyond
		 * the one per host write (copies, erases, syncs, checkpoints)
		 * counted against the copies, at most 0.1 per copied page */
		wpp = rel ? (double)(n1.backing_writes - n0.backing_writes -
				     hw) / rel : 0;
		fprintf(stderr, "4K random write, full device: %.3f backing "
			"writes per GC relocation (beyond one per host "
			"write)\n", wpp);
		T_CHECK(n1.backing_writes - n0.backing_writes >= hw &&
			wpp <= 0.1, "%.3f backing writes per relocated page "
			"(GC programs copies in runs: max 0.1)", wpp);
	}

	/* a full device, 1 MiB sequential overwrites (WA ~1: GC finds whole
	 * blocks invalid): opening a block GC just erased reads nothing back
	 * (nand_erase zeroed it), so the pass reads (almost) nothing */
	{
		struct ftl_stats s0, s1;
		uint64_t n = c.size / MIB;
		double rpm;

		for (int pass = 0; pass < 2; pass++) {
			ftl_stats_get(f, &s0);
			nand_counters_get(ftl_test_nand(f), &n0);
			for (uint64_t off = 0; off < c.size; off += MIB) {
				t_fill_tag(buf, MIB, off + 7 + (uint64_t)pass);
				T_CHECK(ftl_write(f, buf, off, MIB, 0) == 0,
					"overwrite");
			}
			ftl_stats_get(f, &s1);
			nand_counters_get(ftl_test_nand(f), &n1);
		}
		rpm = (double)(n1.backing_reads - n0.backing_reads) / (double)n;
		fprintf(stderr, "1 MiB sequential overwrite, full device: %.3f "
			"backing reads, %.2f backing writes per write, %llu GC "
			"relocations\n", rpm,
			(double)(n1.backing_writes - n0.backing_writes) / (double)n,
			(unsigned long long)(s1.gc_relocations - s0.gc_relocations));
		T_CHECK(rpm <= 0.25, "%.3f backing reads per 1 MiB sequential "
			"overwrite (max 0.25: a block GC erased is not read "
			"back when opened)", rpm);
		t_fill_tag(chk, MIB, 5 * MIB + 8);
		T_CHECK(ftl_read(f, buf, 5 * MIB, MIB) == 0 &&
			!memcmp(buf, chk, MIB), "overwritten data reads back");
	}

	/* a killed server (page cache kept, nothing synced, no checkpoint):
	 * roll-forward finds every acknowledged page, none older */
	{
		static uint64_t last[64 * MIB / 4096];
		uint64_t k;

		for (unsigned i = 0; i < 3000; i++) {
			uint64_t pg = t_xorshift(&rs) % (c.size / 4096);
			t_fill_tag(buf, 4096, pg * 7919 + i);
			T_CHECK(ftl_write(f, buf, pg * 4096, 4096, 0) == 0, "w");
			last[pg] = i + 1;
		}
		ftl_abandon(f);         /* kill -9: the writes are in the cache */
		f = NULL;
		T_CHECK(ftl_open(path, NULL, &f) == 0, "reopen after a kill");
		for (k = 0; f && k < c.size / 4096; k++) {
			if (!last[k])
				continue;
			t_fill_tag(chk, 4096, k * 7919 + last[k] - 1);
			if (ftl_read(f, buf, k * 4096, 4096) || memcmp(buf, chk, 4096)) {
				T_CHECK(0, "page %llu lost or old after a kill",
					(unsigned long long)k);
				break;
			}
		}
	}
	T_CHECK(f && ftl_close(f) == 0, "close");
out:
	unlink(path);
	free(buf);
	free(chk);
	return t_result();
}
