/* SPDX-License-Identifier: MIT */
/* Counters: persisted in checkpoints, reported as JSON or a table. */
#include <math.h>
#include <string.h>

#include "ftl-int.h"

#define LD(f, x) __atomic_load_n(&(f)->x, __ATOMIC_RELAXED)

/* Counters since create: the checkpointed base plus this mount's. */
void ftl_counters_snapshot(struct ftl *f, struct ftl_ckpt_counters *c)
{
	struct nand_counters n;

	nand_counters_get(f->nand, &n);
	*c = f->base;
	c->host_read_sectors += LD(f, c_rs);
	c->host_write_sectors += LD(f, c_ws);
	c->host_flushes += LD(f, c_fl);
	c->host_fua += LD(f, c_fua);
	c->host_discard_sectors += LD(f, c_ds);
	c->page_reads += n.reads - f->nbase.reads;
	c->page_programs += n.programs - f->nbase.programs;
	c->block_erases += n.erases - f->nbase.erases;
	c->rmw_subpage += LD(f, c_sub);
	c->rmw_straddle += LD(f, c_str);
	c->gc_relocations += LD(f, c_gc);
	c->wl_relocations += LD(f, c_wl);
	c->ckpt_writes += LD(f, c_ck);
	c->nand_violations += n.violations - f->nbase.violations;
}

/* Fill @st (see ftl.h); erase-count figures cover the data blocks. */
void ftl_stats_get(struct ftl *f, struct ftl_stats *st)
{
	const struct ftl_geom *g = &f->g;
	struct ftl_ckpt_counters c;
	double sum = 0, sq = 0, n = g->data_blocks;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&f->lock);
	ftl_counters_snapshot(f, &c);
	st->erase_min = UINT32_MAX;
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		uint32_t ec = nand_block_ec(f->nand, b);
		if (ec < st->erase_min)
			st->erase_min = ec;
		if (ec > st->erase_max)
			st->erase_max = ec;
		sum += ec;
		sq += (double)ec * ec;
	}
	st->mapped_pages = f->mapped;
	st->free_blocks = f->nfree;
	pthread_mutex_unlock(&f->lock);
	st->host_read_sectors = c.host_read_sectors;
	st->host_write_sectors = c.host_write_sectors;
	st->host_flushes = c.host_flushes;
	st->host_fua = c.host_fua;
	st->host_discard_sectors = c.host_discard_sectors;
	st->page_reads = c.page_reads;
	st->page_programs = c.page_programs;
	st->block_erases = c.block_erases;
	st->rmw_subpage = c.rmw_subpage;
	st->rmw_straddle = c.rmw_straddle;
	st->gc_relocations = c.gc_relocations;
	st->wl_relocations = c.wl_relocations;
	st->ckpt_writes = c.ckpt_writes;
	st->nand_violations = c.nand_violations;
	st->erase_mean = sum / n;
	st->erase_stddev = sqrt(fmax(0, sq / n - st->erase_mean * st->erase_mean));
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

/* Print @st as one JSON object (keys = field names) or a table. */
void ftl_stats_print(const struct ftl_stats *st, FILE *out, bool json)
{
	const struct { const char *k; uint64_t v; } u[] = {
		{ "host_read_sectors", st->host_read_sectors },
		{ "host_write_sectors", st->host_write_sectors },
		{ "host_flushes", st->host_flushes },
		{ "host_fua", st->host_fua },
		{ "host_discard_sectors", st->host_discard_sectors },
		{ "page_reads", st->page_reads },
		{ "page_programs", st->page_programs },
		{ "block_erases", st->block_erases },
		{ "rmw_subpage", st->rmw_subpage },
		{ "rmw_straddle", st->rmw_straddle },
		{ "gc_relocations", st->gc_relocations },
		{ "wl_relocations", st->wl_relocations },
		{ "ckpt_writes", st->ckpt_writes },
		{ "nand_violations", st->nand_violations },
		{ "erase_min", st->erase_min },
		{ "erase_max", st->erase_max },
		{ "mapped_pages", st->mapped_pages },
		{ "free_blocks", st->free_blocks },
		{ "last_mount_time", st->last_mount_time },
		{ "page_size", st->page_size },
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
		fprintf(out, "\"last_mount\":\"%s\",\"align\":\"%s\"}\n",
			mount_name(st->last_mount), align);
		return;
	}
	fprintf(out, "%-22s %s\n", "align", align);
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		fprintf(out, "%-22s %llu\n", u[i].k, (unsigned long long)u[i].v);
	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		fprintf(out, "%-22s %.3f\n", d[i].k, d[i].v);
	fprintf(out, "%-22s %s\n", "last_mount", mount_name(st->last_mount));
}
