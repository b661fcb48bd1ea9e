/* SPDX-License-Identifier: MIT */
/*
 * fsync-workload — a deterministic file workload with durability points, for
 * the crash-consistency replay tests (tests/vm/guest/crash-replay.sh):
 *
 *   fsync-workload run DIR --ops N --seed S [--mark DMNAME]
 *       creates d0..d3 in DIR (fsynced, then mark "setup"), then N
 *       operations on 48 file slots; each ends at its durability point and,
 *       with --mark, sends "mark op-K" to the dm-log-writes device DMNAME:
 *         create    write a new file, fsync it, fsync its directory
 *         pwrite    overwrite/extend a range in place, fdatasync
 *         append    append, fsync
 *         replace   write SLOT.tmp, fsync, rename over SLOT, fsync dir
 *         unlink    unlink, fsync dir
 *         truncate  shrink, fsync
 *       Between operations, unsynced "noise" files are written and removed
 *       (never checked: only the filesystem checker sees them).
 *   fsync-workload verify DIR --ops N --seed S --at MARK
 *       DIR is the filesystem as a replay left it at a point after MARK
 *       (the last mark the log had passed: "setup", "op-K"; anything else
 *       means before "setup", or, for "dm-log-writes-end"/"done", after op
 *       N-1).  Every slot made durable by the operations up to MARK must
 *       read back exactly (or be absent if unlinked), except the slot the
 *       next operation touches (it may be old, new or in between).
 *       Prints one line per bad slot; exit 1 if any.
 * The operations depend only on the seed, so `verify` recomputes every
 * file's expected bytes without any record of the run.  Exit: 0 ok, 1
 * mismatch (verify) or a failed operation (run), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libdevmapper.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FW_SLOTS	48
#define FW_DIRS		4
#define FW_MAXSZ	(1u << 20)

enum fw_kind { FW_CREATE, FW_PWRITE, FW_APPEND, FW_REPLACE, FW_UNLINK,
	       FW_TRUNCATE };
static const char *const fw_names[] = { "create", "pwrite", "append",
					"replace", "unlink", "truncate" };

struct fw_slot {
	uint8_t *data;
	uint32_t size;
	int exists;
};

struct fw_op {
	enum fw_kind kind;
	int slot;
	uint32_t off, len;	/* range written, or the new size (truncate) */
	uint64_t salt;		/* content seed */
	uint32_t noise;		/* bytes of unsynced noise written before it */
};

struct fw {
	const char *dir, *mark;
	uint64_t seed, rng;
	struct fw_slot s[FW_SLOTS];
};

static uint64_t fw_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t fw_rand(struct fw *w)
{
	return fw_mix(w->rng++);
}

static void fw_fill(uint8_t *p, uint32_t len, uint64_t salt)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = fw_mix(salt ^ ((uint64_t)i << 20));

		memcpy(p + i, &v, len - i < 8 ? len - i : 8);
	}
}

/* fw_next: draws operation K from the state the previous ones left. */
static void fw_next(struct fw *w, struct fw_op *op)
{
	struct fw_slot *sl;
	uint64_t r = fw_rand(w);

	memset(op, 0, sizeof(*op));
	op->slot = (int)(fw_rand(w) % FW_SLOTS);
	op->salt = fw_rand(w);
	op->noise = fw_rand(w) % 4 == 0 ? (uint32_t)(fw_rand(w) % 65536) : 0;
	sl = &w->s[op->slot];
	if (!sl->exists) {
		op->kind = r % 3 == 0 ? FW_REPLACE : FW_CREATE;
	} else {
		switch (r % 10) {
		case 0: case 1: case 2: op->kind = FW_PWRITE; break;
		case 3: case 4:		op->kind = FW_APPEND; break;
		case 5: case 6:		op->kind = FW_REPLACE; break;
		case 7:			op->kind = FW_UNLINK; break;
		case 8:			op->kind = FW_TRUNCATE; break;
		default:		op->kind = FW_CREATE; break;
		}
	}
	/* sizes: mostly small and unaligned, sometimes up to 1 MiB */
	op->len = (uint32_t)(fw_rand(w) % 5 == 0 ? fw_rand(w) % FW_MAXSZ :
			     fw_rand(w) % 20000) + 1;
	switch (op->kind) {
	case FW_PWRITE:
		op->off = (uint32_t)(fw_rand(w) % (sl->size + 4096));
		break;
	case FW_APPEND:
		op->off = sl->size;
		break;
	default:
		break;
	}
	/* a file at its largest shrinks instead */
	if ((op->kind == FW_PWRITE || op->kind == FW_APPEND) &&
	    op->off >= FW_MAXSZ - 4096)
		op->kind = FW_TRUNCATE;
	switch (op->kind) {
	case FW_TRUNCATE:
		op->len = sl->size ? (uint32_t)(fw_rand(w) % sl->size) : 0;
		break;
	default:
		break;
	}
	if (op->kind != FW_TRUNCATE && op->off + op->len > FW_MAXSZ)
		op->len = FW_MAXSZ - op->off;
	if (op->kind == FW_UNLINK)
		op->len = 0;
}

/* fw_apply: the operation's effect on the expected state. */
static int fw_apply(struct fw *w, const struct fw_op *op)
{
	struct fw_slot *sl = &w->s[op->slot];

	if (!sl->data && !(sl->data = calloc(1, FW_MAXSZ)))
		return -ENOMEM;
	switch (op->kind) {
	case FW_CREATE:
	case FW_REPLACE:
		sl->size = op->len;
		fw_fill(sl->data, op->len, op->salt);
		sl->exists = 1;
		break;
	case FW_PWRITE:
	case FW_APPEND:
		if (op->off > sl->size)
			memset(sl->data + sl->size, 0, op->off - sl->size);
		fw_fill(sl->data + op->off, op->len, op->salt);
		if (op->off + op->len > sl->size)
			sl->size = op->off + op->len;
		break;
	case FW_UNLINK:
		sl->exists = 0;
		sl->size = 0;
		break;
	case FW_TRUNCATE:
		sl->size = op->len;
		break;
	}
	return 0;
}

static void fw_path(const struct fw *w, int slot, const char *sfx, char *p,
		    size_t n)
{
	snprintf(p, n, "%s/d%d/f%02d%s", w->dir, slot % FW_DIRS, slot, sfx);
}

static int fw_fsync_path(const char *p, int data_only)
{
	int fd = open(p, O_RDONLY), ret;

	if (fd < 0)
		return -errno;
	ret = data_only ? fdatasync(fd) : fsync(fd);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

static int fw_write_all(int fd, const uint8_t *p, uint32_t len, uint32_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n; off += (uint32_t)n; len -= (uint32_t)n;
	}
	return 0;
}

static int fw_mark(struct fw *w, const char *text)
{
	struct dm_task *dmt;
	char msg[64];

	if (!w->mark)
		return 0;
	snprintf(msg, sizeof(msg), "mark %s", text);
	dmt = dm_task_create(DM_DEVICE_TARGET_MSG);
	if (!dmt || !dm_task_set_name(dmt, w->mark) ||
	    !dm_task_set_sector(dmt, 0) ||
	    !dm_task_set_message(dmt, msg) || !dm_task_run(dmt)) {
		if (dmt)
			dm_task_destroy(dmt);
		fprintf(stderr, "fsync-workload: dm message '%s' to %s failed\n",
			msg, w->mark);
		return -EIO;
	}
	dm_task_destroy(dmt);
	return 0;
}

/* fw_do: performs OP on the filesystem (the state already holds its bytes). */
static int fw_do(struct fw *w, const struct fw_op *op, uint64_t k)
{
	const struct fw_slot *sl = &w->s[op->slot];
	char p[512], t[512], d[512];
	static uint8_t *noise;
	int fd = -1, ret = 0;

	if (op->noise) {
		if (!noise && !(noise = malloc(65536)))
			return -ENOMEM;
		fw_fill(noise, op->noise, op->salt ^ 1);
		snprintf(p, sizeof(p), "%s/noise-%" PRIu64, w->dir, k % 8);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || fw_write_all(fd, noise, op->noise, 0))
			return -errno;
		close(fd);
		fd = -1;
	}
	fw_path(w, op->slot, "", p, sizeof(p));
	fw_path(w, op->slot, ".tmp", t, sizeof(t));
	snprintf(d, sizeof(d), "%s/d%d", w->dir, op->slot % FW_DIRS);
	switch (op->kind) {
	case FW_CREATE:
	case FW_REPLACE:
		fd = open(op->kind == FW_CREATE ? p : t,
			  O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			ret = -errno; break;
		}
		if ((ret = fw_write_all(fd, sl->data, sl->size, 0)))
			break;
		if (fsync(fd) || close(fd)) {
			ret = -errno; break;
		}
		fd = -1;
		if (op->kind == FW_REPLACE && rename(t, p)) {
			ret = -errno; break;
		}
		ret = fw_fsync_path(d, 0);
		break;
	case FW_PWRITE:
	case FW_APPEND:
		fd = open(p, O_WRONLY);
		if (fd < 0) {
			ret = -errno; break;
		}
		if ((ret = fw_write_all(fd, sl->data + op->off, op->len,
					op->off)))
			break;
		if (op->kind == FW_PWRITE ? fdatasync(fd) : fsync(fd))
			ret = -errno;
		break;
	case FW_UNLINK:
		if (unlink(p))
			ret = -errno;
		else
			ret = fw_fsync_path(d, 0);
		break;
	case FW_TRUNCATE:
		fd = open(p, O_WRONLY);
		if (fd < 0 || ftruncate(fd, op->len) || fsync(fd))
			ret = -errno;
		break;
	}
	if (fd >= 0)
		close(fd);
	if (ret) {
		fprintf(stderr, "fsync-workload: op-%" PRIu64 " %s %s: %s\n", k,
			fw_names[op->kind], p, strerror(-ret));
		return ret;
	}
	snprintf(t, sizeof(t), "op-%" PRIu64, k);
	return fw_mark(w, t);
}

static int fw_run(struct fw *w, uint64_t nops)
{
	struct fw_op op;
	char p[512];
	int ret;

	for (int i = 0; i < FW_DIRS; i++) {
		snprintf(p, sizeof(p), "%s/d%d", w->dir, i);
		if (mkdir(p, 0755) && errno != EEXIST)
			return fprintf(stderr, "fsync-workload: mkdir %s: %s\n",
				       p, strerror(errno)), 1;
		if (fw_fsync_path(p, 0))
			return 1;
	}
	if (fw_fsync_path(w->dir, 0) || fw_mark(w, "setup"))
		return 1;
	for (uint64_t k = 0; k < nops; k++) {
		fw_next(w, &op);
		if (fw_apply(w, &op) || (ret = fw_do(w, &op, k)))
			return 1;
	}
	return 0;
}

/* fw_check_slot: 0 when the slot's file is as expected. */
static int fw_check_slot(struct fw *w, int slot, const char *mark)
{
	const struct fw_slot *sl = &w->s[slot];
	static uint8_t *buf;
	char p[512];
	struct stat st;
	uint32_t at;
	ssize_t n;
	int fd;

	fw_path(w, slot, "", p, sizeof(p));
	fd = open(p, O_RDONLY);
	if (fd < 0) {
		if (errno == ENOENT && !sl->exists)
			return 0;
		printf("at %s: %s: %s (expected %u bytes)\n", mark, p,
		       strerror(errno), sl->size);
		return 1;
	}
	if (!sl->exists) {
		printf("at %s: %s exists, but its unlink was made durable\n",
		       mark, p);
		close(fd);
		return 1;
	}
	if (!buf && !(buf = malloc(FW_MAXSZ + 1))) {
		close(fd);
		return 1;
	}
	if (fstat(fd, &st) || (uint64_t)st.st_size != sl->size) {
		printf("at %s: %s has %lld bytes, expected %u\n", mark, p,
		       (long long)st.st_size, sl->size);
		close(fd);
		return 1;
	}
	n = pread(fd, buf, FW_MAXSZ + 1, 0);
	close(fd);
	if (n != (ssize_t)sl->size || memcmp(buf, sl->data, sl->size)) {
		for (at = 0; n > 0 && at < (uint32_t)n && at < sl->size &&
		     buf[at] == sl->data[at]; at++)
			;
		printf("at %s: %s: content differs from byte %u (read %zd of "
		       "%u bytes)\n", mark, p, at, n, sl->size);
		return 1;
	}
	return 0;
}

static int fw_verify(struct fw *w, uint64_t nops, const char *mark)
{
	int64_t upto;		/* operations made durable: 0..upto-1 */
	int busy = -1, bad = 0;
	struct fw_op op;
	char *end;

	if (!strcmp(mark, "dm-log-writes-end") || !strcmp(mark, "done")) {
		upto = (int64_t)nops;
	} else if (!strncmp(mark, "op-", 3)) {
		upto = strtoll(mark + 3, &end, 10) + 1;
		if (*end || upto < 1 || (uint64_t)upto > nops)
			return fprintf(stderr, "fsync-workload: bad mark %s\n",
				       mark), 2;
	} else if (!strcmp(mark, "setup")) {
		upto = 0;
	} else {
		return 0;	/* before setup: nothing was promised */
	}
	for (int64_t k = 0; k < upto; k++) {
		fw_next(w, &op);
		if (fw_apply(w, &op))
			return 1;
	}
	if ((uint64_t)upto < nops) {
		fw_next(w, &op);
		busy = op.slot;
	}
	for (int i = 0; i < FW_SLOTS; i++)
		if (i != busy)
			bad += fw_check_slot(w, i, mark);
	return bad ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: fsync-workload run DIR --ops N --seed S "
		"[--mark DMNAME] | verify DIR --ops N --seed S --at MARK\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct fw w = { 0 };
	const char *at = NULL;
	uint64_t nops = 0;
	int have_seed = 0;

	if (argc < 3 || (strcmp(argv[1], "run") && strcmp(argv[1], "verify")))
		return usage();
	w.dir = argv[2];
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ops"))
			nops = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--seed"))
			w.seed = strtoull(argv[i + 1], NULL, 0), have_seed = 1;
		else if (!strcmp(argv[i], "--mark"))
			w.mark = argv[i + 1];
		else if (!strcmp(argv[i], "--at"))
			at = argv[i + 1];
		else
			return usage();
	}
	if ((argc - 3) % 2 || !nops || !have_seed)
		return usage();
	w.rng = fw_mix(w.seed);
	if (argv[1][0] == 'r')
		return fw_run(&w, nops) ? 1 : 0;
	if (!at)
		return usage();
	return fw_verify(&w, nops, at);
}
