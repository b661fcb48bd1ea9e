/* SPDX-License-Identifier: MIT */
/*
 * flock-delay.so: an LD_PRELOAD shim for tests/cli/ublk-flash-engine.bats
 * that sleeps OCTANT_TEST_FLOCK_DELAY_MS before every flock() of the
 * process, so a create's lock comes after another create wrote the image
 * (the race create_new_locked closes, cmd_create.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>

int flock(int fd, int op)
{
	static int (*real)(int, int);
	const char *e = getenv("OCTANT_TEST_FLOCK_DELAY_MS");

	if (!real)
		real = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
	if (e) {
		long ms = atol(e);
		struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

		nanosleep(&ts, NULL);
	}
	return real ? real(fd, op) : -1;
}
