/* SPDX-License-Identifier: MIT */
/*
 * pidfile — `serve --pidfile FILE`: the serving process's pid, one line,
 * written atomically (a temporary file in the same folder, renamed) once
 * the device is live and removed when the server stops.  A pidfile naming
 * a process that is gone (or holding no pid) is stale and replaced; one
 * naming a running process is refused before anything starts.  Prefix
 * serve_pidfile_, 0 / -errno returns.
 */
#ifndef OCTANT_SERVE_PIDFILE_H
#define OCTANT_SERVE_PIDFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Check @path before the server starts and make it absolute in @abs (the
 * daemon changes folder): -ENOENT / -ENOTDIR its folder is missing or not
 * a folder, -EISDIR @path is a folder, -EACCES the folder is not writable,
 * -EEXIST it names running process *live (a one-line reason in @why). */
int serve_pidfile_check(const char *path, char *abs, size_t len, pid_t *live,
			char *why, size_t wlen);

/* Write @pid to @abs atomically. */
int serve_pidfile_write(const char *abs, pid_t pid);

/* Remove @abs if it still holds @pid (never another server's). */
void serve_pidfile_remove(const char *abs, pid_t pid);

#endif
