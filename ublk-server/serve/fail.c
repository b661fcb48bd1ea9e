/* SPDX-License-Identifier: MIT */
/*
 * serve_err_io: an errno as serve_main's contract reads it (serve.h,
 * struct serve_fail).  Its own file: serve.c and upgrade.c both fold
 * errors with it, and upgrade.c must not call back into serve.c
 * (tests/cli/file-circles.bats).
 */
#include <errno.h>
#include <stdbool.h>

#include "serve.h"

int serve_err_io(int err, bool busy)
{
	switch (err) {
	case -EBUSY:
		return busy ? err : -EIO;
	case -EEXIST: case -EALREADY: case -EINVAL: case -EOPNOTSUPP:
	case -EBADMSG: case -EUCLEAN: case -EPROTONOSUPPORT:
		return -EIO;
	default:
		return err < 0 ? err : -EIO;
	}
}
