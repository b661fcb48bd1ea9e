/* SPDX-License-Identifier: MIT */
/* ublk-flash stop DEV|IMG: stop a server, clean checkpoint. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "frontend.h"
#include "serve.h"

#define STOP_TIMEOUT_MAX 86400u   /* a day; SECS * 1000 fits unsigned */
/* A dead server's entry locked by someone else (a serve or a stop
 * sweeping it): looks again every STOP_SWEEP_MS, STOP_SWEEP_TRIES times. */
#define STOP_SWEEP_MS    100
#define STOP_SWEEP_TRIES 50

/* Is block device @dev open by someone else (mounted, held)? */
static bool stop_dev_busy(const char *dev)
{
	struct timespec ts = { 0, 100 * 1000000L };
	for (int i = 0; i < 10; i++) {   /* udev may probe it for a moment */
		int fd = open(dev, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			return false;
		}
		if (errno != EBUSY)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

/*
 * The server of @e died; its lock is ours.  A ublk server's device waits
 * for `serve --recover`: remove it too (unless it is in use and not
 * @force), once it proves to be the one the entry recorded; if it cannot
 * go, say why in one line and keep the entry (exit 3, 5 busy).  Then
 * clean what the server left.
 */
static int stop_dead(const struct serve_entry *e, const char *arg, bool force)
{
	struct stat st;
	bool busy = false;
	int err = -ENOENT;

	if (!strcmp(e->frontend, "ublk") && !strncmp(e->dev, "/dev/ublkb", 10)) {
		if (stat(e->dev, &st) == 0 && S_ISBLK(st.st_mode))
			busy = stop_dev_busy(e->dev);   /* its --dm claims it too */
		if (busy && !force) {
			fprintf(stderr, "ublk-flash: stop: the server of %s had "
				"died; %s it left waiting for recovery is in use "
				"(mounted?): unmount it first or use --force\n",
				arg, e->dev);
			return EXIT_BUSY;
		}
		err = fe_ublk_remove_left(e->dev, e->image, (int)e->pid, busy);
		if (err == -ESTALE || err == -EBUSY) {
			fprintf(stderr, "ublk-flash: stop: the server of %s had "
				"died, but %s is not the device it left (%s); "
				"removed nothing, kept its entry\n", arg, e->dev,
				err == -EBUSY ? "a process serves it" :
				"its number is another device's now");
			return EXIT_IO;
		}
		if (err && err != -ENOENT) {
			fprintf(stderr, "ublk-flash: stop: the server of %s had "
				"died; could not remove %s it left waiting for "
				"recovery (%s); kept its entry\n", arg, e->dev,
				strerror(-err));
			return EXIT_IO;
		}
	}
	if (serve_entry_cleanup(e->dir) < 0) {
		fprintf(stderr, "ublk-flash: stop: %s: its server is not proven "
			"gone (a live server holds its entry); touched nothing\n",
			arg);
		return EXIT_IO;
	}
	serve_entry_remove(e->dir, false);
	if (!err)
		fprintf(stderr, "ublk-flash: stop: the server of %s had died; "
			"removed %s it left waiting for recovery%s\n", arg,
			e->dev, busy ? " (in use: its I/O fails from now on, it "
			"goes at its last close)" : "");
	else
		fprintf(stderr, "ublk-flash: stop: the server of %s had died; "
			"cleaned up what it left\n", arg);
	return 0;
}

/*
 * The server of @e exited without saying how its stop went: it did not
 * answer on its control socket and was sent SIGTERM (@signalled), or the
 * connection ended before its answer.  Whether it wrote its clean
 * checkpoint is then read from the image: exit 0 only when it is there.
 */
static int stop_unreported(const struct serve_entry *e, bool signalled)
{
	char who[PATH_MAX + 64];
	const char *how = signalled ? "did not answer on its control socket "
		"and was stopped with SIGTERM" : "exited without reporting";
	int err = serve_image_closed_clean(e);

	if (!err)
		return 0;
	if (err == -EUCLEAN) {
		fprintf(stderr, "ublk-flash: stop: the server of %s (pid %d) %s; "
			"its clean checkpoint is not on the image: the next serve "
			"rolls forward as after a crash\n", e->image, (int)e->pid,
			how);
		return EXIT_IO;
	}
	if (err == -EBUSY)
		serve_image_holder(e->image, who, sizeof(who));
	else
		snprintf(who, sizeof(who), "unreadable: %s", strerror(-err));
	fprintf(stderr, "ublk-flash: stop: the server of %s (pid %d) %s; cannot "
		"tell whether it wrote its clean checkpoint (the image is %s)\n",
		e->image, (int)e->pid, how, who);
	return EXIT_IO;
}

int cmd_stop(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "force", no_argument, NULL, 'F' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct serve_entry e;
	bool force = false;
	unsigned timeout = 60;
	int c, err;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 'F': force = true; break;
		case 't':
			if (cli_unsigned("stop", "--timeout", optarg, 1,
					 STOP_TIMEOUT_MAX, &timeout))
				return EXIT_USAGE;
			break;
		case 'h':
			printf("Usage: ublk-flash stop DEV|IMG [--force] [--timeout SECS]\n"
			       "Stop the server of DEV (a served device, a partition of it,\n"
			       "its --dm device NAME or /dev/mapper/NAME) or IMG: remove\n"
			       "the device, write a clean checkpoint, wait for the server to\n"
			       "exit (SECS 1..86400, default 60).  A device whose number now\n"
			       "belongs to another device is refused (exit 3), so is a\n"
			       "NAME with no dm device (the server whose --dm it was is\n"
			       "named: give its image or device).\n"
			       "Refuses (exit 5) while the device is open (mounted) unless\n"
			       "--force: then the filesystems on it are synced, and if it is\n"
			       "still in use after 1 s it is cut off (its I/O fails with EIO;\n"
			       "it detaches at its last close).\n"
			       "A dead server's leftovers are cleaned; a dead ublk\n"
			       "server's device (left for serve --recover) is removed\n"
			       "too once it proves to be the one its entry recorded (its\n"
			       "image's tag and pid), else its entry is kept (exit 3;\n"
			       "in use: 5 unless --force, which cuts it off).\n"
			       "A server that does not answer on its control socket is\n"
			       "sent SIGTERM; whether it wrote its clean checkpoint is\n"
			       "then read from the image once it has exited.\n"
			       "Exit: 0 stopped with a clean checkpoint (the server said\n"
			       "so, or after SIGTERM the image shows it; or a dead\n"
			       "server's leftovers cleaned); 2 usage; 3 not served, did\n"
			       "not stop, could not close the image cleanly (its clean\n"
			       "checkpoint is not on the image, or it cannot be told), or\n"
			       "a dead server's device that could not be removed; 5 busy\n"
			       "(also: the server is handing its device to a new one).\n");
			return 0;
		default:
			return cli_bad_option("stop", c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: stop: expected one DEV or IMG\n");
		return EXIT_USAGE;
	}
	const char *arg = argv[optind];
	char path[PATH_MAX];
	bool blk;
	unsigned sweeps = 0;
again:
	err = cli_find(arg, &e, &blk, path, sizeof(path));
	if (err == -ENODEV)
		return cli_no_dm("stop", arg, &e);
	if (err == -ESTALE) {
		fprintf(stderr, "ublk-flash: stop: %s is not served by ublk-flash "
			"now: the server of %s (pid %d, %s) had it, but it is no "
			"longer bound to that server's disk file (the number was "
			"reused); nothing stopped\n", arg, e.image, (int)e.pid,
			e.live ? "running" : "gone");
		return EXIT_IO;
	}
	if (err == -ENOENT && (blk || access(arg, F_OK) == 0)) {
		fprintf(stderr, "ublk-flash: stop: %s is not served\n", arg);
		return EXIT_IO;
	}
	if (err) {
		char what[PATH_MAX + 16];
		snprintf(what, sizeof(what), "stop: %s", arg);
		return cli_fail(what, err);
	}
	if (!e.live) {
		/* The server died: clean what it left, under its lock, once
		 * that is proven (a free lock at the path is not enough: the
		 * folder may have been removed under a live server, which then
		 * holds the removed lock file and writes its entry again). */
		int fd;
		pid_t owner;
		if (serve_entry_lock(e.dir, &fd) == 0) {
			err = serve_entry_dead(e.dir, &owner);
			if (!err) {
				int code = stop_dead(&e, arg, force);

				close(fd);
				return code;
			}
			close(fd);     /* it is live: let it take its lock back */
			if (err != -EBUSY) {
				fprintf(stderr, "ublk-flash: stop: %s: cannot tell "
					"whether its server is gone (/proc: %s); "
					"touched nothing\n", arg, strerror(-err));
				return EXIT_IO;
			}
			serve_entry_wait_orphans(3000);
		}
		if (plumb_entry_load(e.dir, &e) < 0 || !e.live) {
			fprintf(stderr, "ublk-flash: stop: %s is not served\n", arg);
			return EXIT_IO;
		}
	}
	/* With --dm the dm table holds the served device; the top one counts.
	 * A device that is no longer the server's (stop IMG) is not looked at:
	 * the server only releases its own. */
	const char *top = e.dm[0] ? e.dm : e.dev;
	if (top[0] && !serve_entry_verify(&e)) {
		fprintf(stderr, "ublk-flash: stop: warning: %s is no longer bound "
			"to the server of %s; stopping the server only\n", e.dev,
			e.image);
		top = "";
	}
	if (!force && top[0] && stop_dev_busy(top)) {
		fprintf(stderr, "ublk-flash: stop: %s is in use (mounted?); unmount "
			"it first or use --force\n", top);
		return EXIT_BUSY;
	}
	if (force && top[0]) {
		/* What a mounted filesystem holds dirty goes to the image
		 * while the server still answers; then it is cut off. */
		int n = serve_sync_mounts(top, 10000);
		if (n > 0)
			fprintf(stderr, "ublk-flash: stop: %s is in use: synced %d "
				"mounted filesystem%s; its I/O fails from now on\n",
				top, n, n > 1 ? "s" : "");
		else if (n == -ETIMEDOUT)
			fprintf(stderr, "ublk-flash: stop: warning: syncing the "
				"filesystems on %s takes over 10 s; stopping "
				"anyway\n", top);
	}
	char why[256];
	bool signalled;
	err = serve_stop_server(&e, timeout * 1000, force, why, sizeof(why),
				&signalled);
	if (err == -ETIMEDOUT) {
		fprintf(stderr, "ublk-flash: stop: the server (pid %d) did not exit "
			"within %u s\n", (int)e.pid, timeout);
		return EXIT_IO;
	}
	if (err == -EINPROGRESS) {
		fprintf(stderr, "ublk-flash: stop: the server of %s (pid %d) is "
			"handing its device over to a new server (ublk-flash "
			"upgrade): stop that one once it is live\n", e.image,
			(int)e.pid);
		return EXIT_BUSY;
	}
	if (err == -EPIPE)
		return stop_unreported(&e, signalled);
	if (err == -ESRCH && !serve_pid_running(e.pid) &&
	    sweeps++ < STOP_SWEEP_TRIES) {
		/* The server is dead and its entry's lock held by another
		 * process: a serve or stop cleaning it up (the entry then
		 * goes: "not served"), or the server's successor taking it. */
		struct timespec ts = { 0, STOP_SWEEP_MS * 1000000L };

		nanosleep(&ts, NULL);
		goto again;
	}
	if (err == -ESRCH) {
		fprintf(stderr, "ublk-flash: stop: the server of %s does not answer "
			"on its control socket, and pid %d that its entry names "
			"is not the process holding the entry: nothing signalled\n",
			e.image, (int)e.pid);
		return EXIT_IO;
	}
	if (err == -EIO) {
		fprintf(stderr, "ublk-flash: stop: the server of %s stopped but "
			"could not close the image cleanly (%s); the next serve "
			"rolls forward as after a crash\n", e.image, why);
		return EXIT_IO;
	}
	if (err)
		return cli_fail("stop", err);
	return 0;
}
