/* SPDX-License-Identifier: MIT */
/* Why an image could not be used: one line that says what the path is. */
#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "zoned.h"
#include "ftl-set.h"
#include "nand.h"
#include "oct-format.h"
#include "serve.h"

enum kind { K_OCTANT, K_FOREIGN, K_UNKNOWN };

/* What @path holds: an octant superblock magic in either copy (K_OCTANT,
 * *version set), something we can name in @what (K_FOREIGN), or no
 * signature at all (K_UNKNOWN).  -errno when it cannot be read. */
static int image_kind(const char *path, char *what, size_t len,
		      uint32_t *version)
{
	static const size_t where[2] = { 0, OCT_SB_COPY_OFFSET };
	uint8_t area[OCT_SB_AREA];
	const char *type = NULL, *pttype = NULL;
	blkid_probe pr;
	struct stat st;
	ssize_t n;
	int fd, k = K_UNKNOWN;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (n = pread(fd, area, sizeof(area), 0)) < 0) {
		k = -errno;
		close(fd);
		return k;
	}
	close(fd);
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return K_UNKNOWN;       /* the engine says what it is */
	for (int i = 0; i < 2; i++) {
		struct oct_sb sb;

		if (where[i] + sizeof(sb) > (size_t)n ||
		    memcmp(area + where[i], OCT_SB_MAGIC, 8))
			continue;
		memcpy(&sb, area + where[i], sizeof(sb));
		*version = sb.version;
		return K_OCTANT;
	}
	for (int i = 0; i < 2; i++) {   /* a set's header (ftl-set-format.h) */
		static const size_t at[2] = { FTL_SET_COPY0, FTL_SET_COPY1 };
		struct ftl_set_hdr h;

		if (at[i] + sizeof(h) > (size_t)n ||
		    memcmp(area + at[i], FTL_SET_MAGIC, 8))
			continue;
		memcpy(&h, area + at[i], sizeof(h));
		*version = h.version;
		return K_OCTANT;
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0) {
		snprintf(what, len, "it is empty");
		return K_FOREIGN;
	}
	pr = blkid_new_probe_from_filename(path);
	if (pr) {
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
		blkid_probe_enable_partitions(pr, 1);
		if (blkid_do_safeprobe(pr) == 0) {
			blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
			blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
		}
		if (type)
			snprintf(what, len, "it holds %s", type);
		else if (pttype)
			snprintf(what, len, "it holds a %s partition table", pttype);
		blkid_free_probe(pr);
		if (type || pttype)
			return K_FOREIGN;
	}
	if ((size_t)n < OCT_SB_AREA) {
		snprintf(what, len, "%zd bytes, too small to be one", n);
		return K_FOREIGN;
	}
	return K_UNKNOWN;
}

/* "a character device" etc. for a path that is neither file nor device. */
static const char *file_type(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return "not a regular file";
	if (S_ISCHR(st.st_mode))
		return "a character device";
	if (S_ISFIFO(st.st_mode))
		return "a FIFO";
	if (S_ISSOCK(st.st_mode))
		return "a socket";
	return "not a regular file";
}

void cli_image_holds(const char *path, char *what, size_t len)
{
	uint32_t version;
	int k = image_kind(path, what, len, &version);

	if (k == K_OCTANT)
		snprintf(what, len, "it holds an octant image");
	else if (k != K_FOREIGN)
		snprintf(what, len, "it holds a signature libblkid knows");
}

int cli_image_foreign(const char *cmd, const char *path)
{
	char what[128] = "";
	uint32_t version;

	if (image_kind(path, what, sizeof(what), &version) != K_FOREIGN)
		return 0;
	fprintf(stderr, "ublk-flash: %s: %s: not an octant image (%s)\n", cmd,
		path, what);
	return 1;
}

/* The commands that read a zoned image (zoned.h, tools). */
static bool reads_zoned(const char *cmd)
{
	static const char *const c[] = { "info", "fsck", "stats", "health" };

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (!strcmp(cmd, c[i]))
			return true;
	return false;
}

int cli_image_fail(const char *cmd, const char *path, int err)
{
	return cli_image_fail_why(cmd, path, err, NULL);
}

int cli_image_fail_why(const char *cmd, const char *path, int err,
		       const char *said)
{
	char what[PATH_MAX + 64] = "";
	struct ftl_info info;
	struct stat st;
	uint32_t version = 0;
	int k;

	if (err > 0)
		err = -err;
	if (nand_backing_is_uri(path)) {
		/* a remote medium: its backing said why (before any other
		 * look at it replaces the reason); its lock's holder */
		const char *why = said && said[0] ? said :
				  nand_backing_uri_error(path);
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", why ? why : "");
		if (err == -EBUSY && nand_backing_is_rbd(path)) {
			serve_image_holder(path, what, sizeof(what));
			fprintf(stderr, "ublk-flash: %s: %s is %s\n", cmd, path,
				what);
			return EXIT_BUSY;
		}
		if (msg[0]) {
			fprintf(stderr, "ublk-flash: %s: %s\n", cmd, msg);
			return cli_exit_of(err);
		}
	}
	switch (err) {
	case -EISDIR:
		fprintf(stderr, "ublk-flash: %s: %s: is a directory, not an "
			"image\n", cmd, path);
		return EXIT_USAGE;
	case -ENOTBLK:
		fprintf(stderr, "ublk-flash: %s: %s: is %s, not an image file or "
			"a block device\n", cmd, path, file_type(path));
		return EXIT_USAGE;
	case -EBADMSG: case -EUCLEAN: case -EPROTONOSUPPORT:
		k = image_kind(path, what, sizeof(what), &version);
		if (k == K_FOREIGN) {
			fprintf(stderr, "ublk-flash: %s: %s: not an octant image "
				"(%s)\n", cmd, path, what);
		} else if (k == K_UNKNOWN) {
			fprintf(stderr, "ublk-flash: %s: %s: no octant superblock "
				"at byte 0 or %u: not an octant image, or a corrupt "
				"one (`ublk-flash fsck %s` tells)\n", cmd, path,
				OCT_SB_COPY_OFFSET, path);
		} else if (zn_image_probe(path) == 1) {
			fprintf(stderr, "ublk-flash: %s: %s: a zoned image (no FTL): "
				"%s\n", cmd, path, err == -EPROTONOSUPPORT ?
				"of another zoned version" : err == -EBADMSG &&
				!reads_zoned(cmd) ? "this command does not read "
				"zoned images yet (info, fsck, stats and health "
				"do)" : "corrupt");
		} else if (err == -EPROTONOSUPPORT) {
			fprintf(stderr, "ublk-flash: %s: %s: an octant image of "
				"format version %" PRIu32 "; this ublk-flash reads "
				"version %u\n", cmd, path, version, OCT_SB_VERSION);
		} else {
			fprintf(stderr, "ublk-flash: %s: %s: corrupt image (run "
				"`ublk-flash fsck %s`)\n", cmd, path, path);
		}
		return EXIT_CORRUPT;
	case -EINVAL:
		/* the engine's "wrong size": say which size and what it has */
		if (ftl_info_read(path, &info) == -EINVAL && stat(path, &st) == 0) {
			if (S_ISREG(st.st_mode))
				snprintf(what, sizeof(what), "it has %" PRIu64
					 " bytes", (uint64_t)st.st_size);
			else
				snprintf(what, sizeof(what), "the device is "
					 "smaller");
			fprintf(stderr, "ublk-flash: %s: %s: wrong size: the "
				"superblock needs %" PRIu64 " bytes, %s (truncated? "
				"`ublk-flash fsck %s` tells)\n", cmd, path,
				info.image_size, what, path);
			return EXIT_CORRUPT;
		}
		break;
	default:
		break;
	}
	snprintf(what, sizeof(what), "%s: %s", cmd, path);
	return cli_fail(what, err);
}

int cli_image_lock(const char *cmd, const char *path, const char *advice,
		   int *fd)
{
	char who[PATH_MAX + 64];
	int r;

	*fd = -1;
	if (nand_backing_is_rbd(path)) {
		/* its exclusive lock, probed: taken and let go (the command's
		 * own open takes it again) */
		struct nand_backing *b;
		uint64_t size;

		r = nand_backing_rbd(path, false, &b, &size);
		if (!r)
			b->ops->destroy(b);
	} else {
		r = serve_image_lock(path, fd);
	}
	if (r == -ENOENT)
		return 0;               /* nothing there yet: nothing to hold */
	if (r == -EBUSY) {
		serve_image_holder(path, who, sizeof(who));
		fprintf(stderr, "ublk-flash: %s: %s is %s%s%s\n", cmd, path, who,
			advice ? "; " : "", advice ? advice : "");
		return EXIT_BUSY;
	}
	return r ? cli_image_fail(cmd, path, r) : 0;
}

int cli_image_set_refuse(const char *cmd, const char *path, const char *what)
{
	static _Thread_local struct ftl_set_info si;   /* off the stack */

	if (ftl_set_info_read(path, &si) || si.nparts <= 1)
		return 0;
	fprintf(stderr, "ublk-flash: %s: %s is a set of %u parts: %s (not "
		"built for sets yet); nothing changed\n", cmd, path, si.nparts,
		what);
	return EXIT_UNSUPPORTED;
}
