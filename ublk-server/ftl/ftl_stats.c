/* SPDX-License-Identifier: MIT */
/* Stats: the counters (ftl_counters.c) and the block figures, reported as
 * JSON or a table. */
#include <math.h>
#include <string.h>

#include "ftl-int.h"
#include "oct-fmt.h"
#include "oct-json.h"

/* The erase-count histogram of the data blocks (erase_min/max known):
 * FTL_ERASE_HIST buckets of equal width from erase_min.  In 64 bits: the
 * span of 0 .. UINT32_MAX is 2^32 (in 32 it wrapped to a width of 0). */
static void erase_hist(struct ftl *f, struct ftl_stats *st)
{
	const struct ftl_geom *g = &f->g;
	uint64_t span = (uint64_t)st->erase_max - st->erase_min + 1;

	st->erase_hist_base = st->erase_min;
	st->erase_hist_width = (uint32_t)((span + FTL_ERASE_HIST - 1) /
					  FTL_ERASE_HIST);
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++)
		st->erase_hist[(nand_block_ec(f->nand, b) - st->erase_min) /
			       st->erase_hist_width]++;
}

/* Programs by origin (ftl.h): the GC stream's, the checkpoints', the rest.
 * page_programs counts every page (a checkpoint adds its own pages to the
 * counters it persists); ckpt_bytes is this mount's only, so the
 * checkpoint figure is capped to what page_programs holds, and the three
 * always add up to it. */
static void programs_split(const struct ftl_geom *g, struct ftl_stats *st)
{
	uint64_t left;

	st->programs_gc = st->gc_relocations + st->wl_relocations;
	left = st->page_programs > st->programs_gc ?
	       st->page_programs - st->programs_gc : 0;
	/* every checkpoint page programmed (empty payload pages are not),
	 * and the flush summaries' (log metadata too) */
	st->programs_ckpt = st->ckpt_bytes / g->ps + st->fsum_pages;
	if (st->programs_ckpt > left)
		st->programs_ckpt = left;
	st->programs_host = left - st->programs_ckpt;
}

/* Fill @st (see ftl.h); erase-count figures cover the data blocks. */
void ftl_stats_get(struct ftl *f, struct ftl_stats *st)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_counters c;
	struct nand_counters n;
	double sum = 0, sq = 0, nb = g->data_blocks;

	memset(st, 0, sizeof(*st));
	ftl_lock(&f->lock);
	ftl_counters_snapshot(f, &c);
	st->erase_min = UINT32_MAX;
	st->wear_map_group = (g->data_blocks + FTL_WEAR_MAP - 1) / FTL_WEAR_MAP;
	st->wear_map_len = (g->data_blocks + st->wear_map_group - 1) /
			   st->wear_map_group;
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		uint32_t ec = nand_block_ec(f->nand, b);
		uint32_t *cell = &st->wear_map[(b - g->ckpt_blocks) /
					       st->wear_map_group];
		if (ec < st->erase_min)
			st->erase_min = ec;
		if (ec > st->erase_max)
			st->erase_max = ec;
		if (ec > *cell)
			*cell = ec;
		sum += ec;
		sq += (double)ec * ec;
	}
	erase_hist(f, st);
	st->mapped_pages = f->log.mapped;
	st->free_blocks = f->idx.nfree;
	ftl_bb_stats(f, st);
	st->streams = ftl_place_on(f);
	nand_counters_get(f->nand, &n);
	ftl_unlock(&f->lock);
#define FTL_X_COPY(name, src) st->name = c.name;
	FTL_COUNTERS(FTL_X_COPY)
	FTL_LIFE_COUNTERS(FTL_X_COPY)
#undef FTL_X_COPY
	ftl_counters_mount(f, &n, st);
	programs_split(g, st);
	st->erase_mean = sum / nb;
	st->erase_stddev = sqrt(fmax(0, sq / nb - st->erase_mean * st->erase_mean));
	if (f->readonly) {
		st->last_mount = (enum ftl_mount_kind)c.last_mount;
		st->last_mount_ms = c.last_mount_us / 1000.0;
	} else {
		st->last_mount = f->mnt.kind;
		st->last_mount_ms = f->mnt.ms;
	}
	st->last_mount_time = c.last_mount_time;
	st->ckpt_lost = f->mnt.ckpt_lost;
	st->write_amplification = c.host_write_sectors ?
		(double)c.page_programs * g->ps /
		((double)c.host_write_sectors * FTL_SECTOR) : 0;
	st->align = g->align;
	st->pi = g->pi;
	st->page_size = g->ps;
}

static const char *mount_name(enum ftl_mount_kind k)
{
	return k == FTL_MOUNT_CLEAN ? "clean" :
	       k == FTL_MOUNT_ROLL_FORWARD ? "roll-forward" : "scan";
}

/* One line of the human table: "label   value". */
#define stats_row(out, label, ...) oct_fmt_row(out, 24, label, __VA_ARGS__)

/* @sectors 512-byte sectors as "8 MiB (16384 sectors)". */
static const char *stats_sectors(uint64_t sectors, char *buf, size_t len)
{
	char sz[32];

	snprintf(buf, len, "%s (%llu sectors)",
		 oct_fmt_size(sectors * FTL_SECTOR, sz, sizeof(sz)),
		 (unsigned long long)sectors);
	return buf;
}

/* The table for a person: sizes with units, percentages, ISO dates. */
static void stats_print_table(const struct ftl_stats *st, FILE *out,
			      const char *align)
{
	char a[64], b[64];
	double bb = (double)(st->bad_blocks_factory + st->bad_blocks_grown);

	stats_row(out, "align", "%s", align);
	stats_row(out, "page size", "%s", oct_fmt_size(st->page_size, a, sizeof(a)));
	stats_row(out, "integrity", "%s", st->pi ? "t10dif (T10-DIF type 1 per 512-byte sector)" : "none");
	stats_row(out, "placement streams", "%s", st->streams ?
		  "on (hot and cold host data apart)" : "off");
	stats_row(out, "host read", "%s", stats_sectors(st->host_read_sectors, a, sizeof(a)));
	stats_row(out, "host written", "%s", stats_sectors(st->host_write_sectors, a, sizeof(a)));
	stats_row(out, "host discarded", "%s", stats_sectors(st->host_discard_sectors, a, sizeof(a)));
	stats_row(out, "host flushes", "%llu (%llu FUA writes)",
		  (unsigned long long)st->host_flushes,
		  (unsigned long long)st->host_fua);
	stats_row(out, "writes without waiting", "%llu served, %llu turned back "
		  "(ftl_write_try, this mount)",
		  (unsigned long long)st->write_try_served,
		  (unsigned long long)st->write_try_again);
	stats_row(out, "flash programmed", "%s (%llu pages)",
		  oct_fmt_size(st->page_programs * st->page_size, a, sizeof(a)),
		  (unsigned long long)st->page_programs);
	stats_row(out, "programs by origin", "%llu host, %llu GC and wear levelling, %llu checkpoint",
		  (unsigned long long)st->programs_host,
		  (unsigned long long)st->programs_gc,
		  (unsigned long long)st->programs_ckpt);
	stats_row(out, "flash read", "%s (%llu pages)",
		  oct_fmt_size(st->page_reads * st->page_size, a, sizeof(a)),
		  (unsigned long long)st->page_reads);
	stats_row(out, "write amplification", "%.3f", st->write_amplification);
	stats_row(out, "page read-modify-writes", "%llu partial page, %llu straddling",
		  (unsigned long long)st->rmw_subpage,
		  (unsigned long long)st->rmw_straddle);
	stats_row(out, "block erases", "%llu", (unsigned long long)st->block_erases);
	stats_row(out, "erase count per block", "min %u, max %u, mean %.2f, stddev %.2f",
		  st->erase_min, st->erase_max, st->erase_mean, st->erase_stddev);
	stats_row(out, "relocations", "%llu by GC, %llu by wear levelling, %llu off bad blocks",
		  (unsigned long long)st->gc_relocations,
		  (unsigned long long)st->wl_relocations,
		  (unsigned long long)st->bad_relocations);
	stats_row(out, "mapped", "%s (%llu pages)",
		  oct_fmt_size(st->mapped_pages * st->page_size, a, sizeof(a)),
		  (unsigned long long)st->mapped_pages);
	stats_row(out, "free blocks", "%llu", (unsigned long long)st->free_blocks);
	stats_row(out, "bad blocks", "%llu factory, %llu grown; %.1f %% of the %llu the spare area absorbs",
		  (unsigned long long)st->bad_blocks_factory,
		  (unsigned long long)st->bad_blocks_grown,
		  st->bad_block_limit ? 100.0 * bb / (double)st->bad_block_limit : 0.0,
		  (unsigned long long)st->bad_block_limit);
	stats_row(out, "checkpoints written", "%llu", (unsigned long long)st->ckpt_writes);
	stats_row(out, "last mount", "%s, took %.1f ms", mount_name(st->last_mount),
		  st->last_mount_ms);
	stats_row(out, "last read-write mount", "%s",
		  oct_fmt_time(st->last_mount_time, b, sizeof(b)));
	if (st->ckpt_lost)
		stats_row(out, "checkpoint lost", "yes: a newer checkpoint's "
			  "slot is gone, the open rolled forward over "
			  "everything since the one before (fsck)");
	stats_row(out, "faults (this mount)", "%llu program, %llu erase failures",
		  (unsigned long long)st->program_fails,
		  (unsigned long long)st->erase_fails);
	stats_row(out, "store without room", "%llu writes to it refused (ENOSPC, "
		  "EDQUOT; this mount)", (unsigned long long)st->store_full);
	stats_row(out, "ECC (this mount)", "%llu bits corrected, %llu uncorrectable, %llu retries",
		  (unsigned long long)st->ecc_corrected_bits,
		  (unsigned long long)st->ecc_uncorrectable,
		  (unsigned long long)st->read_retries);
	stats_row(out, "scrubbed pages", "%llu", (unsigned long long)st->scrubbed_pages);
	stats_row(out, "read CRC errors", "%llu", (unsigned long long)st->read_crc_errors);
	stats_row(out, "NAND rule violations", "%llu", (unsigned long long)st->nand_violations);
	stats_row(out, "read-only", "%s", st->read_only ?
		  "yes (spare blocks used up)" : "no");
}

/* "KEY":[v0,v1,...] */
static void stats_json_array(struct oct_json *j, const char *key,
			     const uint32_t *v, uint32_t n)
{
	oct_json_arr(j, key);
	for (uint32_t i = 0; i < n; i++)
		oct_json_u64(j, NULL, v[i]);
	oct_json_end(j);
}

/* Print @st as one JSON object (keys = field names, raw numbers:
 * docs/serve.md) or a table for a person. */
void ftl_stats_print(const struct ftl_stats *st, FILE *out, bool json)
{
	const struct { const char *k; uint64_t v; } u[] = {
#define FTL_X_KEY(name, src) { #name, st->name },
		FTL_COUNTERS(FTL_X_KEY)
		FTL_MOUNT_COUNTERS(FTL_X_KEY)
		FTL_LIFE_COUNTERS(FTL_X_KEY)
#undef FTL_X_KEY
		{ "erase_min", st->erase_min },
		{ "erase_max", st->erase_max },
		{ "mapped_pages", st->mapped_pages },
		{ "free_blocks", st->free_blocks },
		{ "last_mount_time", st->last_mount_time },
		{ "ckpt_lost", st->ckpt_lost },
		{ "page_size", st->page_size },
		{ "bad_blocks_factory", st->bad_blocks_factory },
		{ "bad_blocks_grown", st->bad_blocks_grown },
		{ "bad_block_limit", st->bad_block_limit },
		{ "programs_host", st->programs_host },
		{ "programs_gc", st->programs_gc },
		{ "programs_ckpt", st->programs_ckpt },
		{ "erase_hist_base", st->erase_hist_base },
		{ "erase_hist_width", st->erase_hist_width },
		{ "wear_map_group", st->wear_map_group },
	};
	const struct { const char *k; double v; } d[] = {
		{ "erase_mean", st->erase_mean },
		{ "erase_stddev", st->erase_stddev },
		{ "last_mount_ms", st->last_mount_ms },
		{ "write_amplification", st->write_amplification },
	};
	const char *align = st->align == FTL_ALIGN_ODD ? "odd" : "1m";
	struct oct_json j;
	size_t i;

	if (!json) {
		stats_print_table(st, out, align);
		return;
	}
	oct_json_init(&j, out);
	oct_json_obj(&j, NULL);
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		oct_json_u64(&j, u[i].k, u[i].v);
	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		oct_json_dbl(&j, d[i].k, d[i].v);
	stats_json_array(&j, "erase_hist", st->erase_hist, FTL_ERASE_HIST);
	stats_json_array(&j, "wear_map", st->wear_map, st->wear_map_len);
	oct_json_str(&j, "last_mount", mount_name(st->last_mount));
	oct_json_str(&j, "align", align);
	oct_json_str(&j, "integrity", st->pi ? "t10dif" : "none");
	oct_json_bool(&j, "streams", st->streams);
	oct_json_bool(&j, "read_only", st->read_only);
	oct_json_end(&j);
}
