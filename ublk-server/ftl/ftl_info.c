/* SPDX-License-Identifier: MIT */
/* Offline inspection: what the superblock says (never writes). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "oct-fmt.h"
#include "oct-json.h"

/* Fill @info from loaded superblock @sb / geometry @g of an image on a
 * medium of @size bytes (@blkdev: may be larger): 0, or -EINVAL when the
 * size does not match (@info filled). */
static int info_fill(struct ftl_info *info, const struct oct_sb *sb,
		     const struct ftl_geom *g, uint64_t size, bool blkdev)
{
	info->align = g->align;
	info->page_size = g->ps;
	info->pages_per_block = g->ppb;
	info->oob_size = g->oob;
	info->nblocks = g->nblocks;
	info->op_permille = g->op;
	info->logical_size = g->size;
	info->flash_size = (uint64_t)g->nblocks * g->ppb * g->ps;
	info->image_size = g->image_size;
	memcpy(info->uuid, sb->uuid, 16);
	info->oob_inline = g->oob_inline;
	info->erase_stamps = g->oob_stamp;
	info->ckpt_delta = g->ckpt_delta;
	info->pe_cycles = g->pe_cycles;
	info->flush_sum = g->flush_sum;
	info->pi = g->pi;
	ftl_topo_fill(g, &info->topo);
	return ftl_geom_size_ok(g, size, blkdev) ? 0 : -EINVAL;
}

/*
 * Fill @info from the superblock of @path.  -EBADMSG corrupt (or too short
 * to hold a superblock), -EPROTONOSUPPORT another version; -EINVAL when
 * the image's size does not match (info is filled then); -EISDIR /
 * -ENOTBLK when @path is a directory / not a file or block device.
 */
int ftl_info_read(const char *path, struct ftl_info *info)
{
	struct oct_sb sb;
	struct ftl_geom g;
	uint64_t size;
	bool blkdev;
	int fd, r, bad, load;

	memset(info, 0, sizeof(*info));
	if (nand_backing_is_uri(path)) {
		fd = -1;
		blkdev = true;          /* sized like a device */
		r = ftl_sb_read_uri(path, &size, &sb, &g, &bad, &load);
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		r = ftl_sb_read_fd(fd, &size, &blkdev, &sb, &g, &bad, &load);
	}
	if (!r)
		r = load;
	if (!r)
		r = info_fill(info, &sb, &g, size, blkdev);
	if (fd >= 0)
		close(fd);
	return r;
}

int ftl_info_read_backing(struct nand_backing *b, uint64_t size,
			  struct ftl_info *info)
{
	uint8_t area[OCT_SB_AREA];
	struct oct_sb sb;
	struct ftl_geom g;
	size_t n = size < sizeof(area) ? (size_t)size : sizeof(area);
	int r, bad;

	memset(info, 0, sizeof(*info));
	memset(area, 0, sizeof(area));
	r = b->ops->pread(b, area, n, 0);
	if (!r)
		r = ftl_sb_load(area, n, &sb, &g, &bad);
	if (!r)
		r = info_fill(info, &sb, &g, size, false);
	return r;
}

/* Print @info as one JSON object (raw numbers, bytes) or as an aligned
 * table with units for a person. */
void ftl_info_print(const struct ftl_info *i, const char *image, FILE *out,
		    bool json)
{
	char uuid[40], a[32], b[32];
	const uint8_t *u = i->uuid;
	const char *align = i->align == FTL_ALIGN_ODD ? "odd" : "1m";
	const char *layout = i->erase_stamps ? "1.2" : i->oob_inline ? "1.1" :
			     "1.0";
	struct oct_json j;

	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	if (json) {
		oct_json_init(&j, out);
		oct_json_obj(&j, NULL);
		if (image)
			oct_json_str(&j, "image", image);
		oct_json_str(&j, "align", align);
		oct_json_u64(&j, "page_size", i->page_size);
		oct_json_u64(&j, "pages_per_block", i->pages_per_block);
		oct_json_u64(&j, "oob_size", i->oob_size);
		oct_json_u64(&j, "nblocks", i->nblocks);
		oct_json_u64(&j, "op_permille", i->op_permille);
		oct_json_u64(&j, "pe_cycles", i->pe_cycles);
		oct_json_u64(&j, "logical_size", i->logical_size);
		oct_json_u64(&j, "flash_size", i->flash_size);
		oct_json_u64(&j, "image_size", i->image_size);
		oct_json_str(&j, "uuid", uuid);
		oct_json_str(&j, "layout", layout);
		oct_json_bool(&j, "erase_stamps", i->erase_stamps);
		oct_json_bool(&j, "ckpt_delta", i->ckpt_delta);
		oct_json_bool(&j, "flush_summaries", i->flush_sum);
		oct_json_str(&j, "integrity", i->pi ? "t10dif" : "none");
		oct_json_u64(&j, "logical_block_size", i->topo.logical);
		oct_json_u64(&j, "physical_block_size", i->topo.physical);
		oct_json_u64(&j, "alignment_offset", i->topo.alignment_offset);
		oct_json_u64(&j, "io_min", i->topo.io_min);
		oct_json_u64(&j, "io_opt", i->topo.io_opt);
		oct_json_end(&j);
		return;
	}
#define ROW(label, ...) do { fprintf(out, "%-20s ", label); \
	fprintf(out, __VA_ARGS__); fputc('\n', out); } while (0)
#define SZ(v, buf) oct_fmt_size((v), buf, sizeof(buf))
	if (image)
		ROW("image", "%s", image);
	ROW("align", "%s (logical sector 0 at medium byte %u)", align,
	    i->align == FTL_ALIGN_ODD ? 512 : 0);
	ROW("logical size", "%s (%llu bytes, %llu sectors of 512)",
	    SZ(i->logical_size, a), (unsigned long long)i->logical_size,
	    (unsigned long long)(i->logical_size / FTL_SECTOR));
	ROW("flash size", "%s (%llu bytes)", SZ(i->flash_size, a),
	    (unsigned long long)i->flash_size);
	ROW("image size", "%s (%llu bytes)", SZ(i->image_size, a),
	    (unsigned long long)i->image_size);
	ROW("page size", "%s + %s OOB", SZ(i->page_size, a), SZ(i->oob_size, b));
	ROW("erase block", "%s (%u pages)",
	    SZ((uint64_t)i->page_size * i->pages_per_block, a), i->pages_per_block);
	ROW("erase blocks", "%u", i->nblocks);
	ROW("over-provisioning", "%.1f %%", i->op_permille / 10.0);
	ROW("rated endurance", "%u erases per block", i->pe_cycles);
	ROW("uuid", "%s", uuid);
	ROW("medium layout", "%s (%s%s%s%s)", layout,
	    i->oob_inline ? "OOB beside its page" : "OOB area",
	    i->erase_stamps ? ", erase stamps" : "",
	    i->ckpt_delta ? ", delta checkpoints" : "",
	    i->flush_sum ? ", flush summaries" : "");
	ROW("integrity", "%s", i->pi ? "t10dif (T10-DIF type 1 per 512-byte "
	    "sector, CRC16 guard, ref tag; guards in the OOB)" : "none");
	ROW("logical block", "%s", SZ(i->topo.logical, a));
	ROW("physical block", "%s", SZ(i->topo.physical, a));
	ROW("alignment offset", "%u bytes", i->topo.alignment_offset);
	ROW("io_min", "%s", SZ(i->topo.io_min, a));
	ROW("io_opt", "%s", i->topo.io_opt ? SZ(i->topo.io_opt, a) : "0 (none)");
#undef SZ
#undef ROW
}
