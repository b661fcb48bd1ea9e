/* SPDX-License-Identifier: MIT */
/*
 * find-bytes FILE STRING: the byte offset of the first STRING in FILE, in
 * decimal on stdout (exit 0), or exit 1 when there is none; 2 on usage or
 * I/O error.  For guest tests that damage a sector of an image on the
 * medium (tests/vm/guest/ublk-integrity.sh): the guest's busybox grep has
 * no -b.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1u << 20)

int main(int argc, char **argv)
{
	static char buf[CHUNK + 4096];
	size_t n, keep = 0;
	long long base = 0;
	ssize_t r;
	int fd;

	if (argc != 3 || !(n = strlen(argv[2])) || n > 4096) {
		fprintf(stderr, "usage: find-bytes FILE STRING (1..4096 bytes)\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	while ((r = read(fd, buf + keep, CHUNK)) > 0) {
		size_t have = keep + (size_t)r;
		char *p = memmem(buf, have, argv[2], n);

		if (p) {
			printf("%lld\n", base + (p - buf));
			return 0;
		}
		keep = n - 1 < have ? n - 1 : have;
		memmove(buf, buf + have - keep, keep);
		base += (long long)(have - keep);
	}
	if (r < 0) {
		perror(argv[1]);
		return 2;
	}
	return 1;
}
