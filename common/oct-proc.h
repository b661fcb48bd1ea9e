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
#include <sys/stat.h>
#include <sys/types.h>

/* Does process @pid hold the character device @rdev open?  false when it
 * does not, is gone, or its fds cannot be read. */
bool oct_pid_holds_chr(long pid, dev_t rdev);

/* Does any process hold the character device @rdev open? */
bool oct_any_holds_chr(dev_t rdev);

/* The flock lock that the open file behind descriptor @fd of process @pid
 * holds (the "lock:" line of /proc/PID/fdinfo/FD): 2 LOCK_EX, 1 LOCK_SH,
 * 0 none (also: the descriptor or process is gone); -errno it cannot be
 * read (out of descriptors, ...). */
int oct_fd_flock(long pid, int fd);

/* Call @fn for each open descriptor of every process but this one (its
 * number, the text of its /proc/PID/fd link and the stat of the file),
 * until it returns nonzero: that pid when > 0, its -errno when < 0; 0 when
 * none did.  Processes that are gone, or another user's, are passed over;
 * -errno when the scan cannot be made (out of descriptors, ...): a caller
 * proving that nobody holds something must not take that for "nobody". */
long oct_proc_fd_find(int (*fn)(long pid, int fd, const char *target,
				const struct stat *st, void *arg), void *arg);

/* A process holding a flock on file @dev/@ino (LOCK_EX when @write, else
 * either): its pid, 0 if none, -errno if that cannot be told.  Found by
 * descriptor, so it is a process that holds the lock now, also a daemon
 * that inherited it across a fork (/proc/locks names the process that took
 * it, which may be gone). */
long oct_flock_owner(dev_t dev, ino_t ino, bool write);

/* The command name of process @pid (/proc/PID/comm, no newline) into @buf
 * (@len bytes); "" when it is gone or unreadable.  Returns @buf. */
char *oct_pid_comm(long pid, char *buf, size_t len);

#endif
