/* SPDX-License-Identifier: MIT */
/*
 * The host write path: whole pages in runs (one nand program run per open
 * block's worth), read-modify-write of partly written pages, under
 * per-page range locks; FUA, flush, discard and write-zeroes (trim
 * records).  Each run or page goes through ftl_balance() (room first),
 * then the append layer (ftl_append.c).
 */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "ftl-int.h"

/* Scratch per thread for read-modify-write, no malloc per I/O: the first
 * and the last page a request covers in part (see read_parts). */
static __thread uint8_t tls_page[FTL_MAX_PAGE] __attribute__((aligned(64)));
static __thread uint8_t tls_tail[FTL_MAX_PAGE] __attribute__((aligned(64)));

static void stripe_op(struct ftl *f, unsigned i, bool lock)
{
	if (lock)
		ftl_lock(&f->stripe[i]);
	else
		ftl_unlock(&f->stripe[i]);
}

/* Lock (or unlock) the distinct stripes of logical pages [p0, p1]
 * (ftl_stripe_of), in ascending stripe order: no deadlock between writers. */
static void range_lock(struct ftl *f, uint64_t p0, uint64_t p1, bool lock)
{
	unsigned a = ftl_stripe_of(p0), b = ftl_stripe_of(p1), i;

	FTL_ASSERT_NOT_HELD(&f->lock);
	if (p1 / FTL_STRIPE_PAGES - p0 / FTL_STRIPE_PAGES + 1 >= FTL_NSTRIPES) {
		a = 0;
		b = FTL_NSTRIPES - 1;
	}
	if (a <= b) {
		for (i = a; i <= b; i++)
			stripe_op(f, i, lock);
		return;
	}
	for (i = 0; i <= b; i++)        /* the range wraps: both ends */
		stripe_op(f, i, lock);
	for (i = a; i < FTL_NSTRIPES; i++)
		stripe_op(f, i, lock);
}

/*
 * Read the pages medium bytes [mo, end) cover in part, before anything is
 * programmed: the first into tls_page, the last into tls_tail when it is
 * another page (*head, *tail: read).  With @mapped_only (a discard),
 * unmapped ones are left out: they read as zeroes already.  Each is read
 * and checked as a host read is (ftl_read_whole): a page that does not
 * read back as written -- FTL_DAMAGED, beyond the ECC, failing its data
 * CRC -- is never merged into a new program with a fresh CRC (that would
 * serve the damage as good data).  The request fails with -EIO instead
 * and changes nothing, as a 512e drive fails a write whose 4K physical
 * sector cannot be read; a request covering the page whole replaces it.
 */
static int read_parts(struct ftl *f, uint64_t mo, uint64_t end,
		      bool mapped_only, bool *head, bool *tail)
{
	uint64_t ps = f->g.ps, p0 = mo / ps, p1 = (end - 1) / ps;
	int r = 0;

	FTL_ASSERT_HELD(&f->stripe[ftl_stripe_of(p0)]);
	*head = mo % ps || (p0 == p1 && end % ps);
	*tail = p1 != p0 && end % ps;
	if (mapped_only && ftl_map_get(f, (uint32_t)p0) == FTL_UNMAPPED)
		*head = false;
	if (mapped_only && ftl_map_get(f, (uint32_t)p1) == FTL_UNMAPPED)
		*tail = false;
	if (*head)
		r = ftl_read_whole(f, (uint32_t)p0, tls_page);
	if (!r && *tail)
		r = ftl_read_whole(f, (uint32_t)p1, tls_tail);
	return r;
}

/* Balance, then program one host page (f->lock held).  A failed program
 * may leave the retry without a free block: balance again (GC) then. */
static int host_prog(struct ftl *f, uint32_t lpn, const void *data,
		     uint8_t kind)
{
	int r;

	FTL_ASSERT_HELD(&f->lock);
	for (int i = 0;; i++) {
		/* data by temperature; trim records to the hot frontier */
		int s = ftl_place_host(f, kind == FTL_OOB_DATA ? lpn :
					  FTL_NONE);

		r = ftl_balance(f);
		if (!r)
			r = ftl_prog_page(f, s, lpn, data, kind, NULL);
		if (r != -ENOSPC || i >= 3 || !ftl_stream_needs_block(f, s))
			return r;
	}
}

static int write_page(struct ftl *f, uint32_t lpn, const void *data)
{
	int r;

	FTL_ASSERT_NOT_HELD(&f->lock);
	FTL_ASSERT_HELD(&f->stripe[ftl_stripe_of(lpn)]);
	ftl_lock(&f->lock);
	r = host_prog(f, lpn, data, FTL_OOB_DATA);
	ftl_unlock(&f->lock);
	return r;
}

#define RUN_MAX 1024u             /* pages per turn */
#define RUN_UNLOCKED_MIN 8u       /* shorter writes program under f->lock */

/* Per thread: the data CRCs and OOB records of a run being written. */
static __thread uint32_t tls_crc[RUN_MAX];
static __thread uint8_t tls_oob[65536] __attribute__((aligned(64)));

/*
 * Program whole host pages @lpn.. (@n of them, data back to back) in runs.
 * Each turn computes the data CRCs without any lock (for every run: a
 * CRC32C costs ~7 us a page under TCG, time no other queue could use
 * f->lock for), balances once under
 * f->lock (room for a run), reserves as much as the host stream's open
 * block takes (ftl_run_reserve), programs it with f->lock released (one
 * nand run) and takes the lock again to point the map at it.  Writes of
 * fewer than RUN_UNLOCKED_MIN pages are programmed under the lock: for a
 * 4 KiB write the unlock / ticket wait / relock handoffs cost more than
 * the program (bench-fuse 4K randwrite on a fresh device: 28.6k IOPS
 * against 54.3k before programs left the lock; 79-85k with this limit,
 * old binary 78-90k, same run).  With a
 * fault model or hook, or on layout 1.0, the run is programmed under the
 * lock (ftl_prog_run).  A failed turn keeps what the map already points
 * at (on the medium) and reports the error.
 */
static int write_run(struct ftl *f, uint64_t lpn, uint64_t n,
		     const uint8_t *data)
{
	uint32_t have = 0;              /* CRCs in tls_crc, from data on */
	bool unlocked = n >= RUN_UNLOCKED_MIN &&
			nand_program_run_unlocked(f->nand);
	int r = 0;

	FTL_ASSERT_HELD(&f->stripe[ftl_stripe_of(lpn)]);
	for (int i = 0; n;) {
		uint32_t done = 0, c = n < RUN_MAX ? (uint32_t)n : RUN_MAX;
		struct ftl_inflight x;
		int s;

		/* before the lock, whichever way the run is programmed */
		for (; have < c; have++)
			tls_crc[have] = oct_crc32c(0, data + (size_t)have * f->g.ps,
						   f->g.ps);
		ftl_lock(&f->lock);
		s = ftl_place_host(f, (uint32_t)lpn);
		r = ftl_balance(f);
		if (!r)
			r = ftl_run_reserve(f, s, (uint32_t)lpn, unlocked ? c : 0,
					    tls_crc, tls_oob, sizeof(tls_oob),
					    &x);
		if (!r) {
			ftl_unlock(&f->lock);
			for (uint32_t k = 0; f->g.pi && k < x.n; k++)
				ftl_pi_fill(&f->g, tls_oob + (size_t)k * f->g.oob,
					    data + (size_t)k * f->g.ps);
			ftl_run_program(f, &x, data, tls_oob);
			ftl_lock(&f->lock);
			r = ftl_run_finish(f, &x);
			done = x.done;
		} else if (r == -EAGAIN) {
			r = ftl_prog_run(f, s, (uint32_t)lpn, data, c,
					 tls_crc, &done);
		}
		/* a failed program may leave the retry without a free block:
		 * balance again (GC) then, as host_prog */
		if (r == -ENOSPC && i++ < 3 && ftl_stream_needs_block(f, s))
			r = 0;
		ftl_unlock(&f->lock);
		if (r)
			return r;
		lpn += done;
		n -= done;
		data += (size_t)done * f->g.ps;
		if (have) {
			memmove(tls_crc, tls_crc + done,
				(size_t)(have - done) * 4);
			have -= done;
		}
	}
	return 0;
}

static int check_io(struct ftl *f, uint64_t off, uint64_t len)
{
	if (off % FTL_SECTOR || len % FTL_SECTOR || off > f->g.size ||
	    len > f->g.size - off)
		return -EINVAL;
	return f->readonly || f->bb.worn_out ? -EROFS : 0;
}

/*
 * Write @len bytes at logical byte @off.  Pages the write covers only in
 * part are read, modified and written (counted as rmw_subpage when the
 * write lies inside one page, rmw_straddle when it spans several).  A
 * write done counts as a host write command, an EIO as a media error.
 */
int ftl_write(struct ftl *f, const void *buf, uint64_t off, size_t len,
	      unsigned flags)
{
	const uint8_t *src = buf;
	uint64_t mo, end, p0, p1, ps = f->g.ps;
	bool head, tail;
	int r;

	r = check_io(f, off, len);
	if (r)
		return r;
	if (!len)
		return (flags & FTL_FUA) ? ftl_flush(f) : 0;
	mo = off + f->g.shift;
	end = mo + len;
	p0 = mo / ps;
	p1 = (end - 1) / ps;
	range_lock(f, p0, p1, true);
	r = read_parts(f, mo, end, false, &head, &tail);
	for (uint64_t p = p0; p <= p1 && !r; p++) {
		uint64_t lo = p * ps, a = mo > lo ? mo - lo : 0;
		uint64_t b = end < lo + ps ? end - lo : ps;
		const uint8_t *data = src + (lo + a - mo);
		uint8_t *pg = p == p0 ? tls_page : tls_tail;

		if (!a && b == ps) {    /* whole pages [p, end / ps): runs */
			r = write_run(f, p, end / ps - p, data);
			p = end / ps - 1;
			continue;
		}
		/* a page covered in part (read above): modify, write */
		memcpy(pg + a, data, b - a);
		if (p0 == p1)
			CADD(f, m.rmw_subpage, 1);
		else
			CADD(f, m.rmw_straddle, 1);
		r = write_page(f, (uint32_t)p, pg);
	}
	if (!r && (flags & FTL_FUA)) {
		ftl_lock(&f->lock);
		r = ftl_fsum_sync(f);
		ftl_unlock(&f->lock);
		CADD(f, m.host_fua, 1);
	}
	range_lock(f, p0, p1, false);
	if (!r) {
		CADD(f, m.host_write_sectors, len / FTL_SECTOR);
		CADD(f, m.host_write_commands, 1);
	}
	if (r == -EIO)
		CADD(f, m.media_errors, 1);
	return r;
}

/* ftl_write_try's writes are those ftl_write programs under f->lock
 * anyway (write_run): no ticket wait, no unlocked run. */
_Static_assert(FTL_WRITE_TRY_PAGES < RUN_UNLOCKED_MIN,
	       "ftl_write_try: runs under the lock only");

/* Lock the stripes of logical pages [p0, p1] (at most FTL_WRITE_TRY_PAGES:
 * one or two stripes) if each is free at once: true; else none is held. */
static bool range_trylock(struct ftl *f, uint64_t p0, uint64_t p1)
{
	unsigned a = ftl_stripe_of(p0), b = ftl_stripe_of(p1);

	FTL_ASSERT_NOT_HELD(&f->lock);
	if (!ftl_trylock(&f->stripe[a]))
		return false;
	if (b != a && !ftl_trylock(&f->stripe[b])) {
		ftl_unlock(&f->stripe[a]);
		return false;
	}
	return true;
}

/* Can @n host pages go into stream @s now without waiting (f->lock
 * held)?  ftl_balance then only pokes the GC thread (no checkpoint,
 * retire move, scrub, throttle nor GC: each needs one of these false) and
 * ftl_prog_run neither drains runs in flight nor opens a block. */
static bool write_cheap(struct ftl *f, int s, uint32_t n)
{
	const struct ftl_stream *st = &f->log.st[s];

	FTL_ASSERT_HELD(&f->lock);
	return !f->pipe.inflight && !f->ck.due &&
	       ftl_seq_room(f, n + FTL_PROG_RETRIES + 2) &&
	       !f->maint.retire_scan &&
	       !__atomic_load_n(&f->scrub.n, __ATOMIC_RELAXED) &&
	       !ftl_host_needs_block(f) &&
	       st->blk != FTL_NONE && f->g.ppb - st->wp >= n;
}

int ftl_write_try(struct ftl *f, const void *buf, uint64_t off, size_t len,
		  unsigned flags)
{
	uint64_t mo, p0, ps = f->g.ps;
	uint32_t n, done = 0;
	int r, s;

	r = check_io(f, off, len);
	if (r)
		return r;
	mo = off + f->g.shift;
	n = (uint32_t)(len / ps);
	if (!len || (flags & FTL_FUA) || mo % ps || len % ps ||
	    n > FTL_WRITE_TRY_PAGES)
		goto again;
	p0 = mo / ps;
	if (!range_trylock(f, p0, p0 + n - 1))
		goto again;
	/* the CRCs before the lock, as write_run */
	for (uint32_t k = 0; k < n; k++)
		tls_crc[k] = oct_crc32c(0, (const uint8_t *)buf +
					(size_t)k * ps, ps);
	if (!ftl_trylock(&f->lock)) {
		range_lock(f, p0, p0 + n - 1, false);
		goto again;
	}
	s = ftl_place_host(f, (uint32_t)p0);
	if (!write_cheap(f, s, n)) {
		r = -EAGAIN;
	} else {
		r = ftl_balance(f);
		if (!r)
			r = ftl_prog_run(f, s, (uint32_t)p0, buf, n, tls_crc,
					 &done);
		if (r == -ENOSPC && ftl_stream_needs_block(f, s))
			r = -EAGAIN;    /* a failed program: ftl_write's GC */
	}
	ftl_unlock(&f->lock);
	range_lock(f, p0, p0 + n - 1, false);
	if (r == -EAGAIN)
		goto again;
	if (!r) {
		CADD(f, m.host_write_sectors, len / FTL_SECTOR);
		CADD(f, m.host_write_commands, 1);
		CADD(f, m.write_try_served, 1);
	}
	if (r == -EIO)
		CADD(f, m.media_errors, 1);
	return r;
again:
	CADD(f, m.write_try_again, 1);
	return -EAGAIN;
}

/* Make every completed write durable. */
int ftl_flush(struct ftl *f)
{
	int r;

	if (f->readonly)
		return 0;
	ftl_lock(&f->lock);
	r = ftl_fsum_sync(f);   /* and the proof of it (flush summary) */
	ftl_unlock(&f->lock);
	CADD(f, m.host_flushes, 1);
	return r;
}

/* Zero bytes [a, b) of page @p, read into @pg (read_parts), and write it. */
static int zero_part(struct ftl *f, uint64_t p, uint8_t *pg, uint64_t a,
		     uint64_t b, bool straddle)
{
	memset(pg + a, 0, b - a);
	CADD(f, m.rmw_subpage, straddle ? 0 : 1);
	CADD(f, m.rmw_straddle, straddle ? 1 : 0);
	return write_page(f, (uint32_t)p, pg);
}

/* Unmap whole pages [q0, q1): one trim record, then the map entries. */
static int trim_pages(struct ftl *f, uint64_t q0, uint64_t q1)
{
	struct ftl_trim *t = (struct ftl_trim *)tls_page;
	bool any = false;
	int r = 0;

	FTL_ASSERT_HELD(&f->stripe[ftl_stripe_of(q0)]);
	FTL_ASSERT_NOT_HELD(&f->lock);
	ftl_lock(&f->lock);
	for (uint64_t q = q0; q < q1 && !any; q++)
		any = f->log.map[q] != FTL_UNMAPPED;
	if (any) {
		memset(tls_page, 0, f->g.ps);
		t->magic = FTL_TRIM_MAGIC;
		t->n = 1;
		t->r[0].lpn = (uint32_t)q0;
		t->r[0].count = (uint32_t)(q1 - q0);
		r = host_prog(f, 1, tls_page, FTL_OOB_TRIM);
		for (uint64_t q = q0; !r && q < q1; q++)
			ftl_map_unset(f, (uint32_t)q);
	}
	ftl_unlock(&f->lock);
	return r;
}

/* Discard: whole pages are unmapped, partly covered pages zeroed. */
int ftl_discard(struct ftl *f, uint64_t off, uint64_t len)
{
	uint64_t mo, end, p0, p1, q0, q1, ps = f->g.ps;
	bool head, tail;
	int r;

	r = check_io(f, off, len);
	if (r || !len)
		return r;
	mo = off + f->g.shift;
	end = mo + len;
	p0 = mo / ps;
	p1 = (end - 1) / ps;
	q0 = (mo + ps - 1) / ps;
	q1 = end / ps;
	range_lock(f, p0, p1, true);
	/* partly covered first and last pages (mapped ones): zeroed */
	r = read_parts(f, mo, end, true, &head, &tail);
	if (!r && head)
		r = zero_part(f, p0, tls_page, mo % ps,
			      end - p0 * ps < ps ? end - p0 * ps : ps, p0 != p1);
	if (!r && tail)
		r = zero_part(f, p1, tls_tail, 0, end - p1 * ps, true);
	if (!r && q0 < q1)
		r = trim_pages(f, q0, q1);
	range_lock(f, p0, p1, false);
	if (!r)
		CADD(f, m.host_discard_sectors, len / FTL_SECTOR);
	if (r == -EIO)
		CADD(f, m.media_errors, 1);
	return r;
}

/* Write zeroes: the same as a discard (unmapped pages read as zeroes). */
int ftl_write_zeroes(struct ftl *f, uint64_t off, uint64_t len)
{
	return ftl_discard(f, off, len);
}
