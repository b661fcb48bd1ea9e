/* SPDX-License-Identifier: MIT */
/* ftl_open_opts.unshifted: an odd image seen from medium byte 0, as a
 * dm-linear that carries the 512-byte shift needs it.  Logical byte x of
 * the shifted view must be byte x + 512 of the un-shifted one, and the
 * un-shifted view reports alignment_offset 0 and whole pages. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ftl.h"
#include "test.h"

int main(void)
{
	char path[] = "/tmp/octant-unshifted-XXXXXX";
	struct ftl_create_opts co = { .size = 8u << 20, .align = FTL_ALIGN_ODD,
				      .force = true };
	struct ftl_open_opts plain = { 0 }, un = { .unshifted = true };
	struct align_topology t;
	static unsigned char a[8192], b[8192];
	struct ftl *f;
	int fd = mkstemp(path);

	if (fd < 0)
		T_SKIP("mkstemp: %s", strerror(errno));
	close(fd);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)(i * 7 + 3);
	T_CHECK(ftl_create(path, &co) == 0, "create odd image");
	T_CHECK(ftl_open(path, &plain, &f) == 0, "open shifted");
	ftl_topology(f, &t);
	T_EQ_U64(t.alignment_offset, 3584, "odd view offset");
	T_EQ_U64(ftl_size(f), co.size, "odd view size");
	T_CHECK(ftl_write(f, a, 63 * 512, 4096, FTL_FUA) == 0, "write LBA 63");
	T_CHECK(ftl_close(f) == 0, "close");

	T_CHECK(ftl_open(path, &un, &f) == 0, "open un-shifted");
	ftl_topology(f, &t);
	T_EQ_U64(t.alignment_offset, 0, "un-shifted offset");
	T_EQ_U64(ftl_size(f) % 4096, 0, "whole pages");
	T_CHECK(ftl_size(f) >= co.size + 512, "covers the shifted disk");
	T_CHECK(ftl_read(f, b, 64 * 512, 4096) == 0, "read medium byte 32768");
	T_CHECK(!memcmp(a, b, 4096), "LBA 63 of the odd view is LBA 64 here");
	T_CHECK(ftl_write(f, a + 4096, 8 * 512, 4096, FTL_FUA) == 0, "write LBA 8");
	T_CHECK(ftl_close(f) == 0, "close");

	T_CHECK(ftl_open(path, &plain, &f) == 0, "reopen shifted");
	T_EQ_U64(ftl_size(f), co.size, "size not persisted by the un-shifted open");
	T_CHECK(ftl_read(f, b, 7 * 512, 4096) == 0, "read LBA 7");
	T_CHECK(!memcmp(a + 4096, b, 4096), "LBA 8 un-shifted is LBA 7 shifted");
	T_CHECK(ftl_close(f) == 0, "close");
	unlink(path);
	return t_result();
}
