/* SPDX-License-Identifier: MIT */
/* Minimal helpers for octant's standalone C tests (exit 0/1/77). */
#ifndef OCTANT_TEST_H
#define OCTANT_TEST_H
#include <inttypes.h>
#include <stdint.h>
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
#endif
