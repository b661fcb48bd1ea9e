/* SPDX-License-Identifier: MIT */
/* Make old-format images (checkpoint v4 base + v1 deltas; v3 full) with the
 * engine at 3c48226, for tests/data/health (see README there).  Build in a
 * checkout of 3c48226 after `make build/libengine.a build/libalign.a`:
 * cc -std=c11 -D_GNU_SOURCE -pthread -Icommon -Iublk-server/nand
 * -Iublk-server/ftl -Ilibalign gen-old.c build/libengine.a build/libalign.a
 * -ldl -lm -lblkid; ./a.out old-v4.img old-v3.img; gzip -9 old-v*.img */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ftl-int.h"

static void workload(struct ftl *f)
{
	static uint8_t buf[16384];
	for (int i = 0; i < 64; i++) {
		memset(buf, i + 1, sizeof(buf));
		if (ftl_write(f, buf, (uint64_t)(i * 7 % 48) * 16384, 16384, 0))
			abort();
		if (i % 16 == 15) {
			pthread_mutex_lock(&f->lock);
			if (ftl_ckpt_write(f, false)) abort();
			pthread_mutex_unlock(&f->lock);
		}
	}
	if (ftl_write(f, buf, 512, 512, FTL_FUA)) abort();   /* an RMW */
	for (int i = 0; i < 10; i++)
		if (ftl_read(f, buf, (uint64_t)i * 4096, 4096)) abort();
	if (ftl_flush(f)) abort();
}

int main(int argc, char **argv)
{
	struct ftl_create_opts c = { .size = 4u << 20, .align = FTL_ALIGN_ODD, .op_permille = 250,
		.pages_per_block = 16 };
	struct ftl *f;
	struct nand_backing *b;
	uint64_t sz;
	uint8_t *bytes;
	int fd;

	if (argc != 3) return 2;
	/* 1: delta image, a file */
	unlink(argv[1]);
	if (ftl_create(argv[1], &c) || ftl_open(argv[1], NULL, &f)) abort();
	workload(f);
	if (ftl_close(f)) abort();
	/* a second session, clean */
	if (ftl_open(argv[1], NULL, &f)) abort();
	if (ftl_read(f, bytes = malloc(4096), 0, 4096)) abort();
	if (ftl_close(f)) abort();
	/* 2: full (v3) image, from memory */
	if (nand_backing_mem(ftl_test_image_size_full(&c), false, &b) ||
	    ftl_test_create_backing_full(b, &c)) abort();
	nand_mem_hold(b);
	if (ftl_open_backing(b, NULL, &f)) abort();
	workload(f);
	if (ftl_close(f)) abort();
	bytes = nand_mem_bytes(b, &sz);
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, bytes, sz) != (ssize_t)sz) abort();
	close(fd);
	return 0;
}
