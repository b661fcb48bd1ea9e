/* SPDX-License-Identifier: MIT */
/*
 * The wear figures of ftl_stats (what make compare --aged plots): after
 * GC has run on a full 8 MiB device with cold data pinned,
 * 1. the erase-count histogram holds every data block, from erase_min,
 *    and its last non-empty bucket holds erase_max;
 * 2. the wear map holds one cell per data block (group 1 here), equal to
 *    nand_block_ec() of that block; its max is erase_max;
 * 3. programs_host + programs_gc + programs_ckpt == page_programs,
 *    programs_gc == gc_relocations + wl_relocations > 0;
 * 4. the JSON carries the keys (erase_hist, wear_map, programs_*);
 * 5. after a reopen, 6. on a fresh image, the split still adds up to
 *    page_programs.
 * Random offsets: seed printed, replay with OCTANT_SEED.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

int main(void)
{
	struct ftl_create_opts c = { .size = 8 << 20, .align = FTL_ALIGN_1M,
		.pages_per_block = 16, .op_permille = 125 };
	struct ftl_open_opts o = { .wl_threshold = 8 };
	static uint8_t page[4096], buf[1 << 20];
	uint64_t rs = t_seed() | 1, pages = (8 << 20) / 4096, hist = 0;
	struct ftl_stats st;
	struct ftl *f = NULL;
	uint32_t mx = 0, last = 0;
	char *json = NULL;
	size_t len = 0;
	FILE *m;

	char path[] = "/tmp/octant-ftl-stats-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0 || ftl_create(path, &c) || ftl_open(path, &o, &f)) {
		T_CHECK(0, "setup");
		if (fd >= 0)
			unlink(path);
		return t_result();
	}
	close(fd);
	for (uint64_t off = 0; off < ftl_size(f); off += sizeof(buf))
		ftl_write(f, buf, off, sizeof(buf), 0);
	/* the first 70 % stays cold, the rest is overwritten 20 times */
	for (uint64_t i = 0; i < 20 * pages * 3 / 10; i++) {
		uint64_t p = pages * 7 / 10 + t_xorshift(&rs) % (pages * 3 / 10);
		memcpy(page, &i, sizeof(i));
		T_CHECK(ftl_write(f, page, p * 4096, 4096, 0) == 0, "write");
	}
	ftl_stats_get(f, &st);

	for (uint32_t i = 0; i < FTL_ERASE_HIST; i++) {
		hist += st.erase_hist[i];
		if (st.erase_hist[i])
			last = i;
	}
	T_EQ_U64(hist, ftl_test_geom(f)->data_blocks, "histogram holds every data block");
	T_EQ_U64(st.erase_hist_base, st.erase_min, "histogram base");
	T_CHECK(st.erase_hist_width >= 1, "width %u", st.erase_hist_width);
	T_CHECK(st.erase_max >= st.erase_hist_base + last * st.erase_hist_width &&
		st.erase_max < st.erase_hist_base + (last + 1) * st.erase_hist_width,
		"erase_max %u not in the last bucket %u", st.erase_max, last);

	T_EQ_U64(st.wear_map_group, 1, "wear map group");
	T_EQ_U64(st.wear_map_len, ftl_test_geom(f)->data_blocks, "wear map length");
	for (uint32_t i = 0; i < st.wear_map_len; i++) {
		if (st.wear_map[i] > mx)
			mx = st.wear_map[i];
		T_EQ_U64(st.wear_map[i],
			 nand_block_ec(ftl_test_nand(f), ftl_test_geom(f)->ckpt_blocks + i),
			 "wear map cell %u", i);
	}
	T_EQ_U64(mx, st.erase_max, "wear map max");

	T_EQ_U64(st.programs_host + st.programs_gc + st.programs_ckpt,
		 st.page_programs, "programs split");
	T_EQ_U64(st.programs_gc, st.gc_relocations + st.wl_relocations,
		 "GC-stream programs");
	T_CHECK(st.gc_relocations > 0, "GC ran");
	T_CHECK(st.programs_host >= pages, "host programs %llu",
		(unsigned long long)st.programs_host);
	fprintf(stderr, "erase min %u max %u, hist width %u, programs host %llu "
		"gc %llu ckpt %llu\n", st.erase_min, st.erase_max,
		st.erase_hist_width, (unsigned long long)st.programs_host,
		(unsigned long long)st.programs_gc,
		(unsigned long long)st.programs_ckpt);

	m = open_memstream(&json, &len);
	T_CHECK(m != NULL, "memstream");
	if (m) {
		ftl_stats_print(&st, m, true);
		fclose(m);
		T_CHECK(strstr(json, "\"erase_hist\":[") &&
			strstr(json, "\"wear_map\":[") &&
			strstr(json, "\"wear_map_group\":1,") &&
			strstr(json, "\"programs_gc\":") &&
			strstr(json, "\"programs_host\":") &&
			strstr(json, "\"programs_ckpt\":") &&
			strstr(json, "\"erase_hist_width\":"), "JSON keys: %s",
			json);
		free(json);
	}
	T_CHECK(ftl_close(f) == 0, "close");

	/* 5. reopened: the counters come from the last checkpoint, whose own
	 * pages page_programs does not hold; the split still adds up */
	f = NULL;
	T_CHECK(ftl_open(path, &(struct ftl_open_opts){ .readonly = true },
			 &f) == 0, "reopen");
	if (f) {
		ftl_stats_get(f, &st);
		T_EQ_U64(st.programs_host + st.programs_gc + st.programs_ckpt,
			 st.page_programs, "programs split after reopen");
		T_CHECK(st.programs_host > 0, "host programs after reopen");
		ftl_close(f);
	}

	/* 6. a fresh image, read-only: only checkpoints were ever programmed,
	 * fewer than ckpt_writes suggests (the newest one's own pages are
	 * not in the counters it carries) */
	c.force = true;
	T_CHECK(ftl_create(path, &c) == 0, "create again");
	f = NULL;
	T_CHECK(ftl_open(path, &(struct ftl_open_opts){ .readonly = true },
			 &f) == 0, "open fresh");
	if (f) {
		ftl_stats_get(f, &st);
		T_EQ_U64(st.programs_host + st.programs_gc + st.programs_ckpt,
			 st.page_programs, "programs split of a fresh image");
		ftl_close(f);
	}
	unlink(path);
	return t_result();
}
