/* SPDX-License-Identifier: MIT */
/*
 * A set's stats: its parts' (ftl_stats_get) combined into one struct
 * ftl_stats.  Summed: every counter of ftl-counters.h, mapped_pages,
 * free_blocks, the bad-block figures and programs by origin.  Not
 * additive, and how they are combined:
 *  - erase_min / erase_max: the min / max over the parts; erase_mean and
 *    erase_stddev over all data blocks of all parts (each part's weight
 *    its data blocks: the sum of its erase histogram);
 *  - write_amplification: recomputed from the summed page_programs and
 *    host_write_sectors (page size: the parts');
 *  - last_mount: the worst part's (scan > roll-forward > clean);
 *    last_mount_ms: the sum (the parts open one after another);
 *    last_mount_time, ckpt_lost: the highest; read_only, streams: any
 *    part's; pi: false (a set has none); align: the set's;
 *  - erase_hist: rebuilt over [erase_min, erase_max] in FTL_ERASE_HIST
 *    buckets, each part's bucket counted at its lowest erase count (exact
 *    when the parts' buckets are 1 wide, else within one of their widths);
 *  - wear_map: the parts' maps one after another (part 0's blocks first),
 *    adjacent cells merged (their max) until it fits FTL_WEAR_MAP cells,
 *    wear_map_group the largest part's group times the merges (parts are
 *    within one stripe of the same size, so their groups agree).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-set-int.h"

static int mount_rank(enum ftl_mount_kind k)
{
	return k == FTL_MOUNT_SCAN ? 2 : k == FTL_MOUNT_ROLL_FORWARD ? 1 : 0;
}

/* Add part stats @p into @st (the additive fields and the extremes). */
static void add_part(struct ftl_stats *st, const struct ftl_stats *p,
		     double *sum, double *sq, double *nb)
{
	double n = 0;

#define FTL_X_ADD(name, src) st->name += p->name;
	FTL_COUNTERS(FTL_X_ADD)
	FTL_MOUNT_COUNTERS(FTL_X_ADD)
	FTL_LIFE_COUNTERS(FTL_X_ADD)
#undef FTL_X_ADD
	st->mapped_pages += p->mapped_pages;
	st->free_blocks += p->free_blocks;
	st->bad_blocks_factory += p->bad_blocks_factory;
	st->bad_blocks_grown += p->bad_blocks_grown;
	st->bad_block_limit += p->bad_block_limit;
	st->programs_host += p->programs_host;
	st->programs_gc += p->programs_gc;
	st->programs_ckpt += p->programs_ckpt;
	if (p->erase_min < st->erase_min)
		st->erase_min = p->erase_min;
	if (p->erase_max > st->erase_max)
		st->erase_max = p->erase_max;
	for (unsigned i = 0; i < FTL_ERASE_HIST; i++)
		n += p->erase_hist[i];
	*nb += n;
	*sum += p->erase_mean * n;
	*sq += (p->erase_stddev * p->erase_stddev +
		p->erase_mean * p->erase_mean) * n;
	if (mount_rank(p->last_mount) > mount_rank(st->last_mount))
		st->last_mount = p->last_mount;
	st->last_mount_ms += p->last_mount_ms;
	if (p->last_mount_time > st->last_mount_time)
		st->last_mount_time = p->last_mount_time;
	if (p->ckpt_lost > st->ckpt_lost)
		st->ckpt_lost = p->ckpt_lost;
	st->read_only |= p->read_only;
	st->streams |= p->streams;
	st->page_size = p->page_size;
}

/* Part @p's erase histogram into @st's (base and width set). */
static void add_hist(struct ftl_stats *st, const struct ftl_stats *p)
{
	for (unsigned i = 0; i < FTL_ERASE_HIST; i++) {
		uint64_t ec = p->erase_hist_base +
			      (uint64_t)i * p->erase_hist_width;
		uint64_t b = ec < st->erase_hist_base ? 0 :
			     (ec - st->erase_hist_base) / st->erase_hist_width;

		st->erase_hist[b < FTL_ERASE_HIST ? b : FTL_ERASE_HIST - 1] +=
			p->erase_hist[i];
	}
}

/* Part @p's wear map after @st's cells. */
static void add_wear(struct ftl_stats *st, const struct ftl_stats *p,
		     uint32_t *cells, uint32_t *len)
{
	for (uint32_t i = 0; i < p->wear_map_len; i++)
		cells[(*len)++] = p->wear_map[i];
	if (p->wear_map_group > st->wear_map_group)
		st->wear_map_group = p->wear_map_group;
}

void ftl_set_stats_get(struct ftl_set *s, struct ftl_stats *st)
{
	struct ftl_stats *p = malloc(sizeof(*p) * s->nparts);
	uint32_t *cells = calloc(FTL_WEAR_MAP * FTL_SET_MAX_PARTS,
				 sizeof(*cells));
	double sum = 0, sq = 0, nb = 0;
	uint32_t len = 0;

	if (s->nparts == 1) {           /* a plain image: its engine's */
		free(p);
		free(cells);
		ftl_stats_get(s->part[0], st);
		return;
	}
	memset(st, 0, sizeof(*st));
	if (!p || !cells) {
		free(p);
		free(cells);
		return;
	}
	st->erase_min = UINT32_MAX;
	for (unsigned i = 0; i < s->nparts; i++) {
		ftl_stats_get(s->part[i], &p[i]);
		add_part(st, &p[i], &sum, &sq, &nb);
		add_wear(st, &p[i], cells, &len);
	}
	st->erase_hist_base = st->erase_min;
	st->erase_hist_width = (uint32_t)(((uint64_t)st->erase_max -
					   st->erase_min + FTL_ERASE_HIST) /
					  FTL_ERASE_HIST);
	for (unsigned i = 0; i < s->nparts; i++)
		add_hist(st, &p[i]);
	while (len > FTL_WEAR_MAP) {    /* merge pairs until it fits */
		uint32_t n = 0;

		for (uint32_t i = 0; i < len; i += 2)
			cells[n++] = i + 1 < len && cells[i + 1] > cells[i] ?
				     cells[i + 1] : cells[i];
		len = n;
		st->wear_map_group *= 2;
	}
	memcpy(st->wear_map, cells, len * sizeof(*cells));
	st->wear_map_len = len;
	st->erase_mean = nb ? sum / nb : 0;
	st->erase_stddev = nb ? sqrt(fmax(0, sq / nb - st->erase_mean *
					  st->erase_mean)) : 0;
	st->write_amplification = st->host_write_sectors ?
		(double)st->page_programs * st->page_size /
		((double)st->host_write_sectors * FTL_SECTOR) : 0;
	st->align = s->align;
	st->pi = false;
	free(p);
	free(cells);
}

/* data units (ftl_health): 1000 sectors, rounded up */
static uint64_t data_units(uint64_t sectors)
{
	return (sectors + 999) / 1000;
}

/* Add part health @p into @h (summed or worst, ftl-set.h). */
static void add_health(struct ftl_health *h, const struct ftl_health *p,
		       unsigned nparts)
{
#define SET_MAX(f) do { if (p->f > h->f) h->f = p->f; } while (0)
	h->critical_warning |= p->critical_warning;
	if (p->available_spare < h->available_spare)
		h->available_spare = p->available_spare;
	h->available_spare_threshold = p->available_spare_threshold;
	SET_MAX(percentage_used);
	h->host_read_commands += p->host_read_commands;
	h->host_write_commands += p->host_write_commands;
	SET_MAX(power_cycles);
	SET_MAX(power_on_seconds);
	SET_MAX(unsafe_shutdowns);
	h->media_errors += p->media_errors;
	h->host_read_sectors += p->host_read_sectors;
	h->host_write_sectors += p->host_write_sectors;
	h->page_size = p->page_size;
	h->page_reads += p->page_reads;
	h->page_programs += p->page_programs;
	h->block_erases += p->block_erases;
	h->erase_mean += p->erase_mean / nparts;
	SET_MAX(erase_max);
	h->pe_cycles = p->pe_cycles;
	h->bad_blocks_factory += p->bad_blocks_factory;
	h->bad_blocks_grown += p->bad_blocks_grown;
	h->bad_block_limit += p->bad_block_limit;
	h->spare_blocks += p->spare_blocks;
	h->damaged_pages += p->damaged_pages;
	h->read_only |= p->read_only;
#undef SET_MAX
}

void ftl_set_health_get(struct ftl_set *s, struct ftl_health *h)
{
	struct ftl_health p;

	if (s->nparts == 1) {           /* a plain image: its engine's */
		ftl_health_get(s->part[0], h);
		return;
	}
	memset(h, 0, sizeof(*h));
	h->available_spare = UINT32_MAX;
	for (unsigned i = 0; i < s->nparts; i++) {
		ftl_health_get(s->part[i], &p);
		add_health(h, &p, s->nparts);
	}
	h->data_units_read = data_units(h->host_read_sectors);
	h->data_units_written = data_units(h->host_write_sectors);
	h->power_on_hours = h->power_on_seconds / 3600;
}
