/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: alignpart's sfdisk script input (--script), through what
 * `alignpart create --no-act` does with it: libfdisk's script reader,
 * alignpart's requests, the plan (libalign's alignment of every start),
 * and the table built in memory.  The target is a sparse 64 MiB memfd.
 * Byte 0 picks the profile and --label; the rest is the script.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libfdisk/libfdisk.h>

#include "ap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

static int tfd = -1, sfd = -1;
static char tpath[64], spath[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static const char *const profiles[] = { "odd", "1m", "legacy", "4kn",
						"512n", "auto" };
	static const char *const labels[] = { "", "gpt", "dos", "" };
	struct ap_req reqs[AP_MAX_PARTS];
	struct ap_part parts[AP_MAX_PARTS];
	struct fdisk_context *cxt = NULL;
	struct ap_opts o = { .cmd = AP_CMD_CREATE, .no_act = true };
	struct ap_topo tp;
	uint64_t first, last;
	char label[16];
	size_t nreq = 0;
	int rc;

	if (tfd < 0) {
		tfd = memfd_create("octant-fuzz-target", MFD_CLOEXEC);
		sfd = memfd_create("octant-fuzz-script", MFD_CLOEXEC);
		if (tfd < 0 || sfd < 0 || ftruncate(tfd, 64 << 20))
			abort();
		snprintf(tpath, sizeof(tpath), "/proc/self/fd/%d", tfd);
		snprintf(spath, sizeof(spath), "/proc/self/fd/%d", sfd);
	}
	if (!n)
		return 0;
	if (ftruncate(sfd, 0) ||
	    pwrite(sfd, data + 1, n - 1, 0) != (ssize_t)(n - 1))
		abort();
	o.target = tpath;
	o.script = spath;
	o.profile = profiles[data[0] % 6];
	snprintf(label, sizeof(label), "%s", labels[(data[0] / 6) % 4]);
	o.label = *label ? label : NULL;
	if (ap_topo_resolve(&o, &tp) || ap_fdisk_open(&tp, tpath, -1, true, &cxt))
		return 0;
	memset(reqs, 0, sizeof(reqs));
	rc = ap_read_script(cxt, spath, reqs, &nreq, label, sizeof(label));
	if (!rc && !strcmp(label, "dos") && nreq > 4)
		rc = 1;
	if (!rc)
		rc = ap_fdisk_usable(&tp, label, &first, &last);
	if (!rc)
		rc = ap_plan(&tp, &o, reqs, nreq, first, last, parts);
	if (!rc)
		rc = ap_fdisk_new_label(cxt, label, first);
	for (size_t i = 0; !rc && i < nreq; i++)
		rc = ap_fdisk_add(cxt, &parts[i]);
	ap_fdisk_close(cxt);
	ap_free_reqs(reqs, nreq);
	return 0;
}
