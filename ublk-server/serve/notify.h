/* SPDX-License-Identifier: MIT */
/*
 * notify — tell a supervisor what the server is doing, without libsystemd:
 * the sd_notify datagram protocol ("READY=1", "STOPPING=1", one datagram to
 * the unix socket named by $NOTIFY_SOCKET; a leading '@' is an abstract
 * socket) and a udev "change" event for the served device once the run
 * registry names it (so the udev rule can give it its /dev/disk/by-octant
 * name).  Prefix serve_notify.  Every call is a no-op when there is nobody
 * to tell, and a failure is only reported on stderr: serving goes on.
 */
#ifndef OCTANT_SERVE_NOTIFY_H
#define OCTANT_SERVE_NOTIFY_H

/* Send @state ("READY=1", "STOPPING=1", "STATUS=...") to $NOTIFY_SOCKET.
 * Returns 1 sent, 0 no $NOTIFY_SOCKET, or a negative errno. */
int serve_notify(const char *state);

/* The device @devpath is live and recorded in the run registry: ask udev to
 * re-read it ("change" to /sys/class/block/NAME/uevent; NAME the basename
 * of @devpath, NULL or "" skips it), then send "READY=1". */
void serve_notify_ready(const char *devpath);

#endif
