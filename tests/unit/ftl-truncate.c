/* SPDX-License-Identifier: MIT */
/*
 * An image on tmpfs truncated underneath the engine (another process:
 * truncate(1), cp, a script ignoring the flock).  The engine copies pages
 * through the file's mapping, where the lost range raises SIGBUS: reads,
 * programs and flushes must fail with EIO instead, from one thread or
 * several, with one log line saying what happened, and the file must not
 * grow back (holes that would read as erased flash).  The engine's SIGBUS
 * handler chains: a fault outside its copies reaches the handler that was
 * there before (a test's own), and with none the process still dies of
 * it.  Holes punched in the image while another file fills the tmpfs: a
 * mapped read that faults with the file whole is an EIO too.  Each case
 * runs in a child process (a SIGBUS that escapes kills the child, not the
 * test).  Needs a tmpfs: a private one (root), else /dev/shm without the
 * holes case (SKIP after the rest passed), else SKIP.  A GC copy
 * programmed from a victim's pages in the mapping (by pointer) whose
 * victim was lost: EIO, no death.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftl-int.h"
#include "test.h"

#define SIZE (16u << 20)
#define MIB (1u << 20)
#define TMPFS_MAGIC 0x01021994

static char dir[256], img[300], logf[300];
static uint8_t buf[MIB];

/* A fresh image, written three times over (so programs and reads go
 * through the mapping: slots proven allocated) and read once. */
static struct ftl *setup_filled(void)
{
	struct ftl_create_opts co = { .size = SIZE, .align = FTL_ALIGN_1M };
	struct ftl_open_opts oo = { 0 };
	struct ftl *f;

	unlink(img);
	if (ftl_create(img, &co) || ftl_open(img, &oo, &f)) {
		T_CHECK(0, "create / open");
		return NULL;
	}
	for (int round = 0; round < 3; round++)
		for (uint64_t o = 0; o < SIZE; o += MIB) {
			memset(buf, 'a' + round, sizeof(buf));
			T_CHECK(ftl_write(f, buf, o, MIB, 0) == 0, "fill");
		}
	T_CHECK(ftl_flush(f) == 0, "flush");
	for (uint64_t o = 0; o < SIZE; o += MIB)
		T_CHECK(ftl_read(f, buf, o, MIB) == 0, "read");
	return f;
}

/* ... then truncated to 1 MiB by "another process". */
static struct ftl *setup_truncated(void)
{
	struct ftl *f = setup_filled();

	T_CHECK(truncate(img, MIB) == 0, "truncate");
	return f;
}

static uint64_t file_size(void)
{
	struct stat st;

	return stat(img, &st) ? 0 : (uint64_t)st.st_size;
}

static void case_read(void)
{
	struct ftl *f = setup_truncated();
	int r;

	if (!f)
		return;
	r = ftl_read(f, buf, SIZE / 2, MIB);
	T_CHECK(r == -EIO, "read of the lost range: %d", r);
	r = ftl_flush(f);
	T_CHECK(r == -EIO, "flush of a truncated image: %d", r);
	T_EQ_U64(file_size(), MIB, "the file did not grow back");
	ftl_abandon(f);
}

static void case_write(void)
{
	struct ftl *f = setup_truncated();
	int r = 0;

	if (!f)
		return;
	memset(buf, 'w', sizeof(buf));
	for (int i = 0; i < 64 && !r; i++)
		r = ftl_write(f, buf, SIZE / 2, MIB, 0);
	T_CHECK(r == -EIO, "writes into the lost range end with EIO: %d", r);
	r = ftl_flush(f);
	T_CHECK(r == -EIO, "flush of a truncated image: %d", r);
	T_EQ_U64(file_size(), MIB, "the file did not grow back");
	ftl_abandon(f);
}

/* Without the mapping (OCTANT_BACKING_MAP=0) a program's pwrite into the
 * lost range grows the file until the engine notices (a read past the
 * end, or the next flush: it fails); from then on writes fail and the
 * file stays as it is. */
static void case_write_unmapped(void)
{
	struct ftl *f;
	uint64_t sz;
	int r = 0;

	setenv("OCTANT_BACKING_MAP", "0", 1);
	f = setup_truncated();
	if (!f)
		return;
	memset(buf, 'w', sizeof(buf));
	for (int i = 0; i < 4 && !r; i++)
		r = ftl_write(f, buf, SIZE / 2, MIB, 0);
	r = ftl_flush(f);
	T_CHECK(r == -EIO, "flush of a truncated image: %d", r);
	sz = file_size();
	r = 0;
	for (int i = 0; i < 64 && !r; i++)
		r = ftl_write(f, buf, SIZE / 2, MIB, 0);
	T_CHECK(r == -EIO, "writes after the flush found it: %d", r);
	T_EQ_U64(file_size(), sz, "the file does not grow after that");
	T_CHECK(sz < SIZE, "it never grew back to the image's size");
	ftl_abandon(f);
}

static struct ftl *tf;
static int tres[4];

static void *reader(void *arg)
{
	static __thread uint8_t b[MIB / 4];
	intptr_t i = (intptr_t)arg;

	tres[i] = 0;
	for (int k = 0; k < 8 && !tres[i]; k++)
		tres[i] = ftl_read(tf, b, SIZE / 2 + (uint64_t)i * (MIB / 4),
				   MIB / 4);
	return NULL;
}

static void case_threads(void)
{
	pthread_t t[4];

	tf = setup_truncated();
	if (!tf)
		return;
	for (intptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, reader, (void *)i);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		T_CHECK(tres[i] == -EIO, "thread %d: %d", i, tres[i]);
	}
	ftl_abandon(tf);
}

/* GC programs its copies from pointers into the victim's pages in the
 * mapping (nand_read_run_view): a victim lost to the truncation makes the
 * program's copy fault on its source, the destination whole.  The program
 * fails with EIO (the guard covers the sources too, nand_run_wview), the
 * process lives. */
static void case_copy_source(void)
{
	const struct nand_geom g = { .page_size = 4096, .oob_size = 64,
		.ppb = 16, .nblocks = 8, .oob_inline = true };
	uint64_t bsz = (uint64_t)g.ppb * (g.page_size + g.oob_size);
	static uint8_t oob[16 * 64];
	const void *pages[16];
	struct nand_backing *b = NULL;
	struct nand *n = NULL;
	int res[16], fd, r;
	uint32_t done;

	unlink(img);
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0644);
	memset(buf, 0, sizeof(buf));
	/* every byte written: the slots proven allocated, so the program
	 * copies into the mapping */
	for (uint64_t o = 0; fd >= 0 && o < g.nblocks * bsz; o += bsz)
		T_CHECK(pwrite(fd, buf, bsz, (off_t)o) == (ssize_t)bsz, "fill");
	if (fd < 0 || nand_backing_fd(fd, &b) || nand_create(b, &g, &n)) {
		T_CHECK(0, "nand on the image");
		return;
	}
	for (uint32_t k = 0; k < g.nblocks; k++)
		T_CHECK(nand_erase(n, k) == 0, "erase %u", k);
	memset(buf, 'v', sizeof(buf));
	T_CHECK(nand_program_run(n, 7 * g.ppb, g.ppb, buf, oob, &done) == 0,
		"the victim");
	r = nand_read_run_view(n, 7 * g.ppb, g.ppb, pages, oob, res);
	T_CHECK(r == 0, "the victim by pointer: %d", r);
	if (!r) {
		T_CHECK(truncate(img, (off_t)(4 * bsz)) == 0, "truncate");
		r = nand_program_runv(n, 0, g.ppb, pages, oob, &done);
		T_CHECK(r == -EIO, "a copy from the lost victim: %d, want "
			"-EIO", r);
	}
	nand_destroy(n);
	close(fd);
}

/* A SIGBUS handler of the process, installed before the engine's. */
static volatile sig_atomic_t own_calls;
static sigjmp_buf own_jb;

static void own_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)si; (void)uc;
	own_calls++;
	siglongjmp(own_jb, 1);
}

/* A fault of the test's own: a mapping of a file truncated under it. */
static void own_fault(void)
{
	char path[300];
	volatile uint8_t *p;
	int fd;

	snprintf(path, sizeof(path), "%s/own", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 8192)) {
		T_CHECK(0, "own file");
		return;
	}
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_CHECK(p != MAP_FAILED, "own mapping");
	if (p != MAP_FAILED) {
		p[0] = 1;
		T_CHECK(ftruncate(fd, 0) == 0, "own truncate");
		if (!sigsetjmp(own_jb, 1))
			p[4096] = 1;    /* SIGBUS */
		munmap((void *)p, 8192);
	}
	close(fd);
	unlink(path);
}

static void case_chain(void)
{
	struct sigaction sa = { .sa_sigaction = own_handler,
				.sa_flags = SA_SIGINFO };
	struct ftl *f;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	f = setup_truncated();
	if (!f)
		return;
	T_CHECK(ftl_read(f, buf, SIZE / 2, MIB) == -EIO, "engine read");
	T_EQ_U64(own_calls, 0, "the engine's faults stay the engine's");
	own_fault();
	T_EQ_U64(own_calls, 1, "a fault outside the engine reaches the "
		 "handler installed before it");
	ftl_abandon(f);
}

/* No handler before the engine's: a fault outside its copies still
 * kills the process with SIGBUS (the child's expected death). */
static void case_default(void)
{
	struct ftl *f = setup_truncated();

	if (!f)
		return;
	T_CHECK(ftl_read(f, buf, SIZE / 2, MIB) == -EIO, "engine read");
	fflush(stderr);
	own_fault();
	_exit(42);                      /* swallowed */
}

/* Holes punched in the image underneath (the file keeps its size) while
 * another file fills the tmpfs: a copy through the mapping of a page the
 * engine had proven allocated now faults a new page in, which the full
 * tmpfs cannot give: SIGBUS.  The read fails with EIO, the engine says
 * so once and goes on with pread (the mapping given up). */
static void case_holes(void)
{
	struct ftl *f = setup_filled();
	char fill[320];
	int fd, r;

	if (!f)
		return;
	fd = open(img, O_RDWR);
	T_CHECK(fd >= 0 && !fallocate(fd, FALLOC_FL_PUNCH_HOLE |
				      FALLOC_FL_KEEP_SIZE, 2 * MIB,
				      (off_t)SIZE - 4 * MIB), "holes: punch");
	if (fd >= 0)
		close(fd);
	snprintf(fill, sizeof(fill), "%s/fill", dir);
	fd = open(fill, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	memset(buf, 0, sizeof(buf));
	while (fd >= 0 && write(fd, buf, sizeof(buf)) > 0)
		;
	if (fd >= 0)
		close(fd);
	r = 0;
	for (uint64_t o = 0; o < SIZE && !r; o += MIB)
		r = ftl_read(f, buf, o, MIB);
	T_CHECK(r == -EIO, "holes: a read of punched pages: %d", r);
	unlink(fill);
	ftl_abandon(f);
}

/* Run @fn in a child, its stderr into logf; 0 or the signal it died of
 * (*@code: its exit status). */
static int in_child(void (*fn)(void), const char *what, int *code)
{
	int st, fd;
	pid_t pid;

	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		T_CHECK(0, "%s: fork", what);
		return -1;
	}
	if (!pid) {
		fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		fn();
		fflush(stderr);
		_exit(t_failures ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) < 0) {
		T_CHECK(0, "%s: wait", what);
		return -1;
	}
	if (WIFSIGNALED(st))
		return WTERMSIG(st);
	*code = WEXITSTATUS(st);
	return 0;
}

/* The child's stderr, echoed; does it hold @needle? */
static bool log_has(const char *needle)
{
	static char text[65536];
	size_t n = 0;
	FILE *l = fopen(logf, "r");

	if (l) {
		n = fread(text, 1, sizeof(text) - 1, l);
		fclose(l);
	}
	text[n] = 0;
	fputs(text, stderr);
	return strstr(text, needle) != NULL;
}

static void one(void (*fn)(void), const char *what)
{
	int code = 0, sig = in_child(fn, what, &code);

	T_CHECK(sig || code == 0, "%s: the child's checks failed", what);
	T_CHECK(sig == 0, "%s: the process died of signal %d (%s)", what, sig,
		sig > 0 ? strsignal(sig) : "");
	T_CHECK(log_has("truncated underneath the engine"),
		"%s: the log says the image was truncated", what);
}

int main(void)
{
	struct statfs sfs;
	bool mounted = false;
	int sig, code = 0;

	/* a private tmpfs when root (the holes case fills it), else
	 * /dev/shm */
	snprintf(dir, sizeof(dir), "/tmp/ftl-truncate-%d", (int)getpid());
	if (!geteuid() && !mkdir(dir, 0700)) {
		mounted = !mount("tmpfs", dir, "tmpfs", 0, "size=32M");
		if (!mounted)
			rmdir(dir);
	}
	if (!mounted) {
		snprintf(dir, sizeof(dir), "/dev/shm/ftl-truncate-%d",
			 (int)getpid());
		if (statfs("/dev/shm", &sfs) || sfs.f_type != TMPFS_MAGIC ||
		    mkdir(dir, 0700))
			T_SKIP("no tmpfs: /dev/shm is none and mounting one "
			       "needs root");
	}
	snprintf(img, sizeof(img), "%s/t.img", dir);
	/* the children's stderr: not on the tmpfs the holes case fills */
	snprintf(logf, sizeof(logf), "/tmp/ftl-truncate-%d.log", (int)getpid());
	one(case_read, "read");
	one(case_write, "write");
	one(case_write_unmapped, "write, OCTANT_BACKING_MAP=0");
	one(case_threads, "4 reading threads");
	one(case_copy_source, "a GC copy from a lost victim");
	one(case_chain, "a handler before the engine's");
	if (mounted) {
		T_CHECK(!in_child(case_holes, "holes", &code) && !code,
			"holes: the child died or failed");
		T_CHECK(log_has("faulted (SIGBUS) though the file is whole"),
			"holes: the log says the mapping faulted");
	}
	sig = in_child(case_default, "default action", &code);
#ifdef __SANITIZE_ADDRESS__
	/* ASan's own SIGBUS handler was there first: it reports and exits */
	T_CHECK(sig == SIGBUS || (!sig && code && code != 42),
		"a fault outside the engine's copies goes to ASan's handler: "
		"signal %d, exit %d", sig, code);
#else
	T_CHECK(sig == SIGBUS, "a fault outside the engine's copies kills "
		"with SIGBUS: signal %d, exit %d", sig, code);
#endif
	unlink(img);
	unlink(logf);
	if (mounted)
		umount(dir);
	rmdir(dir);
	if (!mounted && !t_failures)
		T_SKIP("the punched-holes case needs root to mount a tmpfs it "
		       "can fill (the rest passed)");
	return t_result();
}
