/* SPDX-License-Identifier: MIT */
/*
 * libalign's models of the other tools (align_predict_*) against what the
 * real tools did on the same topology: every row below was measured with
 * Debian 12's sfdisk 2.38.1, parted 3.5, sgdisk 1.0.9, mkfs.xfs 6.1 and
 * mke2fs 1.47.0 on scsi_debug / dm-stripe disks in the 6.12 guest
 * (tests/vm/guest/align-matrix.sh) and on image files and loop devices on
 * the host (tests/cli/alignpart-predict.bats), which recheck them against
 * the tools themselves.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "align.h"
#include "test.h"

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define NONE UINT64_MAX

struct topo { uint32_t ls, ps, off, min, opt; uint64_t size; const char *what; };

static struct align_topology mk(const struct topo *c)
{
	struct align_topology t = { .logical = c->ls, .physical = c->ps,
		.alignment_offset = c->off, .io_min = c->min, .io_opt = c->opt,
		.size = c->size, .source = ALIGN_SRC_DEVICE };
	return t;
}

static const struct topo n512 = { 512, 512, 0, 512, 524288, GiB, "scsi_debug 512n" };
static const struct topo e512 = { 512, 4096, 0, 4096, 524288, GiB, "scsi_debug 512e" };
static const struct topo odd = { 512, 4096, 3584, 4096, 524288, GiB, "scsi_debug 512e offset 3584" };
static const struct topo k4 = { 4096, 4096, 0, 4096, 4 * MiB, GiB, "scsi_debug 4Kn (opt 4 MiB)" };
static const struct topo r192 = { 512, 4096, 0, 4096, 196608, GiB, "scsi_debug 512e opt 192 KiB" };
static const struct topo oddr = { 512, 4096, 3584, 4096, 196608, GiB, "512e offset 3584 opt 192 KiB" };
static const struct topo usb = { 512, 512, 0, 512, 33553920, GiB, "512n opt 33553920" };
static const struct topo st3 = { 512, 4096, 0, 12288, 36864, 1073737728, "dm-stripe 3 x 12 KiB" };
static const struct topo f4m = { 512, 0, 0, 0, 0, 4 * MiB, "4 MiB file" };
static const struct topo f64m = { 512, 0, 0, 0, 0, 64 * MiB, "64 MiB file" };
static const struct topo l4k4m = { 4096, 4096, 0, 4096, 0, 4 * MiB, "4 MiB loop, 4096-byte sectors" };

static void test_fdisk(void)
{
	static const struct { const struct topo *t; uint64_t dos, gpt; bool warns; } c[] = {
		{ &n512, 2048, 2048, false },
		{ &e512, 2048, 2048, false },
		{ &odd, 7, 2047, false },       /* the alignment offset; GPT 34 -> 2048 - 1 */
		{ &k4, 1024, 1024, false },     /* io_opt 4 MiB > 1 MiB: it is the first LBA */
		{ &r192, 2048, 2048, false },
		{ &oddr, 7, 2047, false },
		{ &usb, 2048, 2048, false },    /* 33553920 ignored (util-linux #1221) */
		{ &st3, 2048, 2048, true },     /* 1 MiB is not a multiple of 12 KiB */
		{ &f4m, 1, 34, false },         /* small: one physical sector */
		{ &f64m, 2048, 2048, false },
		{ &l4k4m, 1, 6, false },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = mk(c[i].t);
		struct align_tool_result r;

		T_CHECK(align_predict_fdisk(&t, ALIGN_LABEL_DOS, &r) == 0, "%s", c[i].t->what);
		T_EQ_U64(r.start, c[i].dos, "sfdisk dos on %s", c[i].t->what);
		T_CHECK(align_predict_fdisk(&t, ALIGN_LABEL_GPT, &r) == 0, "%s", c[i].t->what);
		T_EQ_U64(r.start, c[i].gpt, "sfdisk gpt on %s", c[i].t->what);
		T_CHECK(r.warns == c[i].warns && r.exit_status == 0, "sfdisk warns on %s", c[i].t->what);
		if (c[i].warns)
			T_CHECK(!strcmp(r.says, "Partition 1 does not start on physical sector boundary."),
				"sfdisk says '%s'", r.says);
	}
}

static void test_parted(void)
{
	static const struct {
		const struct topo *t; enum align_label l; const char *start;
		uint64_t want, grain, off; int exit; const char *says;
	} c[] = {
		{ &n512, ALIGN_LABEL_DOS, "1MiB", 2048, 2048, 0, 0, "" },
		{ &n512, ALIGN_LABEL_GPT, "0%", 2048, 2048, 0, 0, "" },
		{ &odd, ALIGN_LABEL_DOS, "1MiB", 2048, 2048, 7, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 2048s % 2048s != 7s" },
		{ &odd, ALIGN_LABEL_GPT, "1MiB", 2048, 2048, 7, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 2048s % 2048s != 7s" },
		{ &odd, ALIGN_LABEL_DOS, "0%", 7, 2048, 7, 0, "" },
		{ &odd, ALIGN_LABEL_GPT, "0%", 2055, 2048, 7, 0, "" },
		{ &k4, ALIGN_LABEL_GPT, "1MiB", 256, 1024, 0, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 256s % 1024s != 0s" },
		{ &k4, ALIGN_LABEL_DOS, "0%", 1024, 1024, 0, 0, "" },
		{ &r192, ALIGN_LABEL_GPT, "1MiB", 2048, 384, 0, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 2048s % 384s != 0s" },
		{ &r192, ALIGN_LABEL_DOS, "0%", 384, 384, 0, 0, "" },
		{ &st3, ALIGN_LABEL_GPT, "0%", 72, 72, 0, 0, "" },
		{ &st3, ALIGN_LABEL_DOS, "1MiB", 2048, 72, 0, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 2048s % 72s != 0s" },
		/* 0% on a small disk: +-0.5% holds no grid point */
		{ &f64m, ALIGN_LABEL_DOS, "0%", 1, 2048, 0, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 1s % 2048s != 0s" },
		{ &f64m, ALIGN_LABEL_GPT, "0%", 34, 2048, 0, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 34s % 2048s != 0s" },
		{ &f64m, ALIGN_LABEL_GPT, "1MB", 1953, 2048, 0, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 1953s % 2048s != 0s" },
		/* ... and on a 4 MiB 4Kn disk 100% ends in GPT's backup area */
		{ &l4k4m, ALIGN_LABEL_GPT, "0%", NONE, 256, 0, 1, NULL },
		{ &l4k4m, ALIGN_LABEL_GPT, "1MiB", NONE, 256, 0, 1, NULL },
		{ &l4k4m, ALIGN_LABEL_DOS, "0%", 1, 256, 0, 0,
		  "Warning: The resulting partition is not properly aligned for best performance: 1s % 256s != 0s" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = mk(c[i].t);
		struct align_tool_result r;

		T_CHECK(align_predict_parted(&t, c[i].l, c[i].start, "100%", &r) == 0,
			"%s %s", c[i].t->what, c[i].start);
		T_EQ_U64(r.start, c[i].want, "parted %s on %s", c[i].start, c[i].t->what);
		T_EQ_U64(r.grain, c[i].grain, "parted grid on %s", c[i].t->what);
		T_EQ_U64(r.grain_offset, c[i].off, "parted grid offset on %s", c[i].t->what);
		T_CHECK(r.exit_status == c[i].exit, "parted %s on %s: exit %d", c[i].start,
			c[i].t->what, r.exit_status);
		if (c[i].says)
			T_CHECK(!strcmp(r.says, c[i].says), "parted %s on %s says '%s'",
				c[i].start, c[i].t->what, r.says);
		else
			T_CHECK(r.refuses && strstr(r.says, "You requested a partition from"),
				"parted fails: '%s'", r.says);
	}
	struct align_topology t = mk(&n512);
	struct align_tool_result r;

	T_CHECK(align_predict_parted(&t, ALIGN_LABEL_GPT, "x", "100%", &r) == -EINVAL, "junk start");
	T_CHECK(align_predict_parted(&t, ALIGN_LABEL_GPT, "1Q", "100%", &r) == -EINVAL, "bad unit");
	T_CHECK(align_predict_parted(&t, ALIGN_LABEL_GPT, "0.5MiB", "100%", &r) == -EINVAL,
		"a value < 1 is refused, as parted does");
	T_CHECK(align_predict_parted(&t, ALIGN_LABEL_GPT, "2048s", "-34s", &r) == 0 &&
		r.start == 2048, "2048s -34s");
}

static void test_sgdisk(void)
{
	static const struct { const struct topo *t; uint64_t want; } c[] = {
		{ &n512, 2048 }, { &odd, 2048 }, { &k4, 256 }, { &f4m, 2048 }, { &l4k4m, 256 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = mk(c[i].t);
		struct align_tool_result r;

		T_CHECK(align_predict_sgdisk(&t, &r) == 0, "%s", c[i].t->what);
		T_EQ_U64(r.start, c[i].want, "sgdisk on %s", c[i].t->what);
	}
}

static void test_mkfs(void)
{
	static const struct {
		const struct topo *t; int xfs_exit; uint64_t su, sw; const char *xfs;
		uint32_t bs; uint64_t stride, stripe; bool e2warns;
	} c[] = {
		{ &n512, 0, 0, 0, "", 4096, 0, 128 * 4096, false },
		{ &e512, 0, 0, 0, "", 4096, 0, 128 * 4096, false },
		{ &odd, 1, 0, 0, "warning: device is not properly aligned ... Use -f to force usage of a misaligned device",
		  4096, 0, 128 * 4096, true },
		{ &k4, 0, 0, 0, "", 4096, 0, 1024 * 4096, false },
		{ &r192, 0, 0, 0, "", 4096, 0, 48 * 4096, false },
		/* xfs: min 512 is the physical sector -> no stripe; mke2fs
		 * takes 33553920 / 4096 = 8191 blocks */
		{ &usb, 0, 0, 0, "", 4096, 0, 8191 * 4096, false },
		{ &st3, 0, 0, 0, "mkfs.xfs: small data volume, ignoring data volume stripe unit 24 and stripe width 72",
		  4096, 3 * 4096, 9 * 4096, false },
		{ &f4m, 1, 0, 0, "size 1024 of data subvolume is too small, minimum 4096 blocks", 1024, 0, 0, false },
		{ &f64m, 1, 0, 0, "Filesystem must be larger than 300MB.", 1024, 0, 0, false },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct align_topology t = mk(c[i].t);
		struct align_tool_result r;

		T_CHECK(align_predict_mkfs_xfs(&t, &r) == 0, "%s", c[i].t->what);
		T_CHECK(r.exit_status == c[i].xfs_exit && !strcmp(r.says, c[i].xfs) &&
			r.stripe_unit == c[i].su && r.stripe_width == c[i].sw,
			"mkfs.xfs on %s: exit %d says '%s' su %ju sw %ju", c[i].t->what,
			r.exit_status, r.says, (uintmax_t)r.stripe_unit, (uintmax_t)r.stripe_width);
		T_CHECK(align_predict_mke2fs(&t, &r) == 0, "%s", c[i].t->what);
		T_CHECK(r.exit_status == 0 && r.block_size == c[i].bs &&
			r.stripe_unit == c[i].stride && r.stripe_width == c[i].stripe &&
			r.warns == c[i].e2warns, "mke2fs on %s: bs %u stride %ju stripe %ju says '%s'",
			c[i].t->what, r.block_size, (uintmax_t)r.stripe_unit,
			(uintmax_t)r.stripe_width, r.says);
	}
}

/* alignpart's own grain on the RAID-like topologies: a multiple of the
 * stripe, never 1 MiB that cuts chunks. */
static void test_auto_grain(void)
{
	const struct align_profile *a = align_profile_get("auto");
	struct align_topology t = mk(&st3);

	T_EQ_U64(align_profile_grain(a, &t), 29 * 36864, "3 x 12 KiB stripe");
	T_CHECK(align_lba_is_aligned(&t, align_profile_first_lba(a, &t, 34)),
		"its first LBA is physically aligned");
	t = mk(&r192);
	T_EQ_U64(align_profile_grain(a, &t), 6 * 196608, "3 x 64 KiB stripe");
	t = mk(&usb);          /* 33553920 is no grain: 1 MiB */
	T_EQ_U64(align_profile_grain(a, &t), MiB, "USB bridge's io_opt ignored");
	t = mk(&k4);
	T_EQ_U64(align_profile_grain(a, &t), 4 * MiB, "4Kn io_opt 4 MiB");
	t = mk(&odd);
	T_EQ_U64(align_profile_grain(a, &t), MiB, "512e");
}

int main(void)
{
	test_fdisk();
	test_parted();
	test_sgdisk();
	test_mkfs();
	test_auto_grain();
	return t_result();
}
