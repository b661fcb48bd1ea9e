/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-octant-plugin — the ublk-flash engine served over NBD by nbdkit:
 *
 *     nbdkit octant IMG [align=odd|1m] [size=SIZE] [faults=SPEC]
 *            [shift=on|off] [scan=true] [readonly=true]
 *
 * nbdkit does the networking, TLS, export names and connections; this
 * file only maps NBD requests onto the engine (ftl.h).  One engine per
 * nbdkit process, shared by every connection (so multi-conn is safe: a
 * FLUSH on one connection makes the writes of all of them durable).
 *
 * Same image lock as ublk-flash: an image is served by nbdkit or by
 * ublk-flash, never both.  The lock is taken in get_ready, before nbdkit
 * daemonizes (so a busy image fails at start, on the caller's terminal,
 * and of two nbdkit started together exactly one gets it), and kept: the
 * engine, opened in after_fork, takes the lock on that same descriptor
 * (ftl_open_opts.lock_fd), so it is never let go between the check and the
 * open.  readonly=true holds it shared, as `ublk-flash serve --read-only`:
 * readers together, no writer (create, fsck --repair, a read-write serve)
 * beside them.
 *
 * NBD has block size constraints (minimum 512, preferred = the flash page,
 * maximum) but no alignment offset: an odd-mode image cannot tell an NBD
 * client that LBA 63 is the aligned one.  shift=off opens an odd image
 * unshifted (the medium from byte 0, natural 4K alignment) for clients
 * that align to the preferred size; docs/network.md explains.
 */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <nbdkit-plugin.h>

#include "byteio.h"
#include "ftl-set.h"
#include "nand.h"
#include "nand-fault.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Set by config (single-threaded), read-only afterwards. */
static char *oc_image;
static enum ftl_align_mode oc_align;      /* 0: whatever the image has */
static int64_t oc_create_size;            /* size=: create when absent */
static struct nand_fault_spec oc_faults;
static bool oc_faults_set, oc_scan, oc_readonly, oc_unshift;

/* The image lock (LOCK_EX, readonly=true LOCK_SH): taken in get_ready,
 * closed in cleanup after the engine; -1 none (an NBD medium). */
static int oc_lock_fd = -1;

/* Set in after_fork, cleared in cleanup; I/O callbacks run in between. */
static struct ftl_set *oc_set;
static pthread_mutex_t oc_rmw_lock = PTHREAD_MUTEX_INITIALIZER;

static int oc_fail(int err)
{
	nbdkit_set_error(err < 0 ? -err : err);
	return -1;
}

static void oc_unload(void)
{
	free(oc_image);
}

static int oc_config(const char *key, const char *value)
{
	char why[160];

	if (!strcmp(key, "file")) {
		free(oc_image);
		oc_image = nand_backing_is_uri(value) ? strdup(value)
						      : nbdkit_absolute_path(value);
		return oc_image ? 0 : -1;
	}
	if (!strcmp(key, "align")) {
		if (!strcmp(value, "odd"))
			oc_align = FTL_ALIGN_ODD;
		else if (!strcmp(value, "1m"))
			oc_align = FTL_ALIGN_1M;
		else {
			nbdkit_error("align: expected odd or 1m, not '%s'", value);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "size")) {
		oc_create_size = nbdkit_parse_size(value);
		return oc_create_size < 0 ? -1 : 0;
	}
	if (!strcmp(key, "faults")) {
		if (nand_fault_parse(value, &oc_faults, why, sizeof(why))) {
			nbdkit_error("faults: %s", why);
			return -1;
		}
		oc_faults_set = true;
		return 0;
	}
	if (!strcmp(key, "shift")) {
		int on = nbdkit_parse_bool(value);
		if (on < 0)
			return -1;
		oc_unshift = !on;
		return 0;
	}
	if (!strcmp(key, "scan") || !strcmp(key, "readonly")) {
		int on = nbdkit_parse_bool(value);
		if (on < 0)
			return -1;
		*(key[0] == 's' ? &oc_scan : &oc_readonly) = on;
		return 0;
	}
	nbdkit_error("unknown parameter '%s' (see nbdkit-octant-plugin(1))", key);
	return -1;
}

/* size= and no image: make the file (O_EXCL) and take the image lock on
 * it before it is written, kept as the lock get_ready would take, so of two
 * nbdkit creating one path exactly one writes it.  0, or -1 when the file
 * is there now (another made it) or cannot be made. */
static int oc_create_new(void)
{
	int fd;

	if (nand_backing_is_uri(oc_image))
		return 0;       /* an export: ftl_create checks it is blank */
	fd = open(oc_image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fd > 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
		oc_lock_fd = fd;
		return 0;
	}
	close(fd);
	return -EBUSY;          /* another locked it first */
}

/* The image must exist (or be created from size= and align=), be an
 * octant image, and have the mode align= names. */
static int oc_config_complete(void)
{
	static struct ftl_set_info si;  /* large: off the stack */
	struct ftl_info *info = &si.set;
	int r, made = 1;

	if (!oc_image) {
		nbdkit_error("no image: nbdkit octant IMG (or file=IMG)");
		return -1;
	}
	r = ftl_set_info_read(oc_image, &si);
	if (r == -ENOENT && oc_create_size > 0)
		made = oc_create_new();
	if (r == -ENOENT && oc_create_size > 0 && !made) {
		struct ftl_create_opts co = { .size = (uint64_t)oc_create_size,
			.align = oc_align ? oc_align : FTL_ALIGN_1M };

		r = ftl_create(oc_image, &co);
		if (r) {
			unlink(oc_image);       /* ours, and not an image */
			nbdkit_error("%s: create: %s", oc_image, strerror(-r));
			return -1;
		}
		r = ftl_set_info_read(oc_image, &si);
	} else if (r == -ENOENT && oc_create_size > 0) {
		/* another nbdkit (or create) made it a moment ago */
		if (made == -EEXIST || made == -EBUSY)
			nbdkit_error("%s is in use (being created by another "
				     "nbdkit or ublk-flash create)", oc_image);
		else
			nbdkit_error("%s: create: %s", oc_image, strerror(-made));
		return -1;
	}
	if (r) {
		nbdkit_error("%s: %s", oc_image, r == -EBADMSG ?
			     "not a valid octant flash image" : strerror(-r));
		return -1;
	}
	if (oc_align && info->align != oc_align) {
		nbdkit_error("%s: the image is in %s mode, not %s (modes are "
			     "fixed at create)", oc_image,
			     info->align == FTL_ALIGN_ODD ? "odd" : "1m",
			     oc_align == FTL_ALIGN_ODD ? "odd" : "1m");
		return -1;
	}
	if (oc_faults_set && oc_faults.cw && info->page_size % oc_faults.cw) {
		nbdkit_error("faults: cw=%u does not divide the %u-byte flash "
			     "page", oc_faults.cw, info->page_size);
		return -1;
	}
	if (oc_faults_set && !oc_faults.seed_set) {
		if (getrandom(&oc_faults.seed, sizeof(oc_faults.seed), 0) !=
		    sizeof(oc_faults.seed))
			oc_faults.seed = (uint64_t)getpid() << 32;
		oc_faults.seed_set = true;
	}
	if (oc_faults_set) {
		char spec[256];
		nand_fault_format(&oc_faults, spec, sizeof(spec));
		nbdkit_debug("octant: faults %s", spec);
	}
	return 0;
}

/* Take the image lock before nbdkit daemonizes, so a busy image fails at
 * start, and keep it until cleanup (the engine's open takes it on this
 * descriptor: never let go in between). */
static int oc_get_ready(void)
{
	int fd;

	if (nand_backing_is_uri(oc_image) || oc_lock_fd >= 0)
		return 0;       /* an NBD export has no lock (docs/network.md);
				   or size= made the image and holds it */
	fd = open(oc_image, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		nbdkit_error("%s: %m", oc_image);
		return -1;
	}
	if (fd == 0) {          /* stdin was closed: 0 means "none" to
				   ftl_open_opts.lock_fd */
		int d = fcntl(fd, F_DUPFD_CLOEXEC, 1);

		close(fd);
		if ((fd = d) < 0) {
			nbdkit_error("%s: %m", oc_image);
			return -1;
		}
	}
	if (flock(fd, (oc_readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		nbdkit_error("%s is in use (%s)", oc_image, oc_readonly ?
			     "open for writing: served read-write by "
			     "ublk-flash or nbdkit, or being written by "
			     "ublk-flash create or fsck --repair" :
			     "served by ublk-flash or another nbdkit, or "
			     "being written by ublk-flash");
		close(fd);
		return -1;
	}
	oc_lock_fd = fd;
	return 0;
}

static int oc_after_fork(void)
{
	struct ftl_open_opts o = { .scan = oc_scan, .readonly = oc_readonly,
		.unshifted = oc_unshift, .lock_fd = oc_lock_fd,
		.faults = oc_faults_set ? &oc_faults : NULL };
	int r = ftl_set_open(oc_image, &o, &oc_set);

	if (r) {
		nbdkit_error("%s: open: %s", oc_image, r == -EBUSY ?
			     "in use (served elsewhere)" : strerror(-r));
		return -1;
	}
	return 0;
}

/* A clean checkpoint on a normal exit; kill -9 leaves roll-forward. */
static void oc_cleanup(void)
{
	int r;

	if (!oc_set) {
		if (oc_lock_fd >= 0)
			close(oc_lock_fd);
		oc_lock_fd = -1;
		return;
	}
	r = ftl_set_close(oc_set);
	oc_set = NULL;
	if (r)
		nbdkit_error("%s: close: %s", oc_image, strerror(-r));
	if (oc_lock_fd >= 0)    /* after the engine: the image is closed */
		close(oc_lock_fd);
	oc_lock_fd = -1;
}

static void *oc_open(int readonly)
{
	(void)readonly;
	return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t oc_get_size(void *h)
{
	(void)h;
	return (int64_t)ftl_set_size(oc_set);
}

static int oc_block_size(void *h, uint32_t *minimum, uint32_t *preferred,
			 uint32_t *maximum)
{
	struct align_topology t;

	(void)h;
	ftl_set_topology(oc_set, &t);
	*minimum = FTL_SECTOR;
	*preferred = t.physical;
	*maximum = 0xffffffff;
	return 0;
}

static int oc_can_write(void *h)
{
	(void)h;
	return !oc_readonly;
}

static int oc_yes(void *h)
{
	(void)h;
	return 1;
}

static int oc_can_fua(void *h)
{
	(void)h;
	return NBDKIT_FUA_NATIVE;
}

#define SECT_ALIGNED(o, n) ((((o) | (n)) & (FTL_SECTOR - 1)) == 0)

static int oc_pread(void *h, void *buf, uint32_t count, uint64_t offset,
		    uint32_t flags)
{
	uint64_t a0 = offset & ~(uint64_t)(FTL_SECTOR - 1);
	uint64_t a1 = (offset + count + FTL_SECTOR - 1) &
		      ~(uint64_t)(FTL_SECTOR - 1);
	void *bounce;
	int r;

	(void)h;
	(void)flags;
	if (SECT_ALIGNED(offset, count))
		return (r = ftl_set_read(oc_set, buf, offset, count)) ? oc_fail(r) : 0;
	bounce = malloc((size_t)(a1 - a0));
	if (!bounce)
		return oc_fail(-ENOMEM);
	r = ftl_set_read(oc_set, bounce, a0, (size_t)(a1 - a0));
	if (!r)
		memcpy(buf, (char *)bounce + (offset - a0), count);
	free(bounce);
	return r ? oc_fail(r) : 0;
}

static int oc_pwrite(void *h, const void *buf, uint32_t count,
		     uint64_t offset, uint32_t flags)
{
	unsigned fl = (flags & NBDKIT_FLAG_FUA) ? FTL_FUA : 0;
	int r;

	(void)h;
	if (SECT_ALIGNED(offset, count))
		r = ftl_set_write(oc_set, buf, offset, count, fl);
	else
		r = fe_byteio_rmw(oc_set, &oc_rmw_lock, NULL, 0, buf, offset,
				  count, fl);
	return r ? oc_fail(r) : 0;
}

static int oc_flush(void *h, uint32_t flags)
{
	int r;

	(void)h;
	(void)flags;
	r = ftl_set_flush(oc_set);
	return r ? oc_fail(r) : 0;
}

/* NBD_CMD_TRIM is advisory: unmap the whole sectors only (a partial edge
 * sector keeps its bytes, as a disk would). */
static int oc_trim(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
	uint64_t a0 = (offset + FTL_SECTOR - 1) & ~(uint64_t)(FTL_SECTOR - 1);
	uint64_t a1 = (offset + count) & ~(uint64_t)(FTL_SECTOR - 1);
	int r = 0;

	(void)h;
	if (a1 > a0)
		r = ftl_set_discard(oc_set, a0, a1 - a0);
	if (!r && (flags & NBDKIT_FLAG_FUA))
		r = ftl_set_flush(oc_set);
	return r ? oc_fail(r) : 0;
}

/* NBD_CMD_WRITE_ZEROES: whole sectors unmap (the engine's write-zeroes
 * is an unmap either way, so it is always fast), edges by RMW. */
static int oc_zero(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
	unsigned fl = (flags & NBDKIT_FLAG_FUA) ? FTL_FUA : 0;
	int r;

	(void)h;
	r = fe_byteio_zero(oc_set, &oc_rmw_lock, NULL, 0, offset, count,
			   flags & NBDKIT_FLAG_MAY_TRIM, fl);
	if (!r && fl)
		r = ftl_set_flush(oc_set);
	return r ? oc_fail(r) : 0;
}

static struct nbdkit_plugin plugin = {
	.name              = "octant",
	.longname          = "octant emulated NAND flash (ublk-flash engine)",
	.version           = OCTANT_VERSION,
	.description       = "Serve an octant flash image (log-structured FTL "
			     "over emulated NAND) over NBD.",
	.unload            = oc_unload,
	.config            = oc_config,
	.config_complete   = oc_config_complete,
	.config_help       =
		"[file=]IMG         octant image (ublk-flash create), or an NBD URI\n"
		"align=odd|1m       require this mode (and use it with size=)\n"
		"size=SIZE          create IMG with this size if it does not exist\n"
		"faults=SPEC        a failing medium (as ublk-flash serve --faults)\n"
		"shift=on|off       odd mode: off exposes the medium unshifted\n"
		"scan=true          ignore checkpoints, rebuild from the OOB\n"
		"readonly=true      open the engine read-only (never writes)",
	.magic_config_key  = "file",
	.get_ready         = oc_get_ready,
	.after_fork        = oc_after_fork,
	.cleanup           = oc_cleanup,
	.open              = oc_open,
	.get_size          = oc_get_size,
	.block_size        = oc_block_size,
	.can_write         = oc_can_write,
	.can_flush         = oc_yes,
	.can_trim          = oc_yes,
	.can_zero          = oc_yes,
	.can_fast_zero     = oc_yes,
	.can_multi_conn    = oc_yes,
	.can_fua           = oc_can_fua,
	.pread             = oc_pread,
	.pwrite            = oc_pwrite,
	.flush             = oc_flush,
	.trim              = oc_trim,
	.zero              = oc_zero,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
