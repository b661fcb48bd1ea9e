/* SPDX-License-Identifier: MIT */
/*
 * The emulated flash: NAND rules (program once, in order, per erase;
 * erased pages read 0xff), counters, buffered OOB reaching the backing at
 * sync, the fault-injection seam, and the power-cut image builder.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nand.h"
#include "test.h"

static int fail_program_of = -1;

static int fault(void *ctx, enum nand_op op, uint64_t page, void *buf,
		 size_t len)
{
	(void)ctx;
	if (op == NAND_OP_PROGRAM && (int)page == fail_program_of)
		return -EIO;
	if (op == NAND_OP_READ && page == 9 && buf && len)
		((uint8_t *)buf)[0] ^= 1;      /* a bit flip */
	return 0;
}

static int fail_read_of = -1;

static int fail_read(void *ctx, enum nand_op op, uint64_t page, void *buf,
		     size_t len)
{
	(void)ctx; (void)buf; (void)len;
	return op == NAND_OP_READ && (int)page == fail_read_of ? -EIO : 0;
}

/* The inline layout: each page's OOB right after its data, a program is
 * one backing write, runs read with one vectored call. */
static void inline_layout(void)
{
	struct nand_geom g = { .page_size = 4096, .oob_size = 64, .ppb = 8,
		.nblocks = 4, .flash_off = 8192, .oob_inline = true };
	uint64_t slot = g.page_size + g.oob_size;
	uint64_t size = g.flash_off + (uint64_t)g.nblocks * g.ppb * slot;
	struct nand_backing *b;
	struct nand_counters c0, c1;
	struct nand *n;
	uint8_t data[4096], oob[64], run[3 * 4096], roob[3 * 64];
	uint8_t boob[8 * 64], *img, *crash;
	int res[3];

	T_CHECK(nand_backing_mem(size, true, &b) == 0, "mem");
	nand_mem_hold(b);
	T_CHECK(nand_create(b, &g, &n) == 0, "create");
	for (uint32_t k = 0; k < g.nblocks; k++)
		nand_set_block(n, k, 0, 0);
	img = nand_mem_bytes(b, NULL);
	nand_counters_get(n, &c0);
	for (uint64_t p = 0; p < 3; p++) {
		memset(data, (int)(0xa0 + p), sizeof(data));
		memset(oob, (int)(0x10 + p), sizeof(oob));
		T_CHECK(nand_program(n, p, data, oob) == 0, "program %u", (unsigned)p);
	}
	nand_counters_get(n, &c1);
	T_EQ_U64(c1.backing_writes - c0.backing_writes, 3,
		 "one backing write per program");
	for (uint64_t p = 0; p < 3; p++) {
		T_CHECK(img[g.flash_off + p * slot] == 0xa0 + p &&
			img[g.flash_off + p * slot + 4095] == 0xa0 + p,
			"data of page %u in its slot", (unsigned)p);
		T_CHECK(img[g.flash_off + p * slot + 4096] == 0x10 + p &&
			img[g.flash_off + p * slot + slot - 1] == 0x10 + p,
			"OOB of page %u right after its data", (unsigned)p);
	}
	/* a run: one backing read, data and OOB of each page */
	nand_counters_get(n, &c0);
	T_CHECK(nand_read_run(n, 0, 3, run, roob, res) == 0, "run");
	nand_counters_get(n, &c1);
	T_EQ_U64(c1.backing_reads - c0.backing_reads, 1, "one read per run");
	for (int p = 0; p < 3; p++)
		T_CHECK(res[p] == 0 && run[p * 4096] == 0xa0 + p &&
			run[p * 4096 + 4095] == 0xa0 + p &&
			roob[p * 64] == 0x10 + p && roob[p * 64 + 63] == 0x10 + p,
			"run page %d", p);
	/* the fault seam fails one page of a run, not the others */
	nand_set_fault(n, fail_read, NULL);
	fail_read_of = 1;
	T_CHECK(nand_read_run(n, 0, 3, run, roob, res) == 0, "run");
	T_CHECK(res[0] == 0 && res[1] == -EIO && res[2] == 0, "page 1 failed");
	nand_set_fault(n, NULL, NULL);
	/* a block's OOB: programmed pages, zeroes past them */
	T_CHECK(nand_read_block_oob(n, 0, boob) == 0, "block oob");
	T_CHECK(boob[0] == 0x10 && boob[2 * 64 + 63] == 0x12 &&
		boob[3 * 64] == 0 && boob[8 * 64 - 1] == 0, "block oob bytes");
	/* a power cut after an unsynced program: one write, all or torn */
	T_CHECK(nand_sync(n) == 0, "sync");
	T_CHECK(nand_program(n, 3, data, oob) == 0, "unsynced program");
	crash = malloc(size);
	T_CHECK(crash && nand_mem_crash_image(b, 1, false, crash) == 1,
		"one write pending");
	free(crash);
	/* erase: OOB zeroes, data reads 0xff */
	T_CHECK(nand_erase(n, 0) == 0, "erase");
	T_CHECK(nand_read_oob(n, 1, oob) == 0 && oob[0] == 0 && oob[63] == 0,
		"erased OOB");
	T_CHECK(nand_read(n, 1, 0, data, 4096) == 0 && data[0] == 0xff,
		"erased data");
	T_CHECK(img[g.flash_off + 7 * slot + 4096] == 0, "last OOB zeroed");
	nand_destroy(n);
	b->ops->destroy(b);
}

/* Program runs (nand_program_run): one backing write for the pages of a
 * run on the inline layout, the rules of single programs, page by page
 * with a fault seam (the first failure ends the run) or on the separate
 * layout, a bad block failing at the run's first page. */
static void program_runs(bool inl)
{
	struct nand_geom g = { .page_size = 4096, .oob_size = 64, .ppb = 8,
		.nblocks = 4, .flash_off = 8192, .oob_inline = inl };
	uint64_t slot = g.page_size + (inl ? g.oob_size : 0), size;
	struct nand_backing *b;
	struct nand_counters c0, c1;
	struct nand *n;
	uint8_t *data = malloc(8 * 4096), oob[8 * 64], rd[4096], rob[64];
	uint8_t *crash;
	uint32_t done;

	g.oob_off = g.flash_off + (uint64_t)g.nblocks * g.ppb * slot;
	size = g.oob_off + (inl ? 0 : (uint64_t)g.nblocks * g.ppb * g.oob_size);
	T_CHECK(data && nand_backing_mem(size, true, &b) == 0, "mem");
	nand_mem_hold(b);
	T_CHECK(nand_create(b, &g, &n) == 0, "create");
	for (uint32_t k = 0; k < g.nblocks; k++)
		nand_set_block(n, k, 0, 0);
	for (int p = 0; p < 8; p++) {
		memset(data + p * 4096, 0xa0 + p, 4096);
		memset(oob + p * 64, 0x10 + p, 64);
	}
	/* pages 1..5 of block 0 (page 0 skipped, as a stream may) */
	nand_counters_get(n, &c0);
	T_CHECK(nand_program_run(n, 1, 5, data, oob, &done) == 0 && done == 5,
		"run of 5");
	nand_counters_get(n, &c1);
	if (inl)
		T_EQ_U64(c1.backing_writes - c0.backing_writes, 1,
			 "one backing write per run (inline)");
	T_EQ_U64(c1.programs - c0.programs, 5, "5 programs counted");
	T_EQ_U64(nand_block_wp(n, 0), 6, "write pointer after the run");
	for (int p = 0; p < 5; p++) {
		T_CHECK(nand_read(n, 1 + p, 0, rd, 4096) == 0 &&
			rd[0] == 0xa0 + p && rd[4095] == 0xa0 + p,
			"run page %d data", p);
		T_CHECK(nand_read_oob(n, 1 + p, rob) == 0 && rob[0] == 0x10 + p &&
			rob[63] == 0x10 + p, "run page %d OOB", p);
	}
	/* the rules: not below the write pointer, not past the block */
	T_CHECK(nand_program_run(n, 5, 2, data, oob, &done) == -EIO &&
		done == 0, "run over a programmed page");
	T_CHECK(nand_program_run(n, 6, 3, data, oob, &done) == -EINVAL &&
		done == 0, "run past its block");
	T_EQ_U64(nand_block_wp(n, 0), 6, "write pointer unchanged");
	/* a fault seam: page by page, the failure ends the run */
	nand_set_fault(n, fault, NULL);
	fail_program_of = 10;
	T_CHECK(nand_program_run(n, 8, 4, data, oob, &done) == -EIO &&
		done == 2, "run stops at the failed page");
	T_CHECK(nand_read(n, 9, 0, rd, 16) == 0 && rd[0] == (0xa1 ^ 1),
		"the pages before it were programmed");
	nand_set_fault(n, NULL, NULL);
	fail_program_of = -1;
	/* a bad block: status FAIL on the run's first page, used up */
	nand_mark_bad(n, 2, true);
	T_CHECK(nand_program_run(n, 16, 3, data, oob, &done) == -NAND_EFAIL &&
		done == 0, "bad block fails the run");
	T_EQ_U64(nand_block_wp(n, 2), 1, "the failed page is used up");
	nand_mark_bad(n, 2, false);
	/* a power cut after an unsynced run: one pending write (inline) */
	T_CHECK(nand_sync(n) == 0, "sync");
	T_CHECK(nand_program_run(n, 24, 8, data, oob, &done) == 0 && done == 8,
		"whole block in one run");
	crash = malloc(size);
	if (inl)
		T_CHECK(crash && nand_mem_crash_image(b, 1, false, crash) == 1,
			"a run is one pending write");
	free(crash);
	free(data);
	nand_destroy(n);
	b->ops->destroy(b);
}

/* A file backing on tmpfs is mapped, and nand_read_run copies from the
 * mapping: it must see every program at once, and an erase (hole punch)
 * then a new program; pages past the write pointer still read 0xff (the
 * run takes the pread path then), and OCTANT_BACKING_MAP=0 maps nothing. */
static void mapped_runs(bool inl)
{
	struct nand_geom g = { .page_size = 4096, .oob_size = 64, .ppb = 8,
		.nblocks = 4, .flash_off = 8192, .oob_inline = inl };
	uint64_t slot = g.page_size + (inl ? g.oob_size : 0), size;
	char path[] = "/dev/shm/nand-rules-XXXXXX";
	struct nand_backing *b;
	struct nand_counters c0, c1;
	struct nand *n;
	uint8_t data[4096], oob[64], run[4 * 4096], roob[4 * 64];
	int res[4], fd = mkstemp(path);

	if (fd < 0)
		T_SKIP("no /dev/shm");
	unlink(path);
	g.oob_off = g.flash_off + (uint64_t)g.nblocks * g.ppb * slot;
	size = g.oob_off + (inl ? 0 : (uint64_t)g.nblocks * g.ppb * g.oob_size);
	T_CHECK(ftruncate(fd, (off_t)size) == 0, "size");
	setenv("OCTANT_BACKING_MAP", "0", 1);
	T_CHECK(nand_backing_fd(fd, &b) == 0, "fd backing, map off");
	T_CHECK(b->ops->view(b, 0, 4096) == NULL, "OCTANT_BACKING_MAP=0: unmapped");
	b->ops->destroy(b);
	unsetenv("OCTANT_BACKING_MAP");
	T_CHECK(nand_backing_fd(fd, &b) == 0, "fd backing");
	T_CHECK(b->ops->view(b, 0, size) != NULL &&
		b->ops->view(b, 1, size) == NULL, "tmpfs file mapped, bounds");
	T_CHECK(nand_create(b, &g, &n) == 0, "create");
	for (uint32_t k = 0; k < g.nblocks; k++)
		nand_set_block(n, k, 0, 0);
	for (int round = 0; round < 2; round++) {
		for (uint64_t p = 0; p < 3; p++) {
			memset(data, (int)(0xa0 + p + round * 8), sizeof(data));
			memset(oob, (int)(0x10 + p + round * 8), sizeof(oob));
			T_CHECK(nand_program(n, p, data, oob) == 0, "program");
		}
		T_CHECK(nand_sync(n) == 0, "sync");
		nand_counters_get(n, &c0);
		T_CHECK(nand_read_run(n, 0, 3, run, roob, res) == 0, "run");
		nand_counters_get(n, &c1);
		T_EQ_U64(c1.backing_reads - c0.backing_reads, 1,
			 "one backing read per mapped run");
		for (int p = 0; p < 3; p++)
			T_CHECK(res[p] == 0 && run[p * 4096] == 0xa0 + p + round * 8 &&
				run[p * 4096 + 4095] == 0xa0 + p + round * 8 &&
				roob[p * 64] == 0x10 + p + round * 8 &&
				roob[p * 64 + 63] == 0x10 + p + round * 8,
				"%s round %d: mapped run page %d", inl ? "inline" : "separate",
				round, p);
		/* page 3 is past the write pointer: 0xff, pages before it intact */
		T_CHECK(nand_read_run(n, 0, 4, run, roob, res) == 0, "run past wp");
		T_CHECK(run[4096 * 2] == 0xa2 + round * 8 &&
			run[3 * 4096] == 0xff && run[4 * 4096 - 1] == 0xff,
			"past the write pointer reads 0xff");
		T_CHECK(nand_erase(n, 0) == 0, "erase");
	}
	nand_destroy(n);        /* and its backing */
	close(fd);
}

/* st_blocks of @fd (512-byte units the file has allocated). */
static long long fd_blocks(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_blocks;
}

/*
 * Mapped reads never allocate a hole of a sparse tmpfs image.  A read
 * fault on a tmpfs hole allocates a page (even read-only, even private),
 * and the server's mlockall(MCL_FUTURE) would populate (so allocate) a
 * whole readable mapping at once: a 64 MiB sparse image on a 40 MiB tmpfs
 * filled it and ran the clean checkpoint at stop into no ENOSPC (found by
 * tests/integration/fuse-safety.bats).  Here: with every write pointer
 * still at ppb (as while the FTL mounts) and on a block the write
 * pointer says is full but the file does not hold (a damaged image), runs
 * read 0 bytes of allocation and go to preadv; in a child under
 * mlockall(MCL_CURRENT | MCL_FUTURE) the mapping is not populated.
 */
static void mapped_holes(void)
{
	struct nand_geom g = { .page_size = 4096, .oob_size = 64, .ppb = 8,
		.nblocks = 4, .flash_off = 8192, .oob_inline = true };
	char path[] = "/dev/shm/nand-holes-XXXXXX";
	struct nand_backing *b;
	struct nand_counters c0, c1;
	struct nand *n;
	uint8_t data[4096], oob[64], run[8 * 4096], roob[8 * 64];
	int res[8], fd = mkstemp(path), st = -1;
	long long blocks;
	pid_t pid;

	if (fd < 0)
		T_SKIP("no /dev/shm");
	unlink(path);
	g.oob_off = g.flash_off + (uint64_t)g.nblocks * g.ppb * (4096 + 64);
	T_CHECK(ftruncate(fd, (off_t)g.oob_off) == 0, "size");
	blocks = fd_blocks(fd);
	T_CHECK(nand_backing_fd(fd, &b) == 0, "fd backing");
	T_CHECK(b->ops->view(b, 0, 1) != NULL, "tmpfs file mapped");
	T_CHECK(nand_create(b, &g, &n) == 0, "create");
	/* write pointers at ppb, nothing written: the mount's view */
	T_CHECK(nand_read_run(n, 8, 8, run, roob, res) == 0 && res[0] == 0,
		"run over a hole, write pointer ppb");
	T_EQ_U64((uint64_t)fd_blocks(fd), (uint64_t)blocks,
		 "a read below the write pointer of a hole allocates nothing");
	/* block 0: 3 pages programmed; block 1 claimed full, never written */
	nand_set_block(n, 0, 0, 0);
	for (uint64_t p = 0; p < 3; p++) {
		memset(data, (int)(0x50 + p), sizeof(data));
		memset(oob, 0x21, sizeof(oob));
		T_CHECK(nand_program(n, p, data, oob) == 0, "program");
	}
	blocks = fd_blocks(fd);
	nand_counters_get(n, &c0);
	T_CHECK(nand_read_run(n, 0, 3, run, roob, res) == 0 &&
		run[2 * 4096] == 0x52, "programmed run");
	T_CHECK(nand_read_run(n, 8, 8, run, roob, res) == 0,
		"run over a hole the write pointer calls full");
	nand_counters_get(n, &c1);
	T_EQ_U64((uint64_t)fd_blocks(fd), (uint64_t)blocks,
		 "a damaged block's hole is read without allocating it");
	T_EQ_U64(c1.backing_reads - c0.backing_reads, 2,
		 "one mapped run, one preadv");
	nand_destroy(n);
#ifdef __SANITIZE_ADDRESS__
	/* serve skips mlockall under ASan (its shadow cannot be locked) */
	fprintf(stderr, "nand-rules: ASan build: mapping under mlockall "
		"not checked (the server does not lock under ASan)\n");
	close(fd);
	(void)pid;
	(void)st;
	return;
#endif
	pid = fork();
	if (pid == 0) {
		/* the serve layer's order: lock first, then open and map */
		if (mlockall(MCL_CURRENT | MCL_FUTURE))
			_exit(77);
		if (nand_backing_fd(fd, &b) || !b->ops->view(b, 0, 1))
			_exit(2);
		_exit(fd_blocks(fd) == blocks ? 0 : 1);
	}
	T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		T_CHECK(0, "mlockall failed in the child: cannot check the "
			"mapping under it (run as root)");
	else
		T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			"mlockall(MCL_FUTURE) then map: nothing populated "
			"(child status %d)", st);
	close(fd);
}

/* This process's write syscalls so far (/proc/self/io syscw). */
static uint64_t syscw(void)
{
	unsigned long long v = 0;
	char line[128];
	FILE *f = fopen("/proc/self/io", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "syscw: %llu", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* One sequence of programs and erases on @fd (a tmpfs file) through a
 * nand with the mapping as OCTANT_BACKING_MAP=@map; returns the backing
 * writes it counted. */
static uint64_t write_seq(int fd, const char *map, bool stamp,
			  uint64_t *calls)
{
	struct nand_geom g = { .page_size = 4096, .oob_size = 64, .ppb = 8,
		.nblocks = 4, .flash_off = 8192, .oob_inline = true,
		.oob_stamp = stamp };
	struct nand_backing *b;
	struct nand_counters c;
	struct nand *n;
	uint8_t *data = malloc(8 * 4096), oob[8 * 64], rd[4096];
	uint32_t done;

	g.oob_off = g.flash_off + (uint64_t)g.nblocks * g.ppb * (4096 + 64);
	setenv("OCTANT_BACKING_MAP", map, 1);
	T_CHECK(data && nand_backing_fd(fd, &b) == 0, "fd backing (%s)", map);
	unsetenv("OCTANT_BACKING_MAP");
	T_CHECK(nand_create(b, &g, &n) == 0, "create");
	for (uint32_t k = 0; k < g.nblocks; k++)
		nand_set_block(n, k, 0, 0);
	*calls = syscw();
	for (int cycle = 0; cycle < 3; cycle++) {
		for (int p = 0; p < 8; p++) {
			memset(data + p * 4096, 0x40 + p + 16 * cycle, 4096);
			memset(oob + p * 64, 0x30 + p + 16 * cycle, 64);
		}
		/* block 0: one page, then a run of 5; block 1: a run of 8 */
		T_CHECK(nand_program(n, 0, data, oob) == 0, "program");
		T_CHECK(nand_program_run(n, 1, 5, data + 4096, oob + 64,
					 &done) == 0 && done == 5, "run of 5");
		T_CHECK(nand_program_run(n, 8, 8, data, oob, &done) == 0 &&
			done == 8, "run of 8");
		T_CHECK(nand_read(n, 5, 0, rd, 4096) == 0 &&
			rd[0] == 0x45 + 16 * cycle && rd[4095] == 0x45 + 16 * cycle,
			"%s cycle %d: a programmed page reads back", map, cycle);
		if (cycle < 2) {
			T_CHECK(nand_erase(n, 0) == 0 && nand_erase(n, 1) == 0,
				"erase");
		}
	}
	*calls = syscw() - *calls;
	T_CHECK(nand_sync(n) == 0, "sync");
	nand_counters_get(n, &c);
	nand_destroy(n);
	free(data);
	return c.backing_writes;
}

/*
 * Programs through the writable mapping leave the very bytes pwrite
 * leaves: the same sequence (single pages, runs, erase stamps, three
 * cycles) on two tmpfs files, one with OCTANT_BACKING_MAP=ro (pwrite) and
 * one mapped read-write, must give identical files; a sparse file's
 * holes are written with pwrite (never through the mapping), and its
 * allocation must match too.
 */
static void mapped_writes(bool stamp)
{
	char pa[] = "/dev/shm/nand-wa-XXXXXX", pb[] = "/dev/shm/nand-wb-XXXXXX";
	uint64_t size = 8192 + 4ull * 8 * (4096 + 64), wa, wb, ca, cb;
	int fa = mkstemp(pa), fb = mkstemp(pb);
	uint8_t *ba = malloc(size), *bb = malloc(size);

	if (fa < 0 || fb < 0)
		T_SKIP("no /dev/shm");
	unlink(pa);
	unlink(pb);
	T_CHECK(ba && bb && ftruncate(fa, (off_t)size) == 0 &&
		ftruncate(fb, (off_t)size) == 0, "size");
	wa = write_seq(fa, "ro", stamp, &ca);
	wb = write_seq(fb, "1", stamp, &cb);
	/* cycle 0 fills holes (pwrite); cycles 1 and 2 program through the
	 * mapping: 3 programs a cycle (the erase stamps stay pwrites) */
	T_CHECK(cb + 6 <= ca, "%s: programs after the first cycle go through "
		"the mapping: %llu write syscalls, %llu with pwrite",
		stamp ? "stamps" : "no stamps", (unsigned long long)cb,
		(unsigned long long)ca);
	T_CHECK(pread(fa, ba, size, 0) == (ssize_t)size &&
		pread(fb, bb, size, 0) == (ssize_t)size, "read the files");
	T_CHECK(!memcmp(ba, bb, size), "%s: mapped programs leave the bytes "
		"pwrite leaves", stamp ? "stamps" : "no stamps");
	T_EQ_U64((uint64_t)fd_blocks(fb), (uint64_t)fd_blocks(fa),
		 "the same allocation");
	T_EQ_U64(wb, wa, "the same backing writes counted");
	close(fa);
	close(fb);
	free(ba);
	free(bb);
}

int main(void)
{
	struct nand_geom g = { .page_size = 4096, .oob_size = 64, .ppb = 8,
		.nblocks = 4, .flash_off = 8192 };
	uint64_t size;
	struct nand_backing *b;
	struct nand_counters c;
	struct nand *n;
	uint8_t data[4096], oob[64], rd[4096], *img, *crash;

	g.oob_off = g.flash_off + (uint64_t)g.nblocks * g.ppb * g.page_size;
	size = g.oob_off + (uint64_t)g.nblocks * g.ppb * g.oob_size;
	T_CHECK(nand_backing_mem(size, true, &b) == 0, "mem");
	nand_mem_hold(b);
	T_CHECK(nand_create(b, &g, &n) == 0, "create");
	for (uint32_t k = 0; k < g.nblocks; k++)
		nand_set_block(n, k, 0, 0);

	memset(data, 0xab, sizeof(data));
	memset(oob, 0x11, sizeof(oob));
	/* erased page reads 0xff */
	T_CHECK(nand_read(n, 0, 0, rd, 4096) == 0, "read");
	T_CHECK(rd[0] == 0xff && rd[4095] == 0xff, "erased pattern");
	/* program in order, once */
	T_CHECK(nand_program(n, 0, data, oob) == 0, "program 0");
	T_CHECK(nand_program(n, 2, data, oob) == 0, "program 2 (skip 1)");
	T_CHECK(nand_program(n, 2, data, oob) == -EIO, "program twice");
	T_CHECK(nand_program(n, 1, data, oob) == -EIO, "program out of order");
	nand_counters_get(n, &c);
	T_EQ_U64(c.violations, 2, "violations counted");
	T_EQ_U64(c.programs, 2, "programs");
	T_CHECK(nand_read(n, 2, 100, rd, 10) == 0 && rd[0] == 0xab, "read back");
	/* OOB is written through with its page (a killed server whose page
	 * cache survives must not lose it), and reads back */
	memset(rd, 0, 64);
	T_CHECK(nand_read_oob(n, 2, rd) == 0 && rd[0] == 0x11, "oob reads back");
	img = nand_mem_bytes(b, NULL);
	T_CHECK(img[g.oob_off + 2 * 64] == 0x11, "oob written with its page");
	T_CHECK(nand_sync(n) == 0, "sync");
	T_CHECK(img[g.oob_off + 2 * 64] == 0x11, "oob still there after sync");
	/* erase: programmable again, reads 0xff, OOB zero, count */
	T_CHECK(nand_erase(n, 0) == 0, "erase");
	T_CHECK(nand_read(n, 0, 0, rd, 4096) == 0 && rd[0] == 0xff, "erased");
	T_CHECK(nand_read_oob(n, 0, rd) == 0 && rd[0] == 0, "oob erased");
	T_CHECK(nand_program(n, 0, data, oob) == 0, "program after erase");
	T_EQ_U64(nand_block_ec(n, 0), 1, "erase count");
	/* filling a block writes its OOB out at once */
	for (uint64_t p = 8; p < 16; p++)
		T_CHECK(nand_program(n, p, data, oob) == 0, "fill block 1");
	T_CHECK(img[g.oob_off + 15 * 64] == 0x11, "full block's oob written");
	/* fault seam: program failure, read bit flip */
	nand_set_fault(n, fault, NULL);
	fail_program_of = 16;
	T_CHECK(nand_program(n, 16, data, oob) == -EIO, "injected failure");
	T_CHECK(nand_read(n, 9, 0, rd, 16) == 0 && rd[0] == (0xab ^ 1),
		"injected bit flip");
	T_CHECK(nand_program(n, 17, data, oob) == 0, "program after failure");
	nand_set_fault(n, NULL, NULL);
	nand_counters_get(n, &c);
	T_CHECK(c.faults >= 1, "faults counted");
	/* power cut: nothing after the last sync is guaranteed */
	T_CHECK(nand_sync(n) == 0, "sync");
	T_CHECK(nand_program(n, 18, data, oob) == 0, "unsynced program");
	T_CHECK(nand_erase(n, 3) == 0, "unsynced erase");
	crash = malloc(size);
	for (uint64_t seed = 0; seed < 64; seed++) {
		long pending = nand_mem_crash_image(b, seed, false, crash);
		T_EQ_U64(pending, 3, "three writes pending (data page, its oob, erase oob zeroing)");
		/* synced state always there */
		T_CHECK(crash[g.flash_off + 17 * 4096] == 0xab, "synced data kept");
		T_CHECK(crash[g.oob_off + 15 * 64] == 0x11, "synced oob kept");
	}
	free(crash);
	nand_destroy(n);
	b->ops->destroy(b);
	inline_layout();
	program_runs(true);
	program_runs(false);
	mapped_runs(true);
	mapped_runs(false);
	mapped_holes();
	mapped_writes(false);
	mapped_writes(true);
	return t_result();
}
