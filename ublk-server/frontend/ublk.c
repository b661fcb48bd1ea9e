/* SPDX-License-Identifier: MIT */
/*
 * ublk frontend: the engine as /dev/ublkbN through the kernel's ublk driver.
 *
 * start: ADD_DEV (the wanted features the driver offers: USER_RECOVERY |
 *   USER_RECOVERY_REISSUE and more, ublk-features.h; a timeout),
 *   SET_PARAMS (topology from the engine, write cache + FUA, discard), open
 *   /dev/ublkcN, start the queue threads (ublk-queue.c), START_DEV with our
 *   pid.  With --recover: find the device a dead server of the same image
 *   left (--dev-id, else the tag we keep in dev_info.ublksrv_flags),
 *   START_USER_RECOVERY once the driver has quiesced it, re-fetch on every
 *   queue, END_USER_RECOVERY: the same /dev/ublkbN is LIVE again and the
 *   requests the dead server held are reissued to us.
 * stop: sync the block device, STOP_DEV (the driver waits for in-flight
 *   requests, then aborts every fetch so the queue threads end), DEL_DEV.
 * live upgrade (UBLK_F_QUIESCE): the new server (serve --upgrade) prepares
 *   its queues (takeover) before the old one is asked; the old one sends
 *   QUIESCE_DEV (quiesce: new requests wait in the kernel, idle fetches are
 *   aborted), its queues answer what they hold and end, it closes
 *   /dev/ublkcN and the engine (stop after quiesce: no STOP_DEV), and the
 *   driver marks the device QUIESCED; the new server then recovers it as
 *   --recover does.  docs/ublk.md, "Live upgrade".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frontend.h"
#include "nand.h"
#include "oct-proc.h"
#include "sysfs.h"
#include "ublk-int.h"
#include "zoned.h"

#define UBLK_DEF_QUEUES   1u
#define UBLK_DEF_DEPTH    64u
#define UBLK_BUF_BYTES    (512u << 10)   /* per-tag buffer = max I/O size */
#define UBLK_MAX_DISCARD  (64u << 11)    /* sectors per discard: 64 MiB */
#define UBLK_ADD_TIMEOUT  10000u         /* ms */
#define UBLK_START_TIMEOUT 60000u        /* START_DEV scans partitions */
#define UBLK_RECOVER_WAIT 30000u         /* dead server -> QUIESCED */
#define UBLK_QUIESCE_WAIT 10000u         /* QUIESCE_DEV's wait for idle queues */
#define UBLK_QUIESCE_TRIES 6u            /* ... asked again while -EBUSY */
#define UBLK_SCAN_IDS     256u           /* ids tried without sysfs */

static const char ublk_no_driver[] = "no /dev/ublk-control: load the driver "
	"(modprobe ublk_drv) or use --frontend fuse";

static int ublk_probe(char *why, size_t len)
{
	int fd;

	if (access("/dev/ublk-control", F_OK) != 0) {
		snprintf(why, len, "%s", ublk_no_driver);
		return -ENODEV;
	}
	fd = open("/dev/ublk-control", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		snprintf(why, len, "/dev/ublk-control: %s", strerror(-err));
		return err;
	}
	close(fd);
	return 0;
}

/* FNV-1a of @len bytes at @p, folded into a tag. */
static uint64_t ublk_tag_hash(const void *p, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= ((const unsigned char *)p)[i];
		h *= 1099511628211ULL;
	}
	return UBLK_TAG(h);
}

/* The image's tag (dev_info.ublksrv_flags): a file's st_dev and st_ino
 * hashed; a remote medium's URI (nbd://, rbd://), which has no inode,
 * hashed as written (serve --recover gives the same URI).  0: none. */
static uint64_t ublk_image_tag(const char *image)
{
	struct stat st;
	uint64_t v[2];

	if (nand_backing_is_uri(image))
		return ublk_tag_hash(image, strlen(image));
	if (stat(image, &st) < 0)
		return 0;
	v[0] = st.st_dev;
	v[1] = st.st_ino;
	return ublk_tag_hash(v, sizeof(v));
}

static void ublk_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Wait up to @ms for a device node (udev, or devtmpfs, creates it). */
static int ublk_wait_node(const char *path, unsigned ms)
{
	unsigned waited = 0;

	while (access(path, F_OK) != 0) {
		if (waited >= ms)
			return -ENOENT;
		ublk_sleep_ms(20);
		waited += 20;
	}
	return 0;
}

static unsigned ublk_log2(uint32_t v)
{
	unsigned s = 0;

	while (v > 1) {
		v >>= 1;
		s++;
	}
	return s;
}

/* Parameters: the engine's topology, a volatile write cache with FUA, one
 * discard segment per request at page granularity. */
static void ublk_params_fill(struct ublk_dev *d, struct ublk_params *p)
{
	struct align_topology t;
	uint32_t phys, io_min, io_opt;

	if (d->zn) {
		ublk_zoned_params(d, p);
		return;
	}
	ftl_set_topology(d->set, &t);
	phys = t.physical ? t.physical : 4096;
	io_min = t.io_min ? t.io_min : phys;
	io_opt = t.io_opt ? t.io_opt : (t.erase_block ? t.erase_block : phys);
	memset(p, 0, sizeof(*p));
	p->types = UBLK_PARAM_TYPE_BASIC | UBLK_PARAM_TYPE_DISCARD;
	p->basic.attrs = UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA;
	if (d->read_only)   /* set_disk_ro(): the kernel refuses writers */
		p->basic.attrs |= UBLK_ATTR_READ_ONLY;
	p->basic.logical_bs_shift = 9;
	p->basic.physical_bs_shift = (uint8_t)ublk_log2(phys);
	p->basic.io_min_shift = (uint8_t)ublk_log2(io_min);
	p->basic.io_opt_shift = (uint8_t)ublk_log2(io_opt);
	p->basic.max_sectors = d->buf_size >> 9;
	p->basic.dev_sectors = ftl_set_size(d->set) / FTL_SECTOR;
	/* No alignment offset either way: ublk cannot report one, and a discard
	 * alignment that disagreed with it would mislead stacked devices
	 * (--dm carries the odd-mode shift). */
	p->discard.discard_alignment = 0;
	p->discard.discard_granularity = phys;
	p->discard.max_discard_sectors = UBLK_MAX_DISCARD;
	p->discard.max_write_zeroes_sectors = UBLK_MAX_DISCARD;
	p->discard.max_discard_segments = 1;
	if (d->pi)
		ublk_pi_params(p);
}

/* Find a device carrying @tag; its info in *info.  -ENOENT if none. */
static int ublk_find_tagged(struct ublk_dev *d, uint64_t tag,
			    struct ublksrv_ctrl_dev_info *info)
{
	DIR *dir = plumb_sysfs_class_open("ublk-char");
	struct dirent *de;
	unsigned id;

	if (!tag) {
		if (dir)
			closedir(dir);
		return -ENOENT;
	}
	if (dir) {
		while ((de = readdir(dir))) {
			if (sscanf(de->d_name, "ublkc%u", &id) != 1)
				continue;
			if (ublk_ctrl_get_info(&d->ctrl, id, info) == 0 &&
			    info->ublksrv_flags == tag) {
				closedir(dir);
				return 0;
			}
		}
		closedir(dir);
		return -ENOENT;
	}
	for (id = 0; id < UBLK_SCAN_IDS; id++)
		if (ublk_ctrl_get_info(&d->ctrl, id, info) == 0 &&
		    info->ublksrv_flags == tag)
			return 0;
	return -ENOENT;
}

/* What every queue needs that can fail for want of memory, threads or
 * descriptors -- buffers, rings, workers, and the descriptor /dev/ublkcN
 * will take -- before the driver is asked anything that cannot be undone
 * (START_DEV, START_USER_RECOVERY). */
static int ublk_queues_prepare(struct ublk_dev *d)
{
	unsigned i;
	int ret;

	d->io_ioctl = !!(d->info.flags & UBLK_F_CMD_IOCTL_ENCODE);
	d->buf_size = d->info.max_io_buf_bytes;
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	d->q = calloc(d->info.nr_hw_queues, sizeof(*d->q));
	if (d->spare_fd < 0 || !d->q) {
		ret = d->spare_fd < 0 ? -errno : -ENOMEM;
		fprintf(stderr, "ublk-flash: ublk queues: %s\n", strerror(-ret));
		return ret;
	}
	for (i = 0; i < d->info.nr_hw_queues; i++) {
		ret = ublk_q_prepare(d, i);
		if (ret) {
			fprintf(stderr, "ublk-flash: ublk queue %u: %s\n", i,
				strerror(-ret));
			ublk_q_fetch(d, false);   /* the others end, untouched */
			return ret;
		}
	}
	return 0;
}

/* Open /dev/ublkcN (in the spare descriptor's place), map every queue's
 * descriptors and let the queues fetch every tag. */
static int ublk_queues_attach(struct ublk_dev *d)
{
	char path[64];
	unsigned i;
	int ret;

	snprintf(path, sizeof(path), "/dev/ublkc%u", d->info.dev_id);
	ret = ublk_wait_node(path, 5000);
	if (!ret) {
		close(d->spare_fd);
		d->spare_fd = -1;
		d->cdev_fd = open(path, O_RDWR | O_CLOEXEC);
		ret = d->cdev_fd < 0 ? -errno : 0;
	}
	if (ret) {
		fprintf(stderr, "ublk-flash: ublk: %s: %s\n", path, strerror(-ret));
		ublk_q_fetch(d, false);
		return ret;
	}
	for (i = 0; i < d->info.nr_hw_queues; i++) {
		ret = ublk_q_map(d, i);
		if (ret) {
			fprintf(stderr, "ublk-flash: ublk queue %u: map: %s\n", i,
				strerror(-ret));
			ublk_q_fetch(d, false);
			return ret;
		}
	}
	ret = ublk_q_fetch(d, true);
	if (ret)
		fprintf(stderr, "ublk-flash: ublk queues: %s\n", strerror(-ret));
	return ret;
}

static int ublk_add(struct ublk_dev *d, const struct fe_serve_opts *o,
		    uint64_t tag)
{
	struct ublksrv_ctrl_dev_info info = { 0 };
	struct ublk_params p;
	int ret;

	if (tag && ublk_find_tagged(d, tag, &info) == 0)
		fprintf(stderr, "ublk-flash: note: /dev/ublkb%u was left by a dead "
			"server of %s; `serve --recover` re-attaches it\n",
			info.dev_id, o->image);
	memset(&info, 0, sizeof(info));
	info.nr_hw_queues = (uint16_t)(o->queues ? o->queues : UBLK_DEF_QUEUES);
	info.queue_depth = (uint16_t)(o->depth ? o->depth : UBLK_DEF_DEPTH);
	if (o->queues > 64 || o->depth > UBLK_MAX_QUEUE_DEPTH) {
		fprintf(stderr, "ublk-flash: ublk: --queues is at most 64 and "
			"--depth at most %d\n", UBLK_MAX_QUEUE_DEPTH);
		return -EINVAL;
	}
	info.max_io_buf_bytes = UBLK_BUF_BYTES;
	info.dev_id = o->dev_id < 0 ? UINT32_MAX : (uint32_t)o->dev_id;
	info.flags = ublk_ctrl_add_flags(&d->ctrl);   /* ublk-features.h */
	if (d->zn) {        /* a zoned image: ZONED and USER_COPY, or nothing */
		uint64_t zf = ublk_zoned_flags();

		if (!zf || (d->ctrl.features & zf) != zf) {
			fprintf(stderr, "ublk-flash: ublk: %s is a zoned image and "
				"this %s has no zoned ublk (UBLK_F_ZONED with "
				"USER_COPY: Linux 6.6+)\n", o->image, zf ?
				"kernel's ublk driver" : "ublk-flash (built with "
				"an older uapi header)");
			return -EOPNOTSUPP;
		}
		/* its data moves by user copy: no automatic buffer registration */
		info.flags = (info.flags & ~UBLK_FEAT(AUTO_BUF_REG)) | zf;
	}
	if (d->pi) {        /* PI: INTEGRITY and USER_COPY, or refused */
		uint64_t pf = ublk_pi_flags();

		if (!pf || (d->ctrl.features & pf) != pf) {
			fprintf(stderr, "ublk-flash: ublk: %s has protection "
				"information (create --integrity t10dif) and this "
				"%s has no integrity ublk (UBLK_F_INTEGRITY with "
				"USER_COPY: Linux 7.0+); refused rather than served "
				"without the end-to-end check (--frontend fuse "
				"serves it without PI)\n", o->image, pf ?
				"kernel's ublk driver" : "ublk-flash (built with "
				"an older uapi header)");
			return -EOPNOTSUPP;
		}
		info.flags = (info.flags & ~UBLK_FEAT(AUTO_BUF_REG)) | pf;
	}
	info.ublksrv_flags = tag;
	ret = ublk_ctrl_add_dev(&d->ctrl, &info, UBLK_ADD_TIMEOUT);
	if (ret) {
		if (ret == -ETIMEDOUT)
			fprintf(stderr, "ublk-flash: ublk: ADD_DEV did not answer "
				"within %u s\n", UBLK_ADD_TIMEOUT / 1000);
		else if (ret == -EEXIST && o->dev_id >= 0)
			fprintf(stderr, "ublk-flash: ublk: device id %d is in use\n",
				o->dev_id);
		else
			fprintf(stderr, "ublk-flash: ublk: ADD_DEV: %s\n",
				strerror(-ret));
		return ret == -EEXIST ? -EBUSY : ret;
	}
	d->info = info;
	d->added = true;
	if (!(info.flags & UBLK_F_USER_RECOVERY))
		fprintf(stderr, "ublk-flash: warning: the ublk driver has no user "
			"recovery; a crashed server loses the device\n");
	d->buf_size = info.max_io_buf_bytes;
	ublk_params_fill(d, &p);
	ret = ublk_ctrl_set_params(&d->ctrl, info.dev_id, &p);
	if (ret) {
		fprintf(stderr, "ublk-flash: ublk: SET_PARAMS: %s\n", strerror(-ret));
		return ret;
	}
	ret = ublk_queues_prepare(d);
	if (!ret)
		ret = ublk_queues_attach(d);
	if (ret)
		return ret;
	ret = ublk_ctrl_start_dev(&d->ctrl, info.dev_id, (int)getpid(),
				  UBLK_START_TIMEOUT);
	if (ret) {
		fprintf(stderr, "ublk-flash: ublk: START_DEV: %s\n", strerror(-ret));
		return ret;
	}
	d->started = true;
	return 0;
}

/* Can device @id (its info into *info) be taken over live from the server
 * of @image, pid @pid?  0; else -ENOENT, -ESTALE or -EOPNOTSUPP with the
 * reason in @why (docs: fe_ublk_upgradable). */
static int ublk_upgrade_check(struct ublk_ctrl *c, unsigned id,
			      const char *image, int pid,
			      struct ublksrv_ctrl_dev_info *info, char *why,
			      size_t len)
{
	uint64_t tag = ublk_image_tag(image);
	struct utsname u;
	int ret = ublk_ctrl_get_info(c, id, info);

	if (ret) {
		snprintf(why, len, "no such ublk device (%s)", strerror(-ret));
		return ret == -ENODEV ? -ENOENT : ret;
	}
	if ((tag && info->ublksrv_flags != tag) || info->ublksrv_pid != pid) {
		snprintf(why, len, "it is not the device pid %d serves from %s "
			 "(the kernel records pid %d)", pid, image,
			 info->ublksrv_pid);
		return -ESTALE;
	}
	if (info->state != UBLK_S_DEV_LIVE) {
		snprintf(why, len, "it is not live (state %u: its server "
			 "died? `serve --recover` re-attaches it)", info->state);
		return -ESTALE;
	}
	if (!(info->flags & UBLK_F_QUIESCE) ||
	    !(info->flags & UBLK_F_USER_RECOVERY)) {
		if (uname(&u) < 0)
			snprintf(u.release, sizeof(u.release), "?");
		if (!(c->features & UBLK_F_QUIESCE))
			snprintf(why, len, "the kernel's ublk driver (Linux %s) "
				 "has no QUIESCE_DEV (UBLK_F_QUIESCE, Linux 6.16 "
				 "and later): a live upgrade cannot be done here",
				 u.release);
		else
			snprintf(why, len, "it was added without %s (by an "
				 "older server): a live upgrade cannot be done "
				 "on it", info->flags & UBLK_F_USER_RECOVERY ?
				 "UBLK_F_QUIESCE" : "user recovery");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* serve --upgrade: the device the live server (opts->upgrade_pid) serves,
 * number opts->dev_id (the registry's), into d->info; one line and
 * -errno if it cannot be taken over. */
static int ublk_upgrade_find(struct ublk_dev *d, const struct fe_serve_opts *o)
{
	char why[256];
	int ret = ublk_upgrade_check(&d->ctrl, (unsigned)o->dev_id, o->image,
				     o->upgrade_pid, &d->info, why, sizeof(why));

	if (ret)
		fprintf(stderr, "ublk-flash: serve --upgrade: /dev/ublkb%d: %s; "
			"nothing changed\n", o->dev_id, why);
	return ret;
}

int fe_ublk_upgradable(const char *dev, const char *image, int pid,
		       char *why, size_t len)
{
	struct ublksrv_ctrl_dev_info info;
	struct ublk_ctrl c;
	unsigned id;
	int ret;

	snprintf(why, len, "not a ublk device");
	if (sscanf(dev, "/dev/ublkb%u", &id) != 1)
		return -EINVAL;
	if ((ret = ublk_ctrl_open(&c))) {
		if (ret == -ENOENT)   /* this kernel has no ublk driver loaded */
			snprintf(why, len, "no /dev/ublk-control: the ublk driver "
				 "is not loaded");
		else
			snprintf(why, len, "/dev/ublk-control: %s",
				 strerror(-ret));
		return ret;
	}
	ret = ublk_upgrade_check(&c, id, image, pid, &info, why, len);
	if (!c.lost)
		ublk_ctrl_close(&c);
	return ret;
}

/* The device to recover: --dev-id, else the one tagged with our image. */
static int ublk_recover_find(struct ublk_dev *d, const struct fe_serve_opts *o,
			     uint64_t tag)
{
	struct ublksrv_ctrl_dev_info *info = &d->info;
	int ret;

	if (o->dev_id >= 0) {
		ret = ublk_ctrl_get_info(&d->ctrl, (uint32_t)o->dev_id, info);
		if (ret) {
			fprintf(stderr, "ublk-flash: serve --recover: no ublk "
				"device %d\n", o->dev_id);
			return -ENOENT;
		}
		if (tag && info->ublksrv_flags != tag) {
			fprintf(stderr, "ublk-flash: serve --recover: /dev/ublkb%d "
				"was not served from %s\n", o->dev_id, o->image);
			return -EINVAL;
		}
	} else if (ublk_find_tagged(d, tag, info) < 0) {
		fprintf(stderr, "ublk-flash: serve --recover: no ublk device "
			"left by a server of %s\n", o->image);
		return -ENOENT;
	}
	if (!(info->flags & UBLK_F_USER_RECOVERY)) {
		fprintf(stderr, "ublk-flash: serve --recover: /dev/ublkb%u was "
			"added without user recovery\n", info->dev_id);
		return -EINVAL;
	}
	if (info->state == UBLK_S_DEV_LIVE && info->ublksrv_pid > 0 &&
	    kill(info->ublksrv_pid, 0) == 0) {
		fprintf(stderr, "ublk-flash: serve --recover: /dev/ublkb%u is "
			"served by pid %d\n", info->dev_id, info->ublksrv_pid);
		return -EBUSY;
	}
	return 0;
}

/*
 * serve --recover, before the engine opens: the device a dead server left
 * must be one we can recover with the access asked for.  The driver applies
 * a device's parameters -- its read-only attribute is set_disk_ro() of
 * UBLK_ATTR_READ_ONLY -- when the device starts, never when a recovery
 * ends, so a --read-only other than the device's could not be honoured:
 * one line and -EROFS.  Also refuses what ublk_recover_find refuses (its
 * line printed), so that nothing is opened or changed for it.
 */
static int ublk_prepare(const struct fe_serve_opts *o)
{
	struct ublk_params p;
	struct ublk_dev *d;
	bool ro;
	int ret;

	if (!o->recover && !o->upgrade)
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ctrl.fd = -1;
	if (ublk_ctrl_open(&d->ctrl) < 0) {
		free(d);
		return 0;             /* start says why */
	}
	ret = o->upgrade ? ublk_upgrade_find(d, o) :
			   ublk_recover_find(d, o, ublk_image_tag(o->image));
	if (ret)
		goto out;
	ret = ublk_ctrl_get_params(&d->ctrl, d->info.dev_id, &p);
	if (ret) {
		fprintf(stderr, "ublk-flash: serve --recover: warning: cannot "
			"read the parameters of /dev/ublkb%u (%s): it keeps the "
			"read-only attribute it was created with\n",
			d->info.dev_id, strerror(-ret));
		ret = 0;
		goto out;
	}
	ro = p.basic.attrs & UBLK_ATTR_READ_ONLY;
	if (ro != o->read_only && o->upgrade) {
		fprintf(stderr, "ublk-flash: serve --upgrade: /dev/ublkb%u was "
			"created %s and its successor keeps that: give "
			"--read-only exactly when it was served with it; nothing "
			"changed\n", d->info.dev_id,
			ro ? "read-only" : "read-write");
		ret = -EROFS;
	} else if (ro != o->read_only) {
		fprintf(stderr, "ublk-flash: serve --recover: /dev/ublkb%u was "
			"created %s and recovery cannot change that: recover it "
			"%s --read-only (to serve it %s: recover, stop, serve%s)\n",
			d->info.dev_id, ro ? "read-only" : "read-write",
			ro ? "with" : "without", ro ? "read-write" : "read-only",
			ro ? "" : " --read-only");
		ret = -EROFS;
	}
out:
	if (d->ctrl.lost)
		return ret;           /* the kernel may still write it: leak */
	ublk_ctrl_close(&d->ctrl);
	free(d);
	return ret;
}

static int ublk_recover(struct ublk_dev *d, const struct fe_serve_opts *o,
			uint64_t tag)
{
	const char *how = o->upgrade ? "upgrade" : "recover";
	/* a live upgrade's old server has closed the device already: the
	 * driver marks it QUIESCED at once, so ask often */
	unsigned step = o->upgrade ? 5 : 100;
	struct ublk_params p;
	unsigned waited = 0;
	uint64_t want;
	bool grow;
	int ret;

	if (d->upgrade) {   /* found and checked by takeover; handed over */
		ret = ublk_ctrl_get_info(&d->ctrl, d->info.dev_id, &d->info);
		if (!ret && tag && d->info.ublksrv_flags != tag)
			ret = -ESTALE;
		if (ret) {
			fprintf(stderr, "ublk-flash: serve --upgrade: /dev/ublkb%u "
				"is not the device handed over any more (%s)\n",
				d->info.dev_id, strerror(-ret));
			return ret;
		}
	} else {
		ret = ublk_recover_find(d, o, tag);
		if (ret)
			return ret;
	}
	want = d->zn ? zn_sectors(d->zn) : ftl_set_size(d->set) / FTL_SECTOR;
	ret = ublk_ctrl_get_params(&d->ctrl, d->info.dev_id, &p);
	/* smaller, with UPDATE_SIZE: an online resize whose server died
	 * between the engine's grow and UPDATE_SIZE (serve/grow.c): the
	 * device grows once live again */
	grow = ret == 0 && p.basic.dev_sectors < want && !d->zn &&
	       (d->info.flags & UBLK_FEAT(UPDATE_SIZE));
	if (ret == 0 && p.basic.dev_sectors != want && !grow) {
		fprintf(stderr, "ublk-flash: serve --%s: /dev/ublkb%u has "
			"another size than %s\n", how, d->info.dev_id, o->image);
		return -EINVAL;
	}
	/* Whatever can fail for want of resources fails now, while the
	 * device still waits as the dead server left it: after
	 * START_USER_RECOVERY a failure can only be undone by STOP_DEV on
	 * the 6.1 and 6.12 drivers (their next START_USER_RECOVERY is
	 * refused with EINVAL, or on 6.1 dereferences NULL), which removes
	 * it (docs/ublk.md).  (A live upgrade prepared them before it asked
	 * for the device: ublk_takeover.) */
	ret = d->q ? 0 : ublk_queues_prepare(d);
	if (ret)
		return ret;
	/* The driver quiesces the device once it notices the dead server
	 * (at once on new I/O, else within ~5 s): -EBUSY until then. */
	while ((ret = ublk_ctrl_start_recovery(&d->ctrl, d->info.dev_id)) ==
	       -EBUSY && waited < UBLK_RECOVER_WAIT) {
		ublk_sleep_ms(step);
		waited += step;
	}
	if (ret) {
		fprintf(stderr, "ublk-flash: serve --%s: START_USER_RECOVERY "
			"on /dev/ublkb%u: %s\n", how, d->info.dev_id,
			strerror(-ret));
		return ret == -EBUSY ? -EBUSY : ret;
	}
	d->added = true;
	ret = ublk_queues_attach(d);
	if (ret)
		return ret;
	ret = ublk_ctrl_end_recovery(&d->ctrl, d->info.dev_id, (int)getpid(),
				     UBLK_START_TIMEOUT);
	if (ret) {
		fprintf(stderr, "ublk-flash: serve --%s: END_USER_RECOVERY: "
			"%s\n", how, strerror(-ret));
		return ret;
	}
	d->started = true;
	if (grow) {
		ret = ublk_ctrl_update_size(&d->ctrl, d->info.dev_id, want);
		if (ret)        /* live at the old size: the engine has more */
			fprintf(stderr, "ublk-flash: warning: serve --%s: "
				"UPDATE_SIZE /dev/ublkb%u to %llu sectors: %s\n",
				how, d->info.dev_id, (unsigned long long)want,
				strerror(-ret));
	}
	return 0;
}

/* The frontend's state for @s, its control open: 0 or -errno (one line). */
static int ublk_dev_new(struct fe_server *s)
{
	struct ublk_dev *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return -ENOMEM;
	d->set = s->set;
	d->zn = s->zn;
	d->pi = s->set && ftl_set_has_pi(s->set);
	d->read_only = s->opts->read_only;
	d->cdev_fd = -1;
	d->event_fd = -1;
	d->spare_fd = -1;
	d->ctrl.fd = -1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	s->priv = d;
	d->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->event_fd < 0) {
		ret = -errno;
		fprintf(stderr, "ublk-flash: ublk: eventfd: %s\n", strerror(-ret));
		return ret;
	}
	ret = ublk_ctrl_open(&d->ctrl);
	if (ret) {
		if (ret == -ENOENT)
			fprintf(stderr, "ublk-flash: %s\n", ublk_no_driver);
		else
			fprintf(stderr, "ublk-flash: /dev/ublk-control: %s\n",
				strerror(-ret));
	}
	return ret;
}

/* serve --upgrade, before the live server is asked for its device (and
 * before the engine opens): find and check the device again, and prepare
 * every queue (buffers, rings, workers: armed, nothing asked of the
 * driver), so that what can fail for want of resources fails while the
 * old server still serves. */
static int ublk_takeover(struct fe_server *s)
{
	struct ublk_dev *d;
	int ret = ublk_dev_new(s);

	d = s->priv;
	if (ret)
		return ret;
	d->upgrade = true;
	ret = ublk_upgrade_find(d, s->opts);
	if (!ret)
		ret = ublk_queues_prepare(d);
	return ret;
}

static int ublk_start(struct fe_server *s)
{
	struct ublk_dev *d = s->priv;
	uint64_t tag;
	int ret;

	if (!d) {
		ret = ublk_dev_new(s);
		d = s->priv;
		if (ret)
			return ret;
	}
	d->set = s->set;   /* takeover ran before the engine opened */
	tag = ublk_image_tag(s->opts->image);
	ret = s->opts->recover || s->opts->upgrade ?
		ublk_recover(d, s->opts, tag) : ublk_add(d, s->opts, tag);
	if (ret)
		return ret;
	snprintf(s->devpath, sizeof(s->devpath), "/dev/ublkb%u", d->info.dev_id);
	if (ublk_wait_node(s->devpath, 5000) < 0)
		fprintf(stderr, "ublk-flash: warning: %s did not appear\n",
			s->devpath);
	return 0;
}

/* A live upgrade asked for the device: QUIESCE_DEV (asked again while the
 * driver says the queues are busy, up to UBLK_QUIESCE_TRIES times).  New
 * requests wait in the kernel from then on; the queues answer what they
 * hold and end (ublk-queue.c, draining), and stop() hands the device
 * over. */
static int ublk_quiesce(struct fe_server *s)
{
	struct ublk_dev *d = s->priv;
	unsigned i;
	int ret = -EBUSY;

	if (!d || !d->started || !(d->info.flags & UBLK_F_QUIESCE))
		return -EOPNOTSUPP;
	__atomic_store_n(&d->quiescing, true, __ATOMIC_RELEASE);
	for (i = 0; i < UBLK_QUIESCE_TRIES && ret == -EBUSY; i++) {
		if (i)
			fprintf(stderr, "ublk-flash: ublk: QUIESCE_DEV: requests "
				"still in flight after %u s; asking again\n",
				i * UBLK_QUIESCE_WAIT / 1000);
		ret = ublk_ctrl_quiesce_dev(&d->ctrl, d->info.dev_id,
					    UBLK_QUIESCE_WAIT);
	}
	if (ret) {
		/* -EBUSY: the driver keeps new requests waiting (its
		 * "canceling" stays set) while ours are stuck in the engine;
		 * nothing better can be done than serving what we hold */
		__atomic_store_n(&d->quiescing, false, __ATOMIC_RELEASE);
		fprintf(stderr, "ublk-flash: ublk: QUIESCE_DEV on %s: %s\n",
			s->devpath, strerror(-ret));
		return ret;
	}
	d->quiesced = true;
	return 0;
}

static int ublk_run(struct fe_server *s)
{
	struct ublk_dev *d = s->priv;
	struct pollfd pf[2] = {
		{ .fd = s->stop_fd, .events = POLLIN },
		{ .fd = d->event_fd, .events = POLLIN },
	};
	unsigned i;

	for (;;) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pf[0].revents)
			return 0;
		if (!pf[1].revents)
			continue;
		/* A queue thread ended on its own: failed, or the device was
		 * removed behind our back. */
		pthread_mutex_lock(&d->lock);
		for (i = 0; i < d->info.nr_hw_queues; i++) {
			struct ublk_queue *q = &d->q[i];
			if (q->state == UBLK_Q_FAILED || q->state == UBLK_Q_DONE) {
				int err = q->state == UBLK_Q_FAILED ? q->err : -ENODEV;
				pthread_mutex_unlock(&d->lock);
				fprintf(stderr, "ublk-flash: ublk queue %u ended: %s\n",
					i, strerror(-err));
				return err ? err : -EIO;
			}
		}
		pthread_mutex_unlock(&d->lock);
	}
}

/* Write back what the page cache holds for the device while the queues
 * still serve (STOP_DEV fails requests that arrive after it). */
static void ublk_drain(const char *devpath)
{
	int fd = open(devpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return;
	if (fsync(fd) < 0)
		fprintf(stderr, "ublk-flash: warning: sync %s: %s\n", devpath,
			strerror(errno));
	close(fd);
}

static bool ublk_q_ended(struct ublk_dev *d, unsigned i)
{
	bool ended;

	pthread_mutex_lock(&d->lock);
	ended = !d->q[i].thread_ok || d->q[i].state == UBLK_Q_DONE ||
		d->q[i].state == UBLK_Q_FAILED;
	pthread_mutex_unlock(&d->lock);
	return ended;
}

static void ublk_stop(struct fe_server *s)
{
	struct ublk_dev *d = s->priv;
	bool stopped = false, joined = true, keep = false;
	unsigned i;
	int ret;

	if (!d)
		return;
	ublk_q_fetch(d, false);   /* queues still armed end, untouched */
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	d->spare_fd = -1;
	/* Handed over (quiesce), or a live upgrade that failed before any
	 * queue fetched: the device stays.  Once /dev/ublkcN is closed the
	 * driver marks it QUIESCED, its requests waiting for the next server
	 * (drivers with QUIESCE reset the device at that close, so another
	 * START_USER_RECOVERY is taken). */
	if (d->quiesced || (d->upgrade && !d->go))
		keep = true;
	if (d->added && !d->ctrl.lost && !keep) {
		if (d->started)
			ublk_drain(s->devpath);
		ret = ublk_ctrl_stop_dev(&d->ctrl, d->info.dev_id, 60000);
		if (ret)
			fprintf(stderr, "ublk-flash: ublk: STOP_DEV: %s\n",
				strerror(-ret));
		stopped = ret == 0;
	}
	/* After STOP_DEV every fetch is aborted and the threads end; without
	 * it only the threads that already ended can be joined. */
	for (i = 0; d->q && i < d->info.nr_hw_queues; i++) {
		/* quiesced: each queue ends once it holds nothing */
		if (stopped || d->quiesced || ublk_q_ended(d, i))
			ublk_q_join(d, i);
		else
			joined = false;
	}
	if (!joined || d->ctrl.lost)
		return;   /* a thread or the kernel may still use d: leak it */
	if (d->cdev_fd >= 0)
		close(d->cdev_fd);
	d->cdev_fd = -1;
	if (d->added && !keep) {
		ret = ublk_ctrl_del_dev(&d->ctrl, d->info.dev_id, 30000);
		if (ret)
			fprintf(stderr, "ublk-flash: ublk: DEL_DEV: %s\n",
				strerror(-ret));
	}
	if (d->ctrl.lost)
		return;
	ublk_ctrl_close(&d->ctrl);
	if (d->event_fd >= 0)
		close(d->event_fd);
	free(d->q);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
	s->priv = NULL;
}

/* DEL_DEV of device @id in a detached grandchild: it returns at the
 * device's last close.  0 once the child is on its way. */
static int ublk_del_detached(uint32_t id)
{
	pid_t child = fork();

	if (child < 0)
		return -errno;
	if (child == 0) {
		struct ublk_ctrl c;

		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		setsid();
		if (fork() != 0)
			_exit(0);
		/* no caller's pipe kept open until the last close */
		for (int fd = 0; null >= 0 && fd < 3; fd++)
			dup2(null, fd);
		if (ublk_ctrl_open(&c) == 0)
			ublk_ctrl_del_dev(&c, id, 0);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	return 0;
}

/* The proof of fe_ublk_left_is on the open control @c: device @id is the
 * one the dead server of @image (pid @pid) left.  0, -ENOENT, -ESTALE,
 * -EBUSY or another -errno (see frontend.h). */
static int ublk_left_check(struct ublk_ctrl *c, unsigned id, const char *image,
			   int pid)
{
	struct ublksrv_ctrl_dev_info info;
	struct stat st;
	char cpath[64];
	uint64_t tag = ublk_image_tag(image);
	int ret = ublk_ctrl_get_info(c, id, &info);

	if (ret)
		return ret == -ENODEV ? -ENOENT : ret;
	/* The entry's device, not one that got its number since: the image's
	 * tag (if the image is still there) and the pid that started or last
	 * recovered it (the kernel keeps it after the server died). */
	if ((tag && info.ublksrv_flags != tag) ||
	    (info.ublksrv_pid > 0 && info.ublksrv_pid != pid) ||
	    (!tag && info.ublksrv_pid != pid))
		return -ESTALE;
	snprintf(cpath, sizeof(cpath), "/dev/ublkc%u", id);
	if (stat(cpath, &st) == 0 && S_ISCHR(st.st_mode) &&
	    oct_any_holds_chr(st.st_rdev))
		return -EBUSY;
	return 0;
}

/* The proof of fe_ublk_left_is on device @dev; then, with @remove, the
 * removal of fe_ublk_remove_left (@in_use: detached at its last close). */
static int ublk_left(const char *dev, const char *image, int pid, bool remove,
		     bool in_use)
{
	struct ublk_ctrl c;
	unsigned id;
	int ret;

	if (sscanf(dev, "/dev/ublkb%u", &id) != 1)
		return -EINVAL;
	if ((ret = ublk_ctrl_open(&c)))
		return ret;
	ret = ublk_left_check(&c, id, image, pid);
	if (!ret && remove) {
		ret = ublk_ctrl_stop_dev(&c, id, 30000);
		if (!ret)
			ret = in_use ? ublk_del_detached(id)
				     : ublk_ctrl_del_dev(&c, id, 30000);
	}
	if (!c.lost)
		ublk_ctrl_close(&c);
	return ret;
}

int fe_ublk_left_is(const char *dev, const char *image, int pid)
{
	return ublk_left(dev, image, pid, false, false);
}

int fe_ublk_remove_left(const char *dev, const char *image, int pid,
			bool in_use)
{
	return ublk_left(dev, image, pid, true, in_use);
}

/* An online resize (frontend.h): the driver must take UPDATE_SIZE. */
static int ublk_can_resize(struct fe_server *s, char *why, size_t len)
{
	struct ublk_dev *d = s->priv;

	if (d && d->started && (d->info.flags & UBLK_FEAT(UPDATE_SIZE)))
		return 0;
	snprintf(why, len, "/dev/ublkb%u has no UBLK_F_UPDATE_SIZE (this "
		 "kernel's ublk cannot change a live device's size: Linux 6.14 "
		 "and later; stop, resize, serve again)",
		 d ? d->info.dev_id : 0);
	return -EOPNOTSUPP;
}

static void ublk_hold(struct fe_server *s)
{
	struct ublk_dev *d = s->priv;
	struct timespec ts = { 0, 1000000L };

	__atomic_store_n(&d->held, true, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < d->info.nr_hw_queues; i++)
		while (__atomic_load_n(&d->q[i].inside, __ATOMIC_SEQ_CST))
			nanosleep(&ts, NULL);
}

static void ublk_release(struct fe_server *s)
{
	struct ublk_dev *d = s->priv;

	__atomic_store_n(&d->set, s->set, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->held, false, __ATOMIC_SEQ_CST);
}

/* UPDATE_SIZE through a control ring of its own (the device's belongs
 * to the serve loop). */
static int ublk_resized(struct fe_server *s, char *why, size_t len)
{
	struct ublk_dev *d = s->priv;
	struct ublk_ctrl c;
	int err;

	err = ublk_ctrl_open(&c);
	if (!err) {
		err = ublk_ctrl_update_size(&c, d->info.dev_id,
					    ftl_set_size(s->set) / FTL_SECTOR);
		ublk_ctrl_close(&c);
	}
	if (err)
		snprintf(why, len, "/dev/ublkb%u: UPDATE_SIZE: %s (the image "
			 "grew; stop and serve again to use it)",
			 d->info.dev_id, strerror(-err));
	return err;
}

const struct fe_ops fe_ublk_ops = {
	.name  = "ublk",
	.probe = ublk_probe,
	.prepare = ublk_prepare,
	.takeover = ublk_takeover,
	.start = ublk_start,
	.run   = ublk_run,
	.stop  = ublk_stop,
	.quiesce = ublk_quiesce,
	.can_resize = ublk_can_resize,
	.hold    = ublk_hold,
	.release = ublk_release,
	.resized = ublk_resized,
};
