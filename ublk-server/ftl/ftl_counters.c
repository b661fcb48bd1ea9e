/* SPDX-License-Identifier: MIT */
/*
 * The counters (ftl-counters.h): this mount's increments added to the
 * checkpointed base, for checkpoints (ftl_ckpt_write.c) and stats
 * (ftl_stats.c); the clock the mount time and power-on seconds use.
 */
#include <time.h>

#include "ftl-int.h"

#define LD(f, x) __atomic_load_n(&(f)->x, __ATOMIC_RELAXED)

/* Where a mount's increments of a counter come from (ftl-counters.h); @n
 * is the nand's counters now. */
#define SRC_ENG(name)             LD(f, ctr.m.name)
#define SRC_NAND_reads(name)      (n->reads - f->ctr.nbase.reads)
#define SRC_NAND_programs(name)   (n->programs - f->ctr.nbase.programs)
#define SRC_NAND_erases(name)     (n->erases - f->ctr.nbase.erases)
#define SRC_NAND_violations(name) (n->violations - f->ctr.nbase.violations)
#define SRC_NAND_program_fails(name) (n->program_fails - f->ctr.nbase.program_fails)
#define SRC_NAND_erase_fails(name) (n->erase_fails - f->ctr.nbase.erase_fails)
#define SRC_NAND_ecc_corrected_bits(name) \
	(n->ecc_corrected_bits - f->ctr.nbase.ecc_corrected_bits)
#define SRC_NAND_ecc_uncorrectable(name) \
	(n->ecc_uncorrectable - f->ctr.nbase.ecc_uncorrectable)
#define SRC_NAND_store_full(name) (n->store_full - f->ctr.nbase.store_full)
#define SRC_OPEN(name)            0     /* in f->ctr.base already */
#define SRC_TIME(name)            rw_seconds(f)

double ftl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whole seconds served since a read-write open (0 read-only). */
static uint64_t rw_seconds(const struct ftl *f)
{
	double d = f->ctr.rw_t0 > 0 ? ftl_now_ms() - f->ctr.rw_t0 : 0;

	return d > 0 ? (uint64_t)(d / 1000) : 0;
}

/* Counters since create: the checkpointed base plus this mount's. */
void ftl_counters_snapshot(struct ftl *f, struct ftl_ckpt_counters *c)
{
	struct nand_counters now;
	const struct nand_counters *n = &now;

	nand_counters_get(f->nand, &now);
	*c = f->ctr.base;
#define FTL_X_ADD(name, src) c->name += SRC_##src(name);
	FTL_COUNTERS(FTL_X_ADD)
	FTL_LIFE_COUNTERS(FTL_X_ADD)
#undef FTL_X_ADD
}

/* This mount's FTL_MOUNT_COUNTERS into @st, the nand's from @n. */
void ftl_counters_mount(const struct ftl *f, const struct nand_counters *n,
			struct ftl_stats *st)
{
#define FTL_X_MOUNT(name, src) st->name = SRC_##src(name);
	FTL_MOUNT_COUNTERS(FTL_X_MOUNT)
#undef FTL_X_MOUNT
}
