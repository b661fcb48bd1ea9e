/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
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
