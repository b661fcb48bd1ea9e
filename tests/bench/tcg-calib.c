/* SPDX-License-Identifier: MIT */
/*
 * tcg-calib: what the primitives of the server's I/O path cost here, per
 * operation on a 4 KiB page, so that a TCG guest can be compared with the
 * host (tests/bench/bench-calib runs it on both and prints the ratios).
 *   crc32c-hw3/hw1/table  each implementation in common/crc32c.c, 4 KiB
 *   crc32c-*-64           the same over 64 bytes (an OOB record's size)
 *   crc32c-chosen         oct_crc32c (the calibrated pick), 4 KiB
 *   crc32c-calibrate      the first call of oct_crc32c: its calibration
 *   memcpy                4 KiB between two page-aligned buffers (glibc's)
 *   rep-movsb / rep-movsq the same copy as x86 string instructions (what the
 *                         kernel's copy_to_user / memcpy run, by CPU features)
 *   pread / pwrite        4 KiB at random page offsets of a 16 MiB file in DIR
 *   pread-64              64 bytes of such a page (the syscall and page lookup
 *                         without the 4 KiB copy to user space)
 *   getppid               an empty system call
 *   eventfd               eventfd write + read (a wake-up's two syscalls)
 *   uring-nop             one io_uring NOP: submit and wait for its completion
 *   uring-read            an io_uring READ of 4 KiB from the file into a user buffer
 *                         (copy_to_user, as the ublk driver's copy); tmpfs has no
 *                         nowait reads, so io_uring runs it in an io-wq worker
 *   uring-read-fixed      the same into a registered (fixed) buffer: a copy between
 *                         kernel pages (memcpy), as zero copy's READ_FIXED
 *   uring-write-fixed     WRITE_FIXED of 4 KiB from a registered buffer into the file
 * Each figure is the median of 5 batches, a batch sized to run >= 5 ms.
 * usage: tcg-calib [DIR]   (DIR for the file: $TMPDIR or /tmp; use a tmpfs)
 * Output: "NAME  US_PER_OP  CHOSEN" lines after a "# " header; the third
 * column only on the crc32c-chosen line.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"

#define PAGE      4096u
#define FILE_PAGES 4096u                /* 16 MiB */
#define BATCHES   5

static unsigned char *src, *dst;
static int fd = -1, efd = -1;
static struct io_uring ring;
static uint64_t rs = 0x9E3779B97F4A7C15ull;
static volatile uint32_t sink;
static int failed;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static void fail(const char *what)
{
	if (!failed)
		fprintf(stderr, "tcg-calib: %s: %s\n", what, strerror(errno));
	failed = 1;
}

typedef void (*op_fn)(int arg);

static void op_crc(int impl)  { sink ^= oct_crc32c_with(impl, sink, src, PAGE); }
static void op_crc64(int impl) { sink ^= oct_crc32c_with(impl, sink, src, 64); }
static void op_chosen(int a)  { (void)a; sink ^= oct_crc32c(sink, src, PAGE); }
static void op_memcpy(int a)
{
	(void)a;
	memcpy(dst, src, PAGE);
	__asm__ volatile("" : : "r"(dst) : "memory");
}
static void op_rep(int wide)
{
#if defined(__x86_64__)
	void *d = dst, *sp = src;
	size_t n = wide ? PAGE / 8 : PAGE;

	if (wide)
		__asm__ volatile("rep movsq" : "+D"(d), "+S"(sp), "+c"(n) : : "memory");
	else
		__asm__ volatile("rep movsb" : "+D"(d), "+S"(sp), "+c"(n) : : "memory");
#else
	(void)wide;
	memcpy(dst, src, PAGE);
#endif
}
static void op_pread(int a)
{
	(void)a;
	if (pread(fd, dst, PAGE, (off_t)(rnd() % FILE_PAGES) * PAGE) != PAGE)
		fail("pread");
}
static void op_pread64(int a)
{
	(void)a;
	if (pread(fd, dst, 64, (off_t)(rnd() % FILE_PAGES) * PAGE) != 64)
		fail("pread");
}
static void op_pwrite(int a)
{
	(void)a;
	if (pwrite(fd, src, PAGE, (off_t)(rnd() % FILE_PAGES) * PAGE) != PAGE)
		fail("pwrite");
}
static void op_getppid(int a) { (void)a; sink ^= (uint32_t)syscall(SYS_getppid); }
static void op_eventfd(int a)
{
	uint64_t v = 1;

	(void)a;
	if (write(efd, &v, sizeof(v)) != sizeof(v) || read(efd, &v, sizeof(v)) != sizeof(v))
		fail("eventfd");
}
static void op_nop(int a)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	struct io_uring_cqe *cqe;

	(void)a;
	io_uring_prep_nop(sqe);
	if (io_uring_submit_and_wait(&ring, 1) != 1 || io_uring_peek_cqe(&ring, &cqe) != 0) {
		errno = EIO;
		fail("io_uring nop");
		return;
	}
	io_uring_cqe_seen(&ring, cqe);
}

/* one READ (@fixed 0), READ_FIXED (1) or WRITE_FIXED (2) of a page */
static void op_uring_rw(int fixed)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	struct io_uring_cqe *cqe;
	off_t off = (off_t)(rnd() % FILE_PAGES) * PAGE;

	if (fixed == 2)
		io_uring_prep_write_fixed(sqe, fd, src, PAGE, (uint64_t)off, 1);
	else if (fixed)
		io_uring_prep_read_fixed(sqe, fd, dst, PAGE, (uint64_t)off, 0);
	else
		io_uring_prep_read(sqe, fd, dst, PAGE, (uint64_t)off);
	if (io_uring_submit_and_wait(&ring, 1) != 1 || io_uring_peek_cqe(&ring, &cqe) != 0 ||
	    cqe->res != PAGE) {
		errno = EIO;
		fail("io_uring read/write");
		return;
	}
	io_uring_cqe_seen(&ring, cqe);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* microseconds per call of @fn(@arg): median of BATCHES batches of >= 5 ms */
static double measure(op_fn fn, int arg)
{
	uint64_t n = 1, t[BATCHES];

	for (;;) {                      /* size a batch (this also warms up) */
		uint64_t t0 = now_ns();
		for (uint64_t i = 0; i < n; i++)
			fn(arg);
		if (now_ns() - t0 >= 5000000u || n >= (1u << 30))
			break;
		n *= 2;
	}
	for (int b = 0; b < BATCHES; b++) {
		uint64_t t0 = now_ns();
		for (uint64_t i = 0; i < n; i++)
			fn(arg);
		t[b] = now_ns() - t0;
	}
	qsort(t, BATCHES, sizeof(t[0]), cmp_u64);
	return (double)t[BATCHES / 2] / 1e3 / (double)n;
}

static void row(const char *name, double us, const char *extra)
{
	printf("%-18s %12.3f%s%s\n", name, us, extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
	char path[4096], name[64];
	uint64_t t0;
	double cal;
	int rc;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: tcg-calib [DIR]\n");
		return 2;
	}
	if (!dir || !*dir)
		dir = "/tmp";
	/* first of all: the calibration oct_crc32c makes at its first call */
	t0 = now_ns();
	(void)oct_crc32c_chosen();
	cal = (double)(now_ns() - t0) / 1e3;

	if (posix_memalign((void **)&src, PAGE, PAGE) || posix_memalign((void **)&dst, PAGE, PAGE)) {
		fprintf(stderr, "tcg-calib: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < PAGE; i++)
		src[i] = (unsigned char)rnd();
	snprintf(path, sizeof(path), "%s/tcg-calib.%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "tcg-calib: %s: %s\n", path, strerror(errno));
		return 1;
	}
	unlink(path);
	for (unsigned p = 0; p < FILE_PAGES; p++)
		if (pwrite(fd, src, PAGE, (off_t)p * PAGE) != PAGE) {
			fprintf(stderr, "tcg-calib: filling %s: %s\n", path, strerror(errno));
			return 1;
		}
	efd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0 || (rc = io_uring_queue_init(8, &ring, 0)) < 0) {
		fprintf(stderr, "tcg-calib: eventfd / io_uring_queue_init failed\n");
		return 1;
	}

	printf("# tcg-calib: microseconds per operation (4 KiB unless named), median of %d batches\n",
	       BATCHES);
	for (int i = 0; i < OCT_CRC32C_NIMPL; i++) {
		if (!oct_crc32c_impl_ok(i))
			continue;
		snprintf(name, sizeof(name), "crc32c-%s", oct_crc32c_impl_name(i));
		row(name, measure(op_crc, i), NULL);
	}
	for (int i = 0; i < OCT_CRC32C_NIMPL; i++) {
		if (!oct_crc32c_impl_ok(i))
			continue;
		snprintf(name, sizeof(name), "crc32c-%s-64", oct_crc32c_impl_name(i));
		row(name, measure(op_crc64, i), NULL);
	}
	row("crc32c-chosen", measure(op_chosen, 0), oct_crc32c_impl_name(oct_crc32c_chosen()));
	row("crc32c-calibrate", cal, NULL);
	row("memcpy", measure(op_memcpy, 0), NULL);
#if defined(__x86_64__)
	row("rep-movsb", measure(op_rep, 0), NULL);
	row("rep-movsq", measure(op_rep, 1), NULL);
#endif
	row("pread", measure(op_pread, 0), NULL);
	row("pread-64", measure(op_pread64, 0), NULL);
	row("pwrite", measure(op_pwrite, 0), NULL);
	row("getppid", measure(op_getppid, 0), NULL);
	row("eventfd", measure(op_eventfd, 0), NULL);
	row("uring-nop", measure(op_nop, 0), NULL);
	{
		struct iovec iov[2] = { { dst, PAGE }, { src, PAGE } };

		row("uring-read", measure(op_uring_rw, 0), NULL);
		if (io_uring_register_buffers(&ring, iov, 2) == 0) {
			row("uring-read-fixed", measure(op_uring_rw, 1), NULL);
			row("uring-write-fixed", measure(op_uring_rw, 2), NULL);
		}
	}
	io_uring_queue_exit(&ring);
	close(efd);
	close(fd);
	return failed;
}
