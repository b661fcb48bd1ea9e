/* SPDX-License-Identifier: MIT */
/*
 * ublk-probe — what the ublk frontend's control path (ublk-server/frontend/
 * ublk-ctrl.c) decides on the running kernel, for the guest test
 * tests/vm/guest/ublk-opcodes.sh:
 *   ublk-probe features     "encoding ioctl|legacy", "get_features yes|no",
 *                           "features 0xHEX" (GET_FEATURES' mask, or the
 *                           6.1 set the server assumes without it),
 *                           "asks 0xHEX" (the flags the server's ADD_DEV
 *                           asks for here: ublk_ctrl_add_flags), "uapi V"
 *                           (the kernel whose ublk_cmd.h it was built with)
 *   ublk-probe info ID      "flags 0xHEX" of device ID (GET_DEV_INFO): the
 *                           flags the driver granted the server's ADD_DEV
 *                           (those it knows of what was asked, plus those
 *                           it sets itself), "state N", "pid N" (the
 *                           server's, as START_DEV gave it)
 * Errors: "ublk-probe: MESSAGE: ENAME" on stderr, exit 1 (2 usage).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ublk-server/frontend/ublk-int.h"

static int fail(const char *what, int err)
{
	const char *n = strerrorname_np(-err);

	fprintf(stderr, "ublk-probe: %s: %s\n", what, n ? n : "?");
	return 1;
}

int main(int argc, char **argv)
{
	struct ublk_ctrl c;
	struct ublksrv_ctrl_dev_info info;
	char *end;
	unsigned long id;
	int ret;

	if (argc < 2 || (!strcmp(argv[1], "info") && argc != 3) ||
	    (strcmp(argv[1], "info") && strcmp(argv[1], "features"))) {
		fprintf(stderr, "usage: ublk-probe features | info ID\n");
		return 2;
	}
	ret = ublk_ctrl_open(&c);
	if (ret < 0)
		return fail("open /dev/ublk-control", ret);
	if (!strcmp(argv[1], "features")) {
		printf("encoding %s\nget_features %s\nfeatures 0x%" PRIx64 "\n"
		       "asks 0x%" PRIx64 "\nuapi %s\n",
		       c.ioctl_encode ? "ioctl" : "legacy",
		       c.have_get_features ? "yes" : "no", c.features,
		       ublk_ctrl_add_flags(&c), OCTANT_UBLK_UAPI);
		ublk_ctrl_close(&c);
		return 0;
	}
	errno = 0;
	id = strtoul(argv[2], &end, 10);
	if (errno || *end || end == argv[2] || id > UINT32_MAX) {
		ublk_ctrl_close(&c);
		fprintf(stderr, "ublk-probe: bad device id '%s'\n", argv[2]);
		return 2;
	}
	ret = ublk_ctrl_get_info(&c, (uint32_t)id, &info);
	ublk_ctrl_close(&c);
	if (ret < 0)
		return fail("GET_DEV_INFO", ret);
	printf("flags 0x%" PRIx64 "\nstate %u\npid %d\n", (uint64_t)info.flags,
	       (unsigned)info.state, (int)info.ublksrv_pid);
	return 0;
}
