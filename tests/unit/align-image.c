/* SPDX-License-Identifier: MIT */
/*
 * libalign: topology from octant image superblocks written by hand
 * (common/oct-format.h), and align_topology_probe's choice of source for
 * images, corrupt images, plain files and other paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "align.h"
#include "crc32c.h"
#include "oct-format.h"
#include "test.h"

static char dir[] = "/tmp/align-image-XXXXXX";
static char path[256];

static struct oct_sb make_sb(uint32_t mode, uint32_t page, uint32_t ppb,
			     uint64_t sectors)
{
	struct oct_sb sb;

	memset(&sb, 0, sizeof(sb));
	memcpy(sb.magic, OCT_SB_MAGIC, 8);
	sb.version = OCT_SB_VERSION;
	sb.sb_size = OCT_SB_SIZE;
	sb.align_mode = mode;
	sb.align_shift = mode == OCT_ALIGN_ODD ? 512 : 0;
	sb.logical_size = 512;
	sb.logical_sectors = sectors;
	sb.page_size = page;
	sb.oob_size = 64;
	sb.pages_per_block = ppb;
	sb.nblocks = 1024;
	sb.flash_offset = OCT_SB_AREA;
	return sb;
}

static void seal(struct oct_sb *sb)
{
	sb->crc = 0;
	sb->crc = oct_crc32c(0, sb, OCT_SB_SIZE);
}

/* Write an image file: copies (NULL = zeros) and @total bytes. */
static void write_image(const struct oct_sb *c0, const struct oct_sb *c1,
			size_t total)
{
	unsigned char *buf = calloc(1, total > OCT_SB_AREA ? total : OCT_SB_AREA);
	int fd;

	if (!buf)
		abort();
	if (c0 && total >= OCT_SB_SIZE)
		memcpy(buf, c0, OCT_SB_SIZE);
	if (c1 && total >= OCT_SB_COPY_OFFSET + OCT_SB_SIZE)
		memcpy(buf + OCT_SB_COPY_OFFSET, c1, OCT_SB_SIZE);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, buf, total) != (ssize_t)total) {
		perror(path);
		exit(T_EXIT_FAIL);
	}
	close(fd);
	free(buf);
}

static void test_valid(void)
{
	static const struct { uint32_t mode, page, ppb; uint32_t off; } c[] = {
		{ OCT_ALIGN_ODD, 4096, 64, 3584 },   /* the odd scheme */
		{ OCT_ALIGN_1M, 4096, 64, 0 },
		{ OCT_ALIGN_ODD, 16384, 256, 15872 },
		{ OCT_ALIGN_1M, 8192, 128, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct oct_sb sb = make_sb(c[i].mode, c[i].page, c[i].ppb, 2097152);
		struct align_topology t, p;

		seal(&sb);
		write_image(&sb, &sb, 65536);
		T_CHECK(align_topology_from_image(path, &t) == 0, "case %zu", i);
		T_CHECK(t.logical == 512 && t.physical == c[i].page &&
			t.alignment_offset == c[i].off && t.io_min == c[i].page &&
			t.io_opt == c[i].page * c[i].ppb &&
			t.erase_block == c[i].page * c[i].ppb &&
			t.size == 2097152ull * 512 && !t.misaligned &&
			t.source == ALIGN_SRC_IMAGE, "case %zu fields: %u/%u/%u",
			i, t.logical, t.physical, t.alignment_offset);
		T_CHECK(align_topology_validate(&t) == 0, "case %zu valid", i);
		T_CHECK(align_topology_probe(path, &p) == 0 &&
			memcmp(&p, &t, sizeof(t)) == 0, "case %zu probe", i);
	}
	/* odd image: LBA 63 and 2047 on the medium's 4K / 1 MiB */
	struct oct_sb sb = make_sb(OCT_ALIGN_ODD, 4096, 256, 1 << 20);
	struct align_topology t;
	char buf[160];

	seal(&sb);
	write_image(&sb, &sb, OCT_SB_AREA);
	T_CHECK(align_topology_from_image(path, &t) == 0, "odd 1m-block");
	T_CHECK(align_lba_is_aligned(&t, 63) && !align_lba_is_aligned(&t, 2048) &&
		align_lba_is_grain_aligned(&t, 2047, t.erase_block), "odd image");
	align_topology_describe(&t, buf, sizeof(buf));
	T_CHECK(!strcmp(buf, "512/4096 offset 3584 io_min 4096 io_opt 1048576 "
			"erase_block 1048576 size 536870912 (image)"), "'%s'", buf);
}

static void test_bad(void)
{
	struct oct_sb good = make_sb(OCT_ALIGN_ODD, 4096, 64, 4096), bad;
	struct align_topology t;
	int rc;

	seal(&good);
	/* no magic anywhere: not an image; probe sees a plain file */
	bad = good;
	memcpy(bad.magic, "OCTFLASX", 8);
	seal(&bad);
	write_image(&bad, &bad, 20000);
	T_CHECK(align_topology_from_image(path, &t) == -EBADMSG, "bad magic");
	memset(&t, 0xff, sizeof(t));
	T_CHECK(align_topology_probe(path, &t) == 0 && t.source == ALIGN_SRC_NONE &&
		t.size == 20000 && t.logical == 0 && t.physical == 0 &&
		!t.misaligned, "probe plain file");

	/* bad crc in both: an error, never a plain file */
	bad = good;
	bad.logical_sectors++;           /* crc no longer matches */
	write_image(&bad, &bad, 65536);
	T_CHECK(align_topology_from_image(path, &t) == -EBADMSG, "bad crc");
	T_CHECK(align_topology_probe(path, &t) == -EBADMSG, "probe bad crc");

	/* another version in both */
	bad = good;
	bad.version = 2;
	seal(&bad);
	write_image(&bad, &bad, 65536);
	T_CHECK(align_topology_from_image(path, &t) == -EPROTONOSUPPORT, "v2");
	T_CHECK(align_topology_probe(path, &t) == -EPROTONOSUPPORT, "probe v2");

	/* crc right but nonsense fields */
	bad = good;
	bad.page_size = 3000;
	seal(&bad);
	write_image(&bad, NULL, 65536);
	T_CHECK(align_topology_from_image(path, &t) == -EBADMSG, "page 3000");
	bad = good;
	bad.align_shift = 4096;
	seal(&bad);
	write_image(&bad, NULL, 65536);
	T_CHECK(align_topology_from_image(path, &t) == -EBADMSG, "shift 4096");
	bad = good;
	bad.pages_per_block = 0;
	seal(&bad);
	write_image(&bad, NULL, 65536);
	T_CHECK(align_topology_from_image(path, &t) == -EBADMSG, "ppb 0");

	/* fallback to copy 1: copy 0 corrupt, zeroed, or wrong magic */
	bad = good;
	bad.crc ^= 1;
	write_image(&bad, &good, 65536);
	T_CHECK(align_topology_from_image(path, &t) == 0 &&
		t.alignment_offset == 3584, "fallback: copy 0 bad crc");
	T_CHECK(align_topology_probe(path, &t) == 0 &&
		t.source == ALIGN_SRC_IMAGE, "probe fallback");
	write_image(NULL, &good, 65536);
	T_CHECK(align_topology_from_image(path, &t) == 0, "fallback: zeroed 0");
	T_CHECK(align_topology_probe(path, &t) == 0 &&
		t.source == ALIGN_SRC_IMAGE, "probe: copy 1 only");
	write_image(&good, NULL, 65536);
	T_CHECK(align_topology_from_image(path, &t) == 0, "copy 0, no copy 1");
	/* copy 0 corrupt, copy 1 absent (file too short) */
	write_image(&bad, NULL, 1024);
	rc = align_topology_from_image(path, &t);
	T_CHECK(rc == -EBADMSG, "short corrupt: %d", rc);
	T_CHECK(align_topology_probe(path, &t) == -EBADMSG, "probe short corrupt");
	/* copy 0 corrupt, copy 1 another version */
	bad.version = 2;
	write_image(&bad, NULL, 65536);
	T_CHECK(align_topology_from_image(path, &t) == -EPROTONOSUPPORT,
		"corrupt v2");

	/* tiny and empty plain files */
	write_image(NULL, NULL, 100);
	T_CHECK(align_topology_from_image(path, &t) == -EBADMSG, "100 bytes");
	T_CHECK(align_topology_probe(path, &t) == 0 && t.size == 100 &&
		t.source == ALIGN_SRC_NONE, "probe 100 bytes");
	write_image(NULL, NULL, 0);
	T_CHECK(align_topology_probe(path, &t) == 0 && t.size == 0,
		"probe empty file");
	/* a plain file then takes a profile */
	align_topology_apply_profile(&t, align_profile_get("odd"));
	T_CHECK(t.source == ALIGN_SRC_PROFILE && t.alignment_offset == 3584,
		"plain file + odd profile");
	T_CHECK(align_topology_from_device(path, &t) == -ENOTBLK, "not a device");
}

static void test_paths(void)
{
	struct align_topology t;
	char missing[300];

	snprintf(missing, sizeof(missing), "%s/missing", dir);
	T_CHECK(align_topology_probe(missing, &t) == -ENOENT, "probe missing");
	T_CHECK(align_topology_from_image(missing, &t) == -ENOENT, "image missing");
	T_CHECK(align_topology_from_device(missing, &t) == -ENOENT, "dev missing");
	T_CHECK(align_topology_probe(dir, &t) == -EISDIR, "probe dir");
	T_CHECK(align_topology_from_image(dir, &t) == -EISDIR, "image dir");
	T_CHECK(align_topology_probe("/dev/null", &t) == -ENOTBLK, "char dev");
	T_CHECK(align_topology_probe(NULL, &t) == -EINVAL, "NULL");
}

int main(void)
{
	if (!mkdtemp(dir))
		T_SKIP("cannot create a temporary directory in /tmp");
	snprintf(path, sizeof(path), "%s/img", dir);
	test_valid();
	test_bad();
	test_paths();
	unlink(path);
	rmdir(dir);
	return t_result();
}
