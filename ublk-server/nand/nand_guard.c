/* SPDX-License-Identifier: MIT */
/*
 * Copies through a file mapping that survive a SIGBUS (nand-int.h).
 *
 * A load or store through a MAP_SHARED mapping of a file raises SIGBUS
 * when the page behind it cannot be had: the file was truncated underneath
 * (another process: truncate(1), cp, a script that ignores the flock), a
 * tmpfs hole could not be allocated, memory failed.  The engine is a
 * library, hosted by the ublk-flash server or loaded into nbdkit: such a
 * fault must become an error of the I/O that made it, never kill the
 * process.
 *
 * How: one process-wide SIGBUS handler, installed (sigaction) at the first
 * guarded copy, which keeps the handler that was there before; and a table
 * of guard slots.  A thread about to copy claims a slot: its thread id,
 * the address range it will touch and a sigjmp_buf on its own stack.  The
 * handler runs on the faulting thread (the SIGBUS of a fault is directed
 * at the thread that made it), looks for the slot holding that thread id
 * whose range holds the fault address, and siglongjmps back into the
 * guarded call, which returns -EFAULT.  Every other SIGBUS goes to the
 * previous handler (SIG_DFL: put back and the fault taken again, so the
 * process dies of it as it would have without the engine).
 *
 * Why this is async-signal-safe and correct with many threads:
 * - the handler reads the slot table only (atomic loads: no lock, no
 *   allocation), calls gettid, and then siglongjmp, or sigaction / raise /
 *   the previous handler: all async-signal-safe.  It reads no thread-local
 *   variable: in a dlopened plugin (nbdkit) a first TLS access may
 *   allocate, and initial-exec TLS would move the engine's 86 KiB of
 *   thread buffers into the static TLS block (dlopen then fails);
 * - a slot matches only on its owner's thread id, unique among live
 *   threads, and a thread claims and releases its slot inside the guarded
 *   call, so the jump always lands in a frame of the faulting thread that
 *   is still on its stack;
 * - what the jump abandons is the copy function: memcpy and stamp
 *   arithmetic into the caller's buffers, no lock held, nothing allocated,
 *   no state outside the bytes being copied (which the caller then treats
 *   as not copied: it reads or writes them again with pread / pwrite, and
 *   a program that fails then is undone as any failed program);
 * - sigsetjmp does not save the signal mask (that would be a syscall per
 *   copy); the handler runs with SIGBUS blocked, so the error path
 *   unblocks it.
 * A handler installed after this one that does not chain to it gets every
 * SIGBUS: a guarded fault then kills the process as it did before.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nand-int.h"

#define GUARD_SLOTS 64u         /* concurrent guarded copies */

struct guard_slot {
	int tid;                  /* owner's thread id, 0 = free (atomic) */
	const char *lo, *hi;      /* the guarded range */
	sigjmp_buf *jb;           /* in the owner's guarded call */
} __attribute__((aligned(64)));

static struct guard_slot slots[GUARD_SLOTS];
static struct sigaction prev;   /* the handler before ours */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;
static bool installed;
static __thread int my_tid;     /* cached gettid, outside the handler
                                   only (0: not known yet) */

/* A forked child's thread has another id than the parent's it copied. */
static void forget_tid(void)
{
	my_tid = 0;
}

/* Whatever was there before ours does with a SIGBUS that is not ours. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (prev.sa_flags & SA_SIGINFO) {
		prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
		return;
	}
	if (prev.sa_handler == SIG_IGN && si->si_code <= 0)
		return;                 /* a kill(): ignored, as before */
	/* default action: a fault is taken again on return, then kills; a
	 * signal sent by kill() is raised again (pending until we return) */
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGBUS, &dfl, NULL);
	if (si->si_code <= 0)
		raise(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	int me = (int)syscall(SYS_gettid);
	const char *a = si->si_addr;

	for (unsigned i = 0; si->si_code > 0 && i < GUARD_SLOTS; i++) {
		struct guard_slot *s = &slots[i];

		if (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == me &&
		    a >= s->lo && a < s->hi)
			siglongjmp(*s->jb, 1);
	}
	chain(sig, si, uc);
	errno = saved;
}

static void install(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO | SA_ONSTACK };

	int e = pthread_atfork(NULL, NULL, forget_tid);

	if (e) {
		install_err = -e;
		return;
	}
	/* the old one first: ours may run the moment it is in */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, NULL, &prev) || sigaction(SIGBUS, &sa, NULL))
		install_err = -errno;
	else
		installed = true;
}

/* The engine unloaded (nbdkit's dlclose of the plugin): the previous
 * handler again, unless another one replaced ours since. */
__attribute__((destructor)) static void uninstall(void)
{
	struct sigaction cur;

	if (installed && !sigaction(SIGBUS, NULL, &cur) &&
	    (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)
		sigaction(SIGBUS, &prev, NULL);
}

static struct guard_slot *slot_claim(void)
{
	unsigned first;

	if (!my_tid)
		my_tid = (int)syscall(SYS_gettid);
	first = (unsigned)my_tid % GUARD_SLOTS;
	for (unsigned k = 0; k < GUARD_SLOTS; k++) {
		struct guard_slot *s = &slots[(first + k) % GUARD_SLOTS];
		int exp = 0;

		if (__atomic_compare_exchange_n(&s->tid, &exp, my_tid, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return s;
	}
	return NULL;
}

/* Run @fn(@ctx) with a SIGBUS at an address of [@lo, @lo + @len) turned
 * into a return (see nand-int.h). */
int nand_guarded(const void *lo, size_t len, void (*fn)(void *ctx),
		 void *ctx)
{
	struct guard_slot *s;
	sigjmp_buf jb;

	pthread_once(&once, install);
	if (install_err)
		return install_err;
	s = slot_claim();
	if (!s)
		return -EBUSY;
	s->lo = lo;
	s->hi = (const char *)lo + len;
	s->jb = &jb;
	if (sigsetjmp(jb, 0)) {
		sigset_t m;

		/* s is as it was before sigsetjmp (not assigned since) */
		__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
		sigemptyset(&m);
		sigaddset(&m, SIGBUS);
		pthread_sigmask(SIG_UNBLOCK, &m, NULL);
		return -EFAULT;
	}
	/* the slot's fields before any access the handler may judge */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	fn(ctx);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
	return 0;
}
