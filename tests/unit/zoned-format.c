/* SPDX-License-Identifier: MIT */
/*
 * The zoned image format (docs/image-format.md, "Zoned images"): create
 * --zoned's geometry and its refusals (one line of reason each), the
 * superblock (flag OCT_SB_F_ZONED, zone fields in its reserved bytes,
 * crc) read back, copy 1 used when copy 0 is damaged, another zoned
 * version refused, an FTL image told apart (-ENOTTY), and the FTL refusing
 * a zoned image rather than reading it as its own.
 */
#include <errno.h>
#include <fcntl.h>

#include "crc32c.h"
#include "ftl.h"
#include "zoned-test.h"

static void geometry(void)
{
	struct zn_create_opts o = zt_opts();
	struct nand_geom ng;
	struct zn_geom g;
	char why[160] = "";

	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), 0, "%s", why);
	T_EQ_U64(g.nzones, ZT_NZONES, "zones");
	T_EQ_U64(g.zone_blocks, ZT_ZBLK, "blocks per zone");
	T_EQ_U64(g.max_open, 16, "open limit: at least 16 (16 zones)");
	T_EQ_U64(g.max_active, 16, "active limit");
	T_EQ_U64(ng.nblocks, ZT_NZONES * ZT_ZBLK, "nand blocks");
	T_CHECK(ng.oob_inline && ng.oob_stamp, "inline layout with stamps");
	o.size = 1ull << 30;
	o.zone_size = 0;
	o.ppb = 0;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), 0, "defaults");
	T_EQ_U64(g.nzones, 64, "1 GiB of 16 MiB zones");
	T_EQ_U64(g.zone_blocks, 64, "16 MiB zone of 256 KiB blocks");
	T_EQ_U64(g.max_active, 16, "64 zones: 16 active");
	o.size = 8ull << 30;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), 0, "8 GiB");
	T_EQ_U64(g.max_active, 64, "512 zones: an eighth, 64 active");
	o.size = 1ull << 30;
	o.size = 64ull << 30;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), 0, "64 GiB");
	T_EQ_U64(g.max_active, 128, "4096 zones: 128 active at most");
	o.size = 10ull << 20;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), 0, "10 MiB");
	T_EQ_U64(g.nzones, 1, "rounded up to one zone");
	T_EQ_U64(g.max_active, 1, "one zone: one active");
	o.zone_size = 3 << 20;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), -EINVAL,
		 "zone size not a power of two");
	T_CHECK(strstr(why, "zone size") != NULL, "reason: %s", why);
	o.zone_size = 128 << 10;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), -EINVAL,
		 "zone smaller than a block");
	o.zone_size = 0;
	o.oob_size = 48;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), -EINVAL,
		 "OOB without room for the stamp");
	T_CHECK(strstr(why, "OOB") != NULL, "reason: %s", why);
	o.oob_size = 0;
	o.ppb = 48;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), -EINVAL,
		 "pages per block not a power of two");
	o.ppb = 0;
	o.size = 0;
	T_EQ_U64(zn_create_geom(&o, &g, &ng, why, sizeof(why)), -EINVAL,
		 "no size");
}

static void superblock(void)
{
	struct zn_create_opts o = zt_opts();
	struct nand_geom ng, ng2;
	struct zn_geom g, g2;
	struct oct_sb sb, bad;
	char why[160];
	struct zn_sb_ext e;

	o.pe_cycles = 3000;             /* the geometry carries it too */
	zn_create_geom(&o, &g, &ng, why, sizeof(why));
	zn_sb_build(&sb, &g, &ng, 3000);
	T_EQ_U64(zn_sb_decode(&sb, &g2, &ng2), 0, "decode");
	T_CHECK(!memcmp(&g, &g2, sizeof(g)), "geometry read back");
	T_CHECK(ng.nblocks == ng2.nblocks && ng.oob_size == ng2.oob_size &&
		ng.flash_off == ng2.flash_off, "nand geometry read back");
	T_EQ_U64(sb.logical_size, ZN_LBS, "logical block 4096");
	T_EQ_U64(sb.align_shift, 0, "no odd shift");
	T_EQ_U64(sb.flags & OCT_SB_F_ZONED, OCT_SB_F_ZONED, "zoned flag");
	bad = sb;
	bad.nblocks++;
	T_EQ_U64(zn_sb_decode(&bad, &g2, &ng2), -EBADMSG, "crc");
	bad.crc = 0;
	bad.crc = oct_crc32c(0, &bad, OCT_SB_SIZE);
	T_EQ_U64(zn_sb_decode(&bad, &g2, &ng2), -EBADMSG, "inconsistent field");
	bad = sb;
	memcpy(&e, bad.reserved, sizeof(e));
	e.version = 2;
	memcpy(bad.reserved, &e, sizeof(e));
	bad.crc = 0;
	bad.crc = oct_crc32c(0, &bad, OCT_SB_SIZE);
	T_EQ_U64(zn_sb_decode(&bad, &g2, &ng2), -EPROTONOSUPPORT,
		 "another zoned version");
	bad = sb;
	memcpy(&e, bad.reserved, sizeof(e));
	e.max_active = g.nzones + 1;
	memcpy(bad.reserved, &e, sizeof(e));
	bad.crc = 0;
	bad.crc = oct_crc32c(0, &bad, OCT_SB_SIZE);
	T_EQ_U64(zn_sb_decode(&bad, &g2, &ng2), -EBADMSG, "limit past the zones");
	bad = sb;
	bad.flags &= ~OCT_SB_F_ZONED;
	bad.crc = 0;
	bad.crc = oct_crc32c(0, &bad, OCT_SB_SIZE);
	T_EQ_U64(zn_sb_decode(&bad, &g2, &ng2), -ENOTTY, "not a zoned image");
}

/* On a file: both copies written, copy 1 when copy 0 is damaged, the FTL
 * refuses the image, zn refuses an FTL image. */
static void files(void)
{
	char path[] = "/tmp/zoned-format-XXXXXX";
	struct zn_create_opts o = zt_opts();
	struct ftl_create_opts fo = { .size = 8 << 20, .align = FTL_ALIGN_1M };
	struct ftl_open_opts oo = { .readonly = true };
	struct nand_backing *b;
	struct ftl *f = NULL;
	struct zn *z;
	char why[160] = "";
	int fd = mkstemp(path);

	if (fd < 0)
		T_SKIP("mkstemp: cannot make a file in /tmp");
	close(fd);
	T_EQ_U64(zn_create(path, &o, why, sizeof(why)), 0,
		 "create on an empty file: %s", why);
	T_EQ_U64(zn_create(path, &o, why, sizeof(why)), -EEXIST, "create again");
	o.force = true;
	T_EQ_U64(zn_create(path, &o, why, sizeof(why)), 0, "create --force");
	T_CHECK(ftl_open(path, &oo, &f) < 0, "the FTL refuses a zoned image");
	if (f)
		ftl_close(f);
	/* four pages into zone 0; fsck clean, then one data byte damaged:
	 * fsck finds that page (exit 4), the read says EIO */
	fd = open(path, O_RDWR);
	T_EQ_U64(nand_backing_fd(fd, &b), 0, "backing");
	T_EQ_U64(zn_load(b, false, &z), 0, "open read-write");
	{
		static uint8_t pg[4 * ZN_LBS];
		FILE *devnull = fopen("/dev/null", "w");

		for (uint32_t p = 0; p < 4; p++)
			zt_fill(pg + p * ZN_LBS, 0, p, 3);
		T_EQ_U64(zn_write(z, 0, 32, pg, 0), 0, "write");
		T_EQ_U64(zn_close(z), 0, "close");
		T_EQ_U64(zn_fsck(path, false, devnull, false), 0, "fsck clean");
		T_CHECK(pwrite(fd, "X", 1, OCT_SB_AREA + (ZN_LBS + 64) + 5) == 1,
			"damage page 1");
		T_EQ_U64(zn_fsck(path, false, devnull, false), 4, "fsck finds it");
		T_EQ_U64(zn_fsck(path, false, devnull, true), 4, "fsck --json too");
		T_EQ_U64(zn_info(path, devnull, false), 0, "info");
		fclose(devnull);
	}
	T_EQ_U64(nand_backing_fd(fd, &b), 0, "backing");
	T_EQ_U64(zn_load(b, true, &z), 0, "open read-only");
	{
		static uint8_t pg[ZN_LBS];

		T_EQ_U64(zn_read(z, 8, 8, pg), -EIO, "the damaged page reads EIO");
		T_EQ_U64(zn_read(z, 16, 8, pg), 0, "the next one reads");
		T_EQ_U64(zt_zone(z, 0).wp, 32, "the wp past it");
	}
	zn_close(z);
	T_CHECK(pwrite(fd, "X", 1, 100) == 1, "damage copy 0");
	T_EQ_U64(nand_backing_fd(fd, &b), 0, "backing");
	T_EQ_U64(zn_load(b, true, &z), 0, "open from copy 1");
	if (!t_failures)
		T_EQ_U64(zn_geom(z)->nzones, ZT_NZONES, "zones");
	zn_close(z);
	/* a read-only open left copy 0 alone; a writer's open rewrites it
	 * from copy 1 (fsck then names one problem fewer) */
	{
		uint8_t c0[512], c1[512];
		FILE *devnull = fopen("/dev/null", "w");

		T_CHECK(pread(fd, c0, 512, 0) == 512 &&
			pread(fd, c1, 512, OCT_SB_COPY_OFFSET) == 512 &&
			memcmp(c0, c1, 512), "a read-only open wrote copy 0");
		T_EQ_U64(nand_backing_fd(fd, &b), 0, "backing");
		T_EQ_U64(zn_load(b, false, &z), 0, "open read-write");
		zn_close(z);
		T_CHECK(pread(fd, c0, 512, 0) == 512 && !memcmp(c0, c1, 512),
			"a writer's open left copy 0 damaged");
		/* copy 1 damaged: fsck --repair mends it (exit 4, the damaged
		 * page stays), then only the page is left */
		T_CHECK(pwrite(fd, "X", 1, OCT_SB_COPY_OFFSET + 60) == 1,
			"damage copy 1");
		T_EQ_U64(zn_fsck(path, true, devnull, false), 4,
			 "--repair: the page stays damaged");
		T_CHECK(pread(fd, c1, 512, OCT_SB_COPY_OFFSET) == 512 &&
			!memcmp(c0, c1, 512), "--repair left copy 1 damaged");
		fclose(devnull);
	}
	close(fd);
	T_EQ_U64(ftl_create(path, &fo), -EEXIST, "the FTL keeps a zoned image");
	fo.force = true;
	T_EQ_U64(ftl_create(path, &fo), 0, "an FTL image");
	fd = open(path, O_RDWR);
	T_EQ_U64(nand_backing_fd(fd, &b), 0, "backing");
	T_EQ_U64(zn_load(b, true, &z), -ENOTTY, "zn refuses an FTL image");
	close(fd);
	unlink(path);
}

int main(void)
{
	geometry();
	superblock();
	files();
	return t_result();
}
