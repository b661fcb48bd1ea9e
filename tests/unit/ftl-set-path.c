/* SPDX-License-Identifier: MIT */
/*
 * The set as the frontends use it (ftl-set.h): ftl_set_create / _open by
 * path on files in /dev/shm.  A plain image through ftl_set_open is its
 * engine through ftl_open (size, topology, mount kind, stats, the image
 * lock, the same errors for a missing file, a directory, an empty file);
 * a 2-part set holds the image lock on its own descriptor (a second open
 * -EBUSY, lock_dup keeps it past close, read-only has none), reports the
 * set's topology, health summed / worst over the parts, write_try routed
 * like write, no PI, info and fsck per part, and the data after a reopen.
 * Seeded (printed; OCTANT_SEED replays).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl-set.h"
#include "test.h"

#define SIZE (16u << 20)

static char dir[64];
static uint64_t rs;

static void path_of(char *p, size_t n, const char *name)
{
	snprintf(p, n, "%s/%s", dir, name);
}

/* A plain image through the set is its engine, exactly. */
static void plain(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_ODD };
	struct ftl_open_opts ro = { .readonly = true };
	struct align_topology ts, te;
	struct ftl_stats *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct ftl_set *s, *s2;
	struct ftl *f;
	uint8_t *buf = malloc(1 << 20), *rbuf = malloc(1 << 20);
	char p[96];
	int r, fd;

	path_of(p, sizeof(p), "plain.img");
	T_CHECK(ftl_set_create(p, &c, 1, 0) == 0, "create --parts 1");
	r = ftl_set_open(p, NULL, &s);
	T_CHECK(r == 0, "set open of a plain image: %d", r);
	if (r)
		goto out;
	T_EQ_U64(ftl_set_parts(s), 1, "one part");
	T_EQ_U64(ftl_set_stripe(s), 0, "no stripe");
	T_CHECK(ftl_open(p, NULL, &f) == -EBUSY, "the engine's lock held");
	T_CHECK(ftl_set_open(p, NULL, &s2) == -EBUSY, "a second set open");
	T_CHECK(ftl_set_open(p, &ro, &s2) == 0, "a read-only open");
	T_CHECK(ftl_set_lock_dup(s2) == -EBADF, "read-only: no lock");
	ftl_set_close(s2);
	fd = ftl_set_lock_dup(s);
	T_CHECK(fd >= 0, "lock_dup: %d", fd);
	t_fill_tag(buf, 1 << 20, t_xorshift(&rs));
	r = ftl_set_write_try(s, buf, 512, 4096, 0);
	T_CHECK(r == 0 || r == -EAGAIN, "write_try: %d", r);
	T_CHECK(ftl_set_write(s, buf, 512, 1 << 20, 0) == 0, "write");
	T_CHECK(ftl_set_flush(s) == 0, "flush");
	T_CHECK(!ftl_set_has_pi(s), "no PI");
	T_CHECK(!ftl_set_on_read_only(s, NULL, NULL), "not read-only");
	ftl_set_topology(s, &ts);
	ftl_set_stats_get(s, a);
	T_CHECK(ftl_set_close(s) == 0, "close");
	/* the lock outlives the close on the dup */
	T_CHECK(ftl_open(p, NULL, &f) == -EBUSY, "lock kept by the dup");
	close(fd);
	T_CHECK(ftl_open(p, NULL, &f) == 0, "engine open");
	ftl_topology(f, &te);
	T_CHECK(!memcmp(&ts, &te, sizeof(ts)), "topology is the engine's");
	T_EQ_U64(ftl_size(f), SIZE, "size");
	T_CHECK(ftl_read(f, rbuf, 512, 1 << 20) == 0 &&
		!memcmp(buf, rbuf, 1 << 20), "data through the engine");
	ftl_stats_get(f, b);
	T_EQ_U64(a->host_write_sectors + 0, b->host_write_sectors,
		 "stats are the engine's");
	T_EQ_U64(a->wear_map_len, b->wear_map_len, "the engine's wear map");
	T_CHECK(a->align == FTL_ALIGN_ODD && b->align == FTL_ALIGN_ODD,
		"align");
	ftl_close(f);
out:
	free(a);
	free(b);
	free(buf);
	free(rbuf);
}

/* The errors of ftl_open for what is not an image. */
static void errors(void)
{
	const char *names[] = { "missing.img", "adir", "empty.img" };
	struct ftl_set *s;
	struct ftl *f;
	char p[96];

	path_of(p, sizeof(p), "adir");
	mkdir(p, 0755);
	path_of(p, sizeof(p), "empty.img");
	close(open(p, O_RDWR | O_CREAT, 0644));
	for (int i = 0; i < 3; i++) {
		int a, b;

		path_of(p, sizeof(p), names[i]);
		a = ftl_set_open(p, NULL, &s);
		b = ftl_open(p, NULL, &f);
		T_CHECK(a == b && a < 0, "%s: set %d, engine %d", names[i], a,
			b);
	}
}

/* A 2-part set by path. */
static void set2(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_ODD };
	struct ftl_create_opts pi = c;
	struct ftl_open_opts ro = { .readonly = true };
	static struct ftl_set_info si;
	struct align_topology t;
	struct ftl_health h, hp;
	struct ftl_set *s, *s2;
	uint8_t *buf = malloc(1 << 20), *rbuf = malloc(1 << 20);
	uint64_t sum = 0, pc = 0, off = 512 * (1 + t_xorshift(&rs) % 8000);
	FILE *null = fopen("/dev/null", "w");
	char p[96];
	int r, fd;

	path_of(p, sizeof(p), "set.img");
	pi.integrity = true;
	T_CHECK(ftl_set_create(p, &pi, 2, 0) == -EOPNOTSUPP, "no PI in a set");
	T_CHECK(ftl_set_create(p, &c, 2, 3 << 16) == -EINVAL, "bad stripe");
	T_CHECK(ftl_set_create(p, &c, 2, 1 << 16) == 0, "create");
	T_CHECK(ftl_set_create(p, &c, 2, 1 << 16) == -EEXIST, "no overwrite");
	r = ftl_set_open(p, NULL, &s);
	T_CHECK(r == 0, "open: %d", r);
	if (r)
		goto out;
	T_EQ_U64(ftl_set_parts(s), 2, "parts");
	T_EQ_U64(ftl_set_size(s), SIZE, "size");
	T_CHECK(ftl_set_open(p, NULL, &s2) == -EBUSY, "the set's lock");
	T_CHECK(ftl_set_open(p, &ro, &s2) == 0, "read-only open");
	T_CHECK(ftl_set_lock_dup(s2) == -EBADF, "read-only: no lock");
	ftl_set_close(s2);
	ftl_set_topology(s, &t);
	T_EQ_U64(t.size, SIZE, "topology size");
	T_EQ_U64(t.physical, 4096, "physical");
	T_EQ_U64(t.alignment_offset, 3584, "odd: offset 3584");
	t_fill_tag(buf, 1 << 20, t_xorshift(&rs));
	r = ftl_set_write_try(s, buf, off, 12288, 0);
	T_CHECK(r == 0 || r == -EAGAIN, "write_try: %d", r);
	T_CHECK(ftl_set_write_try(s, buf, 1, 512, 0) == -EINVAL,
		"write_try out of line");
	T_CHECK(ftl_set_write(s, buf, off, 1 << 20, 0) == 0, "write");
	T_CHECK(ftl_set_flush(s) == 0, "flush");
	T_CHECK(!ftl_set_has_pi(s) && ftl_set_read_pi(s, rbuf, rbuf, 0,
						      512) == -EOPNOTSUPP,
		"no PI");
	T_CHECK(!ftl_set_read_only(s) &&
		!ftl_set_on_read_only(s, NULL, NULL), "not read-only");
	ftl_set_health_get(s, &h);
	for (unsigned i = 0; i < 2; i++) {
		ftl_health_get(ftl_set_part(s, i), &hp);
		sum += hp.host_write_sectors;
		pc = hp.power_cycles > pc ? hp.power_cycles : pc;
		T_CHECK(hp.host_write_sectors > 0, "part %u written", i);
	}
	T_EQ_U64(h.host_write_sectors, sum, "health sums the parts");
	T_EQ_U64(h.data_units_written, (sum + 999) / 1000, "data units");
	T_EQ_U64(h.power_cycles, pc, "power cycles: the highest");
	fd = ftl_set_lock_dup(s);
	T_CHECK(fd >= 0, "lock_dup: %d", fd);
	T_CHECK(ftl_set_close(s) == 0, "close");
	T_CHECK(ftl_set_open(p, NULL, &s) == -EBUSY, "lock kept by the dup");
	close(fd);
	r = ftl_set_open(p, NULL, &s);
	T_CHECK(r == 0, "reopen: %d", r);
	if (r)
		goto out;
	T_CHECK(ftl_set_mount_kind(s) == FTL_MOUNT_CLEAN, "clean");
	T_CHECK(ftl_set_read(s, rbuf, off, 1 << 20) == 0 &&
		!memcmp(buf, rbuf, 1 << 20), "data after the reopen");
	ftl_set_close(s);
	r = ftl_set_info_read(p, &si);
	T_CHECK(r == 0 && si.nparts == 2 && si.stripe == 1 << 16 &&
		si.set.logical_size == SIZE && si.set.align == FTL_ALIGN_ODD &&
		!si.part_err[0] && !si.part_err[1] &&
		si.part[0].align == FTL_ALIGN_1M, "info: %d", r);
	T_CHECK(ftl_set_fsck(p, false, null, false) == 0, "fsck clean");
	T_CHECK(ftl_set_fsck(p, false, null, true) == 0, "fsck --json");
out:
	if (null)
		fclose(null);
	free(buf);
	free(rbuf);
}

int main(void)
{
	char cmd[128];

	rs = t_seed() | 1;
	snprintf(dir, sizeof(dir), "/dev/shm/ftl-set-path.XXXXXX");
	if (!mkdtemp(dir))
		T_SKIP("no /dev/shm");
	plain();
	errors();
	set2();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return t_result();
}
