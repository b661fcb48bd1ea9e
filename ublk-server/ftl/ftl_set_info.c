/* SPDX-License-Identifier: MIT */
/*
 * Offline inspection of a set image (ftl-set.h): its header, and each
 * part's superblock through a window of the image (ftl_info_read_backing),
 * with no mount and no write.  A plain image is ftl_info_read's.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "ftl-set-int.h"
#include "oct-fmt.h"

/* The set's own summary in @si->set from header @h and part 0's info. */
static void set_summary(struct ftl_set_info *si, const struct ftl_set_hdr *h)
{
	struct ftl_info *i = &si->set;
	uint64_t shift;

	*i = si->part[0];
	i->align = h->align_mode == OCT_ALIGN_ODD ? FTL_ALIGN_ODD
						  : FTL_ALIGN_1M;
	shift = i->align == FTL_ALIGN_ODD ? FTL_SECTOR : 0;
	i->logical_size = h->logical_size;
	i->image_size = h->parts[h->nparts - 1].off + h->parts[h->nparts - 1].len;
	i->flash_size = 0;
	i->nblocks = 0;
	for (unsigned p = 0; p < h->nparts; p++) {
		i->flash_size += si->part[p].flash_size;
		i->nblocks += si->part[p].nblocks;
	}
	memcpy(i->uuid, h->uuid, sizeof(i->uuid));
	i->pi = false;
	i->topo.size = h->logical_size;
	if (i->topo.physical)
		i->topo.alignment_offset = (i->topo.physical - shift %
					    i->topo.physical) %
					   i->topo.physical;
}

/* A set's header and parts on backing @b of @size bytes: 0 / -errno. */
static int read_set(struct nand_backing *b, const struct ftl_set_hdr *h,
		    struct ftl_set_info *si)
{
	int r = 0;

	si->nparts = h->nparts;
	si->stripe = h->stripe;
	for (unsigned p = 0; p < h->nparts; p++) {
		struct nand_backing *w;

		si->part_off[p] = h->parts[p].off;
		si->part_len[p] = h->parts[p].len;
		si->part_err[p] = nand_backing_window(b, h->parts[p].off,
						      h->parts[p].len, &w);
		if (!si->part_err[p]) {
			si->part_err[p] = ftl_info_read_backing(w,
						h->parts[p].len, &si->part[p]);
			w->ops->destroy(w);
		}
		if (si->part_err[p] && !r)
			r = si->part_err[p];
	}
	set_summary(si, h);
	return r;
}

int ftl_set_info_read(const char *path, struct ftl_set_info *si)
{
	struct ftl_open_opts ro = { .readonly = true };
	struct nand_backing *b;
	struct ftl_set_hdr h;
	uint64_t size;
	bool blkdev;
	int fd, r;

	memset(si, 0, sizeof(*si));
	r = ftl_path_backing(path, &ro, &b, &size, &blkdev, &fd);
	if (r)
		return ftl_info_read(path, &si->set);  /* its errors, exactly */
	r = ftl_set_hdr_load(b, size, &h, NULL);
	if (r == 1)
		r = read_set(b, &h, si);
	b->ops->destroy(b);
	if (fd >= 0)
		close(fd);
	if (si->nparts)
		return r;
	if (r < 0)
		return r;
	/* a plain image (or none): the engine's own answer */
	si->nparts = 1;
	r = ftl_info_read(path, &si->set);
	si->part[0] = si->set;
	si->part_err[0] = r;
	si->part_len[0] = si->set.image_size;
	return r;
}

void ftl_set_info_print(const struct ftl_set_info *si, const char *image,
			FILE *out, bool json)
{
	const struct ftl_info *i = &si->set;
	const char *align = i->align == FTL_ALIGN_ODD ? "odd" : "1m";
	char a[32];

	if (si->nparts <= 1) {
		ftl_info_print(i, image, out, json);
		return;
	}
	if (json) {
		fprintf(out, "{");
		if (image)
			fprintf(out, "\"image\": \"%s\", ", image);
		fprintf(out, "\"parts\": %u, \"stripe\": %" PRIu64 ", "
			"\"align\": \"%s\", \"logical_size\": %" PRIu64 ", "
			"\"image_size\": %" PRIu64 ", \"part\": [", si->nparts,
			si->stripe, align, i->logical_size, i->image_size);
		for (unsigned p = 0; p < si->nparts; p++) {
			fprintf(out, "%s", p ? ", " : "");
			if (si->part_err[p])
				fprintf(out, "{\"error\": \"%s\"}\n",
					strerror(-si->part_err[p]));
			else
				ftl_info_print(&si->part[p], NULL, out, true);
		}
		fprintf(out, "]}\n");
		return;
	}
	if (image)
		fprintf(out, "%-20s %s\n", "image", image);
	fprintf(out, "%-20s %u (a set: logical space striped over them)\n",
		"parts", si->nparts);
	fprintf(out, "%-20s %s (%" PRIu64 " bytes)\n", "stripe",
		oct_fmt_size(si->stripe, a, sizeof(a)), si->stripe);
	fprintf(out, "%-20s %s (logical sector 0 at medium byte %u)\n",
		"align", align, i->align == FTL_ALIGN_ODD ? 512 : 0);
	fprintf(out, "%-20s %s (%" PRIu64 " bytes, %" PRIu64
		" sectors of 512)\n", "logical size",
		oct_fmt_size(i->logical_size, a, sizeof(a)), i->logical_size,
		i->logical_size / FTL_SECTOR);
	fprintf(out, "%-20s %s (%" PRIu64 " bytes)\n", "image size",
		oct_fmt_size(i->image_size, a, sizeof(a)), i->image_size);
	for (unsigned p = 0; p < si->nparts; p++) {
		fprintf(out, "\npart %u: bytes %" PRIu64 "..%" PRIu64
			" of the image\n", p, si->part_off[p],
			si->part_off[p] + si->part_len[p]);
		if (si->part_err[p])
			fprintf(out, "  unreadable: %s\n",
				strerror(-si->part_err[p]));
		else
			ftl_info_print(&si->part[p], NULL, out, false);
	}
}
