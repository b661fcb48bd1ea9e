/* SPDX-License-Identifier: MIT */
/*
 * fd-hold PID PATH SECS: take a copy of the descriptor process PID has open
 * on PATH (pidfd_getfd: the same open file, its flock included) and keep it
 * for SECS seconds (or until killed), after printing "held FD".  For the
 * guest test tests/vm/guest/ublk-upgrade-fail.sh: a lock on the image that
 * outlives the server that took it, so the server that takes its device
 * over finds the image busy after the handover, every time.
 * Errors: one line on stderr, exit 1 (2 usage).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char dir[64], link[64 + NAME_MAX + 2];
	struct stat want, st;
	struct dirent *de;
	int pid, pfd, fd = -1;
	DIR *d;

	if (argc != 4 || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: fd-hold PID PATH SECS\n");
		return 2;
	}
	if (stat(argv[2], &want) < 0) {
		fprintf(stderr, "fd-hold: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	if (!(d = opendir(dir))) {
		fprintf(stderr, "fd-hold: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	while (fd < 0 && (de = readdir(d))) {
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		if (de->d_name[0] != '.' && stat(link, &st) == 0 &&
		    st.st_dev == want.st_dev && st.st_ino == want.st_ino)
			fd = atoi(de->d_name);
	}
	closedir(d);
	if (fd < 0) {
		fprintf(stderr, "fd-hold: pid %d has no descriptor on %s\n", pid,
			argv[2]);
		return 1;
	}
	pfd = pidfd_open(pid, 0);
	if (pfd < 0 || (fd = pidfd_getfd(pfd, fd, 0)) < 0) {
		fprintf(stderr, "fd-hold: pidfd_getfd of pid %d: %s\n", pid,
			strerror(errno));
		return 1;
	}
	printf("held %d\n", fd);
	fflush(stdout);
	sleep((unsigned)atoi(argv[3]));
	return 0;
}
