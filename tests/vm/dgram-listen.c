/* SPDX-License-Identifier: MIT */
/*
 * dgram-listen SOCK OUT: bind a unix datagram socket at SOCK (as systemd's
 * $NOTIFY_SOCKET) and append every datagram received to OUT as one line,
 * until killed.  The guest has no python3 (tests/helpers.bash's
 * dgram_listen on the host); for tests/vm/guest/ublk-upgrade.sh (MAINPID=).
 * Errors: one line on stderr, exit 1 (2 usage).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char buf[4096];
	FILE *out;
	ssize_t n;
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(a.sun_path)) {
		fprintf(stderr, "usage: dgram-listen SOCK OUT\n");
		return 2;
	}
	memcpy(a.sun_path, argv[1], strlen(argv[1]));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "dgram-listen: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (!(out = fopen(argv[2], "a"))) {
		fprintf(stderr, "dgram-listen: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		fprintf(out, "%.*s\n", (int)n, buf);
		fflush(out);
	}
	return 1;
}
