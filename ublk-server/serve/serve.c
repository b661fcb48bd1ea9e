/* SPDX-License-Identifier: MIT */
/*
 * The serve lifecycle: choose a frontend, take the image's registry lock,
 * fork a daemon that opens the engine and brings the device up, report the
 * device path to the caller once it is live, serve until a stop request
 * (control socket, SIGTERM, SIGINT), then remove the device and close the
 * engine with a clean checkpoint.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "align.h"
#include "dmstack.h"
#include "loopdev.h"
#include "nand.h"
#include "serve.h"
#include "zoned.h"
#include "notify.h"
#include "log.h"
#include "pidfile.h"

static int serve_stop_fd = -1;

static void serve_on_signal(int sig)
{
	uint64_t one = 1;
	int saved = errno;

	(void)sig;
	if (serve_stop_fd >= 0 && write(serve_stop_fd, &one, sizeof(one)) < 0) {
		/* nothing more can be done in a handler */
	}
	errno = saved;
}

/* Keep the server resident so serving never waits on reclaim (which may
 * wait on writeback of our own device): every mapping is locked and
 * populated when created (MCL_FUTURE without ONFAULT), so buffers made
 * before the device is live never fault later.  Thread stacks are kept
 * small since all of them are locked. */
static void serve_memory_setup(void)
{
	pthread_attr_t a;

	if (pthread_attr_init(&a) == 0) {
		pthread_attr_setstacksize(&a, 1u << 20);
		pthread_setattr_default_np(&a);
		pthread_attr_destroy(&a);
	}
#ifdef __SANITIZE_ADDRESS__
	return;   /* ASan's shadow mappings cannot be locked */
#endif
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "ublk-flash: warning: mlockall: %s (the server "
			"may wait on reclaim under memory pressure)\n",
			strerror(errno));
}

/* "ublk-flash: WHAT: strerror(-err)" on stderr; -errno @err, whatever it
 * means (serve_fail), but -EOPNOTSUPP: -EIO (not "not possible here"). */
static int serve_say(const char *what, int err)
{
	if (err > 0)
		err = -err;
	fprintf(stderr, "ublk-flash: %s: %s\n", what, strerror(-err));
	return err == -EOPNOTSUPP || !err ? -EIO : err;
}

/* Pick the frontend: the named one, or ublk when the kernel has it, else
 * fuse.  Prints the reason and returns NULL when none can run (*err:
 * -EINVAL an unknown name, -ENODEV it cannot run here). */
static const struct fe_ops *serve_pick(const char *name, int *err)
{
	char why[256] = "";
	const struct fe_ops *ops;

	*err = -EINVAL;
	if (name && strcmp(name, "fuse") && strcmp(name, "ublk")) {
		fprintf(stderr, "ublk-flash: serve: unknown frontend '%s' "
			"(ublk or fuse)\n", name);
		return NULL;
	}
	*err = -ENODEV;
	if (!name)
		name = access("/dev/ublk-control", F_OK) == 0 ? "ublk" : "fuse";
	ops = !strcmp(name, "ublk") ? &fe_ublk_ops : &fe_fuse_ops;
	if (ops->probe(why, sizeof(why)) < 0) {
		fprintf(stderr, "ublk-flash: serve: frontend %s cannot run here: %s\n",
			ops->name, why);
		return NULL;
	}
	return ops;
}

/* A failed engine open: -EBUSY after one line; else its -errno, and the
 * caller says what IMG is (*image; serve_fail). */
static int serve_open_fail(const char *image, int err, bool *said_not)
{
	if (err == -EBUSY) {
		/* The engine's image lock is held: by create, fsck --repair
		 * or another program writing the image. */
		char who[PATH_MAX + 64];
		serve_image_holder(image, who, sizeof(who));
		fprintf(stderr, "ublk-flash: serve: %s is %s\n", image, who);
		return err;
	}
	*said_not = true;
	return err < 0 ? err : -EIO;
}

/* Stack a dm-linear device on the served device (--dm NAME).  The engine
 * was opened un-shifted, so the dm table carries the odd mode's 512-byte
 * shift: dm LBA s lands on medium byte s*512 + 512, exactly as the engine's
 * own odd mode, and the kernel reports alignment_offset 3584 for it. */
static int serve_dm_attach(struct fe_server *s, char *dmpath, size_t len)
{
	struct ftl_set_info info;
	unsigned shift;
	int err;

	err = ftl_set_info_read(s->opts->image, &info);
	if (err)
		return err;
	shift = info.set.align == FTL_ALIGN_ODD ? FTL_SECTOR : 0;
	err = plumb_dm_serve_attach(s->opts->dm_name, s->devpath, shift,
				   info.set.logical_size, dmpath, len);
	if (err)
		fprintf(stderr, "ublk-flash: serve: --dm %s: %s\n",
			s->opts->dm_name, plumb_dm_errmsg());
	return err;
}

/* A line the parent prints after the device (serve --upgrade's summary). */
static char serve_report_note[512];

/* Tell the waiting parent how the start went ("OK dev", or "ERR ERRNO
 * IMAGE\nWHY": serve_fail's err, positive, image 0|1 and why, a line,
 * maybe empty). */
static void serve_report(int fd, int err, const struct serve_fail *f,
			 const char *dev)
{
	char msg[1024];
	if (fd < 0)
		return;
	if (err == 0 && dev)
		snprintf(msg, sizeof(msg), "OK %s\n%s%s", dev, serve_report_note,
			 serve_report_note[0] ? "\n" : "");
	else
		snprintf(msg, sizeof(msg), "ERR %d %d\n%s\n", -err, f->image,
			 f->why);
	if (write(fd, msg, strlen(msg)) < 0) {
		/* the parent is gone; keep going */
	}
	close(fd);
}

/* Parent side of the daemon fork: wait for the child's report. */
static int serve_parent(int rfd, pid_t child, struct serve_fail *f)
{
	char msg[1024];
	ssize_t n, got = 0;
	int err, image;

	while ((n = read(rfd, msg + got, sizeof(msg) - 1 - (size_t)got)) > 0)
		got += n;
	close(rfd);
	msg[got] = '\0';
	if (!strncmp(msg, "OK ", 3)) {
		printf("%s", msg + 3);   /* the device, and a note's line */
		return 0;
	}
	waitpid(child, NULL, 0);
	if (sscanf(msg, "ERR %d %d", &err, &image) == 2) {
		const char *why = strchr(msg, '\n');

		f->image = image;
		if (why)
			snprintf(f->why, sizeof(f->why), "%.*s",
				 (int)strcspn(why + 1, "\n"), why + 1);
		return -err;
	}
	fprintf(stderr, "ublk-flash: serve: the server died while starting\n");
	return -EPIPE;
}

/* Open the zoned image of @o (zoned.h) under the engine's image lock
 * (exclusive; a read-only serve holds the shared one already): *fd to
 * close after zn_close (its flock is the lock). */
static int serve_zoned_open(const struct fe_serve_opts *o, struct zn **z,
			    int *fd)
{
	struct nand_backing *b;
	int r;

	if (o->read_only) {
		*fd = open(o->image, O_RDONLY | O_CLOEXEC);
		if (*fd < 0)
			return -errno;
	} else {
		struct stat st;

		if (stat(o->image, &st) < 0)
			return -errno;
		/* a block device: claimed exclusively too, as the engine does */
		*fd = open(o->image, O_RDWR | O_CLOEXEC |
			   (S_ISBLK(st.st_mode) ? O_EXCL : 0));
		if (*fd < 0)
			return -errno;
		if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
			r = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(*fd);
			*fd = -1;
			return r;
		}
	}
	r = nand_backing_fd(*fd, &b);
	if (!r)
		r = zn_load(b, o->read_only, z);
	if (r) {
		close(*fd);
		*fd = -1;
	}
	return r;
}
/* This server's options for its successor (serve_options_record), made
 * before the daemon changes folder; answered on the control socket. */
static char serve_options[PATH_MAX * 3];
static size_t serve_options_len;

/* When this serve started (serve --upgrade's "prepared in"). */
static uint64_t serve_t_start;

static int serve_daemon(struct fe_serve_opts *o, const struct ftl_open_opts *oo,
			const struct fe_ops *ops, int report_fd, int *lock_fd,
			struct serve_fail *f)
{
	static struct serve_record rec;   /* read by the control thread */
	struct fe_server s = { .opts = o, .stop_fd = -1, .ops = ops,
				.grow_lock_fd = -1 };
	struct serve_upgrade up = { .old = o->upgrade_pid, .fd = -1,
				    .lock_fd = -1, .t_start = serve_t_start };
	struct serve_ctl *ctl = NULL;
	struct serve_ro *ro = NULL;
	struct sigaction sa;
	sigset_t block, old;
	char dmpath[128] = "", why[256] = "", line[PATH_MAX + 192];
	bool tried = false, dm = false, pidfile = false, marked = false;
	bool handed_in = false, handed_out = false, kept = false, live = false;
	int code = 0, err, share_fd = -1, spare_fd = -1;

	int zoned_fd = -1;
	struct ftl_open_opts open_opts = *oo;
	open_opts.unshifted = o->dm_name != NULL;   /* dm carries the shift */
	/* Read-only: the engine opens the image O_RDONLY and never writes it
	 * (a roll-forward stays in memory, no checkpoint at open or close);
	 * a shared image lock keeps writers (create, fsck --repair) out. */
	open_opts.readonly = o->read_only;
	s.open_opts = &open_opts;
	err = o->read_only && !nand_backing_is_uri(o->image) ?
	      serve_image_share(o->image, &share_fd) : 0;
	/* Keep the server resident: reclaim must never wait on our own disk.
	 * Before the open: the engine's memory is then locked as it is made
	 * (MCL_FUTURE), and its read-only mapping of a tmpfs image can stay
	 * unlocked (nand_backing_fd): an MCL_CURRENT after it would populate
	 * it, allocating every hole of a sparse image. */
	if (!err)
		serve_memory_setup();
	if (!err && o->upgrade) {
		/* a live upgrade: the old server hands the device over once
		 * everything that can fail for want of resources is ready */
		tried = true;
		code = serve_upgrade_begin(o, ops, &s, &up, &handed_in);
		if (code)
			goto out;
		*lock_fd = up.lock_fd;
		up.lock_fd = -1;
	}
	if (!err && zn_image_probe(o->image) == 1)
		err = serve_zoned_open(o, &s.zn, &zoned_fd);
	else if (!err)
		err = ftl_set_open(o->image, &open_opts, &s.set);
	if (err) {
		code = serve_open_fail(o->image, err, &f->image);
		/* a remote medium's reason lives in this thread: carried to
		 * the caller (the parent of a daemon) in f->why */
		if (f->image && nand_backing_is_uri(o->image) &&
		    nand_backing_uri_error(o->image))
			snprintf(f->why, sizeof(f->why), "%s",
				 nand_backing_uri_error(o->image));
		goto out;
	}
	up.t_opened = serve_now_ns();
	if (o->upgrade && *lock_fd < 0) {   /* an old server passed no lock */
		err = serve_upgrade_lock(o->run_dir, up.old, lock_fd);
		if (err) {
			code = serve_say("serve --upgrade: run registry", err);
			goto out;
		}
	}
	s.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s.stop_fd < 0) {
		code = serve_say("serve: eventfd", -errno);
		goto out;
	}
	serve_stop_fd = s.stop_fd;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = serve_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!o->foreground)
		signal(SIGHUP, SIG_IGN);
	/* Serving threads inherit a mask without them: signals reach us. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	/* The control socket before the device: what can fail for want of
	 * resources fails before the frontend changes anything (a failed
	 * --recover leaves the device as the dead server left it). */
	err = serve_ctl_start(&ctl, o->run_dir, &s);
	if (err)
		fprintf(stderr, "ublk-flash: serve: control socket: %s\n",
			strerror(-err));
	/* the descriptor the registry files are written through once the
	 * device is live (a server short of descriptors must not leave a
	 * dead server's pid in its entry) */
	if (!err && (spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		err = -errno;
		fprintf(stderr, "ublk-flash: serve: a descriptor for the run "
			"registry: %s\n", strerror(-err));
	}
	/* spares used up (now or later): the kernel device read-only too */
	if (!err && !o->read_only && s.set) {
		err = serve_ro_start(&ro, s.set);
		if (err)
			fprintf(stderr, "ublk-flash: serve: read-only watch: "
				"%s\n", strerror(-err));
	}
	if (!err) {
		tried = true;
		err = ops->start(&s);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		code = serve_err_io(err, true);
		goto out;
	}
	up.t_live = serve_now_ns();
	if (o->dm_name) {
		err = serve_dm_attach(&s, dmpath, sizeof(dmpath));
		if (err < 0) {
			code = serve_err_io(err, false);
			goto out;
		}
		dm = true;
	}
	serve_ro_arm(ro, s.devpath, dm ? dmpath : NULL);
	s.ro = ro;
	memset(&rec, 0, sizeof(rec));
	snprintf(rec.image, sizeof(rec.image), "%s", o->image);
	snprintf(rec.dev, sizeof(rec.dev), "%s", s.devpath);
	snprintf(rec.frontend, sizeof(rec.frontend), "%s", ops->name);
	snprintf(rec.access, sizeof(rec.access), "%s", o->read_only ? "ro" : "rw");
	if (dm)
		snprintf(rec.dm, sizeof(rec.dm), "%s", dmpath);
	/* A loop device's identity beyond its reusable number. */
	dev_t bdev;
	ino_t bino;
	if (plumb_loop_backing(s.devpath, &bdev, &bino, NULL, 0) == 0)
		snprintf(rec.backing, sizeof(rec.backing), "%u:%u:%llu",
			 major(bdev), minor(bdev), (unsigned long long)bino);
	snprintf(rec.pid, sizeof(rec.pid), "%d", (int)getpid());
	close(spare_fd);
	spare_fd = -1;
	err = serve_entry_publish(o->run_dir, &rec);   /* "pid" last: marks it */
	if (err) {
		fprintf(stderr, "ublk-flash: serve: run registry %s: %s\n",
			o->run_dir, strerror(-err));
		code = serve_err_io(err, false);
		goto out;
	}
	marked = true;
	struct stat pst;
	snprintf(line, sizeof(line), "%s/pid", o->run_dir);
	if (stat(line, &pst) == 0)
		rec.started = pst.st_mtim;
	else
		clock_gettime(CLOCK_REALTIME, &rec.started);
	/* Removed under us (rm -rf of the run folder), it is written again. */
	serve_ctl_keep(ctl, *lock_fd, &rec);
	if (o->pidfile) {
		err = serve_pidfile_write(o->pidfile, getpid());
		if (err) {
			fprintf(stderr, "ublk-flash: serve: --pidfile %s: %s\n",
				o->pidfile, strerror(-err));
			code = serve_err_io(err, false);
			goto out;
		}
		pidfile = true;
	}
	/* the kernel's scan may find no partitions (no DOS/EFI parser built
	 * in): add the table's from userspace, as partx -u does (libalign).
	 * Under --dm the table is the dm device's, not the raw device's. */
	int nparts = dm ? 0 : align_partitions_sync(s.devpath);
	if (nparts < 0)
		fprintf(stderr, "ublk-flash: note: %s: partitions not shown (%s); "
			"run: partx -u %s\n", s.devpath, strerror(-nparts), s.devpath);
	/* Live: now clean every other entry whose server is gone (a failed
	 * serve changes nothing, so not before). */
	serve_sweep(o->run_dir);

	if (o->upgrade)
		serve_upgrade_summary(&up, s.devpath,
				      ftl_set_mount_kind(s.set) == FTL_MOUNT_CLEAN,
				      serve_report_note, sizeof(serve_report_note));
	if (o->foreground) {
		printf("%s\n%s%s", dm ? dmpath : s.devpath, serve_report_note,
		       serve_report_note[0] ? "\n" : "");
		fflush(stdout);
	} else {
		serve_report(report_fd, 0, f, dm ? dmpath : s.devpath);
		report_fd = -1;
	}
	live = true;
	/* From now on messages go to the log (--log; a daemon: syslog). */
	snprintf(line, sizeof(line), "%s served on %s (pid %d%s%s%s)", o->image,
		 dm ? dmpath : s.devpath, (int)getpid(),
		 o->read_only ? ", read-only" : "", o->upgrade ? "; " : "",
		 serve_report_note);
	serve_log_start(!o->foreground, o->run_dir, line);
	serve_notify_ready(s.devpath);   /* udev names it; systemd: READY=1 */
	__atomic_store_n(&s.options_len, serve_options_len, __ATOMIC_RELAXED);
	__atomic_store_n(&s.options, serve_options, __ATOMIC_RELEASE);
	for (;;) {
		bool stop = false;

		err = ops->run(&s);
		if (err || !s.handover_pid)
			break;
		/* `ublk-flash upgrade`: hand the device to pid handover_pid */
		handed_out = serve_handover(&s, ops, ctl, &stop);
		if (handed_out || stop)
			break;
	}
	if (err) {
		fprintf(stderr, "ublk-flash: serve: %s: %s\n", ops->name,
			strerror(-err));
		snprintf(why, sizeof(why), "%s: %s", ops->name, strerror(-err));
		code = serve_err_io(err, false);
	}
out:
	/* A successor (serve --upgrade) that fails once it has re-attached
	 * the device, before it is live (its --dm, registry or pidfile),
	 * leaves it quiesced as it found it, for a --recover: it never
	 * removes the device it took over. */
	if (o->upgrade && code && !live && ops->quiesce && ops->quiesce(&s) == 0)
		kept = true;
	kept |= handed_out;
	serve_ctl_stop(ctl);      /* stop requesters wait for the outcome */
	serve_ro_stop(ro);
	/* kept: the dm device stays on the device that stays */
	if (dm && !kept && plumb_dm_detach(o->dm_name) < 0)
		fprintf(stderr, "ublk-flash: warning: --dm %s: %s\n", o->dm_name,
			plumb_dm_errmsg());
	if (tried)
		ops->stop(&s);   /* safe after a failed start; hands over */
	if (s.set) {
		err = ftl_set_close(s.set);
		if (err && !code) {
			code = serve_say("serve: clean checkpoint", err);
			snprintf(why, sizeof(why), "clean checkpoint: %s",
				 strerror(-err));
		}
	}
	if (s.zn) {
		err = zn_close(s.zn);
		if (err && !code) {
			code = serve_say("serve: zoned image: final flush", err);
			snprintf(why, sizeof(why), "final flush: %s",
				 strerror(-err));
		}
	}
	if (zoned_fd >= 0)
		close(zoned_fd);
	if (s.grow_lock_fd >= 0)        /* after the engine's close */
		close(s.grow_lock_fd);
	if (share_fd >= 0)
		close(share_fd);
	if (spare_fd >= 0)
		close(spare_fd);
	serve_stop_fd = -1;
	if (s.stop_fd >= 0)
		close(s.stop_fd);
	/* A --recover that failed before it was live leaves the dead
	 * server's entry as it found it while that device still waits: the
	 * next --recover, list, stop and the systemd helper still know it.
	 * So does a server that handed its device over (its successor
	 * replaces the entry), and an --upgrade that failed (the entry is
	 * its live predecessor's, or it waits for a --recover). */
	if (!kept && (marked || (!o->recover && !o->upgrade) ||
		      !serve_entry_waits(o->run_dir)))
		serve_entry_clear(o->run_dir);
	if (kept && !handed_out) {   /* the kernel records this pid now */
		snprintf(line, sizeof(line), "%d", (int)getpid());
		serve_entry_put(o->run_dir, "pid", line);
	}
	if (pidfile)
		serve_pidfile_remove(o->pidfile, getpid());
	if (report_fd < 0 && handed_out) {
		snprintf(line, sizeof(line), "%s handed over to pid %d (live "
			 "upgrade)%s%s", o->image, s.handover_pid,
			 why[0] ? ": " : "", why);
		serve_log_info(line);
		/* a supervisor follows the successor (systemd: NotifyAccess=main
		 * takes it from the main process) */
		snprintf(line, sizeof(line), "MAINPID=%d", s.handover_pid);
		serve_notify(line);
	} else if (report_fd < 0) {   /* it was live */
		snprintf(line, sizeof(line), "%s stopped%s%s", o->image,
			 why[0] ? ": " : "", why);
		serve_log_info(line);
	}
	snprintf(line, sizeof(line), "/dev/ublkb%d", o->dev_id);
	if (handed_in && code && access(line, F_OK) == 0)
		fprintf(stderr, "ublk-flash: serve --upgrade: %s was handed over "
			"and waits quiesced (its I/O is held, none failed): "
			"`ublk-flash serve %s --recover` re-attaches it\n", line,
			o->image);
	else if (handed_in && code)
		fprintf(stderr, "ublk-flash: serve --upgrade: %s was handed over "
			"and could not be recovered: it was removed\n", line);
	else if (o->upgrade && code)
		fprintf(stderr, "ublk-flash: serve --upgrade: nothing changed: "
			"pid %d serves /dev/ublkb%d on\n", o->upgrade_pid,
			o->dev_id);
	serve_ctl_finish(ctl, code, why);
	serve_report(report_fd, code, f, NULL);
	return code;
}

/* Before anything starts: a --pidfile that can be written and names no
 * running process, a --log target that can be opened.  One line and the
 * -errno (serve_fail), or 0. */
static int serve_check_outputs(struct fe_serve_opts *o)
{
	static char pidabs[PATH_MAX];
	char why[PATH_MAX + 128];
	pid_t live;
	int err;

	if (o->pidfile) {
		err = serve_pidfile_check(o->pidfile, pidabs, sizeof(pidabs),
					  &live, why, sizeof(why));
		if (err == -EEXIST && o->upgrade && live == o->upgrade_pid)
			err = 0;      /* the server it takes over from */
		if (err == -EEXIST) {
			fprintf(stderr, "ublk-flash: serve: --pidfile %s: %s "
				"(another server?)\n", o->pidfile, why);
			return -EBUSY;
		}
		if (err) {
			fprintf(stderr, "ublk-flash: serve: --pidfile %s: %s\n",
				o->pidfile, err == -ENOENT ? "its folder does not exist" :
				err == -ENOTDIR ? "its folder is not a folder" :
				err == -EISDIR ? "is a folder, not a file" :
				strerror(-err));
			return -EINVAL;
		}
		o->pidfile = pidabs;
	}
	/* a log FILE absolute, as its successor is told (upgrade) */
	if (o->log_kind == SERVE_LOG_FILE && o->log[0] != '/') {
		static char logabs[PATH_MAX];
		const char *rel = o->log;
		char cwd[PATH_MAX];

		while (!strncmp(rel, "./", 2))
			rel += 2;
		if (getcwd(cwd, sizeof(cwd)) &&
		    (size_t)snprintf(logabs, sizeof(logabs), "%s/%s", cwd,
				     rel) < sizeof(logabs))
			o->log = logabs;
	}
	err = serve_log_open((enum serve_log_kind)o->log_kind, o->log, why,
			     sizeof(why));
	if (err) {
		fprintf(stderr, "ublk-flash: serve: --log %s: %s\n", o->log, why);
		return o->log_kind == SERVE_LOG_SYSLOG ? serve_err_io(err, false) :
		       -EINVAL;
	}
	return 0;
}

static int serve_run(struct fe_serve_opts *o, const struct ftl_open_opts *oo,
		     struct serve_fail *f);

/* @image is served by @pid, whose entry @dir was removed under it: wait a
 * moment for it to write its entry again (once a second), then say where
 * it is served. */
static void serve_busy_unlisted(const char *image, const char *dir, pid_t pid)
{
	struct serve_entry e;
	struct timespec ts = { 0, 50 * 1000000L };

	for (int i = 0; i < 60; i++) {
		if (plumb_entry_load(dir, &e) == 0 && e.live && e.pid == pid &&
		    e.dev[0]) {
			fprintf(stderr, "ublk-flash: serve: %s is already served "
				"on %s (pid %d)\n", image, e.dm[0] ? e.dm : e.dev,
				(int)pid);
			return;
		}
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "ublk-flash: serve: %s is already served (pid %d; its "
		"run registry entry %s was removed)\n", image, (int)pid, dir);
}

int serve_main(struct fe_serve_opts *o, const struct ftl_open_opts *oo,
	       struct serve_fail *f)
{
	int err;

	memset(f, 0, sizeof(*f));
	err = serve_run(o, oo, f);
	/* a log file made for a server that never ran (the caller's process
	 * removes it: it learns the daemon's outcome) */
	if (err && !f->daemon)
		serve_log_abandon();
	f->err = err;
	return err;
}

/* A zoned image (zoned.h) has zones only ublk can show: refuse FUSE (one
 * line; -EINVAL asked for, -ENODEV the only frontend here), before
 * anything changes. */
static int serve_zoned_frontend(const struct fe_serve_opts *o,
				const struct ftl_open_opts *oo)
{
	bool fuse_asked = o->frontend && !strcmp(o->frontend, "fuse");
	const char *ftl_opt = oo->faults ? "--faults" : oo->scan ? "--scan" :
			      oo->gc != FTL_GC_GREEDY ? "--gc" :
			      oo->wl_threshold ? "--wl-threshold" :
			      !oo->bg_gc ? "--gc-thread" :
			      oo->streams ? "--streams" : NULL;

	if (zn_image_probe(o->image) != 1)
		return 0;
	if (o->dm_name || o->recover || o->upgrade || ftl_opt) {
		fprintf(stderr, "ublk-flash: serve: %s is a zoned image: %s%s\n",
			o->image, ftl_opt ? ftl_opt : o->dm_name ? "--dm" :
			o->recover ? "--recover" : "--upgrade",
			ftl_opt ? " is an FTL option, and a zoned "
			"image has no FTL" : " is not supported on zoned images "
			"yet");
		return -EINVAL;
	}
	if (!fuse_asked && (o->frontend ||
			    access("/dev/ublk-control", F_OK) == 0))
		return 0;
	fprintf(stderr, "ublk-flash: serve: %s is a zoned image: FUSE + loop "
		"cannot show zones; it needs the ublk frontend (Linux 6.6+)%s\n",
		o->image, fuse_asked ? "" : ", and this kernel has no ublk");
	return fuse_asked ? -EINVAL : -ENODEV;
}

static int serve_run(struct fe_serve_opts *o, const struct ftl_open_opts *oo,
		     struct serve_fail *f)
{
	static char image[PATH_MAX], dir[PATH_MAX];
	struct serve_entry e;
	const struct fe_ops *ops;
	int lock_fd = -1, pipefd[2], err, code;
	pid_t child;

	serve_t_start = serve_now_ns();
	if (nand_backing_is_uri(o->image)) {
		/* the medium on an NBD export: the URI names it */
		snprintf(image, sizeof(image), "%s", o->image);
	} else if (!realpath(o->image, image)) {
		char what[PATH_MAX + 16];
		snprintf(what, sizeof(what), "serve: %s", o->image);
		return serve_say(what, -errno);
	}
	o->image = image;
	/* serve --upgrade: the image's live server, before anything (its
	 * pid may be in our --pidfile) */
	if (o->upgrade) {
		err = serve_entry_dir(image, dir, sizeof(dir));
		if (err)
			return serve_say("serve --upgrade: run registry", err);
		code = serve_upgrade_target(o, dir);
		if (code)
			return code;
	}
	code = serve_check_outputs(o);
	if (code)
		return code;
	code = serve_zoned_frontend(o, oo);
	if (code)
		return code;
	ops = serve_pick(o->frontend, &err);
	if (!ops)
		return err;
	if (o->upgrade && !ops->takeover) {
		fprintf(stderr, "ublk-flash: serve --upgrade: a live upgrade "
			"needs the ublk frontend, not --frontend %s\n", ops->name);
		return -EINVAL;
	}
	err = serve_entry_dir(image, dir, sizeof(dir));
	/* serve --upgrade: the entry stays its live server's until that one
	 * hands it over with its lock (serve_upgrade_ask) */
	if (!err && !o->upgrade)
		err = serve_entry_lock(dir, &lock_fd);
	if (err == -EBUSY) {
		if (plumb_entry_load(dir, &e) == 0 && e.dev[0])
			fprintf(stderr, "ublk-flash: serve: %s is already served "
				"on %s (pid %d)\n", image, e.dev, (int)e.pid);
		else
			fprintf(stderr, "ublk-flash: serve: %s is already served\n",
				image);
		return -EBUSY;
	}
	if (err)
		return serve_say("serve: run registry", err);
	o->run_dir = dir;
	/* The lock at the path proves nothing if the folder was removed under
	 * a live server (it holds the removed lock file): nothing of it is
	 * touched, the image is served (exit 5). */
	pid_t owner;
	err = o->upgrade ? 0 : serve_entry_dead(dir, &owner);
	if (err) {
		if (!serve_entry_recorded(dir))
			serve_entry_remove(dir, false);   /* made just now */
		close(lock_fd);
		if (err == -EBUSY) {
			serve_busy_unlisted(image, dir, owner);
			return -EBUSY;
		}
		fprintf(stderr, "ublk-flash: serve: %s: cannot tell whether the "
			"server of its run registry entry is gone (/proc: %s); "
			"touched nothing\n", image, strerror(-err));
		return serve_err_io(err, false);
	}
	/* A server that died (kill -9) left its device, mount and entry.
	 * --recover (ublk) re-attaches to what it left: keep the entry. */
	if (!o->recover && !o->upgrade)
		serve_entry_cleanup(dir);
	/* What the frontend cannot honour (--recover with another access
	 * than the device's; an upgrade the device cannot take) is refused
	 * before the engine opens: the image and a dead server's entry stay
	 * as they are, for the right serve. */
	err = ops->prepare ? ops->prepare(o) : 0;
	if (err) {
		if (!serve_entry_recorded(dir))
			serve_entry_remove(dir, false);   /* made just now */
		if (lock_fd >= 0)
			close(lock_fd);
		return err == -EROFS ? -EINVAL :   /* --recover's other access */
		       err == -EOPNOTSUPP ? err : serve_err_io(err, true);
	}
	/* what a successor is told (`ublk-flash upgrade`), paths absolute */
	if (serve_options_record(o, oo, serve_options, sizeof(serve_options),
				 &serve_options_len) < 0)
		serve_options_len = 0;

	if (o->foreground) {
		code = serve_daemon(o, oo, ops, -1, &lock_fd, f);
		if (!serve_entry_recorded(dir))   /* unless kept for --recover */
			serve_entry_remove(dir, false);   /* nothing left behind */
		if (lock_fd >= 0)
			close(lock_fd);
		return code;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		code = serve_say("serve: pipe", -errno);
		if (!serve_entry_recorded(dir))
			serve_entry_remove(dir, false);
		if (lock_fd >= 0)
			close(lock_fd);
		return code;
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		code = serve_say("serve: fork", -errno);
		close(pipefd[0]);
		close(pipefd[1]);
		if (!serve_entry_recorded(dir))
			serve_entry_remove(dir, false);
		if (lock_fd >= 0)
			close(lock_fd);
		return code;
	}
	if (child > 0) {
		close(pipefd[1]);
		if (lock_fd >= 0)
			close(lock_fd);   /* the child keeps the lock */
		return serve_parent(pipefd[0], child, f);
	}
	close(pipefd[0]);
	setsid();
	if (chdir("/") < 0) {
		/* realpath()ed image: the cwd does not matter */
	}
	code = serve_daemon(o, oo, ops, pipefd[1], &lock_fd, f);
	/* However it ended, the entry goes (but a dead server's, kept by a
	 * failed --recover; one handed over to a successor; a live one a
	 * failed --upgrade wanted to take over); the log only after a clean
	 * stop (a failed start wrote none: its error went to the caller). */
	if (!serve_entry_recorded(dir))
		serve_entry_remove(dir, code == 0);
	if (lock_fd >= 0)
		close(lock_fd);
	f->daemon = true;   /* the caller ends this process (_exit) */
	return code;
}
