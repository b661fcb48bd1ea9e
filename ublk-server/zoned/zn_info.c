/* SPDX-License-Identifier: MIT */
/* info and fsck of a zoned image (zoned.h, tools). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oct-json.h"
#include "zn-int.h"

int zn_image_probe(const char *path)
{
	return zn_image_disk(path, NULL);
}

int zn_image_disk(const char *path, uint64_t *size)
{
	static const off_t where[2] = { 0, OCT_SB_COPY_OFFSET };
	struct nand_geom ng;
	struct zn_geom g;
	struct oct_sb sb;
	int fd, r = 0;

	if (nand_backing_is_uri(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (int i = 0; i < 2 && r != 1; i++) {
		ssize_t n = pread(fd, &sb, sizeof(sb), where[i]);
		int d;

		if (n < 0) {
			r = -errno;
			break;
		}
		d = n == (ssize_t)sizeof(sb) ? zn_sb_decode(&sb, &g, &ng) : -EBADMSG;
		if (!d || d == -EPROTONOSUPPORT)   /* another zoned version too */
			r = !d || (sb.flags & OCT_SB_F_ZONED) ? 1 : 0;
		if (r == 1 && size)
			*size = d ? 0 : (uint64_t)ng.nblocks * ng.ppb * ZN_LBS;
	}
	close(fd);
	return r;
}

/* Open @path read-only; *@fd to close after zn_close (the backing reads
 * through it). */
static int zn_image_load(const char *path, struct zn **z, int *fd)
{
	struct nand_backing *b;
	int r;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	r = nand_backing_fd(*fd, &b);
	if (!r)
		r = zn_load(b, true, z);
	if (r)
		close(*fd);
	return r;
}

int zn_info(const char *path, FILE *out, bool json)
{
	const struct nand_geom *ng;
	struct zn_stats t;
	struct zn *z;
	int fd, r = zn_image_load(path, &z, &fd);
	uint64_t zbytes;

	if (r)
		return r;
	ng = nand_geom(z->nand);
	zbytes = zn_zone_sectors(z) * ZN_SECT;
	zn_stats_get(z, &t);
	if (json) {
		struct oct_json j;

		oct_json_init(&j, out);
		oct_json_obj(&j, NULL);
		oct_json_str(&j, "image", path);
		oct_json_str(&j, "kind", "zoned");
		oct_json_str(&j, "zone_model", "host-managed");
		oct_json_u64(&j, "size", zn_sectors(z) * ZN_SECT);
		oct_json_u64(&j, "logical_block", ZN_LBS);
		oct_json_u64(&j, "page_size", ng->page_size);
		oct_json_u64(&j, "oob_size", ng->oob_size);
		oct_json_u64(&j, "pages_per_block", ng->ppb);
		oct_json_u64(&j, "blocks", ng->nblocks);
		oct_json_u64(&j, "zone_size", zbytes);
		oct_json_u64(&j, "zones", z->g.nzones);
		oct_json_u64(&j, "max_open", z->g.max_open);
		oct_json_u64(&j, "max_active", z->g.max_active);
		oct_json_obj(&j, "conditions");
		oct_json_u64(&j, "empty", t.cond[ZN_COND_EMPTY]);
		oct_json_u64(&j, "closed", t.cond[ZN_COND_CLOSED]);
		oct_json_u64(&j, "full", t.cond[ZN_COND_FULL]);
		oct_json_u64(&j, "readonly", t.cond[ZN_COND_READONLY]);
		oct_json_u64(&j, "offline", t.cond[ZN_COND_OFFLINE]);
		oct_json_end(&j);
		oct_json_u64(&j, "written_bytes", t.written_pages * ZN_LBS);
		oct_json_u64(&j, "max_erase_count", t.erase_max);
		oct_json_end(&j);
	} else {
		fprintf(out, "image:          %s\n", path);
		fprintf(out, "kind:           zoned, host-managed, no FTL\n");
		fprintf(out, "size:           %llu bytes, %u zones of %llu bytes\n",
			(unsigned long long)(zn_sectors(z) * ZN_SECT),
			z->g.nzones, (unsigned long long)zbytes);
		fprintf(out, "logical block:  %u bytes (the flash page)\n", ZN_LBS);
		fprintf(out, "flash:          %u blocks of %u pages of %u+%u bytes, "
			"%u blocks a zone\n", ng->nblocks, ng->ppb, ng->page_size,
			ng->oob_size, z->g.zone_blocks);
		fprintf(out, "limits:         %u open, %u active zones\n",
			z->g.max_open, z->g.max_active);
		fprintf(out, "zones:          %u empty, %u closed, %u full, "
			"%u read-only, %u offline\n", t.cond[ZN_COND_EMPTY],
			t.cond[ZN_COND_CLOSED], t.cond[ZN_COND_FULL],
			t.cond[ZN_COND_READONLY], t.cond[ZN_COND_OFFLINE]);
		fprintf(out, "written:        %llu bytes below the write pointers\n",
			(unsigned long long)(t.written_pages * ZN_LBS));
		fprintf(out, "erase count:    max %u (of blocks holding pages)\n",
			t.erase_max);
	}
	zn_close(z);
	close(fd);
	return 0;
}

int zn_image_report(const char *path, FILE *out, bool json, bool health)
{
	struct zn_stats st;
	struct zn *z;
	int fd, r = zn_image_load(path, &z, &fd);

	if (r)
		return r;
	zn_stats_get(z, &st);
	(health ? zn_health_print : zn_stats_print)(&st, out, json);
	zn_close(z);
	close(fd);
	return 0;
}

/* --repair: write the good superblock copy over a damaged one (the only
 * thing a zoned image's fsck can mend: a damaged page reads EIO until the
 * host resets its zone).  The copies mended, 0 none, or -errno. */
static int sb_repair(const char *path, FILE *out, bool json)
{
	struct nand_backing *b;
	struct zn_geom g;
	struct nand_geom ng;
	struct oct_sb sb;
	int fd, r, bad = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = nand_backing_fd(fd, &b);
	if (!r) {
		r = zn_sb_read(b, &sb, &g, &ng, &bad);
		if (!r && bad)
			r = zn_sb_mend(b, &sb, bad, false);
		b->ops->destroy(b);
	}
	close(fd);
	for (int i = 0; !r && !json && i < 2; i++)
		if (bad & (1 << i))
			fprintf(out, "superblock copy %d: does not check out: "
				"rewritten from copy %d\n", i, !i);
	return r ? r : bad;
}

int zn_fsck(const char *path, bool repair, FILE *out, bool json)
{
	uint64_t zs, problems = 0, checked = 0;
	uint8_t *buf = malloc(ZN_LBS);
	struct zn_zone zz;
	struct oct_sb sb;
	struct nand_geom ng;
	struct zn_geom g;
	struct zn *z;
	int fd, zfd, r, mended;

	if (!buf)
		return -ENOMEM;
	mended = repair ? sb_repair(path, out, json) : 0;
	if (mended < 0) {
		free(buf);
		return mended;
	}
	r = zn_image_load(path, &z, &zfd);
	if (r) {
		free(buf);
		return r;
	}
	zs = zn_zone_sectors(z);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (int i = 0; fd >= 0 && i < 2; i++)
		if (pread(fd, &sb, sizeof(sb), i ? OCT_SB_COPY_OFFSET : 0) !=
		    (ssize_t)sizeof(sb) || zn_sb_decode(&sb, &g, &ng)) {
			problems++;
			if (!json)
				fprintf(out, "superblock copy %d: does not check out\n",
					i);
		}
	if (fd >= 0)
		close(fd);
	for (uint32_t i = 0; i < z->g.nzones; i++) {
		if (zn_report(z, i * zs, &zz, 1) != 1)
			break;
		for (uint64_t s = zz.start; s < zz.wp; s += ZN_SPP) {
			checked++;
			if (zn_read(z, s, ZN_SPP, buf) == 0)
				continue;
			problems++;
			if (!json)
				fprintf(out, "zone %u page %llu: record or data CRC "
					"does not check out (reads EIO)\n", i,
					(unsigned long long)((s - zz.start) / ZN_SPP));
		}
	}
	if (json) {
		struct oct_json j;

		oct_json_init(&j, out);
		oct_json_obj(&j, NULL);
		oct_json_str(&j, "image", path);
		oct_json_str(&j, "kind", "zoned");
		oct_json_u64(&j, "pages_checked", checked);
		oct_json_u64(&j, "problems", problems);
		oct_json_bool(&j, "clean", !problems);
		oct_json_bool(&j, "repaired", mended > 0);
		oct_json_end(&j);
	} else {
		fprintf(out, "%s: zoned, %llu pages checked, %s%s\n", path,
			(unsigned long long)checked, problems ? "problems found" :
			"clean", problems && repair ? " (--repair cannot mend a "
			"damaged page: it reads EIO until the host resets its "
			"zone)" : "");
	}
	zn_close(z);
	close(zfd);
	free(buf);
	return problems ? 4 : mended ? 1 : 0;
}
