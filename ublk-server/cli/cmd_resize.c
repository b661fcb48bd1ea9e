/* SPDX-License-Identifier: MIT */
/* ublk-flash resize IMG --size SIZE: grow an image nobody serves. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "commands.h"
#include "ftl.h"
#include "serve.h"

static const char usage[] =
	"Usage: ublk-flash resize IMG|DEV --size SIZE\n"
	"Grow an image in place to SIZE (the exported size, as create --size:\n"
	"a whole number of 512-byte sectors, in odd mode too): new erase\n"
	"blocks after the last, a file extended.  Up to the size its\n"
	"checkpoint area was made for (create --max-size).  Served (IMG, or\n"
	"its /dev/loopN or /dev/ublkbN): online, the server grows it and the\n"
	"device follows (ublk: UPDATE_SIZE, Linux 6.14 and later, else 6).\n"
	"Power-cut safe: the old or the new size.\n"
	"Exit: 0 grown (or already SIZE); 2 usage (a bad SIZE); 3 I/O error;\n"
	"4 not an octant image or corrupt; 5 busy (held by another process);\n"
	"6 not possible, nothing changed (smaller: shrinking is not\n"
	"supported; beyond the room of create --max-size; a layout-1.0 image;\n"
	"a block device too small; served with --dm, read-only, zoned, or\n"
	"on a ublk device without UPDATE_SIZE).\n";

#define RESIZE_ANSWER_S 600       /* a grow writes a few checkpoints */

/* What ftl_grow's (or serve_grow's) -errno @r means for @img growing to
 * @size: the exit code, one line on stderr (@why: the server's reason). */
static int resize_fail(const char *img, uint64_t size, uint64_t max, int r,
		       const char *why)
{
	switch (r) {
	case -ERANGE:
		fprintf(stderr, "ublk-flash: resize: %s: %llu is smaller than the "
			"image: shrinking is not supported\n", img,
			(unsigned long long)size);
		return EXIT_UNSUPPORTED;
	case -EFBIG:
		fprintf(stderr, "ublk-flash: resize: %s: its checkpoint area holds "
			"up to %llu bytes (create --max-size); re-create it for "
			"%llu\n", img, (unsigned long long)max,
			(unsigned long long)size);
		return EXIT_UNSUPPORTED;
	case -ENOSPC:
		fprintf(stderr, "ublk-flash: resize: %s: the device is smaller "
			"than the grown image\n", img);
		return EXIT_UNSUPPORTED;
	case -EINVAL:
		fprintf(stderr, "ublk-flash: resize: --size: %llu is out of range "
			"for the image's geometry\n", (unsigned long long)size);
		return EXIT_USAGE;
	}
	if (why && why[0]) {
		fprintf(stderr, "ublk-flash: resize: %s: %s\n", img, why);
		return r == -EOPNOTSUPP || r == -EROFS ? EXIT_UNSUPPORTED :
		       r == -EBUSY ? EXIT_BUSY : EXIT_IO;
	}
	switch (r) {
	case -EOPNOTSUPP:
		fprintf(stderr, "ublk-flash: resize: %s: a layout-1.0 image (OOB "
			"area at the end) or a remote medium cannot grow in "
			"place\n", img);
		return EXIT_UNSUPPORTED;
	case -EBUSY:
		fprintf(stderr, "ublk-flash: resize: %s is in use (another "
			"process holds the image lock)\n", img);
		return EXIT_BUSY;
	default:
		return cli_image_fail("resize", img, r);
	}
}

/* Ask the server of @e to grow its image to @size ("resize SIZE" on its
 * control socket, serve_grow): the exit code. */
static int resize_online(const struct serve_entry *e, uint64_t size)
{
	struct timeval tv = { RESIZE_ANSWER_S, 0 };
	char buf[512], *why = NULL;
	unsigned long long got = 0, max = 0;
	size_t n = 0;
	ssize_t k;
	int fd, err = 0;

	fd = serve_ctl_connect(e);
	if (fd < 0) {
		fprintf(stderr, "ublk-flash: resize: %s: the server's control "
			"socket: %s\n", e->image, strerror(-fd));
		return EXIT_IO;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(buf, sizeof(buf), "resize %llu\n", (unsigned long long)size);
	if (send(fd, buf, strlen(buf), MSG_NOSIGNAL) != (ssize_t)strlen(buf))
		err = errno ? errno : EIO;
	while (!err && n < sizeof(buf) - 1 &&
	       ((k = recv(fd, buf + n, sizeof(buf) - 1 - n, 0)) > 0 ||
		(k < 0 && errno == EINTR)))
		n += k > 0 ? (size_t)k : 0;
	close(fd);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (!err && sscanf(buf, "resized %llu", &got) == 1 && got == size) {
		printf("%s: %llu bytes (served on %s)\n", e->image, got, e->dev);
		return 0;
	}
	if (!err && sscanf(buf, "failed %d %llu", &err, &max) == 2 && err > 0) {
		why = strchr(buf + 7, ' ');
		why = why ? strchr(why + 1, ' ') : NULL;
		return resize_fail(e->image, size, max, -err, why ? why + 1 : "");
	}
	fprintf(stderr, "ublk-flash: resize: %s: the server (pid %d) %s%s\n",
		e->image, (int)e->pid, err ? "did not answer: " :
		"answered something else: ", err ? strerror(err) :
		(n ? buf : "(nothing: older than online resize?)"));
	return EXIT_IO;
}

int cmd_resize(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t size = 0, max = 0;
	const char *img;
	int c, r, fd;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hs:", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_size("resize", "--size", optarg, &size))
				return EXIT_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return cli_bad_option("resize", c, argv);
		}
	}
	if (optind != argc - 1 || !size) {
		fprintf(stderr, "ublk-flash: resize: expected IMG --size SIZE\n");
		return EXIT_USAGE;
	}
	img = argv[optind];
	if (size % FTL_SECTOR) {
		fprintf(stderr, "ublk-flash: resize: --size: %llu is not a whole "
			"number of 512-byte sectors\n", (unsigned long long)size);
		return EXIT_USAGE;
	}
	/* a served image or device (or its partition, its --dm device) */
	{
		struct serve_entry e;
		char path[PATH_MAX];
		bool blk = false;

		if (!cli_find(img, &e, &blk, path, sizeof(path)) && e.live) {
			if (blk && strcmp(path, e.dev)) {
				fprintf(stderr, "ublk-flash: resize: %s is not "
					"the device %s serves %s on: name the "
					"image or %s\n", img, e.dev, e.image,
					e.dev);
				return EXIT_USAGE;
			}
			return resize_online(&e, size);
		}
	}
	if (cli_image_foreign("resize", img))
		return EXIT_CORRUPT;
	r = cli_image_set_refuse("resize", img, "it cannot grow");
	if (r)
		return r;
	/* held by another process: say which (the engine's lock says busy) */
	r = cli_image_lock("resize", img, "stop it first", &fd);
	if (r)
		return r;
	if (fd >= 0)
		close(fd);
	r = ftl_grow(img, size, &max);
	if (!r) {
		printf("%s: %llu bytes\n", img, (unsigned long long)size);
		return 0;
	}
	return resize_fail(img, size, max, r, NULL);
}
