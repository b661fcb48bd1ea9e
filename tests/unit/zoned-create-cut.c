/* SPDX-License-Identifier: MIT */
/*
 * A zoned create cut short: a power cut (or a kill -9) at EVERY write of
 * `create --zoned`, on a fresh medium and on a reused one (a block device
 * holding an old zoned image with every zone written part way or full:
 * the create zeroes it first, zn_create_backing).  From each cut, three
 * images (two power cuts, torn or not, and a kill's: every write so far
 * whole) must be one of:
 *  - refused by the open (-EBADMSG: no valid superblock), and fsck does
 *    not call it clean;
 *  - the empty zoned disk the create was making (a superblock not the old
 *    one, every zone EMPTY): a writer's open takes a write and a flush,
 *    fsck is clean after its close, the data there at the next open;
 *  - (reused) the old image whole: its superblock, every zone's write
 *    pointer and condition and every sector as they were (one superblock
 *    copy may be zeroed by a torn wipe: fsck exit 4, --repair rewrites it).
 * Never a disk that opens with anything else: the write pointers are
 * rebuilt from the pages' OOB records, which carry no image identity, so a
 * new superblock over old records that a cut kept would bring the old
 * zones back under a new disk.  A create again over each crash image gives
 * a clean, empty disk.  The kill after the last write must open empty.
 * A fresh seed per run, printed; OCTANT_SEED replays it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cut-test.h"
#include "zoned-test.h"

#define IMAGES 3                /* per cut: two power cuts, a kill -9 */
#define DISK   ((uint64_t)ZT_NZONES * ZT_ZPAGES * ZN_LBS)

static uint64_t rs;
static char img[256];
static FILE *null;
static uint8_t *rbuf, *oldread, *after;
static struct zn_zone oldz[ZT_NZONES];
static uint8_t olduuid[16];

/* Open @p's bytes (a memory copy); -errno as zn_load. */
static int load(const uint8_t *p, uint64_t isz, bool ro, struct zn **z)
{
	struct nand_backing *b;

	if (nand_backing_mem(isz, false, &b))
		return -ENOMEM;
	nand_mem_load(b, p);
	return zn_load(b, ro, z);
}

/* The superblock's uuid in @p's bytes: 0, or -errno as zn_sb_read. */
static int uuid_of(const uint8_t *p, uint64_t isz, uint8_t *uuid)
{
	struct nand_backing *b;
	struct nand_geom ng;
	struct zn_geom g;
	struct oct_sb sb;
	int r;

	if (nand_backing_mem(isz, false, &b))
		return -ENOMEM;
	nand_mem_load(b, p);
	r = zn_sb_read(b, &sb, &g, &ng, NULL);
	if (!r)
		memcpy(uuid, sb.uuid, 16);
	b->ops->destroy(b);
	return r;
}

/* The zones and every sector of @z into @zones and @buf. */
static int snapshot(struct zn *z, struct zn_zone *zones, uint8_t *buf)
{
	if (zn_report(z, 0, zones, ZT_NZONES) != (int)ZT_NZONES)
		return -EIO;
	return zn_read(z, 0, (uint32_t)(DISK / 512), buf);
}

/* An old zoned image, every zone written part way or to its end: what a
 * create on a reused device replaces; its zones, data and uuid kept. */
static uint8_t *old_image(uint64_t isz)
{
	struct nand_backing *b;
	struct zn *z = NULL;
	uint8_t *p = malloc(isz), page[ZN_LBS];
	uint64_t n;

	b = zt_medium(false, &n);
	T_CHECK(n == isz, "image size");
	nand_mem_hold(b);
	if (!p || zn_load(b, false, &z)) {
		T_CHECK(0, "old image: open");
		free(p);
		return NULL;
	}
	for (uint32_t zi = 0; zi < ZT_NZONES; zi++) {
		uint32_t np = 1 + (uint32_t)(t_xorshift(&rs) % ZT_ZPAGES);

		for (uint32_t pg = 0; pg < np; pg++) {
			t_fill_tag(page, sizeof(page), rs ^ (zi * 1000 + pg));
			T_CHECK(zn_write(z, (uint64_t)zi * ZT_ZSECT + pg * 8u,
					 8, page, 0) == 0,
				"old image: write zone %u page %u", zi, pg);
		}
	}
	T_CHECK(zn_flush(z) == 0 && zn_close(z) == 0, "old image: close");
	memcpy(p, nand_mem_bytes(b, &n), isz);
	b->ops->destroy(b);
	z = NULL;
	T_CHECK(load(p, isz, true, &z) == 0 && snapshot(z, oldz, oldread) == 0,
		"old image: read back");
	if (z)
		zn_close(z);
	T_CHECK(uuid_of(p, isz, olduuid) == 0, "old image: superblock");
	return p;
}

static bool same_zones(const struct zn_zone *a, const struct zn_zone *b)
{
	for (uint32_t i = 0; i < ZT_NZONES; i++)
		if (a[i].start != b[i].start || a[i].len != b[i].len ||
		    a[i].wp != b[i].wp || a[i].cond != b[i].cond)
			return false;
	return true;
}

/* 1 the bytes at @p open read-only as the old image whole (its uuid, its
 * zones, its data), 0 they open as something else, -errno the open's. */
static int opens_as_old(const uint8_t *p, uint64_t isz)
{
	struct zn_zone zones[ZT_NZONES];
	struct zn *z = NULL;
	uint8_t u[16];
	int r = load(p, isz, true, &z);

	if (r)
		return r;
	r = snapshot(z, zones, rbuf) == 0 && same_zones(zones, oldz) &&
	    !memcmp(rbuf, oldread, DISK) && uuid_of(p, isz, u) == 0 &&
	    !memcmp(u, olduuid, 16);
	zn_close(z);
	return r;
}

/* The bytes at @p (also stored at @img) open as the empty disk (not the
 * old superblock, every zone EMPTY) that takes a write and keeps it. */
static void empty_and_usable(const uint8_t *p, uint64_t isz, bool reused,
			     const char *what)
{
	struct zn_zone zones[ZT_NZONES];
	struct nand_backing *b;
	struct zn *z = NULL;
	uint8_t w[ZN_LBS], u[16];
	int r;

	T_CHECK(uuid_of(p, isz, u) == 0 && (!reused || memcmp(u, olduuid, 16)),
		"%s: opens with the old superblock but not as the old image",
		what);
	if (nand_backing_mem(isz, false, &b))
		return;
	nand_mem_load(b, p);
	nand_mem_hold(b);
	r = zn_load(b, false, &z);
	if (r) {
		T_CHECK(0, "%s: writer's open %d", what, r);
		b->ops->destroy(b);
		return;
	}
	T_CHECK(zn_report(z, 0, zones, ZT_NZONES) == (int)ZT_NZONES, "report");
	for (uint32_t i = 0; i < ZT_NZONES; i++)
		if (zones[i].cond != ZN_COND_EMPTY ||
		    zones[i].wp != zones[i].start) {
			T_CHECK(0, "%s: zone %u not empty (cond %#x, wp %llu "
				"of %llu): old records under a new superblock",
				what, i, zones[i].cond,
				(unsigned long long)(zones[i].wp - zones[i].start),
				(unsigned long long)zones[i].len);
			break;
		}
	t_fill_tag(w, sizeof(w), rs);
	T_CHECK(zn_write(z, 3 * ZT_ZSECT, 8, w, ZN_FUA) == 0, "%s: write",
		what);
	T_CHECK(zn_close(z) == 0, "%s: close", what);
	memcpy(after, nand_mem_bytes(b, &(uint64_t){ 0 }), isz);
	b->ops->destroy(b);
	t_store(img, after, isz);
	r = zn_fsck(img, false, null, false);
	T_CHECK(r == 0, "%s: fsck after use %d", what, r);
	z = NULL;
	r = load(after, isz, true, &z);
	if (!r)
		r = zn_read(z, 3 * ZT_ZSECT, 8, rbuf);
	T_CHECK(r == 0 && !memcmp(rbuf, w, sizeof(w)), "%s: data after "
		"reopen (%d)", what, r);
	if (z)
		zn_close(z);
}

/* One crash image: 0 refused, 1 opened empty, 2 the old image whole. */
static int check_shot(bool reused, uint64_t isz, const uint8_t *shot,
		      const struct zn_create_opts *o, const char *what)
{
	struct nand_backing *b;
	int r, fk, how;

	t_store(img, shot, isz);
	fk = zn_fsck(img, false, null, false);
	r = reused ? opens_as_old(shot, isz) : 0;
	if (r == 1) {
		/* a torn wipe of the superblock area may have zeroed one
		 * copy: fsck says so (exit 4), --repair rewrites it */
		if (fk == 4)
			T_CHECK(zn_fsck(img, true, null, false) == 1 &&
				zn_fsck(img, false, null, false) == 0,
				"%s: the old image whole: not repaired", what);
		else
			T_CHECK(fk == 0, "%s: the old image whole, fsck %d",
				what, fk);
		how = 2;
	} else {
		struct zn *z = NULL;

		r = load(shot, isz, true, &z);
		if (z)
			zn_close(z);
		if (r == 0) {
			empty_and_usable(shot, isz, reused, what);
			how = 1;
		} else {
			T_CHECK(r == -EBADMSG, "%s: open refused with %d, not "
				"-EBADMSG", what, r);
			T_CHECK(fk != 0, "%s: fsck calls clean an image the "
				"open refuses (%d)", what, r);
			how = 0;
		}
	}
	/* create again over it (create --force on a device) */
	if (nand_backing_mem(isz, false, &b) == 0) {
		nand_mem_load(b, shot);
		T_CHECK(zn_create_backing(b, o, true) == 0, "%s: create again",
			what);
		t_store(img, nand_mem_bytes(b, &(uint64_t){ 0 }), isz);
		b->ops->destroy(b);
		T_CHECK(zn_fsck(img, false, null, false) == 0,
			"%s: fsck of the disk created again", what);
	}
	return how;
}

struct run_ctx {
	const struct zn_create_opts *o;
	bool reused;
	const char *name;
	uint64_t isz;
	int seen[3], last;
};

static int run_create(struct nand_backing *m, void *arg)
{
	struct run_ctx *c = arg;

	return zn_create_backing(m, c->o, c->reused);
}

static void run_check(void *arg, uint64_t n, int j, const uint8_t *image)
{
	struct run_ctx *c = arg;
	char what[160];

	snprintf(what, sizeof(what), "%s: cut at write %llu (image %d)",
		 c->name, (unsigned long long)n, j);
	c->last = check_shot(c->reused, c->isz, image, c->o, what);
	c->seen[c->last]++;
}

static void run(bool reused)
{
	const struct zn_create_opts o = zt_opts();
	struct run_ctx c = { .o = &o, .reused = reused, .last = -1,
		.name = reused ? "over an old zoned image (a device)" :
				 "on a fresh medium" };
	struct nand_backing *probe;
	uint8_t *old;
	int cuts, r = -1;

	probe = zt_medium(false, &c.isz);
	probe->ops->destroy(probe);
	old = reused ? old_image(c.isz) : NULL;
	after = malloc(c.isz);
	cuts = cut_each_write(c.isz, old, rs, IMAGES, run_create, run_check,
			      &c, &r);
	T_CHECK(cuts < 0 || t_failures || r == 0, "%s: create with no cut: %d",
		c.name, r);
	fprintf(stderr, "%s: %d writes in a create, cut at each (%d images): "
		"%d refused, %d opened empty, %d the old image whole\n",
		c.name, cuts, cuts * IMAGES, c.seen[0], c.seen[1], c.seen[2]);
	/* the last write is a superblock's: a kill after it keeps it */
	T_CHECK(cuts >= 2 && c.seen[0] > 0 && c.last == 1, "%s: cuts %d, "
		"refused %d, the kill after the last write: %d", c.name, cuts,
		c.seen[0], c.last);
	free(old);
	free(after);
}

int main(void)
{
	rs = t_seed() | 1;
	null = fopen("/dev/null", "w");
	rbuf = malloc(DISK);
	oldread = malloc(DISK);
	snprintf(img, sizeof(img), "%s/zoned-create-cut-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	run(false);
	run(true);
	unlink(img);
	free(rbuf);
	free(oldread);
	fclose(null);
	return t_result();
}
