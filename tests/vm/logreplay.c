/* SPDX-License-Identifier: MIT */
/*
 * logreplay — reads a dm-log-writes log (Documentation/admin-guide/
 * device-mapper/log-writes.rst) and replays it onto a block device, for the
 * crash-consistency guest tests (tests/vm/guest/crash-replay.sh):
 *
 *   logreplay info LOG
 *       "entries N sectorsize S writes W discards D flush F fua U marks M
 *       points P bytes B" (P: entries with FLUSH or FUA, the replay's
 *       checkpoints; B: the bytes of the log in use, for copying it)
 *   logreplay list LOG
 *       one line per entry: INDEX SECTOR NR_SECTORS FLAGS [MARK]
 *   logreplay replay LOG DEV [--check CMD] [--after-mark NAME]
 *                    [--every K] [--limit N] [--drop I] [--direct] [--verify]
 *       writes every entry in order to DEV (discards as BLKDISCARD, or as
 *       zeroes where DEV is a file).  At every FLUSH or FUA entry (a
 *       "checkpoint": the points a power cut may leave behind) DEV is
 *       fsynced and, once the mark NAME was passed, every K-th checkpoint
 *       runs CMD through /bin/sh with LR_INDEX (entry), LR_MARK (the last
 *       mark's text), LR_POINT (the checkpoint's ordinal) in the
 *       environment; a non-zero exit counts as a failure.
 *       --direct  O_DIRECT writes; a FLUSH entry becomes fdatasync() before
 *                 its data, a FUA write a RWF_DSYNC write (REQ_FUA on a
 *                 device that has FUA) — the log's own durability requests
 *                 sent to DEV, for testing DEV's FLUSH/FUA contract.
 *       --drop I  do not write entry I (a lost write, for showing that the
 *                 checks catch one)
 *       --verify  after CMD (which may kill and re-serve DEV), reopen DEV and
 *                 compare every sector written so far (and not discarded
 *                 since) with what was written: a mismatch is a failure.
 *       Ends with "logreplay: entries E replayed R checkpoints C checked K
 *       failures F" and exits 1 when F > 0.
 * Errors: "logreplay: MESSAGE" on stderr, exit 2 (usage) or 3 (I/O, bad log).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lw-log.h"

static void lr_flags(uint64_t f, char *s)
{
	s[0] = 0;
	if (f & LW_FLUSH)	strcat(s, "FLUSH|");
	if (f & LW_FUA)		strcat(s, "FUA|");
	if (f & LW_DISCARD)	strcat(s, "DISCARD|");
	if (f & LW_MARK)	strcat(s, "MARK|");
	if (f & LW_METADATA)	strcat(s, "META|");
	if (s[0])
		s[strlen(s) - 1] = 0;
	else
		strcpy(s, "WRITE");
}

static int cmd_scan(const char *path, int list)
{
	uint64_t w = 0, d = 0, fl = 0, fua = 0, m = 0, pts = 0;
	struct lr_log l;
	struct lr_ent e;
	char fs[64];
	int ret;

	if ((ret = lr_open_log(&l, path)))
		return ret;
	while (!(ret = lr_next(&l, &e))) {
		if (list) {
			lr_flags(e.flags, fs);
			printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %s%s%s\n",
			       l.index, e.sector, e.nr, fs, e.mark[0] ? " " : "",
			       e.mark);
		}
		if (e.flags & LW_DISCARD)	d++;
		else if (e.nr)			w++;
		if (e.flags & LW_FLUSH)		fl++;
		if (e.flags & LW_FUA)		fua++;
		if (e.flags & LW_MARK)		m++;
		if (e.flags & (LW_FLUSH | LW_FUA))	pts++;
		l.pos += lr_data_len(&l, &e);
		l.index++;
	}
	if (ret > 1)
		return ret;
	if (!list)
		printf("entries %" PRIu64 " sectorsize %u writes %" PRIu64
		       " discards %" PRIu64 " flush %" PRIu64 " fua %" PRIu64
		       " marks %" PRIu64 " points %" PRIu64 " bytes %" PRIu64
		       "\n", l.nr_entries, l.ss, w, d, fl, fua, m, pts, l.pos);
	return 0;
}

/* The replay target, with what --verify needs to know. */
struct lr_dev {
	const char *path;
	int fd, direct, is_blk;
	uint64_t size;			/* bytes */
	uint8_t *shadow;		/* --verify: what was written */
	uint8_t *known;			/* --verify: one bit per log sector */
	uint32_t ss;
};

static int lr_dev_open(struct lr_dev *d)
{
	struct stat st;

	d->fd = open(d->path, O_RDWR | (d->direct ? O_DIRECT : 0));
	if (d->fd < 0)
		return lr_err(3, "%s: %s", d->path, strerror(errno));
	if (fstat(d->fd, &st))
		return lr_err(3, "%s: %s", d->path, strerror(errno));
	d->is_blk = S_ISBLK(st.st_mode);
	if (d->is_blk) {
		if (ioctl(d->fd, BLKGETSIZE64, &d->size))
			return lr_err(3, "%s: BLKGETSIZE64: %s", d->path,
				      strerror(errno));
	} else {
		d->size = (uint64_t)st.st_size;
	}
	return 0;
}

static int lr_pwrite(struct lr_dev *d, const void *buf, size_t len,
		     uint64_t off, int dsync)
{
	struct iovec iov;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		iov.iov_base = (char *)buf + done;
		iov.iov_len = len - done;
		n = pwritev2(d->fd, &iov, 1, (off_t)(off + done),
			     dsync ? RWF_DSYNC : 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static void lr_mark_known(struct lr_dev *d, uint64_t sec, uint64_t nr, int on)
{
	for (uint64_t s = sec; s < sec + nr; s++) {
		if (on)
			d->known[s >> 3] |= (uint8_t)(1u << (s & 7));
		else
			d->known[s >> 3] &= (uint8_t)~(1u << (s & 7));
	}
}

static int lr_discard(struct lr_dev *d, uint64_t off, uint64_t len)
{
	static uint8_t *zero;
	uint64_t range[2] = { off, len };
	uint64_t chunk;
	int ret;

	if (d->is_blk && !ioctl(d->fd, BLKDISCARD, range))
		return 0;
	if (d->is_blk && !ioctl(d->fd, BLKZEROOUT, range))
		return 0;
	if (!zero && !(zero = aligned_alloc(4096, 1 << 20)))
		return -ENOMEM;
	memset(zero, 0, 1 << 20);
	for (; len; off += chunk, len -= chunk) {
		chunk = len < (1 << 20) ? len : (1 << 20);
		if ((ret = lr_pwrite(d, zero, chunk, off, 0)))
			return ret;
	}
	return 0;
}

/* lr_verify: every known sector of DEV reads back as written. */
static int lr_verify(struct lr_dev *d, uint64_t index)
{
	uint8_t *buf = aligned_alloc(4096, 1 << 20);
	uint64_t nsec = d->size / d->ss, s, run, bad = 0, first = 0;
	int ret = 0;

	if (!buf)
		return lr_err(3, "out of memory");
	for (s = 0; s < nsec; s += run) {
		run = (1 << 20) / d->ss;
		if (s + run > nsec)
			run = nsec - s;
		if (lr_pread(d->fd, buf, run * d->ss, s * d->ss)) {
			ret = lr_err(1, "entry %" PRIu64 ": reading %s at "
				     "sector %" PRIu64 ": %s", index, d->path,
				     s, strerror(errno));
			break;
		}
		for (uint64_t i = 0; i < run; i++) {
			uint64_t x = s + i;

			if (!(d->known[x >> 3] & (1u << (x & 7))))
				continue;
			if (memcmp(buf + i * d->ss, d->shadow + x * d->ss,
				   d->ss)) {
				if (!bad++)
					first = x;
			}
		}
	}
	free(buf);
	if (!ret && bad)
		ret = lr_err(1, "entry %" PRIu64 ": %" PRIu64 " flushed sectors "
			     "lost or changed on %s (first: sector %" PRIu64 ")",
			     index, bad, d->path, first);
	return ret;
}

static int lr_run_check(const char *cmd, uint64_t index, const char *mark,
			uint64_t point)
{
	char v[32];
	int st;

	snprintf(v, sizeof(v), "%" PRIu64, index);
	setenv("LR_INDEX", v, 1);
	snprintf(v, sizeof(v), "%" PRIu64, point);
	setenv("LR_POINT", v, 1);
	setenv("LR_MARK", mark, 1);
	fflush(NULL);
	st = system(cmd);
	if (st == -1)
		return lr_err(3, "cannot run the check command");
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

struct lr_opts {
	const char *check, *after;
	uint64_t every, limit, drop;
	int direct, verify, dropping;
};

static int cmd_replay(const char *logp, const char *devp,
		      const struct lr_opts *o)
{
	uint64_t replayed = 0, points = 0, checked = 0, failures = 0;
	uint8_t *buf = NULL;
	size_t bufsz = 0;
	struct lr_dev d = { .path = devp, .direct = o->direct };
	struct lr_log l;
	struct lr_ent e;
	char mark[256] = "";
	int armed = !o->after, ret;

	if ((ret = lr_open_log(&l, logp)) || (ret = lr_dev_open(&d)))
		return ret;
	d.ss = l.ss;
	if (o->verify) {
		d.shadow = calloc(1, d.size);
		d.known = calloc(1, d.size / l.ss / 8 + 1);
		if (!d.shadow || !d.known)
			return lr_err(3, "out of memory for a %" PRIu64
				      "-byte shadow", d.size);
	}
	while (!(ret = lr_next(&l, &e))) {
		uint64_t dlen = lr_data_len(&l, &e), off = e.sector * l.ss;
		int point = !!(e.flags & (LW_FLUSH | LW_FUA));

		if (o->limit && l.index >= o->limit)
			break;
		if (e.flags & LW_MARK) {
			snprintf(mark, sizeof(mark), "%s", e.mark);
			if (o->after && !strcmp(mark, o->after))
				armed = 1;
		}
		if ((e.nr || dlen) && off + e.nr * l.ss > d.size)
			return lr_err(3, "entry %" PRIu64 ": sectors %" PRIu64
				      "+%" PRIu64 " beyond %s (%" PRIu64
				      " bytes)", l.index, e.sector, e.nr, devp,
				      d.size);
		/* REQ_PREFLUSH: everything before is made durable first. */
		if ((e.flags & LW_FLUSH) && o->direct && fdatasync(d.fd))
			return lr_err(3, "entry %" PRIu64 ": flush: %s",
				      l.index, strerror(errno));
		if (o->dropping && l.index == o->drop) {
			fprintf(stderr, "logreplay: entry %" PRIu64 " dropped "
				"(--drop)\n", l.index);
		} else if (e.flags & LW_DISCARD) {
			if ((ret = lr_discard(&d, off, e.nr * l.ss)))
				return lr_err(3, "entry %" PRIu64 ": discard: "
					      "%s", l.index, strerror(-ret));
			if (d.known)
				lr_mark_known(&d, e.sector, e.nr, 0);
		} else if (dlen) {
			if (dlen > bufsz) {
				free(buf);
				bufsz = (dlen + 4095) & ~4095ULL;
				if (!(buf = aligned_alloc(4096, bufsz)))
					return lr_err(3, "out of memory");
			}
			if (lr_pread(l.fd, buf, dlen, l.pos))
				return lr_err(3, "entry %" PRIu64 ": short log",
					      l.index);
			ret = lr_pwrite(&d, buf, dlen, off,
					o->direct && (e.flags & LW_FUA));
			if (ret)
				return lr_err(3, "entry %" PRIu64 ": writing "
					      "%s: %s", l.index, devp,
					      strerror(-ret));
			if (d.shadow) {
				memcpy(d.shadow + off, buf, dlen);
				lr_mark_known(&d, e.sector, e.nr, 1);
			}
		}
		l.pos += dlen;
		replayed++;
		if (point) {
			if (fdatasync(d.fd))
				return lr_err(3, "entry %" PRIu64 ": fsync %s: "
					      "%s", l.index, devp,
					      strerror(errno));
			points++;
			if (armed && o->check && (!o->every ||
						  points % o->every == 0)) {
				checked++;
				if (o->verify)
					close(d.fd);
				if (lr_run_check(o->check, l.index, mark,
						 points)) {
					failures++;
					fprintf(stderr, "logreplay: check "
						"failed at entry %" PRIu64
						" (after mark '%s')\n",
						l.index, mark);
				}
				if (o->verify) {
					if ((ret = lr_dev_open(&d)))
						return ret;
					if (lr_verify(&d, l.index))
						failures++;
				}
			}
		}
		l.index++;
	}
	if (ret > 1)
		return ret;
	if (fsync(d.fd))
		return lr_err(3, "fsync %s: %s", devp, strerror(errno));
	close(d.fd);
	printf("logreplay: entries %" PRIu64 " replayed %" PRIu64
	       " checkpoints %" PRIu64 " checked %" PRIu64 " failures %"
	       PRIu64 "\n", l.nr_entries, replayed, points, checked,
	       failures);
	return failures ? 1 : 0;
}

static int num(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: logreplay info LOG | list LOG | replay LOG DEV "
		"[--check CMD] [--after-mark NAME] [--every K] [--limit N] "
		"[--drop I] [--direct] [--verify]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct lr_opts o = { 0 };

	if (argc == 3 && !strcmp(argv[1], "info"))
		return cmd_scan(argv[2], 0);
	if (argc == 3 && !strcmp(argv[1], "list"))
		return cmd_scan(argv[2], 1);
	if (argc < 4 || strcmp(argv[1], "replay"))
		return usage();
	for (int i = 4; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--direct")) {
			o.direct = 1;
		} else if (!strcmp(a, "--verify")) {
			o.verify = 1;
		} else if (v && !strcmp(a, "--check")) {
			o.check = v; i++;
		} else if (v && !strcmp(a, "--after-mark")) {
			o.after = v; i++;
		} else if (v && !strcmp(a, "--every")) {
			if (num(v, &o.every)) return usage();
			i++;
		} else if (v && !strcmp(a, "--drop")) {
			if (num(v, &o.drop)) return usage();
			o.dropping = 1;
			i++;
		} else if (v && !strcmp(a, "--limit")) {
			if (num(v, &o.limit)) return usage();
			i++;
		} else {
			return usage();
		}
	}
	return cmd_replay(argv[2], argv[3], &o);
}
