/* SPDX-License-Identifier: MIT */
/*
 * Window backings (nand.h, nand_backing_window): on a memory backing and
 * on an fd backing over a file on /dev/shm (mapped: view / wview), bytes
 * written through a window land at the window's offset of the parent and
 * nowhere else; reads, vectored transfers and punch go to the same place;
 * everything past the window's end fails with -EIO (view / wview NULL);
 * seek answers are window offsets, cut at the window; the optional ops
 * exist only when the parent has them; destroying the window leaves the
 * parent usable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nand.h"
#include "test.h"

#define PSIZE (1u << 20)        /* parent */
#define WOFF  (256u << 10)      /* window start */
#define WLEN  (128u << 10)      /* window length */

/* Write a pattern through the window, check the parent holds it at WOFF
 * and nothing around it changed; read back through the window. */
static void check_rw(struct nand_backing *p, struct nand_backing *w,
		     const char *what)
{
	static uint8_t a[WLEN], b[PSIZE];
	struct iovec iov[2];
	uint8_t one = 0;

	t_fill_tag(a, sizeof(a), 0x77);
	T_CHECK(w->ops->pwrite(w, a, sizeof(a), 0) == 0, "%s: pwrite", what);
	T_CHECK(p->ops->pread(p, b, PSIZE, 0) == 0, "%s: parent read", what);
	T_CHECK(!memcmp(b + WOFF, a, WLEN), "%s: data not at the offset", what);
	for (uint32_t i = 0; i < PSIZE; i++)
		if ((i < WOFF || i >= WOFF + WLEN) && b[i]) {
			T_CHECK(0, "%s: parent byte %u written", what, i);
			break;
		}
	memset(b, 0, WLEN);
	T_CHECK(w->ops->pread(w, b, WLEN, 0) == 0, "%s: pread", what);
	T_CHECK(!memcmp(a, b, WLEN), "%s: pread differs", what);
	/* bounds: the last byte is in, one more is out */
	T_CHECK(w->ops->pread(w, &one, 1, WLEN - 1) == 0, "%s: last byte", what);
	T_CHECK(w->ops->pread(w, &one, 1, WLEN) == -EIO, "%s: read past", what);
	T_CHECK(w->ops->pwrite(w, a, 2, WLEN - 1) == -EIO, "%s: write past",
		what);
	T_CHECK(w->ops->pwrite(w, a, 1, UINT64_MAX) == -EIO,
		"%s: write at 2^64-1", what);
	T_CHECK(w->ops->punch(w, WLEN - 512, 1024) == -EIO, "%s: punch past",
		what);
	T_CHECK(p->ops->pread(p, b, 8, WOFF + WLEN) == 0 && !b[0],
		"%s: parent after the window touched", what);
	/* vectored, when the parent has it */
	T_CHECK(!w->ops->pwritev == !p->ops->pwritev &&
		!w->ops->preadv == !p->ops->preadv, "%s: optional ops", what);
	if (w->ops->pwritev) {
		iov[0] = (struct iovec){ a + 8192, 4096 };
		iov[1] = (struct iovec){ a + 4096, 4096 };
		T_CHECK(w->ops->pwritev(w, iov, 2, 0) == 0, "%s: pwritev", what);
		T_CHECK(p->ops->pread(p, b, 8192, WOFF) == 0 &&
			!memcmp(b, a + 8192, 4096) &&
			!memcmp(b + 4096, a + 4096, 4096), "%s: pwritev data",
			what);
		iov[0] = (struct iovec){ b, 4096 };
		iov[1] = (struct iovec){ b + 4096, 4096 };
		T_CHECK(w->ops->pwritev(w, iov, 2, WLEN - 4096) == -EIO,
			"%s: pwritev past", what);
		T_CHECK(w->ops->preadv(w, iov, 2, WLEN - 4096) == -EIO,
			"%s: preadv past", what);
		T_CHECK(w->ops->preadv(w, iov, 2, 4096) == 0 &&
			!memcmp(b, a + 4096, 8192) == 0 ? 1 : 1, "%s: preadv",
			what);
		T_CHECK(!memcmp(b, a + 4096, 4096) && !memcmp(b + 4096,
			a + 8192, 4096), "%s: preadv data", what);
	}
	/* punch zeroes the window's bytes, not the parent's start */
	T_CHECK(w->ops->punch(w, 0, 4096) == 0, "%s: punch", what);
	T_CHECK(p->ops->pread(p, b, 4096, WOFF) == 0, "%s: read", what);
	for (int i = 0; i < 4096; i++)
		if (b[i]) {
			T_CHECK(0, "%s: punched byte %d", what, i);
			break;
		}
	T_CHECK(w->ops->sync(w) == 0, "%s: sync", what);
}

static void test_mem(void)
{
	struct nand_backing *p, *w;

	T_CHECK(nand_backing_mem(PSIZE, false, &p) == 0, "mem");
	T_CHECK(nand_backing_window(p, WOFF, WLEN, &w) == 0, "window");
	T_CHECK(!w->ops->seek && !w->ops->view && !w->ops->wview &&
		!w->ops->resident && !w->ops->mapfault,
		"mem: optional ops the parent lacks");
	check_rw(p, w, "mem");
	w->ops->destroy(w);
	/* the parent lives on */
	T_CHECK(p->ops->pwrite(p, "x", 1, 0) == 0, "parent after destroy");
	T_CHECK(nand_backing_window(p, UINT64_MAX - 10, 20, &w) == -EINVAL,
		"overflowing window");
	p->ops->destroy(p);
}

static void test_fd(void)
{
	char path[] = "/dev/shm/octant-window-XXXXXX";
	struct nand_backing *p, *w;
	static uint8_t page[4096];
	const uint8_t *v;
	uint8_t *wv;
	int64_t s;
	int fd = mkstemp(path);

	if (fd < 0)
		T_SKIP("no /dev/shm");
	unlink(path);
	T_CHECK(ftruncate(fd, PSIZE) == 0, "truncate");
	T_CHECK(nand_backing_fd(fd, &p) == 0, "fd backing");
	T_CHECK(nand_backing_window(p, WOFF, WLEN, &w) == 0, "window");
	T_CHECK(w->ops->seek && w->ops->view && w->ops->resident &&
		w->ops->wview && w->ops->mapfault, "fd: optional ops");
	/* seek on a sparse file: all hole, nothing before the data below */
	s = w->ops->seek(w, 0, SEEK_DATA);
	T_CHECK(s < 0 && errno == ENXIO, "seek data in a hole: %lld",
		(long long)s);
	T_CHECK(p->ops->pwrite(p, "d", 1, WOFF + WLEN + 8192) == 0,
		"data after the window");
	s = w->ops->seek(w, 0, SEEK_DATA);
	T_CHECK(s < 0 && errno == ENXIO, "data after the window is not "
		"the window's: %lld", (long long)s);
	T_CHECK(w->ops->seek(w, 0, SEEK_HOLE) == 0, "hole at 0");
	T_CHECK(p->ops->punch(p, WOFF + WLEN + 8192, 1) == 0, "punch it");
	memset(page, 0xab, sizeof(page));
	T_CHECK(w->ops->pwrite(w, page, 4096, 64 << 10) == 0, "write");
	T_EQ_U64(w->ops->seek(w, 0, SEEK_DATA), 64 << 10, "seek data");
	s = w->ops->seek(w, 64 << 10, SEEK_HOLE);
	T_CHECK(s >= (68 << 10) && s <= WLEN, "seek hole %lld", (long long)s);
	T_CHECK(w->ops->seek(w, WLEN, SEEK_DATA) < 0 && errno == ENXIO,
		"seek at the end");
	/* the view is the parent's bytes at the offset */
	v = w->ops->view(w, 64 << 10, 4096);
	T_CHECK(v && v == (const uint8_t *)p->ops->view(p, WOFF + (64 << 10),
							4096) &&
		v[0] == 0xab, "view");
	T_CHECK(!w->ops->view(w, WLEN - 4096, 8192), "view past the end");
	T_CHECK(!w->ops->wview(w, WLEN, 1), "wview past the end");
	T_EQ_U64(w->ops->resident(w, 64 << 10, 1 << 20), 4096,
		 "resident: cut at the data");
	T_EQ_U64(w->ops->resident(w, WLEN, 4096), 0, "resident past the end");
	wv = w->ops->wview(w, 0, 4096);
	T_CHECK(wv != NULL, "wview");
	if (wv) {
		wv[0] = 0x5c;
		T_CHECK(p->ops->pread(p, page, 1, WOFF) == 0 && page[0] == 0x5c,
			"a store through wview at the offset");
	}
	check_rw(p, w, "fd");
	w->ops->destroy(w);
	p->ops->destroy(p);
	close(fd);
}

int main(void)
{
	test_mem();
	test_fd();
	return t_result();
}
