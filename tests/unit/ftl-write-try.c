/* SPDX-License-Identifier: MIT */
/*
 * ftl_write_try (ftl.h): the write the ublk ring thread serves itself
 * only when nothing can make it wait.  Served: whole pages, at most
 * FTL_WRITE_TRY_PAGES, on the map at once (read back), counted as a host
 * write and as write_try_served, and covered by the next flush (the
 * engine killed after it and reopened: the data is there).  Turned back
 * with -EAGAIN and nothing written, each condition of the contract on its
 * own: FUA, a page written in part, too many pages, nothing to write, a
 * range lock or the engine lock held by another thread, a checkpoint due,
 * too little sequence room, a move off a retired block or a scrub
 * pending, a host run of another writer in flight, the open block too
 * short for the write, no open host block; ftl_write then writes it.
 * Bad requests fail as ftl_write's do (-EINVAL).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE (8u << 20)
#define PS   4096u

static char img[256];
static uint8_t w[16 * PS], r[16 * PS];

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

/* ---- another thread holds a lock while the test tries ------------------ */

static struct {
	struct ftl_mutex *m;
	pthread_mutex_t mx;
	pthread_cond_t cv;
	int state;               /* 0 idle, 1 holding, 2 let go */
} holder = { .mx = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *hold(void *arg)
{
	(void)arg;
	ftl_lock(holder.m);
	pthread_mutex_lock(&holder.mx);
	holder.state = 1;
	pthread_cond_broadcast(&holder.cv);
	while (holder.state != 2)
		pthread_cond_wait(&holder.cv, &holder.mx);
	pthread_mutex_unlock(&holder.mx);
	ftl_unlock(holder.m);
	return NULL;
}

static void hold_start(pthread_t *t, struct ftl_mutex *m)
{
	holder.m = m;
	holder.state = 0;
	T_CHECK(pthread_create(t, NULL, hold, NULL) == 0, "holder thread");
	pthread_mutex_lock(&holder.mx);
	while (holder.state != 1)
		pthread_cond_wait(&holder.cv, &holder.mx);
	pthread_mutex_unlock(&holder.mx);
}

static void hold_end(pthread_t t)
{
	pthread_mutex_lock(&holder.mx);
	holder.state = 2;
	pthread_cond_broadcast(&holder.cv);
	pthread_mutex_unlock(&holder.mx);
	pthread_join(t, NULL);
}

/* ---- checks ------------------------------------------------------------- */

/* ftl_write_try(@off, @len, @flags), with @held (NULL: none) held by
 * another thread, must say -EAGAIN and write nothing: the bytes there
 * read as before, no host write nor served try counted, one more try
 * turned back (stats taken with the lock free: they take f->lock). */
static void again_held(struct ftl *f, struct ftl_mutex *held, uint64_t off,
		       size_t len, unsigned flags, const char *why)
{
	struct ftl_stats s0, s1;
	size_t n = len ? len : 512;
	pthread_t t;
	int rc;

	T_CHECK(ftl_read(f, r, off, n) == 0, "%s: read before", why);
	memcpy(r + 8 * PS, r, n);
	ftl_stats_get(f, &s0);
	fill(w, n, (unsigned)off + 99);
	if (held)
		hold_start(&t, held);
	rc = ftl_write_try(f, w, off, len, flags);
	if (held)
		hold_end(t);
	ftl_stats_get(f, &s1);
	T_CHECK(rc == -EAGAIN, "%s: -EAGAIN (got %d)", why, rc);
	T_EQ_U64(s1.write_try_again - s0.write_try_again, 1, "%s: counted", why);
	T_EQ_U64(s1.write_try_served, s0.write_try_served, "%s: not served", why);
	T_EQ_U64(s1.host_write_commands, s0.host_write_commands,
		 "%s: no host write", why);
	T_EQ_U64(s1.page_programs, s0.page_programs, "%s: nothing programmed",
		 why);
	T_CHECK(ftl_read(f, r, off, n) == 0, "%s: read after", why);
	T_CHECK(!memcmp(r, r + 8 * PS, n), "%s: data unchanged", why);
}

static void again(struct ftl *f, uint64_t off, size_t len, unsigned flags,
		  const char *why)
{
	again_held(f, NULL, off, len, flags, why);
}

/* ftl_write_try(@off, @len) must serve: 0, the data on the map, counted. */
static void served(struct ftl *f, uint64_t off, size_t len, unsigned seed,
		   const char *why)
{
	struct ftl_stats s0, s1;
	int rc;

	ftl_stats_get(f, &s0);
	fill(w, len, seed);
	rc = ftl_write_try(f, w, off, len, 0);
	ftl_stats_get(f, &s1);
	T_CHECK(rc == 0, "%s: served (got %d)", why, rc);
	T_EQ_U64(s1.write_try_served - s0.write_try_served, 1, "%s: counted", why);
	T_EQ_U64(s1.host_write_commands - s0.host_write_commands, 1,
		 "%s: a host write", why);
	T_EQ_U64(s1.host_write_sectors - s0.host_write_sectors, len / 512,
		 "%s: its sectors", why);
	T_CHECK(ftl_read(f, r, off, len) == 0, "%s: read", why);
	T_CHECK(!memcmp(r, w, len), "%s: read back", why);
}

static struct ftl *open_img(void)
{
	struct ftl_open_opts o = { 0 };     /* no GC thread: f->lock is ours */
	struct ftl *f = NULL;
	int rc = ftl_open(img, &o, &f);

	T_CHECK(rc == 0, "open: %s", strerror(-rc));
	if (rc)
		exit(t_result());
	return f;
}

static uint32_t host_room(struct ftl *f)
{
	const struct ftl_stream *st = &f->log.st[STREAM_HOST];

	return st->blk == FTL_NONE ? 0 : f->g.ppb - st->wp;
}

int main(void)
{
	struct ftl_create_opts c = { .size = SIZE, .align = FTL_ALIGN_1M,
				     .force = true };
	struct ftl_inflight fake = { 0 };
	struct ftl_stats st;
	struct ftl *f;
	pthread_t t;
	uint64_t gap;
	uint32_t room;

	snprintf(img, sizeof(img), "%s/ftl-write-try.%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	T_CHECK(ftl_create(img, &c) == 0, "create");
	f = open_img();
	T_EQ_U64(f->g.ps, PS, "page size");
	T_EQ_U64(f->g.shift, 0, "1m mode: no shift");

	/* no host block open yet (a fresh image): opening one may erase */
	if (f->log.st[STREAM_HOST].blk == FTL_NONE)
		again(f, 0, PS, 0, "no open host block");
	fill(w, PS, 1);
	T_CHECK(ftl_write(f, w, 0, PS, 0) == 0, "ftl_write opens the block");

	served(f, PS, PS, 2, "one page");
	served(f, 4 * PS, FTL_WRITE_TRY_PAGES * PS, 3, "FTL_WRITE_TRY_PAGES");
	served(f, PS, PS, 4, "an overwrite");

	/* the request itself */
	again(f, 16 * PS, PS, FTL_FUA, "FUA");
	again(f, 16 * PS + 512, PS, 0, "a page in part (offset)");
	again(f, 16 * PS, 512, 0, "a page in part (length)");
	again(f, 16 * PS, (FTL_WRITE_TRY_PAGES + 1) * PS, 0, "too many pages");
	again(f, 16 * PS, 0, 0, "nothing to write");
	T_CHECK(ftl_write_try(f, w, SIZE, PS, 0) == -EINVAL, "past the end");
	T_CHECK(ftl_write_try(f, w, 100, 512, 0) == -EINVAL, "unaligned");

	/* locks another thread holds */
	again_held(f, &f->stripe[ftl_stripe_of(16)], 16 * PS, PS, 0,
		   "its range lock held");
	hold_start(&t, &f->stripe[ftl_stripe_of(16)]);
	T_CHECK(ftl_write_try(f, w, 200 * PS, PS, 0) == 0,
		"another stripe meanwhile");
	hold_end(t);
	again_held(f, &f->lock, 16 * PS, PS, 0, "the engine lock held");

	/* the engine's state (f->lock taken to set it, as the engine does) */
	ftl_lock(&f->lock);
	f->ck.due = true;
	ftl_unlock(&f->lock);
	again(f, 16 * PS, PS, 0, "a checkpoint due");
	ftl_lock(&f->lock);
	f->ck.due = false;
	gap = f->ck.seq_gap;
	f->ck.seq_gap = f->log.seq - f->ck.seq + FTL_PROG_RETRIES + 2;
	ftl_unlock(&f->lock);
	again(f, 16 * PS, PS, 0, "no sequence room");
	ftl_lock(&f->lock);
	f->ck.seq_gap = gap;
	f->maint.retire_scan = true;
	ftl_unlock(&f->lock);
	again(f, 16 * PS, PS, 0, "a move off a retired block pending");
	ftl_lock(&f->lock);
	f->maint.retire_scan = false;
	__atomic_store_n(&f->scrub.n, 1, __ATOMIC_RELAXED);
	ftl_unlock(&f->lock);
	again(f, 16 * PS, PS, 0, "a scrub pending");
	ftl_lock(&f->lock);
	__atomic_store_n(&f->scrub.n, 0, __ATOMIC_RELAXED);
	fake.n = 1;
	f->pipe.inflight = &fake;       /* never published: taken out below */
	ftl_unlock(&f->lock);
	again(f, 16 * PS, PS, 0, "another writer's run in flight");
	ftl_lock(&f->lock);
	f->pipe.inflight = NULL;
	ftl_unlock(&f->lock);
	served(f, 16 * PS, PS, 6, "all clear again");

	/* the open block's end: a write that does not fit, then none */
	for (unsigned i = 0; host_room(f) > 2 && i < 4096; i++) {
		fill(w, PS, 50 + i);
		T_CHECK(ftl_write(f, w, (uint64_t)(300 + i % 100) * PS, PS, 0) == 0,
			"fill the block");
	}
	room = host_room(f);
	T_EQ_U64(room, 2, "two pages left in the open block");
	again(f, 20 * PS, 3 * PS, 0, "longer than the open block's rest");
	served(f, 20 * PS, 2 * PS, 7, "the block's last two pages");
	T_EQ_U64(host_room(f), 0, "the block is full");
	again(f, 24 * PS, PS, 0, "the host stream needs a new block");
	fill(w, PS, 8);
	T_CHECK(ftl_write(f, w, 24 * PS, PS, 0) == 0, "ftl_write opens the next");
	served(f, 25 * PS, PS, 9, "in the new block");

	/* covered by the next flush: killed after it, reopened */
	fill(w, 2 * PS, 10);
	T_CHECK(ftl_write_try(f, w, 40 * PS, 2 * PS, 0) == 0, "last write");
	T_CHECK(ftl_flush(f) == 0, "flush");
	ftl_stats_get(f, &st);
	T_EQ_U64(st.nand_violations, 0, "nand violations");
	ftl_abandon(f);
	f = open_img();
	T_CHECK(ftl_read(f, r, 40 * PS, 2 * PS) == 0, "read after reopen");
	T_CHECK(!memcmp(r, w, 2 * PS), "the flushed inline write survived");
	fill(w, 2 * PS, 7);
	T_CHECK(ftl_read(f, r, 20 * PS, 2 * PS) == 0 && !memcmp(r, w, 2 * PS),
		"the block's last two pages survived");
	T_CHECK(ftl_close(f) == 0, "close");
	unlink(img);
	return t_result();
}
