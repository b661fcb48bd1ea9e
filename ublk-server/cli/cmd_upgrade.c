/* SPDX-License-Identifier: MIT */
/*
 * ublk-flash upgrade DEV|IMG [--binary PATH]: hand a live ublk device from
 * its running server to a freshly started one (this binary, or PATH),
 * with no I/O failed and the device never gone.  The checks that need no
 * change happen here (a live ublk server of ours, a kernel and device with
 * QUIESCE_DEV, a server that knows the handover); then this process
 * becomes `PATH serve IMG OPTIONS... --upgrade`, OPTIONS the running
 * server's own (it tells them on its control socket), which does the rest
 * (serve.c, serve/upgrade.c; docs/ublk.md, "Live upgrade").
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "frontend.h"
#include "serve.h"
#include "zoned.h"

#define UPGRADE_MAX_WORDS 64

static void upgrade_usage(FILE *out)
{
	fprintf(out,
		"Usage: ublk-flash upgrade DEV|IMG [--binary PATH]\n"
		"Hand the ublk device of DEV or IMG from its running server to a\n"
		"new one (this ublk-flash, or PATH) without failing any I/O: the\n"
		"new server prepares its queues, the running one quiesces the\n"
		"device (new requests wait in the kernel), answers what it holds,\n"
		"writes its clean checkpoint and exits; the new one opens the\n"
		"image and re-attaches the same /dev/ublkbN.  The new server gets\n"
		"the running one's options.  Prints the device and one line with\n"
		"the pause (the time the device completed no I/O).\n"
		"Needs the kernel's QUIESCE_DEV (Linux 6.16 and later).\n\n"
		"  --binary PATH   the ublk-flash to start (default: this one)\n\n"
		"Exit: 0 upgraded; 2 usage (also a PATH that is not executable);\n"
		"3 not served, or the new server failed (its line says whether the\n"
		"old one serves on, or the device waits quiesced for `serve IMG\n"
		"--recover`); 4, 5 as serve; 6 not possible here, nothing changed\n"
		"(no QUIESCE_DEV in this kernel or on this device, served over\n"
		"FUSE, a zoned image, a server older than live upgrade).\n");
}

/* The running server's options for its successor ("options" on its
 * control socket: words each ended by a NUL) into @words (pointing into
 * @buf): their count, or -errno (-EPROTO: it does not know the request). */
static int upgrade_options(const struct serve_entry *e, char *buf, size_t len,
			   char **words, int max)
{
	FILE *m = fmemopen(buf, len, "w");
	long got;
	int n = 0, err;

	if (!m)
		return -errno;
	setvbuf(m, NULL, _IONBF, 0);
	err = serve_ctl_request(e, "options", m);
	got = ftell(m);
	fclose(m);
	if (err)
		return err;
	if (got <= 0 || (size_t)got >= len || buf[got - 1] != '\0')
		return !strncmp(buf, "error: unknown command", 22) ? -EPROTO :
		       -EBADMSG;
	for (char *p = buf; p < buf + got; p += strlen(p) + 1) {
		if (n == max)
			return -E2BIG;
		words[n++] = p;
	}
	return n;
}

int cmd_upgrade(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "binary", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static char optbuf[3 * PATH_MAX + 1024], self[PATH_MAX];
	char *words[UPGRADE_MAX_WORDS], *args[UPGRADE_MAX_WORDS + 8];
	const char *binary = NULL, *arg;
	char path[PATH_MAX], why[512];
	struct serve_entry e;
	struct stat st;
	bool blk;
	int c, err, n, k = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 'b': binary = optarg; break;
		case 'h': upgrade_usage(stdout); return 0;
		default: return cli_bad_option("upgrade", c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ublk-flash: upgrade: expected one DEV or IMG "
			"(try --help)\n");
		return EXIT_USAGE;
	}
	arg = argv[optind];
	if (binary && (stat(binary, &st) < 0 || !S_ISREG(st.st_mode) ||
		       access(binary, X_OK) < 0)) {
		fprintf(stderr, "ublk-flash: upgrade: --binary %s: not an "
			"executable file\n", binary);
		return EXIT_USAGE;
	}
	err = cli_find(arg, &e, &blk, path, sizeof(path));
	if (err == -ENODEV)
		return cli_no_dm("upgrade", arg, &e);
	if (err == -ESTALE)
		return cli_stale("upgrade", arg, &e);
	if (err == -ENOENT && (blk || access(arg, F_OK) == 0)) {
		fprintf(stderr, "ublk-flash: upgrade: %s is not served\n", arg);
		return EXIT_IO;
	}
	if (err) {
		char what[PATH_MAX + 16];
		snprintf(what, sizeof(what), "upgrade: %s", arg);
		return cli_fail(what, err);
	}
	if (!e.live) {
		fprintf(stderr, "ublk-flash: upgrade: the server of %s has died%s\n",
			e.image, strcmp(e.frontend, "ublk") ? "" : "; its device "
			"waits for `ublk-flash serve IMG --recover`");
		return EXIT_IO;
	}
	if (strcmp(e.frontend, "ublk")) {
		fprintf(stderr, "ublk-flash: upgrade: %s is served over FUSE + "
			"loop on %s: a live upgrade needs the ublk frontend "
			"(stop, then serve again); nothing changed\n", e.image,
			e.dev);
		return EXIT_UNSUPPORTED;
	}
	if (zn_image_probe(e.image) == 1) {
		/* serve --upgrade refuses a zoned image (serve.c): asked to
		 * hand over, the running server would quiesce the device for
		 * a successor that never comes */
		fprintf(stderr, "ublk-flash: upgrade: %s is a zoned image: live "
			"upgrade is not supported on zoned images yet (stop, then "
			"serve again: the write pointers come back from the "
			"pages); nothing changed\n", e.image);
		return EXIT_UNSUPPORTED;
	}
	if (!serve_entry_held_by(e.dir, e.pid)) {
		fprintf(stderr, "ublk-flash: upgrade: pid %d that the entry of %s "
			"names is not the process holding it; nothing changed\n",
			(int)e.pid, e.image);
		return EXIT_IO;
	}
	err = cli_image_set_refuse("upgrade", e.image, "no live upgrade");
	if (err)
		return err;
	err = fe_ublk_upgradable(e.dev, e.image, (int)e.pid, why, sizeof(why));
	if (err) {
		fprintf(stderr, "ublk-flash: upgrade: %s: %s; nothing changed\n",
			e.dev, why);
		return err == -EOPNOTSUPP ? EXIT_UNSUPPORTED : EXIT_IO;
	}
	n = upgrade_options(&e, optbuf, sizeof(optbuf), words,
			    UPGRADE_MAX_WORDS);
	if (n < 0) {
		fprintf(stderr, "ublk-flash: upgrade: the server of %s (pid %d) "
			"%s%s; nothing changed\n", e.image, (int)e.pid,
			n == -EPROTO ? "is older than live upgrade (stop it, then "
			"serve with the new ublk-flash)" :
			"did not tell its options: ", n == -EPROTO ? "" :
			n == -EBADMSG ? "a bad answer" : strerror(-n));
		return n == -EPROTO ? EXIT_UNSUPPORTED : EXIT_IO;
	}
	if (!binary) {
		ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (l <= 0) {
			fprintf(stderr, "ublk-flash: upgrade: /proc/self/exe: %s "
				"(give --binary PATH)\n", strerror(errno));
			return EXIT_IO;
		}
		self[l] = '\0';
		binary = self;
	}
	args[k++] = (char *)binary;
	args[k++] = "serve";
	args[k++] = e.image;
	for (int i = 0; i < n; i++)
		args[k++] = words[i];
	args[k++] = "--upgrade";
	args[k] = NULL;
	fflush(NULL);
	execv(binary, args);
	fprintf(stderr, "ublk-flash: upgrade: cannot run %s: %s; nothing "
		"changed\n", binary, strerror(errno));
	return EXIT_IO;
}
