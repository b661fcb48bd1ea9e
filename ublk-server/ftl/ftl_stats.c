/* SPDX-License-Identifier: MIT */
/* Counters: persisted in checkpoints, reported as JSON or a table. */
#include <math.h>
#include <string.h>

#include "ftl-int.h"

#define LD(f, x) __atomic_load_n(&(f)->x, __ATOMIC_RELAXED)

/* Where a mount's increments of a counter come from (ftl-counters.h). */
#define SRC_ENG(name)             LD(f, m.name)
#define SRC_NAND_reads(name)      (n.reads - f->nbase.reads)
#define SRC_NAND_programs(name)   (n.programs - f->nbase.programs)
#define SRC_NAND_erases(name)     (n.erases - f->nbase.erases)
#define SRC_NAND_violations(name) (n.violations - f->nbase.violations)
#define SRC_NAND_program_fails(name) (n.program_fails - f->nbase.program_fails)
#define SRC_NAND_erase_fails(name) (n.erase_fails - f->nbase.erase_fails)
#define SRC_NAND_ecc_corrected_bits(name) \
	(n.ecc_corrected_bits - f->nbase.ecc_corrected_bits)
#define SRC_NAND_ecc_uncorrectable(name) \
	(n.ecc_uncorrectable - f->nbase.ecc_uncorrectable)

/* Counters since create: the checkpointed base plus this mount's. */
void ftl_counters_snapshot(struct ftl *f, struct ftl_ckpt_counters *c)
{
	struct nand_counters n;

	nand_counters_get(f->nand, &n);
	*c = f->base;
#define FTL_X_ADD(name, src) c->name += SRC_##src(name);
	FTL_COUNTERS(FTL_X_ADD)
#undef FTL_X_ADD
}

/* The erase-count histogram of the data blocks (erase_min/max known):
 * FTL_ERASE_HIST buckets of equal width from erase_min. */
static void erase_hist(struct ftl *f, struct ftl_stats *st)
{
	const struct ftl_geom *g = &f->g;
	uint32_t span = st->erase_max - st->erase_min + 1;

	st->erase_hist_base = st->erase_min;
	st->erase_hist_width = (span + FTL_ERASE_HIST - 1) / FTL_ERASE_HIST;
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++)
		st->erase_hist[(nand_block_ec(f->nand, b) - st->erase_min) /
			       st->erase_hist_width]++;
}

/* Programs by origin (ftl.h): the GC stream's, the checkpoints', the rest.
 * A checkpoint's counters are taken before its own pages are programmed,
 * so page_programs lacks the pages of the checkpoint an open started from:
 * the checkpoint figure is capped to what page_programs holds, and the
 * three always add up to it. */
static void programs_split(const struct ftl_geom *g, struct ftl_stats *st)
{
	uint64_t left;

	st->programs_gc = st->gc_relocations + st->wl_relocations;
	left = st->page_programs > st->programs_gc ?
	       st->page_programs - st->programs_gc : 0;
	st->programs_ckpt = st->ckpt_writes * (1ull + g->payload_pages);
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
	pthread_mutex_lock(&f->lock);
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
	st->mapped_pages = f->mapped;
	st->free_blocks = f->nfree;
	ftl_bb_stats(f, st);
	nand_counters_get(f->nand, &n);
	pthread_mutex_unlock(&f->lock);
#define FTL_X_COPY(name, src) st->name = c.name;
	FTL_COUNTERS(FTL_X_COPY)
#undef FTL_X_COPY
#define FTL_X_MOUNT(name, src) st->name = SRC_##src(name);
	FTL_MOUNT_COUNTERS(FTL_X_MOUNT)
#undef FTL_X_MOUNT
	programs_split(g, st);
	st->erase_mean = sum / nb;
	st->erase_stddev = sqrt(fmax(0, sq / nb - st->erase_mean * st->erase_mean));
	if (f->readonly) {
		st->last_mount = (enum ftl_mount_kind)c.last_mount;
		st->last_mount_ms = c.last_mount_us / 1000.0;
	} else {
		st->last_mount = f->mount_kind;
		st->last_mount_ms = f->mount_ms;
	}
	st->last_mount_time = c.last_mount_time;
	st->write_amplification = c.host_write_sectors ?
		(double)c.page_programs * g->ps /
		((double)c.host_write_sectors * FTL_SECTOR) : 0;
	st->align = g->align;
	st->page_size = g->ps;
}

static const char *mount_name(enum ftl_mount_kind k)
{
	return k == FTL_MOUNT_CLEAN ? "clean" :
	       k == FTL_MOUNT_ROLL_FORWARD ? "roll-forward" : "scan";
}

/* "KEY":[v0,v1,...], */
static void print_array(FILE *out, const char *key, const uint32_t *v,
			uint32_t n)
{
	fprintf(out, "\"%s\":[", key);
	for (uint32_t i = 0; i < n; i++)
		fprintf(out, "%s%u", i ? "," : "", v[i]);
	fputs("],", out);
}

/* Print @st as one JSON object (keys = field names) or a table. */
void ftl_stats_print(const struct ftl_stats *st, FILE *out, bool json)
{
	const struct { const char *k; uint64_t v; } u[] = {
#define FTL_X_KEY(name, src) { #name, st->name },
		FTL_COUNTERS(FTL_X_KEY)
		FTL_MOUNT_COUNTERS(FTL_X_KEY)
#undef FTL_X_KEY
		{ "erase_min", st->erase_min },
		{ "erase_max", st->erase_max },
		{ "mapped_pages", st->mapped_pages },
		{ "free_blocks", st->free_blocks },
		{ "last_mount_time", st->last_mount_time },
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
	size_t i;

	if (json) {
		fputc('{', out);
		for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
			fprintf(out, "\"%s\":%llu,", u[i].k,
				(unsigned long long)u[i].v);
		for (i = 0; i < sizeof(d) / sizeof(d[0]); i++)
			fprintf(out, "\"%s\":%.6g,", d[i].k, d[i].v);
		print_array(out, "erase_hist", st->erase_hist, FTL_ERASE_HIST);
		print_array(out, "wear_map", st->wear_map, st->wear_map_len);
		fprintf(out, "\"last_mount\":\"%s\",\"align\":\"%s\","
			"\"read_only\":%s}\n", mount_name(st->last_mount), align,
			st->read_only ? "true" : "false");
		return;
	}
	fprintf(out, "%-22s %s\n", "align", align);
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		fprintf(out, "%-22s %llu\n", u[i].k, (unsigned long long)u[i].v);
	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		fprintf(out, "%-22s %.3f\n", d[i].k, d[i].v);
	fprintf(out, "%-22s", "erase_hist");
	for (i = 0; i < FTL_ERASE_HIST; i++)
		fprintf(out, " %u", st->erase_hist[i]);
	fputc('\n', out);
	fprintf(out, "%-22s %s\n", "last_mount", mount_name(st->last_mount));
	fprintf(out, "%-22s %s\n", "read_only", st->read_only ?
		"yes (spare blocks used up)" : "no");
}
