/* SPDX-License-Identifier: MIT */
/*
 * One copy per GC'd page on a mapped backing (an image on tmpfs): GC
 * programs its copies straight from the victim's pages in the backing's
 * mapping (nand_read_run_view, ftl_gc.c evac_read), so the victim's data
 * is never read into memory -- only its OOB records.  Measured by the
 * nand's read_bytes over a phase of random 4 KiB overwrites of a full
 * device (no host reads): under a quarter of a page read per GC copy (the
 * OOB records and the checkpoints' reads), where a whole-block read costs
 * ppb pages per victim (over one page per copy).  Both with GC in the
 * writers and with the GC thread (its victim read with f->lock released,
 * resumed across steps).  Every page then reads what was last written,
 * after a clean close and reopen too, and fsck passes.  A fresh seed per
 * run (OCTANT_SEED replays).  SKIP without a tmpfs at /dev/shm.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE   (8u << 20)
#define PAGES  (SIZE / 4096)
#define TMPFS_MAGIC 0x01021994

static uint64_t rs;
static uint32_t cur[PAGES];     /* what each page last got (0: zeroes) */

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static void fill(uint8_t *p, uint32_t lpn, uint32_t id)
{
	t_fill_tag(p, 4096, (uint64_t)lpn << 32 | id);
}

static void put(struct ftl *f, uint32_t l, uint32_t id)
{
	uint8_t w[4096];

	fill(w, l, id);
	T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0,
		"write lpn %u", l);
	cur[l] = id;
}

static void verify(struct ftl *f, const char *when)
{
	uint8_t w[4096], r[4096];
	unsigned bad = 0;

	for (uint32_t l = 0; l < PAGES; l++) {
		fill(w, l, cur[l]);
		bad += ftl_read(f, r, (uint64_t)l * 4096, 4096) != 0 ||
		       memcmp(r, w, 4096) != 0;
	}
	T_CHECK(bad == 0, "%s: %u pages read wrong", when, bad);
}

static void phase(const char *path, bool bg, uint32_t *id)
{
	struct ftl_open_opts o = { .bg_gc = bg };
	struct nand_counters c0, c1;
	struct ftl_stats s0, s1;
	struct ftl *f = NULL;
	uint64_t copies, rd;

	T_CHECK(ftl_open(path, &o, &f) == 0, "open (bg_gc %d)", bg);
	if (!f)
		return;
	nand_counters_get(f->nand, &c0);
	ftl_stats_get(f, &s0);
	for (unsigned i = 0; i < PAGES * 4; i++)
		put(f, (uint32_t)(rnd() % PAGES), (*id)++);
	nand_counters_get(f->nand, &c1);
	ftl_stats_get(f, &s1);
	copies = s1.gc_relocations - s0.gc_relocations;
	rd = c1.read_bytes - c0.read_bytes;
	fprintf(stderr, "bg_gc %d: %llu GC copies, %llu bytes read (%.1f per "
		"copy; a page is 4096)\n", bg, (unsigned long long)copies,
		(unsigned long long)rd, copies ? (double)rd / copies : 0.0);
	T_CHECK(copies >= PAGES, "bg_gc %d: only %llu GC copies", bg,
		(unsigned long long)copies);
	T_CHECK(rd < copies * 4096 / 4, "bg_gc %d: %llu bytes read for %llu "
		"GC copies: the victims' data was read, not programmed from "
		"the mapping", bg, (unsigned long long)rd,
		(unsigned long long)copies);
	T_EQ_U64(s1.nand_violations, 0, "nand violations");
	T_EQ_U64(s1.gc_bg_errors, 0, "background errors");
	verify(f, bg ? "thread, before close" : "writers, before close");
	T_CHECK(ftl_close(f) == 0, "close");
	f = NULL;
	T_CHECK(ftl_open(path, &o, &f) == 0, "reopen");
	if (f) {
		verify(f, "after reopen");
		T_CHECK(ftl_close(f) == 0, "close again");
	}
}

int main(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 64, .op_permille = 125 };
	struct ftl_open_opts o = { 0 };
	char path[] = "/dev/shm/octant-gc-onecopy-XXXXXX";
	FILE *null = fopen("/dev/null", "w");
	struct statfs sfs;
	struct ftl *f = NULL;
	uint32_t id = 1;
	int fd, rc;

	if (statfs("/dev/shm", &sfs) || sfs.f_type != TMPFS_MAGIC)
		T_SKIP("no tmpfs at /dev/shm (the mapped backing needs one)");
	if (getenv("OCTANT_BACKING_MAP"))
		T_SKIP("OCTANT_BACKING_MAP is set: the mapping may be off");
	rs = t_seed() | 1;
	fd = mkstemp(path);
	if (fd < 0)
		T_SKIP("cannot create a file in /dev/shm: %s", strerror(errno));
	close(fd);
	if (ftl_create(path, &c) || ftl_open(path, &o, &f)) {
		T_CHECK(0, "setup");
		unlink(path);
		return t_result();
	}
	for (uint32_t l = 0; l < PAGES; l++)   /* full */
		put(f, l, id++);
	T_CHECK(ftl_close(f) == 0, "close after the fill");
	phase(path, false, &id);
	phase(path, true, &id);
	rc = ftl_fsck(path, false, null, false);
	T_CHECK(rc == 0, "fsck: %d", rc);
	unlink(path);
	if (null)
		fclose(null);
	return t_result();
}
