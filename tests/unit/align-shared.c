/* SPDX-License-Identifier: MIT */
/*
 * libalign: the shared library exports align_* only (libalign.map) and
 * works when loaded.  Looks for libalign.so next to this test's build
 * ($BUILD/tests/unit/../../) or in $BUILD; SKIPs if neither was built.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "align.h"
#include "test.h"

static int find_so(char *path, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *b = getenv("BUILD");
	char *s;

	if (n > 0) {
		exe[n] = 0;
		for (int i = 0; i < 3 && (s = strrchr(exe, '/')); i++)
			*s = 0;
		snprintf(path, len, "%s/libalign.so", exe);
		if (access(path, R_OK) == 0)
			return 0;
	}
	if (b) {
		snprintf(path, len, "%s/libalign.so", b);
		if (access(path, R_OK) == 0)
			return 0;
	}
	return -1;
}

int main(void)
{
	static const char *const hidden[] = { "oct_crc32c", "alignp_shift",
		"alignp_image_read", "alignp_debug_mask", "alignp_dbg" };
	char path[PATH_MAX + 32], cmd[PATH_MAX + 128], line[256];
	uint32_t (*part)(const struct align_topology *, uint64_t);
	const char *(*ver)(void);
	void *h;
	FILE *f;
	int nsym = 0;

	if (find_so(path, sizeof(path)) < 0)
		T_SKIP("libalign.so not built (make all)");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return T_EXIT_FAIL;
	}
	*(void **)&part = dlsym(h, "align_partition_offset");
	*(void **)&ver = dlsym(h, "align_version");
	T_CHECK(part && ver, "public symbols");
	if (part && ver) {
		struct align_topology t = { .logical = 512, .physical = 4096,
			.alignment_offset = 3584 };
		T_EQ_U64(part(&t, 2048), 3584, "via the .so");
		T_CHECK(!strcmp(ver(), OCTANT_VERSION), "version");
	}
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		T_CHECK(dlsym(h, hidden[i]) == NULL, "%s exported", hidden[i]);
	dlclose(h);

	/* every defined dynamic symbol is align_* (or the version node) */
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *name = strrchr(line, ' ');
		name = name ? name + 1 : line;
		nsym++;
		T_CHECK(!strncmp(name, "align_", 6) || !strncmp(name, "ALIGN_", 6),
			"exported: %s", name);
	}
	if (f && pclose(f) == 0)
		T_CHECK(nsym > 20, "nm saw %d symbols", nsym);
	else
		fprintf(stderr, "nm not available: checked with dlsym only\n");
	return t_result();
}
