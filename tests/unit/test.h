/* SPDX-License-Identifier: MIT */
/* Minimal helpers for octant's standalone C tests (exit 0/1/77). */
#ifndef OCTANT_TEST_H
#define OCTANT_TEST_H
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

static int t_failures;

#define T_CHECK(cond, ...) do {                                          \
	if (!(cond)) {                                                   \
		fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);                            \
		fputc('\n', stderr);                                     \
		t_failures++;                                            \
	}                                                                \
} while (0)

#define T_EQ_U64(a, b, ...) do {                                         \
	uint64_t t_a_ = (uint64_t)(a), t_b_ = (uint64_t)(b);             \
	if (t_a_ != t_b_) {                                              \
		fprintf(stderr, "%s:%d: FAIL: %s == %s (%" PRIu64 " != %" PRIu64 "): ", \
			__FILE__, __LINE__, #a, #b, t_a_, t_b_);         \
		fprintf(stderr, __VA_ARGS__);                            \
		fputc('\n', stderr);                                     \
		t_failures++;                                            \
	}                                                                \
} while (0)

#define T_SKIP(...) do {                                                 \
	fprintf(stderr, "SKIP: " __VA_ARGS__);                           \
	fputc('\n', stderr);                                             \
	exit(T_EXIT_SKIP);                                               \
} while (0)

static inline int t_result(void)
{
	return t_failures ? T_EXIT_FAIL : T_EXIT_PASS;
}

/* A fresh seed (from /dev/urandom; time and pid if that fails), never 0. */
static inline unsigned t_seed_fresh(void)
{
	unsigned v = 0;
	FILE *u = fopen("/dev/urandom", "rb");

	if (!u || fread(&v, sizeof(v), 1, u) != 1)
		v = (unsigned)time(NULL) ^ (unsigned)getpid() << 16;
	if (u)
		fclose(u);
	return v ? v : 1;
}

/* Seed for randomized tests: OCTANT_SEED, else a fresh one every run.
 * Printed as "seed N" (the runner shows it) so a failure replays with
 * OCTANT_SEED=N. */
static inline unsigned t_seed(void)
{
	const char *s = getenv("OCTANT_SEED");
	unsigned v = s && *s ? (unsigned)strtoul(s, NULL, 0) : t_seed_fresh();

	fprintf(stderr, "seed %u (replay: OCTANT_SEED=%u)\n", v, v);
	return v;
}

/* xorshift64 step for randomized tests; *state must be non-zero
 * (seed it with t_seed(...) | 1). */
static inline uint64_t t_xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* Fill @len bytes (a multiple of 8) with a pattern of @tag: each 8-byte
 * word is @tag ^ (its offset * the golden ratio), so a page of another
 * tag or another place never matches. */
static inline void t_fill_tag(void *b, size_t len, uint64_t tag)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = tag ^ (i * 0x9e3779b97f4a7c15ull);

		memcpy((uint8_t *)b + i, &v, 8);
	}
}

/* Write @n bytes of @p as the whole of the file @path (created or
 * truncated): an image a test made in memory, for the tools that take a
 * path (fsck, open). */
static inline void t_store(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	T_CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n, "store %s", path);
	if (fd >= 0)
		close(fd);
}

/* Unpack the gzip'd file @rel (a path in the source tree: OCTANT_TOP, else
 * the current folder) into @out; SKIP (exit 77) when it or gzip is
 * missing. */
static inline void t_unpack(const char *rel, const char *out)
{
	const char *top = getenv("OCTANT_TOP");
	char src[512], cmd[1200];

	snprintf(src, sizeof(src), "%s/%s", top ? top : ".", rel);
	if (access(src, R_OK))
		T_SKIP("%s: not found (run from the source tree or set "
		       "OCTANT_TOP)", src);
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s' > '%s'", src, out);
	if (system(cmd))
		T_SKIP("gzip -dc %s failed (gzip missing?)", src);
}

/* OCTANT_LONG=1 selects the long mode of a test. */
static inline int t_long(void)
{
	const char *s = getenv("OCTANT_LONG");
	return s && *s && *s != '0';
}

/* Seconds on the monotonic clock. */
static inline double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The long mode's time budget, so that the long tier ends on a loaded
 * machine (the sanitizer build, 2 cores shared by many): OCTANT_LONG_BUDGET
 * seconds (default 300; 0: none), counted from the test's first call here.
 * A long loop always does its short mode's count @floor, then goes on
 * towards its long count only while the budget lasts:
 *	for (i = 0; i < n && t_long_more(i, SHORT); i++)
 * and says what it covered with t_long_covered().  A loop the budget
 * stopped still did at least what the short mode does.
 */
static double t_budget_t0;
static int t_budget_hit;

static inline double t_long_elapsed(void)
{
	if (!t_budget_t0)
		t_budget_t0 = t_now();
	return t_now() - t_budget_t0;
}

/* t_long_more() for a loop that is the @part-th (from 1) of @parts
 * loops in a row sharing the budget: it stops at @part/@parts of it. */
static inline int t_long_upto(long done, long floor, int part, int parts)
{
	const char *s = getenv("OCTANT_LONG_BUDGET");
	double budget = s && *s ? strtod(s, NULL) : 300;
	double el = t_long_elapsed();

	if (done < floor)
		return 1;
	if (!t_long() || (budget > 0 && el >= budget * part / parts)) {
		t_budget_hit |= t_long();
		return 0;
	}
	return 1;
}

static inline int t_long_more(long done, long floor)
{
	return t_long_upto(done, floor, 1, 1);
}

/* "long mode: covered D of W WHAT in S s", and whether the budget cut it
 * short (the runner shows the line); nothing in the short mode. */
static inline void t_long_covered(const char *what, long done, long want)
{
	if (!t_long())
		return;
	fprintf(stderr, "long mode: covered %ld of %ld %s in %.0f s%s\n",
		done, want, what, t_long_elapsed(),
		t_budget_hit ? " (stopped by OCTANT_LONG_BUDGET)" : "");
}
#endif
