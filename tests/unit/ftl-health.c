/* SPDX-License-Identifier: MIT */
/*
 * The lifetime counters of the health log (ftl_health, ftl-counters.h
 * FTL_LIFE_COUNTERS) persist in checkpoints and survive a kill -9:
 * 1. kill -9 (ftl_abandon) after a checkpoint and more I/O, with delta
 *    checkpoints and with full ones: the next open reports at least what
 *    the checkpoint held and at most the true totals, the host counters
 *    exactly the checkpoint's; unsafe_shutdowns + 1, power_cycles + 1;
 * 2. a session killed before its first checkpoint (a clean start: only its
 *    mount marker) still counts as a power cycle;
 * 3. a clean close and reopen: power_cycles + 1, no unsafe shutdown; a
 *    read-only open counts nothing;
 * 4. a page damaged on the medium: the read and the write over it fail
 *    with EIO, media_errors counts both, critical warning bit 2, persisted;
 * 5. the rated endurance (create's pe_cycles, in the superblock) and
 *    percentage used = floor(100 x mean erase count / rated), capped 255;
 * 6. available spare and warning bits 0 and 3 as blocks go bad;
 * 7. images of the format before the lifetime counters
 *    (tests/data/health, made by the engine at 3c48226: a version-4 base
 *    with a version-1 delta record, and a version-3 full checkpoint) open
 *    with their counters, the new ones 0; a read-write open counts, the
 *    next checkpoint is a version-5 base; after a kill the marker rule
 *    holds there too.
 * Random workloads: seed printed, replay with OCTANT_SEED.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): checkpoints written
 * on demand, delta or base (f->ck), blocks retired (ftl_retire_block).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE (4u << 20)

static uint64_t rs;
static const struct ftl_create_opts copts = { .size = SIZE,
	.align = FTL_ALIGN_ODD, .pages_per_block = 16, .op_permille = 250 };

static struct ftl *open_mem(struct nand_backing *b, bool ro)
{
	struct ftl_open_opts o = { .readonly = ro };
	struct ftl *f = NULL;
	int r;

	nand_mem_hold(b);
	r = ftl_open_backing(b, &o, &f);
	T_CHECK(r == 0, "open: %d", r);
	if (r)
		exit(t_result());
	return f;
}

static struct nand_backing *make(bool delta, const struct ftl_create_opts *c)
{
	struct nand_backing *b;
	uint64_t sz = delta ? ftl_test_image_size(c) :
			      ftl_test_image_size_full(c);

	if (nand_backing_mem(sz, false, &b) ||
	    (delta ? ftl_create_backing(b, c) :
		     ftl_test_create_backing_full(b, c))) {
		T_CHECK(0, "create");
		exit(t_result());
	}
	return b;
}

static struct ftl_health health(struct ftl *f)
{
	struct ftl_health h;

	ftl_health_get(f, &h);
	return h;
}

/* @n random writes (512 B..32 KiB) and reads, no checkpoint on purpose
 * (small enough for none to come by itself). */
static void io(struct ftl *f, int n)
{
	static uint8_t buf[32768];

	for (int i = 0; i < n; i++) {
		uint64_t len = (1 + t_xorshift(&rs) % 64) * 512;
		uint64_t off = t_xorshift(&rs) % ((SIZE - len) / 512) * 512;

		memset(buf, (int)t_xorshift(&rs), len);
		T_CHECK(ftl_write(f, buf, off, len, 0) == 0, "write");
		T_CHECK(ftl_read(f, buf, off, len) == 0, "read");
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
}

static void checkpoint(struct ftl *f)
{
	ftl_lock(&f->lock);
	T_CHECK(ftl_ckpt_write(f, false) == 0, "checkpoint");
	ftl_unlock(&f->lock);
}

/* lo <= x <= hi for every counter the health log carries forward. */
#define BETWEEN(lo, x, hi, what) do {                                    \
	T_CHECK((lo) <= (x) && (x) <= (hi), "%s: %s %llu not in %llu..%llu", \
		what, #x, (unsigned long long)(x), (unsigned long long)(lo), \
		(unsigned long long)(hi));                               \
} while (0)

/* 1 and 2 and 3 on one image. */
static void kill_cycles(bool delta)
{
	const char *what = delta ? "delta" : "full";
	struct nand_backing *b = make(delta, &copts);
	struct ftl_health a, t, h, p;
	struct ftl *f;

	f = open_mem(b, false);
	h = health(f);
	T_EQ_U64(h.power_cycles, 1, "%s: first open", what);
	T_EQ_U64(h.unsafe_shutdowns, 0, "%s: first open", what);
	io(f, 40);
	checkpoint(f);
	if (delta)
		T_CHECK(f->ck.didx >= 1, "%s: the checkpoint is a delta "
			"record (%u)", what, f->ck.didx);
	a = health(f);           /* what the checkpoint holds */
	io(f, 40);
	t = health(f);           /* the true totals at the kill */
	T_CHECK(t.host_write_commands > a.host_write_commands, "more I/O");
	ftl_abandon(f);

	f = open_mem(b, false);  /* rolls forward */
	h = health(f);
	T_CHECK(f->mnt.kind == FTL_MOUNT_ROLL_FORWARD, "%s: roll-forward",
		what);
	BETWEEN(a.host_write_commands, h.host_write_commands,
		t.host_write_commands, what);
	BETWEEN(a.host_read_commands, h.host_read_commands,
		t.host_read_commands, what);
	BETWEEN(a.data_units_written, h.data_units_written,
		t.data_units_written, what);
	BETWEEN(a.data_units_read, h.data_units_read, t.data_units_read, what);
	BETWEEN(a.host_write_sectors, h.host_write_sectors,
		t.host_write_sectors, what);
	BETWEEN(a.media_errors, h.media_errors, t.media_errors, what);
	BETWEEN(a.power_on_seconds, h.power_on_seconds,
		t.power_on_seconds + 1, what);
	/* the host counters are exactly the checkpoint's (the I/O after it
	 * is lost with the kill) */
	T_EQ_U64(h.host_write_commands, a.host_write_commands, "%s", what);
	T_EQ_U64(h.host_read_sectors, a.host_read_sectors, "%s", what);
	T_CHECK(h.page_programs >= a.page_programs &&
		h.block_erases >= a.block_erases, "%s: flash counters", what);
	T_EQ_U64(h.unsafe_shutdowns, 1, "%s: the kill", what);
	T_EQ_U64(h.power_cycles, 2, "%s: two read-write opens", what);
	T_CHECK(ftl_close(f) == 0, "close");

	/* 3: a clean close: no unsafe shutdown; read-only counts nothing */
	f = open_mem(b, false);
	h = health(f);
	T_CHECK(f->mnt.kind == FTL_MOUNT_CLEAN, "%s: clean", what);
	T_EQ_U64(h.unsafe_shutdowns, 1, "%s: after a clean close", what);
	T_EQ_U64(h.power_cycles, 3, "%s: clean reopen", what);
	T_CHECK(ftl_close(f) == 0, "close");
	f = open_mem(b, true);
	p = health(f);
	T_EQ_U64(p.power_cycles, 3, "%s: read-only open", what);
	T_EQ_U64(p.unsafe_shutdowns, 1, "%s: read-only open", what);
	ftl_close(f);

	/* 2: killed before the session's first checkpoint (a clean start
	 * writes only its mount marker) */
	f = open_mem(b, false);
	p = health(f);
	T_EQ_U64(p.power_cycles, 4, "%s", what);
	io(f, 5);
	ftl_abandon(f);
	f = open_mem(b, false);
	h = health(f);
	T_EQ_U64(h.power_cycles, 5, "%s: the killed session counts (its "
		 "marker) and this open", what);
	T_EQ_U64(h.unsafe_shutdowns, 2, "%s: the second kill", what);
	T_CHECK(ftl_close(f) == 0, "close");
	b->ops->destroy(b);
}

/* 4: a flushed page damaged on the medium */
static void media_errors(void)
{
	struct nand_backing *b = make(true, &copts);
	static uint8_t buf[4096];
	struct ftl_health h;
	struct ftl *f = open_mem(b, false);
	uint64_t sz, off;
	uint8_t *bytes;
	uint32_t ppn;

	memset(buf, 0x77, sizeof(buf));
	T_CHECK(ftl_write(f, buf, 4096 * 10 - 512, 4096, 0) == 0, "write");
	T_CHECK(ftl_flush(f) == 0, "flush");
	h = health(f);
	T_EQ_U64(h.media_errors, 0, "none yet");
	T_EQ_U64(h.critical_warning, 0, "no warning yet");
	ppn = ftl_map_get(f, 10);       /* odd: byte 40960 is page 10 */
	T_CHECK(ppn < FTL_DAMAGED, "page 10 mapped");
	bytes = nand_mem_bytes(b, &sz);
	off = ftl_page_off(&f->g, ppn);
	bytes[off + 100] ^= 0x10;       /* one bit the ECC does not see */
	T_CHECK(ftl_read(f, buf, 4096 * 10 - 512, 4096) == -EIO, "read EIO");
	T_CHECK(ftl_read(f, buf, 4096 * 10 + 1024, 512) == -EIO, "part: EIO");
	h = health(f);
	T_EQ_U64(h.media_errors, 2, "two reads failed");
	T_CHECK(h.critical_warning & FTL_CW_DEGRADED, "warning bit 2: %#x",
		h.critical_warning);
	T_EQ_U64(h.host_read_commands, 0, "a failed read is no read command");
	T_CHECK(ftl_close(f) == 0, "close");
	f = open_mem(b, true);
	h = health(f);
	T_EQ_U64(h.media_errors, 2, "persisted");
	T_CHECK(h.critical_warning == FTL_CW_DEGRADED, "warning %#x",
		h.critical_warning);
	ftl_close(f);
	b->ops->destroy(b);
}

/* 5: percentage used against the rated endurance */
static void endurance(void)
{
	struct ftl_create_opts c = copts;
	static uint8_t buf[65536];
	struct nand_backing *b;
	struct ftl_health h;
	struct ftl_geom g;
	struct ftl *f;
	bool hit100 = false;

	c.pe_cycles = FTL_PE_MAX + 1;
	T_CHECK(ftl_create_opts_geom(&c, &g) == -EINVAL, "pe_cycles too big");
	c.pe_cycles = 2;
	b = make(true, &c);
	f = open_mem(b, false);
	T_EQ_U64(f->g.pe_cycles, 2, "from the superblock");
	for (int round = 0; round < 200; round++) {
		uint64_t want;

		for (uint64_t off = 0; off < SIZE / 2; off += sizeof(buf))
			T_CHECK(ftl_write(f, buf, off, sizeof(buf), 0) == 0,
				"write");
		h = health(f);
		want = (uint64_t)(100.0 * h.erase_mean / 2);
		T_EQ_U64(h.percentage_used, want > 255 ? 255 : want,
			 "round %d: mean %.3f", round, h.erase_mean);
		hit100 |= h.percentage_used >= 100 && h.percentage_used < 255;
		if (h.percentage_used == 255)
			break;
	}
	T_CHECK(hit100, "passed 100 %% before the cap");
	T_EQ_U64(h.percentage_used, 255, "capped at 255 (mean %.2f)",
		 h.erase_mean);
	T_EQ_U64(h.critical_warning, 0, "worn past the rating: no warning");
	T_CHECK(ftl_close(f) == 0, "close");
	f = open_mem(b, true);
	T_EQ_U64(health(f).pe_cycles, 2, "reopened");
	ftl_close(f);
	b->ops->destroy(b);
}

/* 6: spares used up block by block */
static void spare(void)
{
	struct nand_backing *b = make(true, &copts);
	struct ftl *f = open_mem(b, false);
	struct ftl_health h = health(f);
	uint64_t limit = h.bad_block_limit, n = 0;

	T_CHECK(limit >= 5, "a spare area (%llu)", (unsigned long long)limit);
	T_EQ_U64(h.available_spare, 100, "fresh");
	ftl_lock(&f->lock);
	for (uint32_t blk = f->g.nblocks - 1; n <= limit; blk--) {
		if (f->idx.state[blk] != FTL_BLK_FREE)
			continue;
		ftl_retire_block(f, blk, "test");
		n++;
		ftl_unlock(&f->lock);
		h = health(f);
		ftl_lock(&f->lock);
		T_EQ_U64(h.bad_blocks_grown, n, "grown");
		T_EQ_U64(h.spare_blocks, n < limit ? limit - n : 0, "left");
		T_EQ_U64(h.available_spare, 100 * (n < limit ? limit - n : 0) /
			 limit, "%llu bad of %llu", (unsigned long long)n,
			 (unsigned long long)limit);
		T_EQ_U64(!!(h.critical_warning & FTL_CW_SPARE),
			 h.available_spare < FTL_SPARE_THRESHOLD, "bit 0 at %u %%",
			 h.available_spare);
		T_EQ_U64(!!(h.critical_warning & FTL_CW_READ_ONLY), n > limit,
			 "bit 3 with %llu bad", (unsigned long long)n);
	}
	ftl_unlock(&f->lock);
	T_CHECK(h.read_only && (h.critical_warning & FTL_CW_READ_ONLY) &&
		(h.critical_warning & FTL_CW_SPARE), "worn out: %#x",
		h.critical_warning);
	ftl_close(f);
	b->ops->destroy(b);
}

/* Unpack tests/data/health/@name.gz into @img. */
static void unpack(const char *name, const char *img)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "tests/data/health/%s.gz", name);
	t_unpack(rel, img);
}

/* 7: an image of the format before the lifetime counters */
static void old_image(const char *name, uint64_t reads, uint64_t programs,
		      bool delta)
{
	char img[] = "/tmp/octant-ftl-health-XXXXXX";
	struct ftl_open_opts ro = { .readonly = true }, rw = { 0 };
	static uint8_t buf[4096];
	struct ftl_health h;
	struct ftl *f = NULL;
	uint64_t gen;
	int fd = mkstemp(img);

	T_CHECK(fd >= 0, "mkstemp");
	close(fd);
	unpack(name, img);
	T_CHECK(ftl_open(img, &ro, &f) == 0, "%s: open", name);
	if (!f)
		goto out;
	if (delta)
		T_CHECK(f->ck.didx >= 1, "%s: a version-1 delta record "
			"applied (%u)", name, f->ck.didx);
	h = health(f);
	T_EQ_U64(h.host_write_sectors, 2049, "%s: carried", name);
	T_EQ_U64(h.host_read_sectors, reads, "%s: carried", name);
	T_EQ_U64(h.page_programs, programs, "%s: carried", name);
	T_EQ_U64(h.host_write_commands + h.host_read_commands +
		 h.power_cycles + h.unsafe_shutdowns + h.media_errors +
		 h.power_on_seconds, 0, "%s: the new counters start at 0", name);
	T_EQ_U64(h.pe_cycles, FTL_PE_DEFAULT, "%s: no rating recorded", name);
	gen = f->ck.gen;
	ftl_close(f);

	/* read-write: counted; the clean close writes a version-5 base */
	T_CHECK(ftl_open(img, &rw, &f) == 0, "%s: open rw", name);
	T_CHECK(f->mnt.kind == FTL_MOUNT_CLEAN, "%s: clean", name);
	T_CHECK(ftl_write(f, buf, 0, 4096, 0) == 0, "write");
	T_CHECK(ftl_close(f) == 0, "close");
	T_CHECK(ftl_open(img, &ro, &f) == 0, "%s: reopen", name);
	if (!f)
		goto out;
	h = health(f);
	T_EQ_U64(f->ck.gen, gen + 1, "%s: a new base", name);
	T_EQ_U64(f->ck.didx, 0, "%s: no records after it", name);
	T_EQ_U64(h.power_cycles, 1, "%s", name);
	T_EQ_U64(h.unsafe_shutdowns, 0, "%s", name);
	T_EQ_U64(h.host_write_commands, 1, "%s", name);
	T_EQ_U64(h.host_write_sectors, 2049 + 8, "%s", name);
	ftl_close(f);
	{
		FILE *null = fopen("/dev/null", "w");

		T_EQ_U64(ftl_fsck(img, false, null, false), 0, "%s: fsck", name);
		fclose(null);
	}

	/* the old checkpoint again, and a session killed after its marker */
	unpack(name, img);
	T_CHECK(ftl_open(img, &rw, &f) == 0, "%s: open rw", name);
	T_CHECK(ftl_write(f, buf, 0, 4096, 0) == 0, "write");
	ftl_abandon(f);
	T_CHECK(ftl_open(img, &rw, &f) == 0, "%s: open after the kill", name);
	if (!f)
		goto out;
	h = health(f);
	T_EQ_U64(h.power_cycles, 2, "%s: both sessions", name);
	T_EQ_U64(h.unsafe_shutdowns, 1, "%s: the kill", name);
	T_CHECK(ftl_close(f) == 0, "close");
out:
	unlink(img);
}

int main(void)
{
	rs = t_seed() | 1;
	kill_cycles(true);
	kill_cycles(false);
	media_errors();
	endurance();
	spare();
	old_image("old-v4.img", 88, 339, true);
	old_image("old-v3.img", 80, 341, false);
	return t_result();
}
