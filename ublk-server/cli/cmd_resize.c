/* SPDX-License-Identifier: MIT */
/* ublk-flash resize IMG --size SIZE: grow an image nobody serves. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ftl.h"
#include "serve.h"

static const char usage[] =
	"Usage: ublk-flash resize IMG --size SIZE\n"
	"Grow an image in place to SIZE (the exported size, as create --size:\n"
	"a whole number of 512-byte sectors, in odd mode too): new erase\n"
	"blocks after the last, a file extended.  Up to the size its\n"
	"checkpoint area was made for (create --max-size).  Offline: the\n"
	"image must not be served.  Power-cut safe: the old or the new size.\n"
	"Exit: 0 grown (or already SIZE); 2 usage (a bad SIZE); 3 I/O error;\n"
	"4 not an octant image or corrupt; 5 busy (served or held); 6 not\n"
	"possible, nothing changed (smaller: shrinking is not supported;\n"
	"beyond the room of create --max-size; a layout-1.0 image; a block\n"
	"device too small).\n";

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
	/* a served device (or its partition, its --dm device): name the
	 * image, not what the device holds */
	{
		struct serve_entry e;
		char path[PATH_MAX];
		bool blk = false;

		if (!cli_find(img, &e, &blk, path, sizeof(path)) && e.live &&
		    strcmp(e.image, img)) {
			fprintf(stderr, "ublk-flash: resize: %s is served from %s "
				"(pid %d); online resize is not supported: stop "
				"it, resize the image, serve it again\n", img,
				e.image, (int)e.pid);
			return EXIT_BUSY;
		}
	}
	if (cli_image_foreign("resize", img))
		return EXIT_CORRUPT;
	/* a served image: say where (the engine's own lock says busy) */
	r = cli_image_lock("resize", img, "stop it first (online resize is "
			   "not supported)", &fd);
	if (r)
		return r;
	if (fd >= 0)
		close(fd);
	r = ftl_grow(img, size, &max);
	switch (r) {
	case 0:
		printf("%s: %llu bytes\n", img, (unsigned long long)size);
		return 0;
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
	case -EOPNOTSUPP:
		fprintf(stderr, "ublk-flash: resize: %s: a layout-1.0 image (OOB "
			"area at the end) or a remote medium cannot grow in "
			"place\n", img);
		return EXIT_UNSUPPORTED;
	case -ENOSPC:
		fprintf(stderr, "ublk-flash: resize: %s: the device is smaller "
			"than the grown image\n", img);
		return EXIT_UNSUPPORTED;
	case -EBUSY:
		fprintf(stderr, "ublk-flash: resize: %s is in use (another "
			"process holds the image lock)\n", img);
		return EXIT_BUSY;
	case -EINVAL:
		fprintf(stderr, "ublk-flash: resize: --size: %llu is out of range "
			"for the image's geometry\n", (unsigned long long)size);
		return EXIT_USAGE;
	default:
		return cli_image_fail("resize", img, r);
	}
}
