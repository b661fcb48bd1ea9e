/* SPDX-License-Identifier: MIT */
/*
 * Who holds what, read from /proc: the one copy both libalign (is this
 * ublk device really its registered server's?) and the server's registry
 * (is this /dev/ublkbN still that entry's?) use.
 */
#ifndef OCTANT_OCT_PROC_H
#define OCTANT_OCT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Does process @pid hold the character device @rdev open?  false when it
 * does not, is gone, or its fds cannot be read. */
bool oct_pid_holds_chr(long pid, dev_t rdev);

/* Does any process hold the character device @rdev open? */
bool oct_any_holds_chr(dev_t rdev);

/* The command name of process @pid (/proc/PID/comm, no newline) into @buf
 * (@len bytes); "" when it is gone or unreadable.  Returns @buf. */
char *oct_pid_comm(long pid, char *buf, size_t len);

#endif
