/* SPDX-License-Identifier: MIT */
/*
 * Corpus replay: a main() for a fuzz harness built without libFuzzer (gcc,
 * normal and SANITIZE builds), so `make check` runs every saved input as a
 * regression test.  usage: fuzz-replay-NAME [FILE|DIR]...; without
 * arguments it replays tests/fuzz/corpus/NAME/ (under $OCTANT_TOP when
 * set).  Exit 0 when every input ran, 1 when the corpus is missing or
 * empty; a crash or a sanitizer report fails the test by itself.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto bad;
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		goto bad;
	fclose(f);
	fprintf(stderr, "replay: %s (%ld bytes)\n", path, n);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
bad:
	fprintf(stderr, "replay: %s: cannot read it\n", path);
	free(buf);
	fclose(f);
	return -1;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay @path (a file, or every file of a directory in name order);
 * returns the inputs run, or -1. */
static long run_path(const char *path)
{
	struct stat st;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	long done = 0;
	DIR *d;

	if (stat(path, &st)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path) ? -1 : 1;
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				abort();
		}
		if (asprintf(&names[n++], "%s/%s", path, e->d_name) < 0)
			abort();
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp);
	for (size_t i = 0; i < n; i++) {
		if (run_file(names[i]))
			done = -1;
		else if (done >= 0)
			done++;
		free(names[i]);
	}
	free(names);
	return done;
}

int main(int argc, char **argv)
{
	const char *me = strrchr(argv[0], '/'), *top = getenv("OCTANT_TOP");
	char dflt[4096];
	long total = 0, r;

	me = me ? me + 1 : argv[0];
	if (!strncmp(me, "fuzz-replay-", 12))
		me += 12;
	if (argc < 2) {
		snprintf(dflt, sizeof(dflt), "%s%stests/fuzz/corpus/%s",
			 top ? top : "", top ? "/" : "", me);
		r = run_path(dflt);
		total = r;
	} else {
		for (int i = 1; i < argc; i++) {
			r = run_path(argv[i]);
			if (r < 0) {
				total = -1;
				break;
			}
			total += r;
		}
	}
	if (total <= 0) {
		fprintf(stderr, "replay %s: FAIL: no corpus inputs ran\n", me);
		return 1;
	}
	printf("replay %s: %ld inputs, no crash\n", me, total);
	return 0;
}
