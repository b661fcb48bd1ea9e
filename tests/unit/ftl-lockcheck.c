/* SPDX-License-Identifier: MIT */
/*
 * The lock assertions fire (ftl-int.h, LOCKING: Checked).  Built with
 * FTL_LOCK_CHECK (make SANITIZE=1: the unit-san tier) every mutex records
 * the thread holding it and the functions that need f->lock assert it at
 * their entry.  Each case runs in a child process, which must die of
 * SIGABRT with the assertion's line (function and lock) on stderr, or
 * return as usual (a child that deadlocks dies of SIGALRM after 30 s):
 *  - internal functions of each layer called without f->lock: ftl_balance,
 *    ftl_ckpt_write, ftl_gc_free_space (GC), ftl_wl_static (maintenance),
 *    ftl_map_set (append), ftl_set_state (block index), ftl_bb_grown
 *    (bad-block table), ftl_fsum_note: abort;
 *  - f->lock held by another thread (locked, but not by the caller):
 *    ftl_ckpt_write, ftl_map_set abort;
 *  - with f->lock held by the caller ftl_balance and ftl_ckpt_write return
 *    0, and the engine goes on;
 *  - lock order: ftl_write (range locks come first) and ftl_read_whole
 *    (it takes f->lock to look again) with f->lock held: abort.
 * Built without FTL_LOCK_CHECK (the plain unit tier) it SKIPs.
 *
 * Inspects engine internals (struct ftl, ftl-int.h): calls internal
 * functions with and without f->lock.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#ifndef FTL_LOCK_CHECK
int main(void)
{
	T_SKIP("built without FTL_LOCK_CHECK: the lock assertions are compiled "
	       "out (make BUILD=build/san SANITIZE=1 unit-bins builds them; "
	       "the unit-san tier runs this)");
}
#else

static struct ftl *f;
static uint8_t page[4096];

static void op_balance(void) { (void)ftl_balance(f, 1); }
static void op_ckpt(void) { (void)ftl_ckpt_write(f, false); }
static void op_gc(void) { (void)ftl_gc_free_space(f); }
static void op_wl(void) { (void)ftl_wl_static(f); }
static void op_map_set(void) { ftl_map_set(f, 1, ftl_map_get(f, 1)); }
static void op_fsum_note(void)
{
	ftl_fsum_note(f, FTL_OOB_DATA, 1, ftl_map_get(f, 1), 1, 0, NULL);
}

static void op_set_state(void)
{
	uint32_t b = ftl_map_get(f, 1) / ftl_test_geom(f)->ppb;

	ftl_set_state(f, b, f->idx.state[b]);
}

static void op_bb_grown(void)
{
	(void)ftl_bb_grown(f, ftl_map_get(f, 1) / ftl_test_geom(f)->ppb, "test");
}

/* With f->lock held: these return (exit 0 when they succeed). */
static void op_balance_locked(void)
{
	int r;

	ftl_lock(&f->lock);
	r = ftl_balance(f, 1);
	ftl_unlock(&f->lock);
	_exit(r ? 3 : 0);
}

static void op_ckpt_locked(void)
{
	int r;

	ftl_lock(&f->lock);
	r = ftl_ckpt_write(f, false);
	ftl_unlock(&f->lock);
	if (!r)
		r = ftl_write(f, page, 0, sizeof(page), 0);
	_exit(r ? 3 : 0);
}

/* With f->lock held: these would deadlock. */
static void op_write_locked(void)
{
	ftl_lock(&f->lock);
	(void)ftl_write(f, page, 4096, sizeof(page), 0);
}

static void op_read_whole_locked(void)
{
	ftl_lock(&f->lock);
	(void)ftl_read_whole(f, 1, page);
}

/* f->lock held by another thread of the child. */
static bool held;
static pthread_mutex_t hm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hc = PTHREAD_COND_INITIALIZER;

static void *holder(void *arg)
{
	(void)arg;
	ftl_lock(&f->lock);
	pthread_mutex_lock(&hm);
	held = true;
	pthread_cond_signal(&hc);
	pthread_mutex_unlock(&hm);
	pause();                /* the child ends first */
	return NULL;
}

static void other_thread_holds(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, holder, NULL))
		_exit(4);
	pthread_mutex_lock(&hm);
	while (!held)
		pthread_cond_wait(&hc, &hm);
	pthread_mutex_unlock(&hm);
}

static void op_ckpt_other(void) { other_thread_holds(); op_ckpt(); }
static void op_map_set_other(void) { other_thread_holds(); op_map_set(); }

/* Run @fn in a child: its wait status, its stderr in @err. */
static int child(void (*fn)(void), char *err, size_t len)
{
	int p[2], st = 0;
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	err[0] = 0;
	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(p[0]);
		dup2(p[1], 2);
		alarm(30);      /* a deadlock (no assertion) ends as SIGALRM */
		fn();
		_exit(0);
	}
	close(p[1]);
	while (n + 1 < len && (k = read(p[0], err + n, len - 1 - n)) > 0)
		n += (size_t)k;
	err[n] = 0;
	close(p[0]);
	waitpid(pid, &st, 0);
	return st;
}

/* @fn must abort with the assertion of @func about @what. */
static void aborts(void (*fn)(void), const char *name, const char *func,
		   const char *what)
{
	char err[4096], want[256];
	int st = child(fn, err, sizeof(err));

	snprintf(want, sizeof(want), "ftl: %s: &f->lock is %s", func, what);
	T_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
		"%s: the child must abort (status 0x%x)", name, st);
	T_CHECK(strstr(err, want) != NULL, "%s: stderr lacks \"%s\": %s",
		name, want, err);
}

static void returns(void (*fn)(void), const char *name)
{
	char err[4096];
	int st = child(fn, err, sizeof(err));

	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"%s: the child must return 0 (status 0x%x): %s", name, st, err);
}

int main(void)
{
	struct ftl_create_opts c = { .size = 8u << 20, .align = FTL_ALIGN_1M,
				     .pages_per_block = 16 };
	static const char *nh = "not held by this thread";
	struct nand_backing *b;
	int r;

	r = nand_backing_mem(ftl_test_image_size(&c), false, &b);
	if (!r)
		r = ftl_create_backing(b, &c);
	if (!r)
		r = ftl_open_backing(b, NULL, &f);
	if (r) {
		fprintf(stderr, "FAIL: engine: %s\n", strerror(-r));
		return T_EXIT_FAIL;
	}
	for (uint32_t i = 0; i < 64; i++) {
		memset(page, (int)i, sizeof(page));
		T_CHECK(ftl_write(f, page, (uint64_t)i * 4096, 4096, 0) == 0,
			"write %u", i);
	}
	T_CHECK(ftl_flush(f) == 0, "flush");

	aborts(op_balance, "ftl_balance", "ftl_balance", nh);
	aborts(op_ckpt, "ftl_ckpt_write", "ftl_ckpt_write", nh);
	aborts(op_gc, "ftl_gc_free_space", "ftl_gc_free_space", nh);
	aborts(op_wl, "ftl_wl_static", "ftl_wl_static", nh);
	aborts(op_map_set, "ftl_map_set", "ftl_map_set", nh);
	aborts(op_set_state, "ftl_set_state", "ftl_set_state", nh);
	aborts(op_bb_grown, "ftl_bb_grown", "ftl_bb_grown", nh);
	aborts(op_fsum_note, "ftl_fsum_note", "ftl_fsum_note", nh);
	aborts(op_ckpt_other, "ftl_ckpt_write, another thread holds it",
	       "ftl_ckpt_write", nh);
	aborts(op_map_set_other, "ftl_map_set, another thread holds it",
	       "ftl_map_set", nh);
	aborts(op_write_locked, "ftl_write with f->lock held", "range_lock",
	       "held by this thread");
	aborts(op_read_whole_locked, "ftl_read_whole with f->lock held",
	       "ftl_read_whole", "held by this thread");
	returns(op_balance_locked, "ftl_balance with f->lock held");
	returns(op_ckpt_locked, "ftl_ckpt_write with f->lock held");

	/* the parent's engine is untouched: it still reads and closes */
	T_CHECK(ftl_read(f, page, 4096, 4096) == 0 && page[0] == 1,
		"read back");
	T_CHECK(ftl_close(f) == 0, "close");
	return t_result();
}
#endif
