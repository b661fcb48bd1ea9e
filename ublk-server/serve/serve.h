/* SPDX-License-Identifier: MIT */
/*
 * serve — what every frontend shares: the run registry, the control
 * socket, daemonizing and the serve lifecycle.  Prefix serve_.
 *
 * Run registry: one folder per image under $UBLK_FLASH_RUN_DIR (default
 * /run/octant), named after the image's st_dev and st_ino:
 *   lock      flock'ed (exclusive) by the server for its whole life; removed
 *             (with the folder) only by its holder, and a lock taken on a
 *             file no longer at the path is retaken, so two servers can
 *             never both own it
 *   pid image dev frontend access [dm] [backing]   written once the device
 *             is live, each file its value and one newline; a reader takes
 *             the whole file less that newline (an image path may hold any
 *             byte but NUL, newlines too); one reader for ublk-flash and
 *             libalign: plumbing/registry.c, where a value that does not
 *             fit reads "", never cut short;
 *             access: "rw" or "ro" (--read-only);
 *             backing (FUSE): "MAJ:MIN:INO" of the file the loop device was
 *             bound to, its identity beyond its number
 *   ctl.sock  the control socket (commands: "stats json", "stats text",
 *             "stop"), answered then closed
 *   mnt/      the FUSE frontend's private mountpoint
 * An entry is live while its lock is held; a folder with a pid file but no
 * lock holder is stale (the server died) and is cleaned by the next serve
 * of the same image, the next successful serve of any image, or stop.  A server that ends, however
 * it ends, removes its folder (and RUNDIR.log after a clean stop).
 * Nothing of an entry is cleaned before its server is proven gone
 * (serve_entry_dead): a free lock at the path is not enough when the
 * folder was removed under a live server, which holds the removed lock
 * file and writes its entry again within a second (serve_entry_repair).
 */
#ifndef OCTANT_SERVE_H
#define OCTANT_SERVE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "frontend.h"
#include "registry.h"

/* The entry folder of image @image (which must exist) into @dir. */
int serve_entry_dir(const char *image, char *dir, size_t len);

/* Create the entry folder and take its lock (exclusive, non-blocking, a
 * few retries): the lock fd in *fd, -EBUSY if a live server holds it. */
int serve_entry_lock(const char *dir, int *fd);
/* Take the lock of the existing entry @dir (one try, nothing created):
 * the fd in *fd; -EBUSY held, -ENOENT no such entry. */
int serve_entry_trylock(const char *dir, int *fd);

/* Remove the entry folder @dir (registry files, mnt/, the lock file; with
 * @log also RUNDIR.log).  The caller holds the lock and closes it after. */
void serve_entry_remove(const char *dir, bool log);

/* Remove every stale entry but @self (serve/cleanup.c; its server gone:
 * lock free): clean
 * what a dead FUSE server left (serve_entry_cleanup), then the folder.  A
 * dead ublk server's entry is kept for `serve --recover`.  Returns how
 * many entries were removed. */
int serve_sweep(const char *self);

/* Find the entry of @arg: a block device served, or stacked on it with
 * --dm, or an image path.  A device is matched by its number and then by
 * identity: a loop device must still be bound to the entry's FUSE file
 * (device, inode and path; a --dm device must sit on it).  -ENOENT if none
 * is recorded; -ESTALE if entries name the device's number but none is
 * bound to it now (the number was reused): @e is then the first of them. */
int serve_entry_find(const char *arg, struct serve_entry *e);

/* Is the device @e recorded still the one its server brought up? (a loop
 * device bound to the entry's FUSE file; other devices: true) */
bool serve_entry_verify(const struct serve_entry *e);

/* Does @dir record a server (its pid file is there, or cannot be told
 * absent)?  Asked without a descriptor: a serve that fails for want of
 * them must not take a dead server's entry for one it made itself. */
bool serve_entry_recorded(const char *dir);

/* Does @dir record a dead or live ublk server whose device is still there
 * (a block device at its path)?  A failed `serve --recover` keeps such an
 * entry for the next attempt; one it cannot read now counts as such. */
bool serve_entry_waits(const char *dir);

/* What a live server writes in its entry, kept to write it again when the
 * entry is removed under it (serve_entry_repair). */
struct serve_record {
	char image[PATH_MAX];
	char dev[128], dm[128];   /* "" when none */
	char frontend[16], access[4];
	char backing[64];         /* "" when none */
	char pid[16];
	struct timespec started;  /* when "pid" was first written (its mtime
	                             dates the start: kept when written again) */
};

/* Write @r's registry files in @dir, "pid" last (it marks the entry): 0,
 * or the first -errno (the files after it are not written). */
int serve_entry_publish(const char *dir, const struct serve_record *r);

/* A live server's check of its own entry (once a second): when its lock
 * file is no longer the one @lock_fd holds (the folder or the run folder
 * was removed), take the lock at the path again and dup it onto @lock_fd;
 * then write the registry files of @r that are missing.  1 when it wrote
 * something, 0 when the entry was whole, -EBUSY another process holds the
 * lock at the path for now (try again later), else -errno. */
int serve_entry_repair(const char *dir, int lock_fd,
		       const struct serve_record *r);

/* ---- who owns an entry (serve/owner.c) ---- */

/* Is the server of entry @dir proven gone?  0: no process holds a lock file
 * of @dir flocked LOCK_EX (a removed one, or one at the path other than
 * the file there now: the caller holds that), and the pid @dir records,
 * if running, holds no lock on its image.  -EBUSY: a live server, its pid
 * in *pid; another -errno: /proc could not be read (out of descriptors):
 * not proven either.  Asked before anything of @dir's server is touched. */
int serve_entry_dead(const char *dir, pid_t *pid);

/* Does process @pid hold a lock file of entry @dir flocked LOCK_EX (the
 * one at the path or a removed one): is it that entry's server?  Asked
 * before a signal is sent to the pid an entry records. */
bool serve_entry_held_by(const char *dir, pid_t pid);

/* A live server whose entry folder was removed under it (it holds the
 * removed lock file): its pid, its entry folder in @dir (may be NULL); 0
 * when there is none. */
pid_t serve_entry_orphan(char *dir, size_t len);

/* Wait up to @ms until no server is without its entry (each writes it
 * again within a second of its removal): 0, or -ETIMEDOUT. */
int serve_entry_wait_orphans(unsigned ms);

/* Write one registry file @name = @value in @dir. */
int serve_entry_put(const char *dir, const char *name, const char *value);

/* Remove the registry files of @dir (not the lock). */
void serve_entry_clear(const char *dir);

/* Clean what a dead server left in @dir: loop devices backed by its FUSE
 * file, the FUSE mount (lazily unmounted), the registry files.  The caller
 * holds the lock.  Returns how many things it cleaned (>= 0); nothing
 * touched and serve_entry_dead's -errno unless its server is proven gone. */
int serve_entry_cleanup(const char *dir);

/* ---- the image lock (serve/imagelock.c) ---- */

/* Take the lock the engine holds on an image open for writing (flock
 * LOCK_EX, non-blocking; a block device is also opened O_EXCL): the fd in
 * *fd, held until closed.  -EBUSY if a server or another process has the
 * image open for writing (or the block device is mounted). */
int serve_image_lock(const char *path, int *fd);

/* The same lock shared (LOCK_SH, non-blocking) for a read-only serve: no
 * program can open @path for writing through the engine, create or fsck
 * --repair while it is held.  -EBUSY if one has it open for writing. */
int serve_image_share(const char *path, int *fd);

/* Who holds @path busy, for an error message: "served on /dev/loop3
 * (pid 1234)", "open for writing by pid 99 (fio)", ... */
void serve_image_holder(const char *path, char *buf, size_t len);

/* ---- before a forced stop (serve/syncdev.c) ---- */

/* syncfs every filesystem mounted on block device @dev, its partitions or
 * a device stacked on it, in a child process waited for up to @timeout_ms.
 * How many were synced, -ETIMEDOUT if the child is still at it. */
int serve_sync_mounts(const char *dev, unsigned timeout_ms);

/* ---- control socket ---- */
struct serve_ctl;

/* Listen on @dir/ctl.sock and answer requests in a thread. */
int serve_ctl_start(struct serve_ctl **out, const char *dir,
		    struct fe_server *s);
/* From now on, once a second, write the entry @r again if it was removed
 * (serve_entry_repair with the entry lock @lock_fd), the socket too. */
void serve_ctl_keep(struct serve_ctl *c, int lock_fd,
		    const struct serve_record *r);
/* Stop answering (the socket is removed); stop requesters keep waiting. */
void serve_ctl_stop(struct serve_ctl *c);
/* Tell the stop requesters the outcome ("stopped", or "failed ERRNO WHY"
 * when the server ends with -errno @err) and free @c. */
void serve_ctl_finish(struct serve_ctl *c, int err, const char *why);

/* Send @cmd to the live server of @e and copy its answer to @out. */
int serve_ctl_request(const struct serve_entry *e, const char *cmd, FILE *out);

/* A connected socket to the control socket of @e (only e->dir is read),
 * or -errno. */
int serve_ctl_connect(const struct serve_entry *e);

/* A live upgrade asked for the device ("upgrade PID"; the serve loop woke
 * with s->handover_pid): answer the requester.  @err 0: the device is
 * quiesced; the requester gets "quiesced" with the entry's lock file
 * descriptor (SCM_RIGHTS: the entry stays locked through the handover)
 * and, from serve_ctl_finish, "handed-over" (or "failed ERRNO WHY").  Else
 * "error: upgrade: WHY" and the server serves on. */
void serve_ctl_handover(struct serve_ctl *c, int err);

/* Was a stop asked on the control socket? */
bool serve_ctl_stopping(struct serve_ctl *c);

/* Is process @pid still running (a zombie is not)? */
bool serve_pid_running(pid_t pid);

/* Ask the live server of @e to stop (socket, else SIGTERM: *signalled;
 * @force: cut the device off even if it is still in use) and wait up to
 * @timeout_ms for it to exit.  0 it said it stopped cleanly; -EIO it
 * could not close cleanly (its reason in @why, e.g. "clean checkpoint: No
 * space left on device"); -EPIPE it exited without saying (signalled, or
 * its connection ended): whether its clean checkpoint was written is then
 * read from the image (serve_image_closed_clean); -ESRCH the socket did
 * not answer and the recorded pid is not the entry's server (a stale pid
 * file): nothing signalled; -EINPROGRESS it is handing its device over to
 * a new server (`upgrade`): nothing asked; -ETIMEDOUT it did not exit. */
int serve_stop_server(const struct serve_entry *e, unsigned timeout_ms,
		      bool force, char *why, size_t len, bool *signalled);

/* After its server exited without saying how: was @e's image closed
 * cleanly?  Taken shared (no writer meanwhile) and opened read-only: 0 its
 * newest checkpoint is a clean one with no mount marker after it (a
 * read-only server: the image is as it was, nothing to write); -EUCLEAN
 * it is not (the next read-write open rolls forward); -EBUSY another
 * program has it open for writing now (cannot tell); another -errno the
 * image cannot be read (cannot tell). */
int serve_image_closed_clean(const struct serve_entry *e);

/* ---- read-only watch (rowatch.c) ---- */
struct serve_ro;

/* Two steps, so that what can fail for want of resources (an eventfd, a
 * thread) fails before the frontend changes anything (a failed --recover
 * leaves the device as the dead server left it): serve_ro_start before
 * the device is started, serve_ro_arm once it is known (never fails).
 * Armed, the served device @dev (and @dm, NULL: none) is made read-only
 * (BLKROSET) at once if the engine's spare blocks are used up already,
 * else when they run out; one log line says why.  Arm before the device
 * is reported; serve_ro_stop (NULL-safe) before it is removed. */
int serve_ro_start(struct serve_ro **out, struct ftl_set *f);
void serve_ro_arm(struct serve_ro *w, const char *dev, const char *dm);
void serve_ro_stop(struct serve_ro *w);
/* An online resize (NULL-safe): pause unhooks the engine (whose close
 * follows) and holds the watch; resume watches @f (NULL: none) instead. */
void serve_ro_pause(struct serve_ro *w);
void serve_ro_resume(struct serve_ro *w, struct ftl_set *f);

/* ---- an online resize (serve/grow.c) ----
 * Grow the served image to @size bytes while it is served ("resize SIZE"
 * on the control socket): requests held at the frontend, the engine
 * closed, ftl_grow_locked under the image lock it never drops, the engine
 * opened again, requests let in, the kernel told (fe_ops resized).  0
 * grown (or already @size); -EOPNOTSUPP not here (a zoned image, --dm,
 * a frontend without hold, a remote medium), -EROFS read-only; else as
 * ftl_grow (*@max as there).  @why: a reason on failure; a failed reopen
 * leaves every request failing EIO (the image at the old or new size). */
int serve_grow(struct fe_server *s, uint64_t size, uint64_t *max,
	       char *why, size_t len);

/* ---- a live upgrade, the new server's side (serve/upgrade.c) ----
 *
 * The control socket's conversation (control.c answers it):
 *   "options"      -> the server's options for its successor: words, each
 *                     ended by a NUL (serve_options_record)
 *   "upgrade PID"  -> (PID: the requester, checked by its credentials)
 *                     "quiesced\n" + the entry's lock fd [+ "notify
 *                     PATH\n": its $NOTIFY_SOCKET], later
 *                     "handed-over\n" or "failed ERRNO WHY\n"; or
 *                     "error: upgrade: WHY\n" (refused: nothing changed)
 */
struct serve_upgrade {
	pid_t old;               /* the server handing the device over */
	int fd;                  /* the connection to it, -1 */
	int lock_fd;             /* the entry's lock it passed, -1 */
	char buf[PATH_MAX + 64]; /* what it said, not yet taken */
	size_t got;
	char notify[PATH_MAX];   /* its $NOTIFY_SOCKET ("notify PATH"), "" */
	uint64_t t_start, t_ask, t_quiesced, t_handed, t_opened, t_live;
	                         /* CLOCK_MONOTONIC ns: serve started, the
	                            request sent, its answers, the engine
	                            open, the device live */
};

uint64_t serve_now_ns(void);

/* serve --upgrade, before anything: the live ublk server of @o->image
 * (its entry @dir, proven to hold it) into o->upgrade_pid and its device
 * number into o->dev_id.  0, or one line and -errno (serve_fail). */
int serve_upgrade_target(struct fe_serve_opts *o, const char *dir);

/* The options of this server @o, @oo for its successor (`ublk-flash
 * upgrade` runs `serve IMG WORDS... --upgrade`): words each ended by a NUL
 * into @buf, their length in *used; paths absolute.  -ENAMETOOLONG. */
int serve_options_record(const struct fe_serve_opts *o,
			 const struct ftl_open_opts *oo, char *buf, size_t len,
			 size_t *used);

/* Ask the server of entry @dir (u->old) for its device: 0 once it said
 * "quiesced" (u->lock_fd: the entry's lock, if passed); -EPERM it refused
 * (@why: its reason; it serves on), another -errno no answer. */
int serve_upgrade_ask(const char *dir, struct serve_upgrade *u, char *why,
		      size_t len);

/* After serve_upgrade_ask: wait until the old server has closed the device
 * and the engine (u->notify: its $NOTIFY_SOCKET, if it told).  0
 * "handed-over"; -EIO "failed": its clean checkpoint
 * is not on the image (@why); -EPIPE it ended without saying (the image is
 * rolled forward).  The device is the new server's to recover either way. */
int serve_upgrade_done(struct serve_upgrade *u, char *why, size_t len);

/* The entry's lock when the old server passed none: wait until process
 * @old has exited, then take the lock of @dir and prove the entry's server
 * gone.  0 with *lock_fd, or -errno. */
int serve_upgrade_lock(const char *dir, pid_t old, int *lock_fd);

/* serve --upgrade, before the engine opens: prepare what the device needs
 * (@ops->takeover), hold descriptors for after the handover, ask the live
 * server u->old for the device and wait until it has closed the device
 * and the image; take on its $NOTIFY_SOCKET.  0, or -errno (serve_fail)
 * after one line (*handed_in: it had quiesced the device, which then waits for a
 * --recover). */
int serve_upgrade_begin(struct fe_serve_opts *o, const struct fe_ops *ops,
			struct fe_server *s, struct serve_upgrade *u,
			bool *handed_in);

/* The old server's side: run() returned because "upgrade PID" came on the
 * control socket @ctl (s->handover_pid).  Quiesce the device (unless a
 * stop was asked too) and answer the requester.  true: hand the device
 * over (stop serving, leave the device; s->handover_pid kept); false:
 * serve on, or stop when a stop came meanwhile (*stop). */
bool serve_handover(struct fe_server *s, const struct fe_ops *ops,
		    struct serve_ctl *ctl, bool *stop);

/* "upgraded DEV from pid OLD to pid NEW: paused S s (quiesce ..., old
 * server's close ..., open ... clean|rolled forward, recovery ...),
 * prepared in S s" (the old server serving meanwhile). */
void serve_upgrade_summary(const struct serve_upgrade *u, const char *dev,
			   bool clean, char *buf, size_t len);

/* ---- lifecycle ---- */

/* How a serve ended when it failed: serve_main's -errno with what the
 * caller needs to turn it into an exit status (serve never chooses one:
 * only the CLI maps, cmd_serve.c).  The errno's meaning is the contract:
 *   -EINVAL      a bad option or value (a --pidfile or --log FILE that
 *                cannot be written, --recover with another access than the
 *                device's, an unknown frontend, an option a zoned image
 *                cannot take)
 *   -EBUSY       refused for safety: already served, the image in use, a
 *                --pidfile naming a running process, no free device
 *   -EOPNOTSUPP  not possible here, nothing changed (--upgrade without
 *                QUIESCE_DEV, over FUSE, from an older server)
 *   -EBADMSG, -EUCLEAN, -EPROTONOSUPPORT   a corrupt image (e.g. at the
 *                clean checkpoint)
 *   any other    an I/O or system error (serve_err_io folds a frontend's
 *                or a library's errno of another meaning into -EIO)
 * Its one-line reason is on stderr already, except when @image. */
struct serve_fail {
	int err;      /* serve_main's return, -errno */
	bool image;   /* the engine could not open the image (not -EBUSY):
	                 nothing said yet; the caller says what the image is
	                 (it knows its kinds: cli_image_fail) */
	bool daemon;  /* returned in the forked daemon, not the caller's
	                 process: end it with _exit (its parent reported) */
	char why[512];/* with image: a remote medium's own reason (its
	                 backing said it in the process that opened it:
	                 nand_backing_uri_error), "" when none */
};

/* @err as serve_main's contract reads it (serve/fail.c): itself when it
 * means an I/O or system error there, else -EIO (a frontend's -EINVAL is
 * not a usage error).  -EBUSY is kept only when @busy. */
int serve_err_io(int err, bool busy);

/* `ublk-flash serve`: run a server for @o (engine options @oo): 0, or
 * -errno with *@f filled (above).  Unless @o->foreground, the caller's
 * process returns once the device is live (its path printed on stdout)
 * and a daemon keeps serving; the daemon returns here too when it ends
 * (f->daemon), whatever the outcome. */
int serve_main(struct fe_serve_opts *o, const struct ftl_open_opts *oo,
	       struct serve_fail *f);

#endif
