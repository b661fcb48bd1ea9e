/* SPDX-License-Identifier: MIT */
/*
 * Frontends expose an opened set of engines (struct ftl_set, ftl-set.h; a plain image is a set of one part) as a kernel block device.
 * Each is a const ops table with designated initializers; the serve layer
 * (ublk-server/serve/) owns everything common: option parsing, opening the
 * engine, daemonizing, the pidfile and run registry, the control socket
 * (stats, stop), signals, and the clean checkpoint at the end.
 */
#ifndef OCTANT_FRONTEND_H
#define OCTANT_FRONTEND_H

#include <stdbool.h>
#include <stddef.h>

#include "ftl-set.h"

struct fe_serve_opts {
	const char *image;       /* image path */
	const char *frontend;    /* "ublk", "fuse" or NULL (auto) */
	bool foreground;
	bool read_only;          /* --read-only: the engine never writes the
	                            image, the device is read-only */
	bool recover;            /* ublk: re-attach to a device left by a dead server */
	bool upgrade;            /* ublk, serve --upgrade: take the device over
	                            from its live server (implies recover) */
	int upgrade_pid;         /* that server's pid (the registry's, proven) */
	int dev_id;              /* ublk: device id to ask for, -1 any */
	unsigned queues, depth;  /* ublk: hardware queues, queue depth */
	const char *dm_name;     /* --dm NAME: stack a dm-linear device on top */
	const char *run_dir;     /* per-server state folder (registry, socket) */
	const char *pidfile;     /* --pidfile FILE (made absolute), or NULL */
	const char *log;         /* --log syslog|stderr|FILE, or NULL */
	int log_kind;            /* enum serve_log_kind of @log */
};

struct zn;
struct serve_ro;
struct fe_ops;

struct fe_server {
	struct ftl_set *set;     /* the engines (a set), or NULL for ... */
	struct zn *zn;           /* ... a zoned image (ublk only; zoned.h) */
	const struct fe_serve_opts *opts;
	char devpath[128];       /* filled by start(): /dev/loopN, /dev/ublkbN */
	int stop_fd;             /* eventfd: readable once a stop was requested */
	volatile bool force_stop; /* set before stop_fd by `stop --force`: a
	                            device still in use may be cut off (its
	                            I/O fails) after a short grace */
	volatile int handover_pid; /* set before stop_fd by a live upgrade's
	                            request ("upgrade PID" on the control
	                            socket): hand the device to that server */
	const char *options;     /* this server's options for its successor:
	                            NUL-terminated words, @options_len bytes */
	size_t options_len;
	void *priv;              /* the frontend's own state */
	/* an online resize (serve/grow.c): the engine's open options, the
	 * read-only watch, and the image lock's own descriptor once the
	 * engine was closed and opened again (ftl_lock_dup; -1 none yet) */
	const struct fe_ops *ops;
	const struct ftl_open_opts *open_opts;
	struct serve_ro *ro;
	int grow_lock_fd;
};

/* FUSE frontend: the name of the disk file the loop device is bound
 * through, RUNDIR/mnt/NAME: the image's file name (so `losetup -l` shows
 * something a person recognises), or "disk" when that name is unusable
 * (control characters, a space at the end, over 200 bytes).  The file is also always there
 * as RUNDIR/mnt/disk (the same inode). */
void fe_fuse_file_name(const char *image, char *name, size_t len);

struct fe_ops {
	const char *name;
	/* 0 if this frontend can run here; else -errno and a one-line reason. */
	int (*probe)(char *why, size_t len);
	/* Optional, before the engine opens and before anything changes:
	 * refuse options this frontend cannot honour for @o (one line on
	 * stderr): -EROFS a --read-only other than the access of the device
	 * `--recover` would re-attach (exit 2), -EBUSY it is served (exit 5),
	 * another -errno nothing to recover (exit 3). */
	int (*prepare)(const struct fe_serve_opts *o);
	/* Optional, serve --upgrade, before the engine opens and before the
	 * live server is asked for its device: everything the device needs
	 * that can fail for want of memory, threads or descriptors, without
	 * touching it (one line on stderr).  start() then completes it. */
	int (*takeover)(struct fe_server *s);
	/* Create the block device; return once it is live (devpath filled).
	 * With opts->upgrade, after takeover() and after the live server
	 * handed the device over: re-attach it. */
	int (*start)(struct fe_server *s);
	/* Serve I/O until stop_fd is readable or a fatal error; -errno on error. */
	int (*run)(struct fe_server *s);
	/* Remove the block device (clean stop) in bounded time: a device still
	 * in use after a grace period is cut off (every request answered, with
	 * EIO once cut; the engine untouched afterwards).  Safe after a failed
	 * start.  After a quiesce() that succeeded: hand the device over
	 * instead (it stays, its requests wait in the kernel for the next
	 * server), never remove it. */
	void (*stop)(struct fe_server *s);
	/* Optional, a live upgrade (run() returned for handover_pid): stop
	 * taking requests so that another server can take the device over;
	 * the requests in flight are answered, new ones wait in the kernel.
	 * 0 done (stop() then hands it over); -EOPNOTSUPP the device cannot
	 * be (nothing changed: serve on); another -errno it failed. */
	int (*quiesce)(struct fe_server *s);
	/* Optional, an online resize (serve_grow; hold, release, resized all
	 * or none): can_resize() (optional) refuses before anything changes
	 * (-EOPNOTSUPP and a reason in @why); hold()
	 * returns once no request is inside the engine, new ones wait;
	 * release() lets them in on s->set again (NULL: a failed reopen,
	 * every request EIO); resized() then tells the kernel the engine's
	 * size (-errno and a reason in @why on failure). */
	int (*can_resize)(struct fe_server *s, char *why, size_t len);
	void (*hold)(struct fe_server *s);
	void (*release)(struct fe_server *s);
	int (*resized)(struct fe_server *s, char *why, size_t len);
};

extern const struct fe_ops fe_fuse_ops;
extern const struct fe_ops fe_ublk_ops;

/* `stop` of a dead ublk server's entry: remove the device @dev
 * (/dev/ublkbN) it left waiting for `serve --recover` (STOP_DEV, DEL_DEV),
 * once it proves to be that one: the tag of @image (its st_dev and st_ino)
 * and the server's pid @pid in the device's info, and no process holding
 * its /dev/ublkcN.  @in_use (mounted, held open): DEL_DEV would wait for
 * the last close, so it is left to a detached child (the device's I/O
 * fails from the STOP_DEV on).  0 removed; -ENOENT no such device (nor a
 * driver); -ESTALE the number is another device's now; -EBUSY a process
 * serves it; another -errno STOP_DEV or DEL_DEV failed. */
int fe_ublk_remove_left(const char *dev, const char *image, int pid,
			bool in_use);

/* Is @dev (/dev/ublkbN) the device the dead ublk server of @image (pid
 * @pid) left waiting for `serve --recover`?  The proof fe_ublk_remove_left
 * asks for, and `list` and `stop DEV` too (serve_entry_verify): 0 it is;
 * -ENOENT no such device (nor a driver); -ESTALE the number is another
 * device's now; -EBUSY a process serves it; another -errno cannot tell
 * (/dev/ublk-control not ours to open). */
int fe_ublk_left_is(const char *dev, const char *image, int pid);

/* Can the live server of @image (pid @pid) hand its device @dev
 * (/dev/ublkbN) over to another server (`ublk-flash upgrade`)?  The
 * device carries the image's tag and @pid, is LIVE, and has
 * UBLK_F_QUIESCE (which needs the kernel's QUIESCE_DEV, Linux 6.16).  0
 * yes; -EOPNOTSUPP no QUIESCE (@why says whose: the kernel's or the
 * device's); -ESTALE it is another device or another server's; -ENOENT
 * no such device; another -errno cannot tell.  Nothing is changed. */
int fe_ublk_upgradable(const char *dev, const char *image, int pid,
		       char *why, size_t len);

#endif
