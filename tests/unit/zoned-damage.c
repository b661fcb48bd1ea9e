/* SPDX-License-Identifier: MIT */
/*
 * A flushed page whose OOB record is damaged (docs/engine.md, "Zone state
 * machine", Recovery): the write pointer is rebuilt from the records, so
 * the last written page of a zone with a damaged record must still count
 * as written: it reads EIO (never zeroes), fsck finds it (exit 4), the
 * write pointer stays past it (a write there is refused, nothing is
 * programmed over it).  Cases: the last page of a zone, the last two, the
 * only one (page 0: the zone would look EMPTY), the last page of a block
 * inside the zone, a finish mark (the zone stays written up to it).  On a
 * file, through zn_load / zn_fsck as the tools open it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "zoned-test.h"

#define SLOT (ZN_LBS + 64u)           /* inline page slot: data + OOB */

static char path[] = "/tmp/zoned-damage-XXXXXX";
static uint8_t buf[ZT_ZPAGES * ZN_LBS], rbuf[ZN_LBS];

static struct zn *open_rw(int *fd)
{
	struct nand_backing *b;
	struct zn *z;

	*fd = open(path, O_RDWR);
	T_CHECK(*fd >= 0, "open %s", path);
	T_EQ_U64(nand_backing_fd(*fd, &b), 0, "backing");
	if (zn_load(b, false, &z)) {
		fprintf(stderr, "FAIL: zn_load\n");
		exit(T_EXIT_FAIL);
	}
	return z;
}

/* Flip a byte of the OOB record (the zone field) of page @zpage of @zone. */
static void damage(uint32_t zone, uint32_t zpage)
{
	off_t at = OCT_SB_AREA + ((off_t)zone * ZT_ZPAGES + zpage) * SLOT +
		   ZN_LBS + 8;
	int fd = open(path, O_RDWR);
	uint8_t v;

	T_CHECK(fd >= 0 && pread(fd, &v, 1, at) == 1, "read OOB byte");
	v ^= 0x5a;
	T_CHECK(pwrite(fd, &v, 1, at) == 1, "damage zone %u page %u", zone,
		zpage);
	close(fd);
}

/* Zone @zone: @wp pages written; page @bad reads EIO, the others their
 * data; a write at @bad (where a lost page would put the wp) refused. */
static void check(struct zn *z, uint32_t zone, uint32_t wp, uint32_t bad,
		  bool finished)
{
	struct zn_zone r = zt_zone(z, zone);

	T_EQ_U64((r.wp - r.start) / 8, finished ? ZT_ZPAGES : wp,
		 "zone %u: the wp past the damaged page", zone);
	for (uint32_t p = 0; p < wp; p++) {
		int e = zn_read(z, (uint64_t)zone * ZT_ZSECT + p * 8, 8, rbuf);

		if (p == bad || (bad == wp - 2 && zone == 1 && p == wp - 1)) {
			T_EQ_U64(e, -EIO, "zone %u page %u: damaged, EIO",
				 zone, p);
			continue;
		}
		zt_fill(buf, zone, p, 7);
		T_EQ_U64(e, 0, "zone %u page %u reads", zone, p);
		T_CHECK(!memcmp(buf, rbuf, ZN_LBS), "zone %u page %u data",
			zone, p);
	}
	zt_fill(buf, zone, bad, 9);
	T_CHECK(zn_write(z, (uint64_t)zone * ZT_ZSECT + bad * 8, 8, buf, 0) < 0,
		"zone %u: no write over the damaged page %u", zone, bad);
}

int main(void)
{
	struct zn_create_opts o = zt_opts();
	struct nand_counters nc;
	char why[160] = "";
	FILE *devnull;
	struct zn *z;
	int fd = mkstemp(path);

	if (fd < 0)
		T_SKIP("mkstemp: cannot make a file in /tmp");
	close(fd);
	T_EQ_U64(zn_create(path, &o, why, sizeof(why)), 0, "create: %s", why);
	z = open_rw(&fd);
	/* zone 0: 5 pages; zone 1: 6; zone 2: 1; zone 3: a block (8);
	 * zone 4: 3 pages and a finish mark */
	const uint32_t n[5] = { 5, 6, 1, ZT_PPB, 3 };
	for (uint32_t i = 0; i < 5; i++) {
		for (uint32_t p = 0; p < n[i]; p++)
			zt_fill(buf + p * ZN_LBS, i, p, 7);
		T_EQ_U64(zn_write(z, (uint64_t)i * ZT_ZSECT, n[i] * 8, buf, 0), 0,
			 "write zone %u", i);
	}
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, 4 * ZT_ZSECT, false), 0, "finish 4");
	T_EQ_U64(zn_flush(z), 0, "flush");
	T_EQ_U64(zn_close(z), 0, "close");
	close(fd);
	devnull = fopen("/dev/null", "w");
	T_EQ_U64(zn_fsck(path, false, devnull, false), 0, "fsck clean");
	damage(0, 4);                  /* the last page */
	damage(1, 4);                  /* the last two */
	damage(1, 5);
	damage(2, 0);                  /* the only one */
	damage(3, ZT_PPB - 1);         /* the last of a block */
	damage(4, 3);                  /* the finish mark */
	T_EQ_U64(zn_fsck(path, false, devnull, false), 4, "fsck finds the damage");
	fclose(devnull);
	z = open_rw(&fd);
	check(z, 0, 5, 4, false);
	check(z, 1, 6, 4, false);
	check(z, 2, 1, 0, false);
	check(z, 3, ZT_PPB, ZT_PPB - 1, false);
	{       /* the finish mark reads EIO; the data below it reads */
		struct zn_zone r = zt_zone(z, 4);

		T_CHECK(r.wp - r.start >= 4 * 8, "zone 4: wp %llu past the mark",
			(unsigned long long)(r.wp - r.start));
		T_EQ_U64(zn_read(z, 4 * ZT_ZSECT + 3 * 8, 8, rbuf), -EIO,
			 "zone 4: the damaged finish mark reads EIO");
		T_EQ_U64(zn_read(z, 4 * ZT_ZSECT + 2 * 8, 8, rbuf), 0,
			 "zone 4: the page below reads");
	}
	nand_counters_get(zn_nand(z), &nc);
	T_EQ_U64(nc.violations, 0, "no NAND rule broken");
	zn_close(z);
	close(fd);
	unlink(path);
	return t_result();
}
