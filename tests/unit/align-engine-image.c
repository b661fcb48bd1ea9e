/* SPDX-License-Identifier: MIT */
/*
 * libalign reads the superblocks the engine really writes: runs
 * `$BUILD/ublk-flash create` (SKIP if it is not built) for both alignment
 * modes and checks the topology, the copy-1 fallback and corruption.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "align.h"
#include "oct-format.h"
#include "test.h"

static char dir[] = "/tmp/align-engine-XXXXXX";
static char tool[PATH_MAX];

static int find_tool(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *b = getenv("BUILD");
	char *s;

	if (n > 0) {   /* $BUILD/tests/unit/<me> -> $BUILD/ublk-flash */
		exe[n] = 0;
		for (int i = 0; i < 3 && (s = strrchr(exe, '/')); i++)
			*s = 0;
		snprintf(tool, sizeof(tool), "%.*s/ublk-flash", PATH_MAX - 16, exe);
		if (access(tool, X_OK) == 0)
			return 0;
	}
	if (b) {
		snprintf(tool, sizeof(tool), "%.*s/ublk-flash", PATH_MAX - 16, b);
		if (access(tool, X_OK) == 0)
			return 0;
	}
	return -1;
}

static int create(const char *img, const char *align, const char *page,
		  const char *ppb)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		execl(tool, tool, "create", img, "--size", "64M", "--align", align,
		      "--page-size", page, "--pages-per-block", ppb, "--force",
		      (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void flip(const char *img, off_t at)
{
	unsigned char c;
	int fd = open(img, O_RDWR);

	if (fd < 0 || pread(fd, &c, 1, at) != 1)
		abort();
	c ^= 0x40;
	if (pwrite(fd, &c, 1, at) != 1)
		abort();
	close(fd);
}

int main(void)
{
	static const struct { const char *align, *page, *ppb; uint32_t ps, off, eb; } c[] = {
		{ "odd", "4096", "64", 4096, 3584, 262144 },
		{ "1m", "4096", "64", 4096, 0, 262144 },
		{ "odd", "16384", "128", 16384, 15872, 2097152 },
		{ "1m", "8192", "256", 8192, 0, 2097152 },
	};
	char img[300];
	struct align_topology t;
	int rc;

	if (find_tool() < 0)
		T_SKIP("ublk-flash not built (make all)");
	if (!mkdtemp(dir))
		T_SKIP("cannot create a temporary directory");
	snprintf(img, sizeof(img), "%s/flash.img", dir);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		rc = create(img, c[i].align, c[i].page, c[i].ppb);
		T_CHECK(rc == 0, "ublk-flash create %s %s %s: exit %d", c[i].align,
			c[i].page, c[i].ppb, rc);
		if (rc)
			continue;
		rc = align_topology_probe(img, &t);
		T_CHECK(rc == 0 && t.source == ALIGN_SRC_IMAGE, "probe %zu: %d", i, rc);
		T_CHECK(t.logical == 512 && t.physical == c[i].ps &&
			t.alignment_offset == c[i].off && t.io_min == c[i].ps &&
			t.erase_block == c[i].eb && t.io_opt == c[i].eb &&
			t.size == 64ull << 20, "case %zu: %u/%u/%u eb %u size %" PRIu64,
			i, t.logical, t.physical, t.alignment_offset, t.erase_block,
			t.size);
		T_CHECK(align_topology_validate(&t) == 0, "case %zu valid", i);
	}
	/* the odd 4K image again: copy 0 damaged -> copy 1; both -> error */
	if (create(img, "odd", "4096", "64") == 0) {
		flip(img, 40);                         /* inside copy 0 */
		T_CHECK(align_topology_from_image(img, &t) == 0 &&
			t.alignment_offset == 3584, "fallback to copy 1");
		flip(img, OCT_SB_COPY_OFFSET + 40);    /* inside copy 1 */
		rc = align_topology_probe(img, &t);
		T_CHECK(rc == -EBADMSG, "both copies damaged: %d", rc);
	}
	unlink(img);
	rmdir(dir);
	return t_result();
}
