/* SPDX-License-Identifier: MIT */
/* Backings for the emulated flash: a file descriptor, or memory with a
 * power-cut simulator (see nand.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "nand.h"

/* ---- file descriptor ------------------------------------------------ */

struct fd_backing {
	struct nand_backing b;
	int fd;
	bool no_punch;
	const uint8_t *map;     /* the file mapped (tmpfs only), or NULL */
	uint8_t *wmap;          /* the same mapping when it is writable (the
	                           file is open O_RDWR, and not
	                           OCTANT_BACKING_MAP=ro), or NULL */
	uint64_t map_len;       /* the file's size when it was mapped */
	uint64_t size;          /* regular file: its size at open (the image's
	                           size), 0: not a regular file */
	uint64_t lost_from;     /* the file was truncated underneath to this
	                           size: every access reaching past it fails
	                           (-ENXIO) and nothing maps it; UINT64_MAX:
	                           whole (atomic, only decreases) */
	bool map_off;           /* a mapped access faulted though the file is
	                           whole: the mapping is not handed out any
	                           more (atomic) */
};

/*
 * A file truncated underneath the engine (another process ignoring the
 * flock) has lost everything past its new end: I/O there fails with EIO
 * rather than reading past the end, faulting through the mapping, or
 * silently growing the file again with holes that read as erased flash.
 * Noticed at a fault through the mapping (fd_mapfault), a read past the
 * end and every sync (fd_check; the sync then fails: a flush must not
 * report durable a medium that lost part of itself); said once on stderr.
 * Until one of those, a pwrite into the lost range grows the file again
 * (a syscall per write to look first would cost every program).
 */
static void fd_lost(struct fd_backing *f, uint64_t at)
{
	uint64_t cur = __atomic_load_n(&f->lost_from, __ATOMIC_ACQUIRE);

	while (at < cur)
		if (__atomic_compare_exchange_n(&f->lost_from, &cur, at, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			fprintf(stderr, "ublk-flash: the image file was "
				"truncated underneath the engine: %" PRIu64
				" bytes, the image is %" PRIu64 "; I/O past "
				"byte %" PRIu64 " fails (EIO)\n", at, f->size,
				at);
			break;
		}
}

/* Is the file still its size (regular files)?  False: truncated (and
 * fd_lost said so). */
static bool fd_check(struct fd_backing *f)
{
	struct stat st;

	if (!f->size || fstat(f->fd, &st) || (uint64_t)st.st_size >= f->size)
		return __atomic_load_n(&f->lost_from, __ATOMIC_ACQUIRE) ==
		       UINT64_MAX;
	fd_lost(f, (uint64_t)st.st_size);
	return false;
}

/* preadv / pwritev of everything in @iov (@cnt <= IOV_MAX), resuming
 * after short transfers. */
static int fd_rw_vec(struct nand_backing *b, bool wr, const struct iovec *in,
		     int cnt, uint64_t off)
{
	struct fd_backing *f = (struct fd_backing *)b;
	struct iovec iov[1024];
	uint64_t len = 0;

	if (cnt > 1024)
		return -EINVAL;
	memcpy(iov, in, (size_t)cnt * sizeof(*iov));
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	if (off + len > __atomic_load_n(&f->lost_from, __ATOMIC_ACQUIRE))
		return -ENXIO;          /* gone (fd_lost) */
	for (int i = 0; i < cnt;) {
		ssize_t n = wr ? pwritev(f->fd, iov + i, cnt - i, (off_t)off)
			       : preadv(f->fd, iov + i, cnt - i, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)             /* past the end: truncated image */
			return fd_check(f) ? -EIO : -ENXIO;
		off += (uint64_t)n;
		while (i < cnt && (size_t)n >= iov[i].iov_len) {
			n -= (ssize_t)iov[i].iov_len;
			i++;
		}
		if (i < cnt) {
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + n;
			iov[i].iov_len -= (size_t)n;
		}
	}
	return 0;
}

static int fd_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return len ? fd_rw_vec(b, false, &v, 1, off) : 0;
}

static int fd_pwrite(struct nand_backing *b, const void *buf, size_t len,
		     uint64_t off)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return len ? fd_rw_vec(b, true, &v, 1, off) : 0;
}

static int fd_preadv(struct nand_backing *b, const struct iovec *iov, int cnt,
		     uint64_t off)
{
	return fd_rw_vec(b, false, iov, cnt, off);
}

static int fd_pwritev(struct nand_backing *b, const struct iovec *iov, int cnt,
		      uint64_t off)
{
	return fd_rw_vec(b, true, iov, cnt, off);
}

static int fd_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	static const uint8_t zero[65536];
	struct fd_backing *f = (struct fd_backing *)b;
	int r;

	if (!f->no_punch) {
		if (!fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)off, (off_t)len))
			return 0;
		if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
			return -errno;
		f->no_punch = true;     /* e.g. a block device: write zeroes */
	}
	while (len) {
		size_t n = len < sizeof(zero) ? (size_t)len : sizeof(zero);
		r = fd_pwrite(b, zero, n, off);
		if (r)
			return r;
		off += n;
		len -= n;
	}
	return 0;
}

static int fd_sync(struct nand_backing *b)
{
	struct fd_backing *f = (struct fd_backing *)b;

	if (fdatasync(f->fd))
		return -errno;
	return fd_check(f) ? 0 : -ENXIO; /* truncated: not all of it there */
}

static int64_t fd_seek(struct nand_backing *b, uint64_t off, int whence)
{
	struct fd_backing *f = (struct fd_backing *)b;
	off_t r = lseek(f->fd, (off_t)off, whence);

	return r < 0 ? -1 : (int64_t)r;
}

static const void *fd_view(struct nand_backing *b, uint64_t off,
			   uint64_t len)
{
	struct fd_backing *f = (struct fd_backing *)b;

	if (!f->map || off > f->map_len || len > f->map_len - off ||
	    off + len > __atomic_load_n(&f->lost_from, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&f->map_off, __ATOMIC_ACQUIRE))
		return NULL;
	return f->map + off;
}

/* Bytes from @off resident in the mapping (mincore), at most @len. */
static uint64_t fd_resident(struct nand_backing *b, uint64_t off,
			    uint64_t len)
{
	struct fd_backing *f = (struct fd_backing *)b;
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t start, at, done = 0;
	unsigned char vec[256];

	if (!f->map || pg <= 0 || off > f->map_len)
		return 0;
	if (len > f->map_len - off)
		len = f->map_len - off;
	start = off - off % (uint64_t)pg;       /* mincore wants it aligned */
	for (at = start; at < off + len; ) {
		uint64_t chunk = off + len - at;
		size_t np;

		if (chunk > sizeof(vec) * (uint64_t)pg)
			chunk = sizeof(vec) * (uint64_t)pg;
		np = (size_t)((chunk + (uint64_t)pg - 1) / (uint64_t)pg);
		if (mincore((void *)(f->map + at), (size_t)chunk, vec))
			return done;
		for (size_t i = 0; i < np; i++, at += (uint64_t)pg) {
			if (!(vec[i] & 1))
				return done;
			done = at + (uint64_t)pg - off;
		}
	}
	return done < len ? done : len;
}

static void *fd_wview(struct nand_backing *b, uint64_t off, uint64_t len)
{
	struct fd_backing *f = (struct fd_backing *)b;

	if (!f->wmap || !fd_view(b, off, len))
		return NULL;
	return f->wmap + off;
}

/* A copy through the mapping at @off took a SIGBUS (see nand.h): the file
 * truncated underneath (fd_lost), or else the mapping is given up. */
static int fd_mapfault(struct nand_backing *b, uint64_t off)
{
	struct fd_backing *f = (struct fd_backing *)b;

	if (fd_check(f) &&
	    !__atomic_exchange_n(&f->map_off, true, __ATOMIC_ACQ_REL))
		fprintf(stderr, "ublk-flash: an access through the image's "
			"mapping at byte %" PRIu64 " faulted (SIGBUS) though "
			"the file is whole; going on with pread/pwrite\n", off);
	return -EIO;
}

static void fd_destroy(struct nand_backing *b)
{
	struct fd_backing *f = (struct fd_backing *)b;

	if (f->map)
		munmap((void *)f->map, f->map_len);
	free(b);
}

#define FD_TMPFS_MAGIC 0x01021994

/*
 * Map @f's file when it is a regular file on tmpfs: readable, and writable
 * too when the file is open O_RDWR (unless OCTANT_BACKING_MAP=ro).  Only
 * there: an access through a mapping that fails (a disk's media error) is
 * SIGBUS, not an error return, and tmpfs has no media.  A mapping is
 * MAP_SHARED over the page cache, so it and pread/pwrite see each other's
 * bytes the moment either is done.  Nothing is populated up front, and
 * the nand layer touches only slots it proved allocated (fd_resident).
 * Any failure just leaves the file unmapped (pread/pwrite serve).
 */
static void fd_map(struct fd_backing *f)
{
	const char *e = getenv("OCTANT_BACKING_MAP");
	bool rw = (fcntl(f->fd, F_GETFL) & O_ACCMODE) == O_RDWR &&
		  !(e && !strcmp(e, "ro"));
	struct statfs sfs;
	struct stat st;
	void *p;

	if (e && !strcmp(e, "0"))
		return;
	if (fstat(f->fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    fstatfs(f->fd, &sfs) || sfs.f_type != FD_TMPFS_MAGIC)
		return;
	/* Not locked: serve's mlockall(MCL_FUTURE) would lock and so
	 * populate a new readable mapping at once, allocating every hole of
	 * a sparse image in the tmpfs (all of it in memory; SIGBUS when it
	 * does not fit).  A PROT_NONE mapping is not populated; it is
	 * unlocked, then made readable, and a page then faults in (a minor
	 * fault: it is the tmpfs file's page cache) when first read. */
	p = mmap(NULL, (size_t)st.st_size, PROT_NONE, MAP_SHARED, f->fd, 0);
	if (p == MAP_FAILED)
		return;
	if (munlock(p, (size_t)st.st_size) ||
	    mprotect(p, (size_t)st.st_size, PROT_READ | (rw ? PROT_WRITE : 0))) {
		munmap(p, (size_t)st.st_size);
		return;
	}
	f->map = p;
	f->wmap = rw ? p : NULL;
	f->map_len = (uint64_t)st.st_size;
}

static const struct nand_backing_ops fd_ops = {
	.pread = fd_pread,
	.pwrite = fd_pwrite,
	.punch = fd_punch,
	.sync = fd_sync,
	.destroy = fd_destroy,
	.seek = fd_seek,
	.preadv = fd_preadv,
	.pwritev = fd_pwritev,
	.view = fd_view,
	.resident = fd_resident,
	.wview = fd_wview,
	.mapfault = fd_mapfault,
};

/* A backing over @fd (see nand.h). */
int nand_backing_fd(int fd, struct nand_backing **out)
{
	struct fd_backing *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	struct stat st;

	f->b.ops = &fd_ops;
	f->fd = fd;
	f->lost_from = UINT64_MAX;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		f->size = (uint64_t)st.st_size;
	fd_map(f);
	*out = &f->b;
	return 0;
}

/* ---- memory, with the power-cut log ---------------------------------- */

struct mem_write {
	uint64_t off, len;
	uint8_t *data;          /* NULL: zeroes (punch) */
};

struct mem_backing {
	struct nand_backing b;
	pthread_mutex_t mx;     /* writes, the log, sync (recursive: a trigger
	                           may build a crash image); reads take none,
	                           the engine never reads what is being written */
	uint64_t size;
	uint8_t *cur;           /* what reads see */
	uint8_t *dur;           /* what survives a power cut (powercut only) */
	struct mem_write *log;  /* writes since the last sync */
	size_t nlog, cap;
	bool off;               /* power is off: drop writes */
	int refs;               /* extra holders (nand_mem_hold) */
	uint64_t writes, trigger_at;     /* nand_mem_set_trigger */
	void (*trigger)(void *ctx);
	void *trigger_ctx;
	_Atomic bool in_trigger;        /* the trigger runs, mx held by the
	                                   writer that fired it */
};

static void mem_count(struct mem_backing *m)
{
	if (++m->writes == m->trigger_at && m->trigger) {
		m->trigger_at = 0;
		m->in_trigger = true;
		m->trigger(m->trigger_ctx);
		m->in_trigger = false;
	}
}

static int mem_log(struct mem_backing *m, const void *buf, uint64_t len,
		   uint64_t off)
{
	struct mem_write *w;

	if (!m->dur)
		return 0;
	if (m->nlog == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		w = realloc(m->log, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		m->log = w;
		m->cap = cap;
	}
	w = &m->log[m->nlog];
	w->off = off;
	w->len = len;
	w->data = NULL;
	if (buf) {
		w->data = malloc(len);
		if (!w->data)
			return -ENOMEM;
		memcpy(w->data, buf, len);
	}
	m->nlog++;
	return 0;
}

static int mem_pread(struct nand_backing *b, void *buf, size_t len, uint64_t off)
{
	struct mem_backing *m = (struct mem_backing *)b;

	if (off > m->size || len > m->size - off)
		return -EIO;
	memcpy(buf, m->cur + off, len);
	return 0;
}

static int mem_pwrite_locked(struct nand_backing *b, const void *buf,
			     size_t len, uint64_t off)
{
	struct mem_backing *m = (struct mem_backing *)b;
	int r;

	if (off > m->size || len > m->size - off)
		return -EIO;
	if (m->off)
		return 0;
	memcpy(m->cur + off, buf, len);
	r = mem_log(m, buf, len, off);
	if (!r)
		mem_count(m);
	return r;
}

static int mem_preadv(struct nand_backing *b, const struct iovec *iov, int cnt,
		      uint64_t off)
{
	int r = 0;

	for (int i = 0; i < cnt && !r; i++) {
		r = mem_pread(b, iov[i].iov_base, iov[i].iov_len, off);
		off += iov[i].iov_len;
	}
	return r;
}

/* One logged write (it may tear like any other), however many iovecs. */
static int mem_pwritev_locked(struct nand_backing *b, const struct iovec *iov,
			      int cnt, uint64_t off)
{
	struct mem_backing *m = (struct mem_backing *)b;
	uint64_t len = 0, at = off;
	int r;

	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	if (off > m->size || len > m->size - off)
		return -EIO;
	if (m->off)
		return 0;
	for (int i = 0; i < cnt; i++) {
		memcpy(m->cur + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	r = mem_log(m, m->cur + off, len, off);
	if (!r)
		mem_count(m);
	return r;
}

static int mem_punch_locked(struct nand_backing *b, uint64_t off,
			    uint64_t len)
{
	struct mem_backing *m = (struct mem_backing *)b;
	int r;

	if (off > m->size || len > m->size - off)
		return -EIO;
	if (m->off)
		return 0;
	memset(m->cur + off, 0, len);
	r = mem_log(m, NULL, len, off);
	if (!r)
		mem_count(m);
	return r;
}

static void apply(uint8_t *img, const struct mem_write *w)
{
	if (w->data)
		memcpy(img + w->off, w->data, w->len);
	else
		memset(img + w->off, 0, w->len);
}

static int mem_sync_locked(struct nand_backing *b)
{
	struct mem_backing *m = (struct mem_backing *)b;

	if (m->off || !m->dur)
		return 0;
	for (size_t i = 0; i < m->nlog; i++) {
		apply(m->dur, &m->log[i]);
		free(m->log[i].data);
	}
	m->nlog = 0;
	return 0;
}


/* The write side under the backing's mutex: programs may come from
 * several threads (nand_program_run outside the engine's lock). */
static int mem_pwrite(struct nand_backing *b, const void *buf, size_t len,
		      uint64_t off)
{
	struct mem_backing *m = (struct mem_backing *)b;
	int r;

	pthread_mutex_lock(&m->mx);
	r = mem_pwrite_locked(b, buf, len, off);
	pthread_mutex_unlock(&m->mx);
	return r;
}

static int mem_pwritev(struct nand_backing *b, const struct iovec *iov,
		       int cnt, uint64_t off)
{
	struct mem_backing *m = (struct mem_backing *)b;
	int r;

	pthread_mutex_lock(&m->mx);
	r = mem_pwritev_locked(b, iov, cnt, off);
	pthread_mutex_unlock(&m->mx);
	return r;
}

static int mem_punch(struct nand_backing *b, uint64_t off, uint64_t len)
{
	struct mem_backing *m = (struct mem_backing *)b;
	int r;

	pthread_mutex_lock(&m->mx);
	r = mem_punch_locked(b, off, len);
	pthread_mutex_unlock(&m->mx);
	return r;
}

static int mem_sync(struct nand_backing *b)
{
	struct mem_backing *m = (struct mem_backing *)b;
	int r;

	pthread_mutex_lock(&m->mx);
	r = mem_sync_locked(b);
	pthread_mutex_unlock(&m->mx);
	return r;
}

static void mem_destroy(struct nand_backing *b)
{
	struct mem_backing *m = (struct mem_backing *)b;

	if (m->refs > 0) {
		m->refs--;
		return;
	}
	for (size_t i = 0; i < m->nlog; i++)
		free(m->log[i].data);
	free(m->log);
	free(m->cur);
	free(m->dur);
	pthread_mutex_destroy(&m->mx);
	free(m);
}

static const struct nand_backing_ops mem_ops = {
	.pread = mem_pread,
	.pwrite = mem_pwrite,
	.punch = mem_punch,
	.sync = mem_sync,
	.destroy = mem_destroy,
	.preadv = mem_preadv,
	.pwritev = mem_pwritev,
};

/* A backing in memory (see nand.h). */
int nand_backing_mem(uint64_t size, bool powercut, struct nand_backing **out)
{
	struct mem_backing *m = calloc(1, sizeof(*m));
	pthread_mutexattr_t a;

	if (!m)
		return -ENOMEM;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&m->mx, &a);
	pthread_mutexattr_destroy(&a);
	m->b.ops = &mem_ops;
	m->size = size;
	m->cur = calloc(1, size);
	if (powercut)
		m->dur = calloc(1, size);
	if (!m->cur || (powercut && !m->dur)) {
		mem_destroy(&m->b);
		return -ENOMEM;
	}
	*out = &m->b;
	return 0;
}

/* The current bytes of a memory backing. */
uint8_t *nand_mem_bytes(struct nand_backing *b, uint64_t *size)
{
	struct mem_backing *m = (struct mem_backing *)b;

	if (b->ops != &mem_ops) {       /* another backing */
		if (size)
			*size = 0;
		return NULL;
	}
	if (size)
		*size = m->size;
	return m->cur;
}

/* Call @fn(@ctx) right after the @n-th next write (pwrite or punch) has
 * been logged: a power cut in the middle of an engine operation. */
void nand_mem_set_trigger(struct nand_backing *b, uint64_t n,
			  void (*fn)(void *ctx), void *ctx)
{
	struct mem_backing *m = (struct mem_backing *)b;

	m->trigger = fn;
	m->trigger_ctx = ctx;
	m->trigger_at = n ? m->writes + n : 0;
}

/* Take one more reference: destroy() then only drops it. */
void nand_mem_hold(struct nand_backing *b)
{
	((struct mem_backing *)b)->refs++;
}

/* Power back on: writes reach the memory again. */
void nand_mem_power_on(struct nand_backing *b)
{
	((struct mem_backing *)b)->off = false;
}

/* Replace the current (and durable) bytes with @img, forgetting pending
 * writes: the state after a power cut that left @img. */
void nand_mem_load(struct nand_backing *b, const uint8_t *img)
{
	struct mem_backing *m = (struct mem_backing *)b;

	pthread_mutex_lock(&m->mx);
	for (size_t i = 0; i < m->nlog; i++)
		free(m->log[i].data);
	m->nlog = 0;
	memcpy(m->cur, img, m->size);
	if (m->dur)
		memcpy(m->dur, img, m->size);
	pthread_mutex_unlock(&m->mx);
}

/* Drop every later write (see nand.h). */
void nand_mem_power_off(struct nand_backing *b)
{
	((struct mem_backing *)b)->off = true;
}

static uint64_t rnd(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The image a power cut would leave, under the backing's mutex: a live
 * engine may sync (mem_sync: the log applied to dur and freed) or write
 * from its GC thread meanwhile, with the engine's lock released (GC-SIDE
 * SYNC, ftl_gc.c); the cut falls between two of those, never inside one. */
static long crash_image_locked(struct mem_backing *m, uint64_t seed,
			       bool tear, uint8_t *out);

/* Build the image a power cut would leave (see nand.h). */
long nand_mem_crash_image(struct nand_backing *b, uint64_t seed, bool tear,
			  uint8_t *out)
{
	struct mem_backing *m = (struct mem_backing *)b;
	/* inside a trigger the writer that fired it holds mx and waits for
	 * the trigger (which may run the cut on a thread of its own, as
	 * ftl-powercut does): nothing moves, and locking would deadlock */
	bool lock = !m->in_trigger;
	long r;

	if (lock)
		pthread_mutex_lock(&m->mx);
	r = crash_image_locked(m, seed, tear, out);
	if (lock)
		pthread_mutex_unlock(&m->mx);
	return r;
}

/* The image a kill -9 would leave (see nand.h). */
void nand_mem_kill_image(struct nand_backing *b, uint8_t *out)
{
	struct mem_backing *m = (struct mem_backing *)b;
	bool lock = !m->in_trigger;     /* as nand_mem_crash_image */

	if (lock)
		pthread_mutex_lock(&m->mx);
	memcpy(out, m->cur, m->size);
	if (lock)
		pthread_mutex_unlock(&m->mx);
}

static long crash_image_locked(struct mem_backing *m, uint64_t seed,
			       bool tear, uint8_t *out)
{
	uint64_t s = seed;
	size_t n = m->nlog, keep, torn;
	bool subset;

	if (!m->dur)
		return -EINVAL;
	memcpy(out, m->dur, m->size);
	if (!n)
		return 0;
	subset = rnd(&s) & 1;
	keep = (size_t)(rnd(&s) % (n + 1));       /* prefix length */
	torn = tear ? (size_t)(rnd(&s) % n) : n;  /* the write that tears */
	for (size_t i = 0; i < n; i++) {
		const struct mem_write *w = &m->log[i];
		bool in = subset ? (rnd(&s) & 1) : i < keep;

		if (i == torn) {
			/* some of its 512-byte sectors reach the medium */
			for (uint64_t o = 0; o < w->len; o += 512) {
				uint64_t l = w->len - o < 512 ? w->len - o : 512;
				if (!(rnd(&s) & 1))
					continue;
				if (w->data)
					memcpy(out + w->off + o, w->data + o, l);
				else
					memset(out + w->off + o, 0, l);
			}
			continue;
		}
		if (in)
			apply(out, w);
	}
	return (long)n;
}
