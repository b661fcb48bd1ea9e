/* SPDX-License-Identifier: MIT */
/*
 * die-at-write.so: an LD_PRELOAD shim for tests/cli/ublk-flash-resize.bats
 * that kills its process (SIGKILL, as kill -9) right before the first
 * pwrite/pwritev of exactly OCTANT_TEST_DIE_AT_WRITE="OFF+LEN" bytes, so a
 * command stops at a chosen write, at no chosen time (with "0+512": a
 * resize between its two superblock writes, ftl_grow.c steps 4 and 5).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

static void die_if(off_t off, size_t len)
{
	const char *e = getenv("OCTANT_TEST_DIE_AT_WRITE");
	unsigned long long o, l;

	if (e && sscanf(e, "%llu+%llu", &o, &l) == 2 &&
	    (unsigned long long)off == o && len == l)
		raise(SIGKILL);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	static ssize_t (*real)(int, const void *, size_t, off_t);

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, off_t))
			dlsym(RTLD_NEXT, "pwrite");
	die_if(off, len);
	return real ? real(fd, buf, len, off) : -1;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	static ssize_t (*real)(int, const struct iovec *, int, off_t);
	size_t len = 0;

	if (!real)
		real = (ssize_t (*)(int, const struct iovec *, int, off_t))
			dlsym(RTLD_NEXT, "pwritev");
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	die_if(off, len);
	return real ? real(fd, iov, cnt, off) : -1;
}
