/* SPDX-License-Identifier: MIT */
/* libalign: LIBALIGN_DEBUG ("all" or a mask) prints "libalign: " lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "align.h"
#include "test.h"

/* Run a few calls in a child with LIBALIGN_DEBUG=@mask (NULL = unset),
 * returning its stderr in @out. */
static void run(const char *mask, char *out, size_t len)
{
	int p[2], st;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	if (pipe(p) < 0 || (pid = fork()) < 0) {
		perror("pipe/fork");
		exit(T_EXIT_FAIL);
	}
	if (pid == 0) {
		struct align_topology t;
		struct align_span s;

		dup2(p[1], 2);
		close(p[0]);
		if (mask)
			setenv("LIBALIGN_DEBUG", mask, 1);
		else
			unsetenv("LIBALIGN_DEBUG");
		align_topology_parse("512/4096/3584", &t);      /* PROBE */
		align_profile_get("nosuch");                    /* PROFILE */
		align_io_span(&t, 0, 4096, &s);                 /* CALC */
		_exit(0);
	}
	close(p[1]);
	while (n + 1 < len && (r = read(p[0], out + n, len - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(p[0]);
	waitpid(pid, &st, 0);
}

int main(void)
{
	static const struct { const char *mask; int probe, profile, calc; } c[] = {
		{ NULL, 0, 0, 0 }, { "0", 0, 0, 0 }, { "all", 1, 1, 1 },
		{ "1", 1, 0, 0 }, { "2", 0, 1, 0 }, { "4", 0, 0, 1 },
		{ "0x5", 1, 0, 1 }, { "0xffff", 1, 1, 1 },
	};
	char out[4096];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *m = c[i].mask ? c[i].mask : "(unset)";
		run(c[i].mask, out, sizeof(out));
		T_CHECK(!!strstr(out, "libalign: override 512/4096/3584") == c[i].probe,
			"%s: probe line in '%s'", m, out);
		T_CHECK(!!strstr(out, "libalign: unknown profile 'nosuch'") ==
			c[i].profile, "%s: profile line in '%s'", m, out);
		T_CHECK(!!strstr(out, "libalign: span 0+4096") == c[i].calc,
			"%s: calc line in '%s'", m, out);
		/* every line carries the prefix */
		for (char *l = out; *l; l = strchr(l, '\n') + 1) {
			T_CHECK(!strncmp(l, "libalign: ", 10), "%s: prefix: '%s'", m, l);
			if (!strchr(l, '\n'))
				break;
		}
	}
	return t_result();
}
