/* SPDX-License-Identifier: MIT */
/* Engine basics: create/open/close on a file, read back, RMW counters,
 * clean reopen, roll-forward after a crash, topology, stats. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

static char img[256];

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

static struct ftl *open_img(bool ro)
{
	struct ftl_open_opts o = { .readonly = ro };
	struct ftl *f = NULL;
	int r = ftl_open(img, &o, &f);

	T_CHECK(r == 0, "open: %s", strerror(-r));
	if (r)
		exit(t_result());
	return f;
}

static void rmw_counts(enum ftl_align_mode a)
{
	struct ftl_create_opts c = { .size = 8 << 20, .align = a, .force = true };
	struct ftl_stats s0, s1;
	uint8_t buf[8192];
	struct ftl *f;

	T_CHECK(ftl_create(img, &c) == 0, "create");
	f = open_img(false);
	fill(buf, sizeof(buf), 1);
	/* 4K-aligned 4K write */
	ftl_stats_get(f, &s0);
	T_CHECK(ftl_write(f, buf, 64 * 512, 4096, 0) == 0, "write");
	ftl_stats_get(f, &s1);
	if (a == FTL_ALIGN_1M) {
		T_EQ_U64(s1.rmw_subpage + s1.rmw_straddle, 0, "1m: aligned 4K");
	} else {
		T_EQ_U64(s1.rmw_straddle - s0.rmw_straddle, 2, "odd: LBA 64");
		T_EQ_U64(s1.rmw_subpage - s0.rmw_subpage, 0, "odd: LBA 64");
		s0 = s1;
		T_CHECK(ftl_write(f, buf, 63 * 512, 4096, 0) == 0, "write");
		ftl_stats_get(f, &s1);
		T_EQ_U64(s1.rmw_straddle + s1.rmw_subpage,
			 s0.rmw_straddle + s0.rmw_subpage, "odd: LBA 63");
	}
	s0 = s1;
	T_CHECK(ftl_write(f, buf, 1000 * 512, 512, 0) == 0, "write");
	ftl_stats_get(f, &s1);
	T_EQ_U64(s1.rmw_subpage - s0.rmw_subpage, 1, "512 B write");
	s0 = s1;
	/* 8K write at LBA 65: odd -> medium byte 33792: pages 8,9,10 */
	T_CHECK(ftl_write(f, buf, 65 * 512, 8192, 0) == 0, "write");
	ftl_stats_get(f, &s1);
	T_EQ_U64(s1.rmw_straddle - s0.rmw_straddle, 2, "8K misaligned");
	T_EQ_U64(s1.nand_violations, 0, "violations");
	T_CHECK(ftl_close(f) == 0, "close");
}

int main(void)
{
	struct ftl_create_opts c = { .size = 16 << 20, .align = FTL_ALIGN_ODD };
	struct ftl_open_opts o = { 0 };
	struct align_topology t;
	struct ftl_stats st;
	struct ftl_info info;
	uint8_t *w = malloc(1 << 20), *r = malloc(1 << 20);
	struct ftl *f, *g;
	int rc;

	snprintf(img, sizeof(img), "%s/ftl-basic.%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	unlink(img);
	T_CHECK(ftl_create(img, &c) == 0, "create");
	T_CHECK(ftl_create(img, &c) == -EEXIST, "second create refused");
	T_CHECK(ftl_info_read(img, &info) == 0, "info");
	T_EQ_U64(info.logical_size, 16 << 20, "size");
	T_EQ_U64(info.topo.alignment_offset, 3584, "odd offset");
	T_EQ_U64(info.page_size, 4096, "page");

	f = open_img(false);
	T_EQ_U64(ftl_size(f), 16 << 20, "ftl_size");
	ftl_topology(f, &t);
	T_EQ_U64(t.alignment_offset, 3584, "topology");
	T_EQ_U64(t.physical, 4096, "topology");
	rc = ftl_open(img, &o, &g);
	T_CHECK(rc == -EBUSY, "second rw open busy: %d", rc);

	/* unwritten reads as zeroes */
	memset(r, 0xaa, 65536);
	T_CHECK(ftl_read(f, r, 0, 65536) == 0, "read");
	for (int i = 0; i < 65536; i++)
		if (r[i]) {
			T_CHECK(0, "unwritten byte %d = %u", i, r[i]);
			break;
		}
	fill(w, 1 << 20, 7);
	T_CHECK(ftl_write(f, w, 512 * 3, 1 << 20, 0) == 0, "write 1M");
	T_CHECK(ftl_read(f, r, 512 * 3, 1 << 20) == 0, "read 1M");
	T_CHECK(!memcmp(w, r, 1 << 20), "1M read back");
	T_CHECK(ftl_write(f, w, 0, 512, FTL_FUA) == 0, "fua");
	T_CHECK(ftl_flush(f) == 0, "flush");
	T_CHECK(ftl_discard(f, 512 * 3, 65536) == 0, "discard");
	T_CHECK(ftl_read(f, r, 512 * 3, 65536) == 0, "read");
	for (int i = 0; i < 65536; i++)
		if (r[i]) {
			T_CHECK(0, "discarded byte %d = %u", i, r[i]);
			break;
		}
	T_CHECK(ftl_write(f, w, 16 << 20, 512, 0) == -EINVAL, "past end");
	T_CHECK(ftl_write(f, w, 100, 512, 0) == -EINVAL, "unaligned");
	ftl_stats_get(f, &st);
	T_EQ_U64(st.host_fua, 1, "fua count");
	T_EQ_U64(st.nand_violations, 0, "violations");
	ftl_stats_print(&st, stderr, true);
	T_CHECK(ftl_close(f) == 0, "close");

	/* clean reopen */
	f = open_img(false);
	ftl_stats_get(f, &st);
	T_EQ_U64(st.last_mount, FTL_MOUNT_CLEAN, "clean mount");
	T_CHECK(ftl_read(f, r, 512 * 3 + 65536, (1 << 20) - 65536) == 0, "read");
	T_CHECK(!memcmp(w + 65536, r, (1 << 20) - 65536), "after reopen");
	fill(w, 1 << 20, 9);
	T_CHECK(ftl_write(f, w, 0, 1 << 20, 0) == 0, "write");
	T_CHECK(ftl_flush(f) == 0, "flush");
	ftl_abandon(f);          /* crash */

	f = open_img(false);
	ftl_stats_get(f, &st);
	T_EQ_U64(st.last_mount, FTL_MOUNT_ROLL_FORWARD, "roll-forward mount");
	T_CHECK(ftl_read(f, r, 0, 1 << 20) == 0, "read");
	T_CHECK(!memcmp(w, r, 1 << 20), "flushed data after crash");
	T_CHECK(ftl_close(f) == 0, "close");

	o.scan = true;
	T_CHECK(ftl_open(img, &o, &f) == 0, "scan open");
	ftl_stats_get(f, &st);
	T_EQ_U64(st.last_mount, FTL_MOUNT_SCAN, "scan mount");
	T_CHECK(ftl_read(f, r, 0, 1 << 20) == 0, "read");
	T_CHECK(!memcmp(w, r, 1 << 20), "data after scan");
	T_CHECK(ftl_close(f) == 0, "close");

	f = open_img(true);
	T_CHECK(ftl_write(f, w, 0, 512, 0) == -EROFS, "readonly");
	T_CHECK(ftl_close(f) == 0, "close ro");

	rmw_counts(FTL_ALIGN_ODD);
	rmw_counts(FTL_ALIGN_1M);
	unlink(img);
	free(w);
	free(r);
	return t_result();
}
