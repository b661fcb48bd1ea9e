/* SPDX-License-Identifier: MIT */
/*
 * bench-engine: the ublk-flash engine's numbers, ratios side by side.
 *   1. throughput: sequential page-sized and random 4K writes through the
 *      engine vs raw pwrite to a file on the same filesystem;
 *   2. write amplification vs Desnoyers' greedy model at 7/12.5/28 % OP
 *      (uniform) and 90/10 hot/cold (reference.md);
 *   2b. placement (section "place"): one host frontier against two (hot /
 *      cold by measured temperature; ftl_open_opts.streams), greedy
 *      and cost-benefit, medians of 3 rounds: 90/10 and 80/20 hot/cold at
 *      Sf 12.5 %, uniform at 12.5 % OP, four sequential writers and a
 *      random one (BENCH_PLACE_ROW=0..3: one row alone);
 *   3. clean / roll-forward / full-scan open time of 1, 4, 16, 64 GiB
 *      sparse images; checkpoint bytes per logical page and RSS growth per
 *      logical page (both measured: the ckpt_bytes counter, /proc RSS);
 *   4. scale: 1 GiB written (1 MiB writes) to a fresh 1 GiB and a sparse
 *      256 GiB image: write time ratio, checkpoint bytes per host GiB, and
 *      the process's user and system CPU over the writes (getrusage): user
 *      is the engine's own work, system mostly the kernel filling new
 *      backing pages (memory is warmed before each timed write: see
 *      warm_memory).
 *   5. flush: what a host flush costs the medium (revision 3 writes a flush
 *      summary page per flush after host pages) against revision 2: page
 *      programs per flush by origin and WA for 4 KiB / 64 KiB / 1 MiB
 *      writes each followed by a flush, and flushes per second on a file.
 *   6. pi: what protection information costs the engine (create
 *      --integrity t10dif): CPU per 4K random write and read, the tuples
 *      checked / handed out (ftl_write_pi, ftl_read_pi), against the same
 *      geometry without PI (ftl_write, ftl_read); interleaved rounds.
 *   7. threads: full device (7 % OP, an image in DIR: /dev/shm as serve
 *      runs one on tmpfs), 4K random writes through
 *      ftl_write from 1 and from 2 threads, GC thread on (as serve runs);
 *      median of 3 interleaved rounds, the 2/1 ratio (issue 31: >= 1.6x),
 *      the CPUs each run used (getrusage over wall time), and a parallel
 *      control in each round (4 KiB memcpys from 1 and 2 threads, nothing
 *      shared): on a shared host a raw 2/1 ratio is mostly the host's;
 *      and a set of 2 parts (ftl-set.h: the partitioned engine, each part
 *      with its own lock and GC thread) of the same size, full the same
 *      way, from 1 and 2 writers each over the whole set, and from 2
 *      writers each on the stripes of one part (no writer meets the other
 *      on a part's lock: what the partitioning alone gives); and a set of
 *      4 parts from 1 and 2 writers.  Why two random writers gain little
 *      on a set (a part each: 1.49-1.85x on /dev/shm): a writer that picks
 *      a part at random waits whenever the other is on it (at most 1.33x
 *      on 2 parts, 1.6x on 4, with every hold short), and a part's lock is
 *      held through a GC victim's copies, many writes long (docs/engine.md,
 *      "Section 6 on a tmpfs image").
 *   8. latency: full device, 4K random writes to an image on a file in DIR
 *      (an on-disk ext4 folder, not tmpfs: /var/tmp), GC thread on; p50,
 *      p99, p99.9 and max of each ftl_write, median of 3 rounds (issue 31:
 *      p99.9 <= 10x p50, no write over 100 ms).
 *   9. ctxsw: context switches per write (issue 29 item 5), full device on
 *      a file in DIR, GC thread on (and once off): 1M sequential writes
 *      from 1 and 2 threads, 4K random ones; the writers' own switches
 *      (getrusage RUSAGE_THREAD) and the GC thread's (/proc/self/task),
 *      per write, median of 3 interleaved rounds.
 * usage: bench-engine [DIR] [SECTION...]  (DIR for images: $TMPDIR or
 * /var/tmp; SECTION: throughput, wa, place, open, scale, flush, pi,
 * threads, latency, ctxsw; default all)
 * e.g. the scale measurement alone: tests/bench/bench-engine /dev/shm scale
 * BENCH_QUICK=1 runs smaller sizes (scale: 1 GiB vs 16 GiB, 256 MiB written).
 * BENCH_CS_ROW=0..4: one row of ctxsw alone.
 * BENCH_GC_THREAD=1: the throughput engines run the background GC thread
 * (ftl_open_opts.bg_gc, as serve does); default inline GC.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ftl-int.h"
#include "ftl-set.h"

static uint64_t rs = 88172645463325252ull;
static bool quick;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
	FILE *s = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	while (s && fgets(line, sizeof(line), s))
		if (!strncmp(line, "VmRSS:", 6))
			v = strtol(line + 6, NULL, 10);
	if (s)
		fclose(s);
	return v;
}

static void die(const char *what, int r)
{
	fprintf(stderr, "bench-engine: %s failed (%d)\n", what, r);
	exit(1);
}

/* ---- 1. throughput ------------------------------------------------------ */

static double raw_run(const char *path, uint64_t size, uint64_t n, bool random)
{
	static uint8_t page[4096];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	double t0;

	if (fd < 0 || ftruncate(fd, (off_t)size))
		die("raw file", -1);
	t0 = now();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t p = random ? rnd() % (size / 4096) : i % (size / 4096);
		page[0] = (uint8_t)i;
		if (pwrite(fd, page, 4096, (off_t)(p * 4096)) != 4096)
			die("pwrite", -1);
	}
	fdatasync(fd);
	t0 = now() - t0;
	close(fd);
	unlink(path);
	return (double)n * 4096 / t0 / 1e6;
}

static double ftl_run(const char *path, uint64_t size, uint64_t n, bool random,
		      enum ftl_align_mode a, bool prefill)
{
	struct ftl_create_opts c = { .size = size, .align = a, .force = true };
	struct ftl_open_opts oo = { .bg_gc = getenv("BENCH_GC_THREAD") &&
				    *getenv("BENCH_GC_THREAD") == '1' };
	static uint8_t page[4096];
	struct ftl *f;
	double t0;
	int r;

	unlink(path);
	if ((r = ftl_create(path, &c)) || (r = ftl_open(path, &oo, &f)))
		die("create/open", r);
	if (prefill) {
		static uint8_t mb[1 << 20];
		for (uint64_t o = 0; o < size; o += sizeof(mb))
			ftl_write(f, mb, o, sizeof(mb), 0);
	}
	t0 = now();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t p = random ? rnd() % (size / 4096) : i % (size / 4096);
		page[0] = (uint8_t)i;
		if ((r = ftl_write(f, page, p * 4096, 4096, 0)))
			die("ftl_write", r);
	}
	ftl_flush(f);
	t0 = now() - t0;
	ftl_close(f);
	unlink(path);
	return (double)n * 4096 / t0 / 1e6;
}

static void throughput(const char *dir)
{
	uint64_t size = quick ? 64ull << 20 : 256ull << 20, n = size / 4096;
	char img[512], raw[512];
	double r1, e1, e1o, r2, e2, e2o;

	snprintf(img, sizeof(img), "%s/bench-engine.img", dir);
	snprintf(raw, sizeof(raw), "%s/bench-engine.raw", dir);
	r1 = raw_run(raw, size, n, false);
	e1 = ftl_run(img, size, n, false, FTL_ALIGN_1M, false);
	e1o = ftl_run(img, size, n, false, FTL_ALIGN_ODD, false);
	r2 = raw_run(raw, size, n, true);
	e2 = ftl_run(img, size, n, true, FTL_ALIGN_1M, true);
	e2o = ftl_run(img, size, n, true, FTL_ALIGN_ODD, true);
	printf("\n1. write throughput, %llu MiB disk, 4 KiB writes, files in %s\n",
	       (unsigned long long)(size >> 20), dir);
	printf("%-34s %10s %10s %8s %12s %8s\n", "", "raw MB/s", "1m MB/s",
	       "1m/raw", "odd MB/s", "odd/raw");
	printf("%-34s %10.0f %10.0f %8.2f %12.0f %8.2f\n",
	       "sequential page-sized (fresh)", r1, e1, e1 / r1, e1o, e1o / r1);
	printf("%-34s %10.0f %10.0f %8.2f %12.0f %8.2f\n",
	       "random 4K (full disk, GC active)", r2, e2, e2 / r2, e2o, e2o / r2);
}

/* ---- 2. write amplification ------------------------------------------- */

static bool one_frontier;       /* mem_ftl: without ftl_open_opts.streams */
static void (*copy_fn)(void *, uint64_t, enum ftl_copy_why); /* mem_ftl:
                                   ftl_open_opts.copy_fn, ctx NULL */

static struct ftl *mem_ftl(uint64_t size, uint32_t op, uint32_t ppb,
			   enum ftl_gc_policy gc)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
		.pages_per_block = ppb, .op_permille = op };
	struct ftl_open_opts o = { .gc = gc, .wl_threshold = 1000000,
		.streams = !one_frontier, .copy_fn = copy_fn };
	struct nand_backing *b;
	struct ftl *f;
	int r;

	if ((r = nand_backing_mem(ftl_test_image_size(&c), false, &b)) ||
	    (r = ftl_create_backing(b, &c)) || (r = ftl_open_backing(b, &o, &f)))
		die("memory engine", r);
	return f;
}

static double wa_run(uint64_t size, uint32_t op, uint32_t ppb, bool hot,
		     enum ftl_gc_policy gc, double *with_ckpt)
{
	struct ftl *f = mem_ftl(size, op, ppb, gc);
	uint64_t pages = size / 4096, n = 3 * pages;
	static uint8_t page[4096], mb[1 << 20];
	struct ftl_stats a, b;

	for (uint64_t o = 0; o < size; o += sizeof(mb))
		ftl_write(f, mb, o, sizeof(mb), 0);
	for (int phase = 0; phase < 2; phase++) {
		if (phase)
			ftl_stats_get(f, &a);
		for (uint64_t i = 0; i < (phase ? n : 4 * pages); i++) {
			uint64_t p = rnd();
			p = !hot ? p % pages : (p % 10 < 9) ? (p >> 8) % (pages / 10) :
			    pages / 10 + (p >> 8) % (pages - pages / 10);
			ftl_write(f, page, p * 4096, 4096, 0);
		}
	}
	ftl_stats_get(f, &b);
	ftl_close(f);
	*with_ckpt = (double)(b.page_programs - a.page_programs) / (double)n;
	return (double)(n + b.gc_relocations - a.gc_relocations) / (double)n;
}

static void write_amp(void)
{
	static const struct { uint32_t op; double greedy; } u[] = {
		{ 70, 7.00 }, { 125, 4.38 }, { 280, 2.40 } };
	static const struct { double sf; double uni, mixed, seg; } h[] = {
		{ 0.07, 7.12, 8.16, 3.02 }, { 0.125, 4.12, 5.07, 1.97 },
		{ 0.28, 1.98, 2.71, 1.25 } };
	uint64_t size = quick ? 64ull << 20 : 256ull << 20;
	double t, w, wc, tc;

	printf("\n2. write amplification ((host + GC copies) / host pages; "
	       "in brackets incl. checkpoint pages), %llu MiB, after 4x warm-up\n",
	       (unsigned long long)(size >> 20));
	printf("%-28s %8s %16s %16s %8s\n", "uniform 4K, 64-page blocks",
	       "model", "greedy", "cost-benefit", "gr/model");
	for (int i = 0; i < 3; i++) {
		w = wa_run(size, u[i].op, 64, false, FTL_GC_GREEDY, &t);
		wc = wa_run(size, u[i].op, 64, false, FTL_GC_COST_BENEFIT, &tc);
		printf("  OP %4.1f %%%18s %8.2f %7.2f [%5.2f] %7.2f [%5.2f] %8.2f\n",
		       u[i].op / 10.0, "", u[i].greedy, w, t, wc, tc, w / u[i].greedy);
	}
	printf("%-28s %8s %8s %16s %16s\n", "90/10 hot/cold, 256-page blk",
	       "uniform", "mixed", "greedy", "cost-benefit");
	for (int i = 0; i < 3; i++) {
		uint32_t op = (uint32_t)(h[i].sf / (1 - h[i].sf) * 1000 + 0.5);
		w = wa_run(size, op, 256, true, FTL_GC_GREEDY, &t);
		wc = wa_run(size, op, 256, true, FTL_GC_COST_BENEFIT, &tc);
		printf("  Sf %4.1f %% (OP %4.1f %%)%4s %7.2f %8.2f %7.2f [%5.2f] "
		       "%7.2f [%5.2f]   (segregated model %.2f)\n", h[i].sf * 100,
		       op / 10.0, "", h[i].uni, h[i].mixed, w, t, wc, tc, h[i].seg);
	}
}

static int cmp_dbl(const void *a, const void *b);

/* ---- 2b. placement: one host frontier against two ---------------------- */

/* WA of one placement run: the whole device's, and on the sequential mix
 * the sequential writers' own and the random writer's own (their host
 * pages and the GC copies of pages in the LBA ranges they write, by
 * copy_fn; the pages at the end of each fifth that the writers' wrap
 * leaves as the fill wrote them, 51 of 13,107, count in the whole
 * device's alone). */
struct place_wa {
	double all, seq, rnd;
};

static uint64_t pl_q;           /* logical pages per fifth */
static uint64_t pl_copies[3];   /* GC copies of the writers' pages [0],
                                   of the random one's [1], of the
                                   fill's left alone [2] */

static void pl_copy(void *ctx, uint64_t lpn, enum ftl_copy_why why)
{
	(void)ctx;
	if (why == FTL_COPY_GC)
		pl_copies[lpn >= 4 * pl_q ? 1 :
			  lpn % pl_q >= pl_q - pl_q % 64 ? 2 : 0]++;
}

/* WA (host + GC copies) / host pages of @n 4 KiB writes after a
 * sequential fill and 4x the device in warm-up: @hot % of the writes to
 * the first @space % of the device (0: uniform), or (@seq) four writers
 * overwriting their fifth of the device in 256 KiB writes, interleaved
 * with a fifth writing 4 KiB pages at random in the last fifth (as many
 * pages as each of them). */
static struct place_wa place_run(uint64_t size, uint32_t op, uint32_t ppb,
				 enum ftl_gc_policy gc, bool one, unsigned hot,
				 unsigned space, bool seq)
{
	struct ftl *f;
	uint64_t pages = size / 4096, hp = pages * space / 100, n = 3 * pages;
	uint64_t q = pages / 5, cur[4] = { 0 }, hw[2] = { 0 }, c0[3] = { 0 };
	static uint8_t page[4096], mb[1 << 20];
	struct ftl_stats a, b;
	struct place_wa w = { 0 };
	double h;

	one_frontier = one;
	copy_fn = pl_copy;
	pl_q = q;
	f = mem_ftl(size, op, ppb, gc);
	one_frontier = false;
	copy_fn = NULL;
	for (uint64_t o = 0; o < size; o += sizeof(mb))
		ftl_write(f, mb, o, sizeof(mb), 0);
	for (int phase = 0; phase < 2; phase++) {
		uint64_t want = phase ? n : 4 * pages;

		if (phase) {
			ftl_stats_get(f, &a);
			memcpy(c0, pl_copies, sizeof(c0));
		}
		for (uint64_t i = 0; i < want;) {
			uint64_t p = rnd();

			if (seq) {
				for (int w = 0; w < 4; w++) {
					uint64_t at = w * q + cur[w];

					ftl_write(f, mb, at * 4096, 64 * 4096, 0);
					cur[w] = (cur[w] + 64) % (q - q % 64);
					for (int k = 0; k < 16; k++) {
						p = 4 * q + rnd() % (pages - 4 * q);
						ftl_write(f, page, p * 4096, 4096, 0);
					}
				}
				i += 4 * 64 + 64;
				hw[0] += phase * 4 * 64;
				hw[1] += phase * 64;
				continue;
			}
			p = !space ? p % pages : (p % 100 < hot) ?
			    (p >> 8) % hp : hp + (p >> 8) % (pages - hp);
			ftl_write(f, page, p * 4096, 4096, 0);
			i++;
		}
	}
	ftl_stats_get(f, &b);
	ftl_close(f);
	h = (double)(b.host_write_sectors - a.host_write_sectors) / 8;
	w.all = (h + (double)(b.gc_relocations - a.gc_relocations)) / h;
	if (seq && hw[0] && hw[1]) {
		w.seq = (double)(hw[0] + pl_copies[0] - c0[0]) / (double)hw[0];
		w.rnd = (double)(hw[1] + pl_copies[1] - c0[1]) / (double)hw[1];
	}
	return w;
}

/* Median of 3 rounds (each its own random draws), of each reading. */
static struct place_wa place_med(uint64_t size, uint32_t op, uint32_t ppb,
				 enum ftl_gc_policy gc, bool one, unsigned hot,
				 unsigned space, bool seq)
{
	double v[3][3];
	struct place_wa r;

	for (int i = 0; i < 3; i++) {
		r = place_run(size, op, ppb, gc, one, hot, space, seq);
		v[0][i] = r.all;
		v[1][i] = r.seq;
		v[2][i] = r.rnd;
	}
	for (int k = 0; k < 3; k++)
		qsort(v[k], 3, sizeof(double), cmp_dbl);
	return (struct place_wa){ v[0][1], v[1][1], v[2][1] };
}

static void placement(void)
{
	uint64_t size = quick ? 64ull << 20 : 256ull << 20;
	static const struct { const char *what; unsigned hot, space;
		uint32_t op, ppb; double model; bool seq; } rows[] = {
		{ "90/10 hot/cold, Sf 12.5 %", 90, 10, 143, 256, 1.97, false },
		{ "80/20 hot/cold, Sf 12.5 %", 80, 20, 143, 256, 0, false },
		{ "uniform, OP 12.5 %", 0, 0, 125, 64, 4.38, false },
		{ "4 sequential + 1 random", 0, 0, 143, 256, 0, true },
	};

	printf("\n2b. placement: WA ((host + GC copies) / host pages), "
	       "%llu MiB, after a fill and 4x warm-up,\n    medians of 3 rounds, one host frontier "
	       "(the default, as before) against two (ftl_open_opts.streams: hot / "
	       "cold)\n", (unsigned long long)(size >> 20));
	printf("%-28s %9s %9s %9s %9s %9s %8s\n", "", "1 greedy", "1 c-b",
	       "2 greedy", "2 c-b", "model", "2g/1g");
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *only = getenv("BENCH_PLACE_ROW");
		struct place_wa w[4];

		if (only && (unsigned)atoi(only) != i)
			continue;       /* one row (0..3) alone */
		for (int k = 0; k < 4; k++)
			w[k] = place_med(size, rows[i].op, rows[i].ppb,
					 k & 1 ? FTL_GC_COST_BENEFIT :
					 FTL_GC_GREEDY, k < 2, rows[i].hot,
					 rows[i].space, rows[i].seq);
		printf("%-28s %9.2f %9.2f %9.2f %9.2f ", rows[i].what,
		       w[0].all, w[1].all, w[2].all, w[3].all);
		if (rows[i].model)
			printf("%9.2f", rows[i].model);
		else
			printf("%9s", "-");
		printf(" %8.2f\n", w[2].all / w[0].all);
		if (!rows[i].seq)
			continue;
		/* the writers' own WA: their host pages and the GC copies of
		 * pages in their LBA ranges */
		printf("%-28s %9.2f %9.2f %9.2f %9.2f %9s %8.2f\n",
		       "  sequential writers' own", w[0].seq, w[1].seq,
		       w[2].seq, w[3].seq, "-", w[2].seq / w[0].seq);
		printf("%-28s %9.2f %9.2f %9.2f %9.2f %9s %8.2f\n",
		       "  random writer's own", w[0].rnd, w[1].rnd, w[2].rnd,
		       w[3].rnd, "-", w[2].rnd / w[0].rnd);
	}
}

/* ---- 3. open times ------------------------------------------------------ */

static double open_ms(const char *img, bool scan, struct ftl **out)
{
	struct ftl_open_opts o = { .scan = scan };
	double t0 = now();
	int r = ftl_open(img, &o, out);

	if (r)
		die("open", r);
	return (now() - t0) * 1e3;
}

static void open_times(const char *dir)
{
	static const unsigned gib[] = { 1, 4, 16, 64 };
	static uint8_t mb[1 << 20];
	char img[512];

	snprintf(img, sizeof(img), "%s/bench-engine-open.img", dir);
	printf("\n3. open time (ms) of sparse images: 64 MiB written at random, "
	       "then for roll-forward 16 MiB more + flush + crash\n");
	printf("(ckpt B/pg: bytes one full (base) checkpoint writes per logical page, from "
	       "the ckpt_bytes counter;\n RAM B/pg: RSS growth of a clean open "
	       "per logical page, /proc/self/status)\n");
	printf("%8s %10s %14s %10s %10s %12s %10s\n", "size", "clean",
	       "roll-forward", "scan", "ckpt B/pg", "RAM B/pg", "RSS MiB");
	for (unsigned i = 0; i < (quick ? 2u : 4u); i++) {
		uint64_t size = (uint64_t)gib[i] << 30;
		struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
			.force = true };
		double tc, tr, tsc, ckpb;
		long rss0 = rss_kib(), rss1;
		struct ftl_stats st;
		struct ftl *f;
		int r;

		unlink(img);
		if ((r = ftl_create(img, &c)))
			die("create", r);
		open_ms(img, false, &f);
		for (int k = 0; k < 64; k++)
			ftl_write(f, mb, (rnd() % (size >> 20)) << 20, sizeof(mb), 0);
		ftl_close(f);
		tc = open_ms(img, false, &f);
		rss1 = rss_kib();
		/* one checkpoint, measured: what a clean close writes */
		ftl_stats_get(f, &st);
		ckpb = (double)st.ckpt_bytes;
		ftl_lock(&f->lock);
		ftl_ckpt_force_base(f);         /* a base, not a delta record */
		if ((r = ftl_ckpt_write(f, false)))
			die("checkpoint", r);
		ftl_unlock(&f->lock);
		ftl_stats_get(f, &st);
		ckpb = ((double)st.ckpt_bytes - ckpb) / f->g.nlpn;
		for (int k = 0; k < 16; k++)
			ftl_write(f, mb, (rnd() % (size >> 20)) << 20, sizeof(mb), 0);
		ftl_flush(f);
		ftl_abandon(f);
		tr = open_ms(img, false, &f);
		ftl_close(f);
		tsc = open_ms(img, true, &f);
		printf("%5u GiB %10.1f %14.1f %10.1f %10.1f %12.2f %10.1f\n", gib[i],
		       tc, tr, tsc, ckpb,
		       (double)(rss1 - rss0) * 1024 / f->g.nlpn,
		       (rss1 - rss0) / 1024.0);
		ftl_close(f);
		unlink(img);
	}
}

/* ---- 4. scale -------------------------------------------------------- */

struct scale_res {
	double write_s, close_s;
	double user_s, sys_s;             /* CPU over the writes */
	uint64_t ckpt_write, ckpt_close;  /* bytes */
	uint64_t max_rf;                  /* pages past the newest checkpoint */
};

/*
 * Touch @bytes of fresh anonymous memory and give it back.  This host is
 * itself a VM whose memory the hypervisor backs on first touch: a page the
 * guest kernel hands out that was not touched lately costs ~3 us more to
 * fill (`copy_folio_from_iter_atomic`), and whether the 1 GiB of new tmpfs
 * pages is cold or warm swung the scale ratio from 0.8x to 4x between
 * runs of one binary, while the engine's own CPU stayed put.  Warming
 * memory before each timed write makes both sizes draw warm pages, so the
 * ratio measures the engine (BENCH_SCALE_WARM=0: no warm-up).
 */
static void warm_memory(uint64_t bytes)
{
	uint8_t *p;

	if (getenv("BENCH_SCALE_WARM") && !strcmp(getenv("BENCH_SCALE_WARM"), "0"))
		return;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	for (uint64_t o = 0; o < bytes; o += 4096)
		p[o] = 1;
	munmap(p, bytes);
}

static double tv_s(const struct timeval *t)
{
	return (double)t->tv_sec + (double)t->tv_usec / 1e6;
}

/* Write @host bytes (1 MiB writes, sequential) to a fresh sparse image of
 * @size bytes, flush; then the clean close's checkpoint. */
static void scale_run(const char *img, uint64_t size, uint64_t host,
		      struct scale_res *res)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
		.force = true };
	static uint8_t mb[1 << 20];
	struct rusage ra, rb;
	struct ftl_stats a, b;
	struct ftl *f;
	double t0;
	int r;

	unlink(img);
	if ((r = ftl_create(img, &c)) || (r = ftl_open(img, NULL, &f)))
		die("create/open", r);
	ftl_stats_get(f, &a);
	warm_memory(host + (512ull << 20));
	getrusage(RUSAGE_SELF, &ra);
	t0 = now();
	res->max_rf = 0;
	for (uint64_t o = 0; o < host; o += sizeof(mb)) {
		mb[0] = (uint8_t)(o >> 20);
		if ((r = ftl_write(f, mb, o, sizeof(mb), 0)))
			die("ftl_write", r);
		if (f->log.seq - f->ck.seq > res->max_rf)
			res->max_rf = f->log.seq - f->ck.seq;
	}
	if ((r = ftl_flush(f)))
		die("flush", r);
	res->write_s = now() - t0;
	getrusage(RUSAGE_SELF, &rb);
	res->user_s = tv_s(&rb.ru_utime) - tv_s(&ra.ru_utime);
	res->sys_s = tv_s(&rb.ru_stime) - tv_s(&ra.ru_stime);
	ftl_stats_get(f, &b);
	res->ckpt_write = b.ckpt_bytes - a.ckpt_bytes;
	/* ftl_close() is this checkpoint and a free: measured apart */
	t0 = now();
	ftl_lock(&f->lock);
	r = ftl_ckpt_write(f, true);
	ftl_unlock(&f->lock);
	if (r)
		die("close checkpoint", r);
	res->close_s = now() - t0;
	ftl_stats_get(f, &a);
	res->ckpt_close = a.ckpt_bytes - b.ckpt_bytes;
	ftl_abandon(f);
	unlink(img);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of five rounds, interleaved (small, big, small, big, ...): the
 * kernel's cost of new tmpfs pages swings from run to run here. */
static void scale(const char *dir)
{
	uint64_t small = 1ull << 30, big = quick ? 16ull << 30 : 256ull << 30;
	uint64_t host = quick ? 256ull << 20 : 1ull << 30;
	double gib = (double)host / (1 << 30), ws[5], wl[5], cs[5], cl[5];
	double us[5], ul[5], ss[5], sl[5];
	struct scale_res s, l;
	char img[512];
	int rounds = quick ? 1 : 5;

	snprintf(img, sizeof(img), "%s/bench-engine-scale.img", dir);
	for (int i = 0; i < rounds; i++) {
		scale_run(img, small, host, &s);
		scale_run(img, big, host, &l);
		ws[i] = s.write_s;
		wl[i] = l.write_s;
		cs[i] = s.close_s;
		cl[i] = l.close_s;
		us[i] = s.user_s;
		ul[i] = l.user_s;
		ss[i] = s.sys_s;
		sl[i] = l.sys_s;
	}
	qsort(ws, (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(wl, (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(cs, (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(cl, (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(us, (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(ul, (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(ss, (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(sl, (size_t)rounds, sizeof(double), cmp_dbl);
	printf("\n4. scale: %llu MiB written (1 MiB writes, then a flush) to "
	       "fresh sparse images, files in %s;\n   median of %d rounds; "
	       "checkpoint bytes from the ckpt_bytes counter\n",
	       (unsigned long long)(host >> 20), dir, rounds);
	printf("(rf pages: most pages written past the newest checkpoint, what "
	       "a crash would roll forward;\n %s)\n",
	       getenv("BENCH_SCALE_WARM") && !strcmp(getenv("BENCH_SCALE_WARM"), "0") ?
	       "no memory warm-up (BENCH_SCALE_WARM=0)" :
	       "memory warmed before each timed write: warm_memory()");
	printf("%10s %10s %8s %8s %10s %20s %20s %10s\n", "image", "write s",
	       "user s", "sys s", "close s", "ckpt MiB/host GiB",
	       "incl. close ckpt", "rf pages");
	printf("%6llu GiB %10.2f %8.3f %8.3f %10.2f %20.2f %20.2f %10llu\n",
	       (unsigned long long)(small >> 30), ws[rounds / 2],
	       us[rounds / 2], ss[rounds / 2], cs[rounds / 2],
	       s.ckpt_write / gib / 1048576.0,
	       (s.ckpt_write + s.ckpt_close) / gib / 1048576.0,
	       (unsigned long long)s.max_rf);
	printf("%6llu GiB %10.2f %8.3f %8.3f %10.2f %20.2f %20.2f %10llu\n",
	       (unsigned long long)(big >> 30), wl[rounds / 2],
	       ul[rounds / 2], sl[rounds / 2], cl[rounds / 2],
	       l.ckpt_write / gib / 1048576.0,
	       (l.ckpt_write + l.ckpt_close) / gib / 1048576.0,
	       (unsigned long long)l.max_rf);
	printf("write time %llu GiB / %llu GiB: %.2fx (target <= 1.2x)\n",
	       (unsigned long long)(big >> 30),
	       (unsigned long long)(small >> 30), wl[rounds / 2] / ws[rounds / 2]);
	printf("engine (user) CPU %llu GiB / %llu GiB: %.2fx; system CPU: %.2fx\n",
	       (unsigned long long)(big >> 30), (unsigned long long)(small >> 30),
	       ul[rounds / 2] / us[rounds / 2], sl[rounds / 2] / ss[rounds / 2]);
}

/* ---- 5. flush cost ------------------------------------------------------ */

struct flush_res {
	double prog, host, gc, fsum, ckpt;      /* programs per flush */
	double wa;                              /* all programs / host pages */
	double syncs, writes;                   /* backing calls per flush
						   (writes: the nand's; a
						   flush mark is one more) */
	double fps;                             /* flushes per second */
};

/*
 * @n writes of @pages 4 KiB pages at random places of the first @fill of
 * an image of @size, each followed by a flush, on an image of revision 3
 * (flush summaries) or 2 (@old): page programs per flush by origin and
 * flushes per second.  In memory (@path NULL) or on the file @path.
 */
static void flush_run(const char *path, uint64_t size, double fill,
		      uint32_t pages, int n, bool old, struct flush_res *res)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
		.force = true };
	struct nand_backing *b;
	struct ftl_stats a, z;
	struct nand_counters na, nz;
	uint64_t span = (uint64_t)((double)(size / 4096) * fill);
	static uint8_t buf[1 << 20];
	struct ftl *f;
	double t0;
	int r;

	if (path) {
		int fd;

		unlink(path);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, (off_t)ftl_test_image_size(&c)) ||
		    (r = nand_backing_fd(fd, &b)))
			die("flush image", -1);
		r = old ? ftl_test_create_backing_nofsum(b, &c) :
			  ftl_create_backing(b, &c);
		b->ops->destroy(b);
		close(fd);
		if (r || (r = ftl_open(path, NULL, &f)))
			die("flush open", r);
	} else {
		if ((r = nand_backing_mem(ftl_test_image_size(&c), false, &b)) ||
		    (r = old ? ftl_test_create_backing_nofsum(b, &c) :
			       ftl_create_backing(b, &c)) ||
		    (r = ftl_open_backing(b, NULL, &f)))
			die("flush image", r);
	}
	for (uint64_t o = 0; o < span * 4096; o += sizeof(buf))
		ftl_write(f, buf, o, span * 4096 - o < sizeof(buf) ?
			  span * 4096 - o : sizeof(buf), 0);
	ftl_flush(f);
	ftl_stats_get(f, &a);
	nand_counters_get(ftl_test_nand(f), &na);
	t0 = now();
	for (int i = 0; i < n; i++) {
		uint64_t p = rnd() % (span - pages + 1);

		buf[0] = (uint8_t)i;
		if ((r = ftl_write(f, buf, p * 4096, (size_t)pages * 4096, 0)) ||
		    (r = ftl_flush(f)))
			die("flush loop", r);
	}
	res->fps = n / (now() - t0);
	ftl_stats_get(f, &z);
	nand_counters_get(ftl_test_nand(f), &nz);
	res->syncs = (double)(nz.syncs - na.syncs) / n;
	res->writes = (double)(nz.backing_writes - na.backing_writes) / n;
	res->prog = (double)(z.page_programs - a.page_programs) / n;
	res->gc = (double)(z.gc_relocations - a.gc_relocations) / n;
	res->fsum = (double)(z.fsum_pages - a.fsum_pages) / n;
	res->host = (double)pages;
	res->ckpt = res->prog - res->gc - res->fsum - res->host;
	res->wa = res->prog / pages;
	ftl_close(f);
	if (path)
		unlink(path);
}

static void flush_cost(const char *dir)
{
	static const struct { const char *what; double fill; uint32_t pages; }
	rows[] = {
		{ "4K + flush, half full", 0.5, 1 },
		{ "4K + flush, full (GC)", 1.0, 1 },
		{ "64K + flush, half full", 0.5, 16 },
		{ "1M + flush, half full", 0.5, 256 },
	};
	uint64_t size = quick ? 64ull << 20 : 256ull << 20;
	int n = quick ? 20000 : 60000, nf = quick ? 300 : 1000;
	int rounds = quick ? 3 : 5;
	double fps[2][5];
	struct flush_res x[2];
	char img[512];

	printf("\n5. flush cost: writes at random, each followed by a flush, "
	       "%llu MiB images at 7 %% OP, 64-page blocks;\n   page programs "
	       "per flush (host + GC copies + flush summaries + checkpoint "
	       "pages) and WA (all programs / host pages),\n   image revision "
	       "3 (flush summaries) against 2; in memory\n",
	       (unsigned long long)(size >> 20));
	printf("%-23s %44s %34s\n", "", "revision 3: prog (gc, sum, ckpt) WA "
	       "syncs writes", "revision 2: prog (gc, ckpt) WA syncs writes");
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int k = rows[i].pages > 16 ? n / 64 : n;

		for (int o = 0; o < 2; o++)
			flush_run(NULL, size, rows[i].fill, rows[i].pages, k, o,
				  &x[o]);
		printf("%-23s %7.2f (%5.2f %4.2f %4.2f) %6.3f %4.2f %5.2f "
		       "%8.2f (%5.2f %4.2f) %6.3f %4.2f %5.2f\n", rows[i].what,
		       x[0].prog, x[0].gc, x[0].fsum, x[0].ckpt, x[0].wa,
		       x[0].syncs, x[0].writes, x[1].prog, x[1].gc, x[1].ckpt,
		       x[1].wa, x[1].syncs, x[1].writes);
	}
	snprintf(img, sizeof(img), "%s/bench-engine-flush.img", dir);
	for (int i = 0; i < rounds; i++)        /* interleaved: noisy disks */
		for (int o = 0; o < 2; o++) {
			flush_run(img, size, 0.5, 1, nf, o, &x[o]);
			fps[o][i] = x[o].fps;
		}
	qsort(fps[0], (size_t)rounds, sizeof(double), cmp_dbl);
	qsort(fps[1], (size_t)rounds, sizeof(double), cmp_dbl);
	printf("4K + flush on a file in %s (half full, %d flushes, median of "
	       "%d interleaved rounds): %.0f flushes/s revision 3, %.0f "
	       "revision 2 (%.2fx)\n", dir, nf, rounds, fps[0][rounds / 2],
	       fps[1][rounds / 2], fps[0][rounds / 2] / fps[1][rounds / 2]);
}

/* CPU seconds (user + system) of @n 4K random writes, then of @n 4K
 * random reads, on a fresh @size image at @img, with PI or not. */
static void pi_run(const char *img, uint64_t size, bool pi, int n,
		   double *w_s, double *r_s)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
		.oob_size = 128, .integrity = pi, .force = true };
	static uint8_t b[4096], t[8 * FTL_PI_TUPLE];
	uint64_t pages = size / 4096, x = 0x9e3779b97f4a7c15ull;
	struct rusage ra, rb;
	struct ftl *f;
	int r;

	unlink(img);
	if ((r = ftl_create(img, &c)) || (r = ftl_open(img, NULL, &f)))
		die("create/open", r);
	for (int k = 0; k < 2; k++) {
		getrusage(RUSAGE_SELF, &ra);
		for (int i = 0; i < n; i++) {
			uint64_t o;

			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			o = x % pages * 4096;
			if (k == 0) {
				memcpy(b, &x, sizeof(x));
				if (pi)
					ftl_pi_generate(b, t, o / 512, 8);
				r = pi ? ftl_write_pi(f, b, t, o, 4096, 0) :
					 ftl_write(f, b, o, 4096, 0);
			} else {
				r = pi ? ftl_read_pi(f, b, t, o, 4096) :
					 ftl_read(f, b, o, 4096);
			}
			if (r)
				die(k ? "read" : "write", r);
		}
		getrusage(RUSAGE_SELF, &rb);
		*(k ? r_s : w_s) = tv_s(&rb.ru_utime) - tv_s(&ra.ru_utime) +
				   tv_s(&rb.ru_stime) - tv_s(&ra.ru_stime);
	}
	ftl_abandon(f);
	unlink(img);
}

static void pi_cost(const char *dir)
{
	uint64_t size = 256ull << 20;
	int n = quick ? 20000 : 100000, rounds = quick ? 3 : 5;
	double w[2][5], rd[2][5];
	char img[512];

	snprintf(img, sizeof(img), "%s/bench-engine-pi.img", dir);
	for (int i = 0; i < rounds; i++)        /* interleaved: noisy CPUs */
		for (int o = 0; o < 2; o++)
			pi_run(img, size, o == 1, n, &w[o][i], &rd[o][i]);
	for (int o = 0; o < 2; o++) {
		qsort(w[o], (size_t)rounds, sizeof(double), cmp_dbl);
		qsort(rd[o], (size_t)rounds, sizeof(double), cmp_dbl);
	}
	printf("\n6. protection information: engine CPU (user + system) per 4K "
	       "random I/O, %d of each on a %llu MiB image in %s, median of %d "
	       "interleaved rounds\n", n, (unsigned long long)(size >> 20), dir,
	       rounds);
	printf("   write: %.2f us without PI, %.2f us with t10dif (+%.2f)\n",
	       w[0][rounds / 2] * 1e6 / n, w[1][rounds / 2] * 1e6 / n,
	       (w[1][rounds / 2] - w[0][rounds / 2]) * 1e6 / n);
	printf("   read:  %.2f us without PI, %.2f us with t10dif (+%.2f)\n",
	       rd[0][rounds / 2] * 1e6 / n, rd[1][rounds / 2] * 1e6 / n,
	       (rd[1][rounds / 2] - rd[0][rounds / 2]) * 1e6 / n);
}

/* ---- 6. threads ------------------------------------------------------ */

struct thr_arg {
	struct ftl_set *set;    /* written through (a plain image: 1 part) */
	int only;               /* set: > 0: only the 1 MiB stripes of part
	                           only - 1 (of 2) */
	uint64_t pages, n, seed;
	int err;
};

static void *thr_writer(void *p)
{
	struct thr_arg *a = p;
	static __thread uint8_t page[4096];
	uint64_t s = a->seed;

	for (uint64_t i = 0; i < a->n && !a->err; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		page[0] = (uint8_t)i;
		uint64_t pg = s % a->pages;

		if (a->only)    /* 256 pages a stripe, stripe k in part k % 2 */
			pg = (pg & ~256ull) | ((uint64_t)(a->only - 1) << 8);
		a->err = ftl_set_write(a->set, page, pg * 4096, 4096, 0);
	}
	return NULL;
}

/* The image file of section 7 (an engine or a set) in @dir. */
static char thr_img[512];

/* The CPUs a run used: the process's user + system CPU (the GC thread's
 * included) over the wall time. */
struct thr_res {
	double mbs, cpus;
};

/* Run @fn(@a[i]) on @nt threads at once; the CPUs they used go to *@cpus,
 * the wall time is returned. */
static double thr_spawn(void *(*fn)(void *), void *a, size_t asz, int nt,
			double *cpus)
{
	pthread_t t[2];
	struct rusage ra, rb;
	double t0, wall;

	getrusage(RUSAGE_SELF, &ra);
	t0 = now();
	for (int i = 0; i < nt; i++)
		if (pthread_create(&t[i], NULL, fn, (char *)a + (size_t)i * asz))
			die("pthread_create", -1);
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	wall = now() - t0;
	getrusage(RUSAGE_SELF, &rb);
	*cpus = (tv_s(&rb.ru_utime) - tv_s(&ra.ru_utime) +
		 tv_s(&rb.ru_stime) - tv_s(&ra.ru_stime)) / wall;
	return wall;
}

/* The parallel control: what the host gives two threads at this moment.
 * Each thread copies 4 KiB pages from its own 16 MiB source to random
 * slots of its own 16 MiB target (memory-bound, no shared state), as many
 * pages as the engine's round writes. */
struct ctl_arg {
	uint64_t n, seed;
	uint8_t *src, *dst;
};

#define CTL_BYTES (16ull << 20)

static void *ctl_copier(void *p)
{
	struct ctl_arg *a = p;
	uint64_t s = a->seed, slots = CTL_BYTES / 4096;

	for (uint64_t i = 0; i < a->n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memcpy(a->dst + (s % slots) * 4096,
		       a->src + (i % slots) * 4096, 4096);
	}
	return NULL;
}

static struct thr_res ctl_run(uint64_t n, int nt)
{
	struct ctl_arg a[2];
	struct thr_res res;
	double wall;

	for (int i = 0; i < nt; i++) {
		a[i] = (struct ctl_arg){ .n = n / (uint64_t)nt,
					 .seed = rnd() | 1,
					 .src = malloc(CTL_BYTES),
					 .dst = malloc(CTL_BYTES) };
		if (!a[i].src || !a[i].dst)
			die("malloc", -1);
		memset(a[i].src, i + 1, CTL_BYTES);     /* fault them in */
		memset(a[i].dst, 0, CTL_BYTES);
	}
	wall = thr_spawn(ctl_copier, a, sizeof(a[0]), nt, &res.cpus);
	for (int i = 0; i < nt; i++) {
		free(a[i].src);
		free(a[i].dst);
	}
	res.mbs = (double)n * 4096 / wall / 1e6;
	return res;
}

/* The partitioned engine: a set of @np parts (ftl-set.h, stripe 1 MiB;
 * @np 1: a plain engine image, whose set calls are its engine's) of
 * @size bytes on an image in @dir (on tmpfs as serve runs an image in
 * /dev/shm: its mapping, no backing lock; a memory backing's one mutex
 * over every write held a set's parts to 1.3-1.4x where two writers a
 * part each reach 1.7-1.9x on a tmpfs file), each part at 7 % OP with
 * its GC thread, full, random 4K written over it twice (GC in its steady
 * state). */
static struct ftl_set *full_set(const char *dir, uint64_t size, unsigned np)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
				     .force = true };
	struct ftl_open_opts o = { .bg_gc = true };
	struct thr_arg a = { .pages = size / 4096, .n = 2 * (size / 4096),
			     .seed = rnd() | 1 };
	static uint8_t mb[1 << 20];
	struct ftl_set *s;
	int r;

	snprintf(thr_img, sizeof(thr_img), "%s/bench-engine-thr.img", dir);
	unlink(thr_img);
	if ((r = ftl_set_create(thr_img, &c, np, 0)) ||
	    (r = ftl_set_open(thr_img, &o, &s)))
		die("set image", r);
	for (uint64_t off = 0; off < size; off += sizeof(mb))
		ftl_set_write(s, mb, off, sizeof(mb), 0);
	a.set = s;
	thr_writer(&a);
	if (a.err)
		die("warm-up", a.err);
	return s;
}

/* @n random 4K writes over a fresh set of @np parts (1: an engine) and
 * @size bytes from @nt writers, each over the whole set, or with @own (2
 * parts) each in the stripes of a part of its own. */
static struct thr_res set_run(const char *dir, uint64_t size, unsigned np,
			      uint64_t n, int nt, bool own)
{
	struct ftl_set *set = full_set(dir, size, np);
	struct thr_arg a[2];
	struct thr_res res;
	double wall;

	for (int i = 0; i < nt; i++)
		a[i] = (struct thr_arg){ .set = set, .pages = size / 4096,
					 .only = own ? i + 1 : 0,
					 .n = n / (uint64_t)nt, .seed = rnd() | 1 };
	wall = thr_spawn(thr_writer, a, sizeof(a[0]), nt, &res.cpus);
	for (int i = 0; i < nt; i++)
		if (a[i].err)
			die("ftl_set_write", a[i].err);
	ftl_set_close(set);
	unlink(thr_img);
	res.mbs = (double)n * 4096 / wall / 1e6;
	return res;
}

static int cmp_res(const void *a, const void *b)
{
	return cmp_dbl(&((const struct thr_res *)a)->mbs,
		       &((const struct thr_res *)b)->mbs);
}

static void threads(const char *dir)
{
	uint64_t size = quick ? 64ull << 20 : 256ull << 20, n = size / 4096;
	/* [0] one thread, [1] two; per round, ratio two / one */
	struct thr_res eng[2][3], ctl[2][3], prt[2][3], own[3], p4[2][3];
	double er[3], cr[3], nr[3], pr[3], or[3], sr[3], r4[3];

	for (int i = 0; i < 3; i++) {           /* interleaved rounds */
		for (int nt = 1; nt <= 2; nt++) {
			eng[nt - 1][i] = set_run(dir, size, 1, n, nt, false);
			/* 32x the pages: a 4 KiB copy costs ~1/20 of a
			 * write, so the control lasts about as long */
			ctl[nt - 1][i] = ctl_run(32 * n, nt);
			prt[nt - 1][i] = set_run(dir, size, 2, n, nt, false);
			p4[nt - 1][i] = set_run(dir, size, 4, n, nt, false);
		}
		own[i] = set_run(dir, size, 2, n, 2, true);
		r4[i] = p4[1][i].mbs / p4[0][i].mbs;
		pr[i] = prt[1][i].mbs / prt[0][i].mbs;
		or[i] = own[i].mbs / prt[0][i].mbs;
		sr[i] = pr[i] / (ctl[1][i].mbs / ctl[0][i].mbs);
		er[i] = eng[1][i].mbs / eng[0][i].mbs;
		cr[i] = ctl[1][i].mbs / ctl[0][i].mbs;
		nr[i] = er[i] / cr[i];
	}
	for (int k = 0; k < 2; k++) {
		qsort(eng[k], 3, sizeof(eng[k][0]), cmp_res);
		qsort(ctl[k], 3, sizeof(ctl[k][0]), cmp_res);
		qsort(prt[k], 3, sizeof(prt[k][0]), cmp_res);
		qsort(p4[k], 3, sizeof(p4[k][0]), cmp_res);
	}
	qsort(own, 3, sizeof(own[0]), cmp_res);
	qsort(pr, 3, sizeof(double), cmp_dbl);
	qsort(or, 3, sizeof(double), cmp_dbl);
	qsort(sr, 3, sizeof(double), cmp_dbl);
	qsort(r4, 3, sizeof(double), cmp_dbl);
	qsort(er, 3, sizeof(double), cmp_dbl);
	qsort(cr, 3, sizeof(double), cmp_dbl);
	qsort(nr, 3, sizeof(double), cmp_dbl);
	printf("\n6. writer threads: %llu MiB image in %s, 7 %% OP, full, 4K random "
	       "(%llu writes per round), GC thread on;\n   median of 3 "
	       "interleaved rounds, each with a parallel control (4 KiB memcpys\n"
	       "   from 1 and 2 threads, no shared state: what the host gives a "
	       "second thread now)\n", (unsigned long long)(size >> 20), dir,
	       (unsigned long long)n);
	printf("engine:  1 thread %.1f MB/s (%.2f CPUs), 2 threads %.1f MB/s "
	       "(%.2f CPUs): %.2fx (target >= 1.6x)\n",
	       eng[0][1].mbs, eng[0][1].cpus, eng[1][1].mbs, eng[1][1].cpus,
	       er[1]);
	printf("control: 1 thread %.0f MB/s (%.2f CPUs), 2 threads %.0f MB/s "
	       "(%.2f CPUs): %.2fx\n",
	       ctl[0][1].mbs, ctl[0][1].cpus, ctl[1][1].mbs, ctl[1][1].cpus,
	       cr[1]);
	printf("engine 2/1 over control 2/1 (per round, median): %.2f\n", nr[1]);
	printf("set of 2 parts: 1 writer %.1f MB/s (%.2f CPUs), 2 writers "
	       "%.1f MB/s (%.2f CPUs): %.2fx (target >= 1.6x)\n",
	       prt[0][1].mbs, prt[0][1].cpus, prt[1][1].mbs, prt[1][1].cpus,
	       pr[1]);
	printf("  the same, 2 writers each on the stripes of one part: %.1f MB/s "
	       "(%.2f CPUs): %.2fx\n", own[1].mbs, own[1].cpus, or[1]);
	printf("set 2/1 over control 2/1 (per round, median): %.2f\n", sr[1]);
	printf("set of 4 parts: 1 writer %.1f MB/s (%.2f CPUs), 2 writers "
	       "%.1f MB/s (%.2f CPUs): %.2fx\n", p4[0][1].mbs, p4[0][1].cpus,
	       p4[1][1].mbs, p4[1][1].cpus, r4[1]);
}

/* ---- 7. latency --------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void latency(const char *dir)
{
	uint64_t size = quick ? 64ull << 20 : 256ull << 20, pages = size / 4096;
	uint64_t n = 2 * pages, *lat = malloc(n * sizeof(uint64_t));
	double p50[3], p99[3], p999[3], mx[3], mbs[3], wa[3];
	static uint8_t page[4096], mb[1 << 20];
	char img[512];

	if (!lat)
		die("malloc", -1);
	snprintf(img, sizeof(img), "%s/bench-engine-lat.img", dir);
	for (int i = 0; i < 3; i++) {
		struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
					     .force = true };
		struct ftl_open_opts o = { .bg_gc = true };
		struct ftl *f;
		double t0;
		int r;

		unlink(img);
		if ((r = ftl_create(img, &c)) || (r = ftl_open(img, &o, &f)))
			die("create/open", r);
		for (uint64_t off = 0; off < size; off += sizeof(mb))
			ftl_write(f, mb, off, sizeof(mb), 0);
		for (uint64_t k = 0; k < pages; k++)    /* GC steady state */
			ftl_write(f, page, (rnd() % pages) * 4096, 4096, 0);
		struct ftl_stats sa, sb;

		ftl_stats_get(f, &sa);
		t0 = now();
		for (uint64_t k = 0; k < n; k++) {
			double a = now();

			page[0] = (uint8_t)k;
			if ((r = ftl_write(f, page, (rnd() % pages) * 4096, 4096, 0)))
				die("ftl_write", r);
			lat[k] = (uint64_t)((now() - a) * 1e9);
		}
		mbs[i] = (double)n * 4096 / (now() - t0) / 1e6;
		ftl_stats_get(f, &sb);  /* all programs / host pages: the GC's cost */
		wa[i] = (double)(sb.page_programs - sa.page_programs) / (double)n;
		ftl_close(f);
		unlink(img);
		qsort(lat, n, sizeof(uint64_t), cmp_u64);
		p50[i] = lat[n / 2] / 1e3;
		p99[i] = lat[n - n / 100 - 1] / 1e3;
		p999[i] = lat[n - n / 1000 - 1] / 1e3;
		mx[i] = lat[n - 1] / 1e3;
	}
	free(lat);
	qsort(p50, 3, sizeof(double), cmp_dbl);
	qsort(p99, 3, sizeof(double), cmp_dbl);
	qsort(p999, 3, sizeof(double), cmp_dbl);
	qsort(mx, 3, sizeof(double), cmp_dbl);
	qsort(mbs, 3, sizeof(double), cmp_dbl);
	qsort(wa, 3, sizeof(double), cmp_dbl);
	printf("\n7. write latency: %llu MiB image on a file in %s, 7 %% OP, full, "
	       "4K random (%llu timed writes), GC thread on;\n   median of 3 rounds "
	       "(max: the median of the 3 rounds' maxima)\n",
	       (unsigned long long)(size >> 20), dir, (unsigned long long)n);
	printf("p50 %.1f us, p99 %.1f us, p99.9 %.1f us (%.1fx p50, target <= 10x), "
	       "max %.1f ms (largest of 3: %.1f ms, target <= 100 ms), %.1f MB/s, WA %.2f\n",
	       p50[1], p99[1], p999[1], p999[1] / p50[1], mx[1] / 1e3, mx[2] / 1e3, mbs[1],
	       wa[1]);
}

/* ---- 8. context switches ------------------------------------------------ */

/* Voluntary (@inv false) or involuntary context switches of every thread
 * of this process but the main one (the GC thread, while no writer runs). */
static uint64_t other_ctxsw(bool inv)
{
	char path[300], line[128];
	uint64_t sum = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		FILE *s;

		if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		s = fopen(path, "r");
		while (s && fgets(line, sizeof(line), s))
			if (!strncmp(line, inv ? "nonvoluntary_ctxt_switches:" :
				     "voluntary_ctxt_switches:", inv ? 27 : 24))
				sum += strtoull(strchr(line, ':') + 1, NULL, 10);
		if (s)
			fclose(s);
	}
	if (d)
		closedir(d);
	return sum;
}

struct cs_arg {
	struct ftl *f;
	uint64_t pages, n, seed, cs[2]; /* this writer's switches: voluntary,
	                                   involuntary */
	uint32_t len, tid, nt;          /* write size; writer tid of nt */
	int err;
};

/* @n writes of @len: 1M ones in sequence (writer tid takes every nt-th),
 * 4K ones at random; counts its own context switches. */
static void *cs_writer(void *p)
{
	struct cs_arg *a = p;
	uint8_t *buf = calloc(1, a->len);  /* not __thread: static TLS
	                                      comes off every thread's stack */
	uint64_t s = a->seed, per = a->len / 4096;
	struct rusage r0, r1;

	if (!buf)
		die("calloc", -1);
	getrusage(RUSAGE_THREAD, &r0);
	for (uint64_t i = 0; i < a->n && !a->err; i++) {
		uint64_t pg;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		pg = per > 1 ? ((i * a->nt + a->tid) * per) % a->pages : s % a->pages;
		buf[0] = (uint8_t)i;
		a->err = ftl_write(a->f, buf, pg * 4096, a->len, 0);
	}
	getrusage(RUSAGE_THREAD, &r1);
	a->cs[0] = (uint64_t)(r1.ru_nvcsw - r0.ru_nvcsw);
	a->cs[1] = (uint64_t)(r1.ru_nivcsw - r0.ru_nivcsw);
	free(buf);
	return NULL;
}

/* One round: a full image on a file in @dir (written twice in 1M, then
 * @len writes over it once from @nt threads).  Out: switches per write of
 * the writers and of the GC thread (voluntary, involuntary), MB/s. */
static void cs_round(const char *dir, uint64_t size, uint32_t len, int nt,
		     bool bg, double wr[2], double gc[2], double *mbs)
{
	struct ftl_create_opts c = { .size = size, .align = FTL_ALIGN_1M,
				     .force = true };
	struct ftl_open_opts o = { .bg_gc = bg };
	uint64_t n = size / len, g0[2], cs[2] = { 0, 0 };
	struct cs_arg a[2];
	pthread_t t[2];
	char img[512];
	struct ftl *f;
	double t0;
	int r;

	snprintf(img, sizeof(img), "%s/bench-engine-cs.img", dir);
	unlink(img);
	if ((r = ftl_create(img, &c)))
		die("create", r);
	if ((r = ftl_open(img, &o, &f)))
		die("open", r);
	for (int k = 0; k < 2; k++) {
		a[0] = (struct cs_arg){ .f = f, .pages = size / 4096, .n = size >> 20,
					.seed = rnd() | 1, .len = 1 << 20, .nt = 1 };
		cs_writer(&a[0]);
		if (a[0].err)
			die("fill", a[0].err);
	}
	g0[0] = other_ctxsw(false);
	g0[1] = other_ctxsw(true);
	t0 = now();
	for (int i = 0; i < nt; i++) {
		a[i] = (struct cs_arg){ .f = f, .pages = size / 4096, .n = n / nt,
					.seed = rnd() | 1, .len = len,
					.tid = (uint32_t)i, .nt = (uint32_t)nt };
		if (pthread_create(&t[i], NULL, cs_writer, &a[i]))
			die("pthread_create", -1);
	}
	for (int i = 0; i < nt; i++) {
		pthread_join(t[i], NULL);
		if (a[i].err)
			die("ftl_write", a[i].err);
		cs[0] += a[i].cs[0];
		cs[1] += a[i].cs[1];
	}
	*mbs = (double)n * len / (now() - t0) / 1e6;
	for (int v = 0; v < 2; v++) {
		gc[v] = (double)(other_ctxsw(v) - g0[v]) / (double)n;
		wr[v] = (double)cs[v] / (double)n;
	}
	ftl_close(f);
	unlink(img);
}

static void ctxsw(const char *dir)
{
	uint64_t size = quick ? 64ull << 20 : 256ull << 20;
	static const struct { uint32_t len; int nt; bool bg; } row[] = {
		{ 1u << 20, 1, true }, { 1u << 20, 2, true },
		{ 1u << 20, 1, false }, { 4096, 1, true }, { 4096, 2, true },
	};
	enum { NR = sizeof(row) / sizeof(row[0]) };
	double v[NR][5][3];     /* writers vol, invol; GC vol, invol; MB/s */

	const char *one = getenv("BENCH_CS_ROW");

	for (int i = 0; i < 3; i++)             /* interleaved rounds */
		for (int k = 0; k < NR; k++) {
			double wr[2], gc[2];

			if (one && atoi(one) != k) {
				memset(wr, 0, sizeof(wr));
				memset(gc, 0, sizeof(gc));
				v[k][4][i] = 0;
				continue;
			}
			cs_round(dir, size, row[k].len, row[k].nt, row[k].bg,
				 wr, gc, &v[k][4][i]);
			v[k][0][i] = wr[0];
			v[k][1][i] = wr[1];
			v[k][2][i] = gc[0];
			v[k][3][i] = gc[1];
		}
	printf("\n8. context switches per write (voluntary / involuntary): %llu MiB "
	       "image on a file in %s,\n   7 %% OP, full (written twice in 1M "
	       "first), written once more; median of 3 interleaved rounds\n",
	       (unsigned long long)(size >> 20), dir);
	printf("%-24s %15s %15s %8s\n", "", "writers", "GC thread", "MB/s");
	for (int k = 0; k < NR; k++) {
		if (one && atoi(one) != k)
			continue;
		for (int c = 0; c < 5; c++)
			qsort(v[k][c], 3, sizeof(double), cmp_dbl);
		printf("%-4s %s, %d thread%s %s %7.3f %7.3f %7.3f %7.3f %8.1f\n",
		       row[k].len > 4096 ? "1M" : "4K",
		       row[k].len > 4096 ? "seq " : "rand", row[k].nt,
		       row[k].nt > 1 ? "s" : " ", row[k].bg ? "   " : "(i)",
		       v[k][0][1], v[k][1][1], v[k][2][1], v[k][3][1], v[k][4][1]);
	}
	printf("(i): inline GC, no GC thread\n");
}

static bool want(int argc, char **argv, const char *name)
{
	bool any = false;

	for (int i = 2; i < argc; i++) {
		any = true;
		if (!strcmp(argv[i], name))
			return true;
	}
	return !any;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") :
			  "/var/tmp";

	quick = getenv("BENCH_QUICK") && *getenv("BENCH_QUICK") == '1';
	printf("bench-engine (%s)\n", quick ? "quick" : "full");
	if (want(argc, argv, "throughput"))
		throughput(dir);
	if (want(argc, argv, "wa"))
		write_amp();
	if (want(argc, argv, "place"))
		placement();
	if (want(argc, argv, "open"))
		open_times(dir);
	if (want(argc, argv, "scale"))
		scale(dir);
	if (want(argc, argv, "flush"))
		flush_cost(dir);
	if (want(argc, argv, "pi"))
		pi_cost(dir);
	if (want(argc, argv, "threads"))
		threads(dir);
	if (want(argc, argv, "latency"))
		latency(dir);
	if (want(argc, argv, "ctxsw"))
		ctxsw(dir);
	return 0;
}
