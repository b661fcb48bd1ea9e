/* SPDX-License-Identifier: MIT */
/*
 * GC copies carry their source page's data CRC (ftl_gc.c, evac_run): a
 * page whose data was damaged on the medium (one bit flipped in the
 * backing, no ECC model to see it) and then relocated by GC must still
 * fail its CRC at its new place -- its logical page reads as an error and
 * fsck reports it (exit 4) -- never read back as good data with a CRC
 * computed over the damage.  Every other logical page reads its data.
 * A fresh seed per run (OCTANT_SEED replays); 20 trials.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE  (1u << 20)
#define NLPN  (SIZE / 4096)

static uint64_t rs;

static uint64_t rnd(void)
{
	return t_xorshift(&rs);
}

static void fill(uint8_t *p, uint32_t lpn, uint32_t id)
{
	t_fill_tag(p, 4096, (uint64_t)lpn << 32 | id);
}

static void trial(int n, const char *img, FILE *null)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
		.pages_per_block = 8, .op_permille = 250 };
	static uint32_t cur[NLPN];
	uint64_t isz = ftl_test_image_size(&c), bsz;
	uint8_t w[4096], r[4096];
	struct nand_backing *b;
	struct ftl *f = NULL;
	uint32_t id = 1, victim, ppn;
	int fd, rc, i, bad = 0;

	if (nand_backing_mem(isz, false, &b) || ftl_create_backing(b, &c) ||
	    ftl_open_backing(b, NULL, &f)) {
		T_CHECK(0, "trial %d: setup", n);
		return;
	}
	for (uint32_t l = 0; l < NLPN; l++) {
		fill(w, l, id);
		T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0,
			"fill");
		cur[l] = id++;
	}
	T_CHECK(ftl_flush(f) == 0, "flush");
	/* one bit of the victim's data, on the medium (what reads see) */
	victim = (uint32_t)(rnd() % NLPN);
	ppn = ftl_map_get(f, victim);
	T_CHECK(ppn < FTL_DAMAGED, "trial %d: victim mapped", n);
	nand_mem_bytes(b, &bsz)[ftl_page_off(ftl_test_geom(f), ppn) + rnd() % 4096] ^=
		(uint8_t)(1u << (rnd() % 8));
	/* overwrite the others until GC has moved the victim */
	for (i = 0; i < 200000 && ftl_map_get(f, victim) == ppn; i++) {
		uint32_t l = (uint32_t)(rnd() % NLPN);

		if (l == victim)
			continue;
		fill(w, l, id);
		T_CHECK(ftl_write(f, w, (uint64_t)l * 4096, 4096, 0) == 0,
			"write");
		cur[l] = id++;
	}
	T_CHECK(ftl_map_get(f, victim) != ppn && ftl_map_get(f, victim) < FTL_DAMAGED,
		"trial %d: GC never moved lpn %u (%d writes)", n, victim, i);
	rc = ftl_read(f, r, (uint64_t)victim * 4096, 4096);
	fill(w, victim, cur[victim]);
	T_CHECK(rc < 0, "trial %d: lpn %u damaged at ppn %u, moved to %u by "
		"GC, reads %d (%s)", n, victim, ppn, ftl_map_get(f, victim), rc,
		rc ? "" : memcmp(r, w, 4096) ? "the damage, as good data" :
		"the original data");
	for (uint32_t l = 0; l < NLPN; l++) {
		if (l == victim)
			continue;
		fill(w, l, cur[l]);
		bad += ftl_read(f, r, (uint64_t)l * 4096, 4096) != 0 ||
		       memcmp(r, w, 4096) != 0;
	}
	T_CHECK(bad == 0, "trial %d: %d other pages read wrong", n, bad);
	/* a clean close (checkpoint), then fsck of the image it left */
	nand_mem_hold(b);
	T_CHECK(ftl_close(f) == 0, "close");
	fd = open(img, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	T_CHECK(fd >= 0 && write(fd, nand_mem_bytes(b, &bsz), isz) ==
		(ssize_t)isz, "store");
	if (fd >= 0)
		close(fd);
	b->ops->destroy(b);
	rc = ftl_fsck(img, false, null, false);
	T_CHECK(rc == 4, "trial %d: fsck of the moved damage: %d, want 4", n,
		rc);
}

int main(void)
{
	char img[256];
	FILE *null = fopen("/dev/null", "w");

	rs = t_seed() | 1;
	snprintf(img, sizeof(img), "%s/octant-gc-carry-%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	for (int n = 0; n < 20; n++)
		trial(n, img, null);
	unlink(img);
	if (null)
		fclose(null);
	return t_result();
}
