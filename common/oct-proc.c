/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oct-proc.h"

bool oct_pid_holds_chr(long pid, dev_t rdev)
{
	char fdir[64], link[400];
	struct dirent *de;
	struct stat st;
	bool held = false;
	DIR *d;

	snprintf(fdir, sizeof(fdir), "/proc/%ld/fd", pid);
	d = opendir(fdir);
	if (!d)
		return false;
	while (!held && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", fdir, de->d_name);
		held = stat(link, &st) == 0 && S_ISCHR(st.st_mode) &&
		       st.st_rdev == rdev;
	}
	closedir(d);
	return held;
}

bool oct_any_holds_chr(dev_t rdev)
{
	struct dirent *de;
	bool held = false;
	DIR *d = opendir("/proc");

	if (!d)
		return false;
	while (!held && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!*end && pid > 0)
			held = oct_pid_holds_chr(pid, rdev);
	}
	closedir(d);
	return held;
}

char *oct_pid_comm(long pid, char *buf, size_t len)
{
	char p[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(p, sizeof(p), "/proc/%ld/comm", pid);
	f = fopen(p, "re");
	if (!f)
		return buf;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}
