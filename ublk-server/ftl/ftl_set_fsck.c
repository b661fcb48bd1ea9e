/* SPDX-License-Identifier: MIT */
/*
 * Checking a set image (ftl-set.h, ftl_set_fsck): each part is an engine
 * image, checked (and repaired) by the engine's fsck on a window of the
 * image (ftl_fsck_backing), its report labelled; a plain image is
 * ftl_fsck's.  A repair holds the image lock over every part.
 */
#include <errno.h>
#include <unistd.h>

#include "ftl-int.h"
#include "ftl-set-int.h"

/* The worse of two results: a -errno first, else the higher code. */
static int worse(int a, int b)
{
	if (a < 0)
		return a;
	if (b < 0)
		return b;
	return a > b ? a : b;
}

/* Check each part of the set of header @h on @b. */
static int parts_fsck(struct nand_backing *b, const struct ftl_set_hdr *h,
		      bool fix, FILE *out, bool json)
{
	int r = 0;

	if (json)
		fprintf(out, "\"parts\": [");
	for (unsigned p = 0; p < h->nparts; p++) {
		int e;

		if (json)
			fprintf(out, "%s", p ? ", " : "");
		else
			fprintf(out, "%spart %u:\n", p ? "\n" : "", p);
		fflush(out);
		e = ftl_fsck_backing(b, h->parts[p].off, h->parts[p].len, fix,
				     out, json);
		if (e < 0 && json)
			fprintf(out, "{\"error\": %d}", e);
		else if (e < 0)
			fprintf(out, "cannot check: error %d\n", e);
		r = worse(r, e);
	}
	if (json)
		fprintf(out, "]}\n");
	return r;
}

/* The header's copies (ftl_set_hdr_load's @bad): a damaged one is a
 * problem (exit 4: one more damage and the set is lost), which --repair
 * mends (exit 1).  Opens the JSON document ("header", then the parts). */
static int header_fsck(struct nand_backing *b, const struct ftl_set_hdr *h,
		       int bad, bool fix, FILE *out, bool json)
{
	int r = bad && fix ? ftl_set_hdr_mend(b, h, bad, false) : 0;

	if (json) {
		fprintf(out, "{\"header\": {\"clean\": %s, \"damaged_copies\": "
			"[%s%s%s], \"repaired\": %s}, ", bad ? "false" : "true",
			bad & 1 ? "0" : "", bad == 3 ? ", " : "",
			bad & 2 ? "1" : "", bad && fix && !r ? "true" : "false");
	}
	for (int c = 0; c < 2 && !json; c++)
		if (bad & (1 << c))
			fprintf(out, "set header: PROBLEM: copy %d is damaged "
				"(copy %d is used%s)%s\n", c, !c, fix ? "" :
				"; --repair or the next serve rewrites it",
				!fix ? "" : r ? ": rewriting it failed" :
				": rewritten");
	if (r)
		return r;
	return !bad ? 0 : fix ? 1 : 4;
}

int ftl_set_fsck(const char *path, bool fix, FILE *out, bool json)
{
	struct ftl_open_opts o = { .readonly = !fix };
	struct nand_backing *b;
	struct ftl_set_hdr h;
	uint64_t size;
	bool blkdev, plain;
	int fd, r, bad = 0;

	r = ftl_path_backing(path, &o, &b, &size, &blkdev, &fd);
	if (r)
		return ftl_fsck(path, fix, out, json);  /* its errors */
	r = ftl_set_hdr_load(b, size, &h, &bad);
	plain = r == 0;                 /* not a set: the engine's fsck */
	if (r == 1) {
		r = header_fsck(b, &h, bad, fix, out, json);
		r = worse(r, parts_fsck(b, &h, fix, out, json));
	}
	else if (r < 0)
		fprintf(out, "set header: %s\n", r == -EPROTONOSUPPORT ?
			"another format version" : "no valid copy");
	b->ops->destroy(b);
	if (fd >= 0)
		close(fd);              /* the lock goes last */
	return plain ? ftl_fsck(path, fix, out, json) : r;
}
