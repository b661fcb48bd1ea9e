/* SPDX-License-Identifier: MIT */
/*
 * stats and health of a zoned medium (zoned.h): the zone model, the zones
 * by condition, the counters since this open and the wear the medium
 * keeps (every block's erase count: resets are erases).  JSON keys:
 * ublk-flash(8), JSON, "stats of a zoned image".
 */
#include <math.h>
#include <string.h>

#include "oct-fmt.h"
#include "oct-json.h"
#include "zn-int.h"

/* NVMe critical warning bits (as ftl.h's FTL_CW_*). */
#define ZN_CW_DEGRADED  0x04u  /* media errors: pages failed a check */
#define ZN_CW_READ_ONLY 0x08u  /* a zone went read-only or offline */

#define ZN_ERASE_HIST 16u    /* erase-count histogram buckets (as the FTL) */
#define ZN_WEAR_MAP 2048u    /* wear-map cells at most (as the FTL) */

void zn_stats_get(struct zn *z, struct zn_stats *st)
{
	uint32_t nb = z->g.nzones * z->g.zone_blocks;
	double sum = 0, sq = 0;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&z->lock);
	st->g = z->g;
	st->oob_size = nand_geom(z->nand)->oob_size;
	st->zone_bytes = (uint64_t)z->zpages * ZN_LBS;
	st->read_only = z->readonly;
	for (uint32_t i = 0; i < z->g.nzones; i++) {
		const struct zn_state *s = &z->zs[i];

		st->cond[s->cond & 15]++;
		if (s->cond != ZN_COND_OFFLINE)
			st->written_pages += s->wp;
	}
	st->erase_min = UINT32_MAX;
	st->map_group = nb ? (nb + ZN_WEAR_MAP - 1) / ZN_WEAR_MAP : 1;
	st->map_len = (nb + st->map_group - 1) / st->map_group;
	for (uint32_t b = 0; b < nb; b++) {
		uint32_t ec = nand_block_ec(z->nand, b);

		if (ec > st->map[b / st->map_group])
			st->map[b / st->map_group] = ec;
		st->lifetime_erases += ec;
		if (ec < st->erase_min)
			st->erase_min = ec;
		if (ec > st->erase_max)
			st->erase_max = ec;
		sum += ec;
		sq += (double)ec * ec;
	}
	if (!nb)
		st->erase_min = 0;
	st->hist_base = st->erase_min;
	st->hist_width = (uint32_t)(((uint64_t)st->erase_max - st->erase_min +
				     ZN_ERASE_HIST) / ZN_ERASE_HIST);
	for (uint32_t b = 0; b < nb; b++)
		st->hist[(nand_block_ec(z->nand, b) - st->hist_base) /
			 st->hist_width]++;
	st->c = z->c;
	nand_counters_get(z->nand, &st->n);
	pthread_mutex_unlock(&z->lock);
	st->erase_mean = nb ? sum / nb : 0;
	st->erase_stddev = nb ? sqrt(fmax(0, sq / nb - st->erase_mean *
					  st->erase_mean)) : 0;
	st->write_amplification = st->c.host_writes ?
		(double)st->n.programs / (double)st->c.host_writes : 0;
}

/* One row of the stats table: "label   value" (as ftl_stats_print). */
#define row(out, label, ...) oct_fmt_row(out, 24, label, __VA_ARGS__)

#define U(x) ((unsigned long long)(x))

static void stats_table(const struct zn_stats *st, FILE *out)
{
	const uint32_t *c = st->cond;
	char a[32];

	row(out, "zone model", "host-managed (no FTL)");
	row(out, "zone size", "%s (%llu sectors, %u erase blocks)",
	    oct_fmt_size(st->zone_bytes, a, sizeof(a)),
	    U(st->zone_bytes / ZN_SECT), st->g.zone_blocks);
	row(out, "zones", "%u", st->g.nzones);
	row(out, "zone limits", "%u open, %u active", st->g.max_open,
	    st->g.max_active);
	row(out, "zones by state", "%u empty, %u open (%u implicit, %u "
	    "explicit), %u closed, %u full, %u read-only, %u offline",
	    c[ZN_COND_EMPTY], c[ZN_COND_IMP_OPEN] + c[ZN_COND_EXP_OPEN],
	    c[ZN_COND_IMP_OPEN], c[ZN_COND_EXP_OPEN], c[ZN_COND_CLOSED],
	    c[ZN_COND_FULL], c[ZN_COND_READONLY], c[ZN_COND_OFFLINE]);
	row(out, "written", "%s below the write pointers",
	    oct_fmt_size(st->written_pages * ZN_LBS, a, sizeof(a)));
	row(out, "page size", "%s", oct_fmt_size(ZN_LBS, a, sizeof(a)));
	row(out, "host read", "%s (%llu pages, this open)",
	    oct_fmt_size(st->c.host_reads * ZN_LBS, a, sizeof(a)),
	    U(st->c.host_reads));
	row(out, "host written", "%s (%llu pages, %llu by zone append, "
	    "this open)", oct_fmt_size(st->c.host_writes * ZN_LBS, a, sizeof(a)),
	    U(st->c.host_writes), U(st->c.appends));
	row(out, "flash programmed", "%s (%llu pages, %llu by finish, this open)",
	    oct_fmt_size(st->n.programs * ZN_LBS, a, sizeof(a)),
	    U(st->n.programs), U(st->c.finish_pages));
	row(out, "flash read", "%s (%llu pages, this open)",
	    oct_fmt_size(st->n.reads * ZN_LBS, a, sizeof(a)), U(st->n.reads));
	row(out, "write amplification", "%.3f (this open)",
	    st->write_amplification);
	row(out, "zone operations", "%llu resets, %llu finishes, %llu opens, "
	    "%llu closes (this open)", U(st->c.resets), U(st->c.finishes),
	    U(st->c.opens), U(st->c.closes));
	row(out, "block erases", "%llu by resets this open; %llu the erase "
	    "counts summed", U(st->c.erases), U(st->lifetime_erases));
	row(out, "erase count per block", "min %u, max %u, mean %.2f, "
	    "stddev %.2f", st->erase_min, st->erase_max, st->erase_mean,
	    st->erase_stddev);
	row(out, "wear spread", "%u (max - min erase count)",
	    st->erase_max - st->erase_min);
	row(out, "refused", "%llu writes off the write pointer, %llu over "
	    "the open/active limits", U(st->c.wp_violations),
	    U(st->c.resource_refusals));
	row(out, "recovery finishes", "%llu", U(st->c.recovery_finishes));
	row(out, "read CRC errors", "%llu", U(st->c.crc_errors));
	row(out, "media failures", "%llu", U(st->c.media_failures));
	row(out, "NAND rule violations", "%llu", U(st->n.violations));
	row(out, "read-only", "%s", st->read_only ? "yes (opened read-only)" :
	    "no");
}

/* The JSON keys both reports share: the model, the zones, the wear. */
static void json_zones(struct oct_json *j, const struct zn_stats *st)
{
	const uint32_t *c = st->cond;
	const struct { const char *k; uint64_t v; } u[] = {
		{ "zone_size", st->zone_bytes },
		{ "zone_sectors", st->zone_bytes / ZN_SECT },
		{ "zone_blocks", st->g.zone_blocks },
		{ "zones", st->g.nzones },
		{ "max_open", st->g.max_open },
		{ "max_active", st->g.max_active },
		{ "zones_empty", c[ZN_COND_EMPTY] },
		{ "zones_implicit_open", c[ZN_COND_IMP_OPEN] },
		{ "zones_explicit_open", c[ZN_COND_EXP_OPEN] },
		{ "zones_closed", c[ZN_COND_CLOSED] },
		{ "zones_full", c[ZN_COND_FULL] },
		{ "zones_readonly", c[ZN_COND_READONLY] },
		{ "zones_offline", c[ZN_COND_OFFLINE] },
		{ "written_bytes", st->written_pages * ZN_LBS },
		{ "page_size", ZN_LBS },
		{ "block_erases", st->lifetime_erases },
		{ "erase_min", st->erase_min },
		{ "erase_max", st->erase_max },
		{ "wear_spread", st->erase_max - st->erase_min },
	};

	oct_json_str(j, "kind", "zoned");
	oct_json_str(j, "zone_model", "host-managed");
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		oct_json_u64(j, u[i].k, u[i].v);
	oct_json_dbl(j, "erase_mean", st->erase_mean);
	oct_json_dbl(j, "erase_stddev", st->erase_stddev);
}

void zn_stats_print(const struct zn_stats *st, FILE *out, bool json)
{
	const struct { const char *k; uint64_t v; } u[] = {
		{ "host_read_sectors", st->c.host_reads * ZN_SPP },
		{ "host_write_sectors", st->c.host_writes * ZN_SPP },
		{ "host_read_pages", st->c.host_reads },
		{ "host_write_pages", st->c.host_writes },
		{ "zone_appends", st->c.appends },
		{ "page_programs", st->n.programs },
		{ "page_reads", st->n.reads },
		{ "finish_pages", st->c.finish_pages },
		{ "zone_resets", st->c.resets },
		{ "zone_finishes", st->c.finishes },
		{ "zone_opens", st->c.opens },
		{ "zone_closes", st->c.closes },
		{ "reset_erases", st->c.erases },
		{ "wp_violations", st->c.wp_violations },
		{ "resource_refusals", st->c.resource_refusals },
		{ "recovery_finishes", st->c.recovery_finishes },
		{ "read_crc_errors", st->c.crc_errors },
		{ "media_failures", st->c.media_failures },
		{ "nand_violations", st->n.violations },
		/* the FTL's keys where they mean the same, so that make
		 * compare reads both alike: no FTL, so no GC, wear levelling,
		 * checkpoints or read-modify-writes, and discards are resets */
		{ "host_discard_sectors", 0 },
		{ "gc_relocations", 0 }, { "wl_relocations", 0 },
		{ "rmw_subpage", 0 }, { "rmw_straddle", 0 },
		{ "programs_host", st->c.host_writes },
		{ "programs_gc", 0 }, { "programs_ckpt", 0 },
		{ "erase_hist_base", st->hist_base },
		{ "erase_hist_width", st->hist_width },
		{ "wear_map_group", st->map_group },
	};
	struct oct_json j;

	if (!json) {
		stats_table(st, out);
		return;
	}
	oct_json_init(&j, out);
	oct_json_obj(&j, NULL);
	json_zones(&j, st);
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		oct_json_u64(&j, u[i].k, u[i].v);
	oct_json_dbl(&j, "write_amplification", st->write_amplification);
	oct_json_bool(&j, "read_only", st->read_only);
	oct_json_arr(&j, "erase_hist");
	for (size_t i = 0; i < ZN_ERASE_HIST; i++)
		oct_json_u64(&j, NULL, st->hist[i]);
	oct_json_end(&j);
	oct_json_arr(&j, "wear_map");
	for (size_t i = 0; i < st->map_len; i++)
		oct_json_u64(&j, NULL, st->map[i]);
	oct_json_end(&j);
	oct_json_end(&j);
}

/* The health log of a zoned medium: NVMe's fields that it has. */
void zn_health_print(const struct zn_stats *st, FILE *out, bool json)
{
	uint64_t media = st->c.crc_errors + st->c.media_failures;
	uint32_t cw = (media ? ZN_CW_DEGRADED : 0) |
		      (st->cond[ZN_COND_READONLY] || st->cond[ZN_COND_OFFLINE] ?
		       ZN_CW_READ_ONLY : 0);
	double pct = st->g.pe_cycles ? 100.0 * st->erase_mean /
		     st->g.pe_cycles : 0;
	uint32_t used = pct > 255 ? 255 : (uint32_t)pct;
	char a[32], b[32];
	struct oct_json j;

	if (json) {
		oct_json_init(&j, out);
		oct_json_obj(&j, NULL);
		oct_json_u64(&j, "critical_warning", cw);
		oct_json_u64(&j, "percentage_used", used);
		oct_json_u64(&j, "media_errors", media);
		oct_json_u64(&j, "pe_cycles", st->g.pe_cycles);
		json_zones(&j, st);
		oct_json_end(&j);
		return;
	}
	fprintf(out, "Health (a zoned image: no FTL, no spare blocks; counters "
		"since this open)\n");
	fprintf(out, "%-36s0x%02x\n", "Critical Warning:", cw);
	if (st->g.pe_cycles)
		fprintf(out, "%-36s%u%%\n", "Percentage Used:", used);
	else
		fprintf(out, "%-36sunknown (no rated endurance)\n",
			"Percentage Used:");
	fprintf(out, "%-36s%llu\n", "Media and Data Integrity Errors:",
		U(media));
	fprintf(out, "\nZones\n");
	fprintf(out, "%-36shost-managed, %u zones of %s\n", "Zone Model:",
		st->g.nzones, oct_fmt_size(st->zone_bytes, a, sizeof(a)));
	fprintf(out, "%-36s%u empty, %u open, %u closed, %u full, %u "
		"read-only, %u offline\n", "Zones by State:",
		st->cond[ZN_COND_EMPTY], st->cond[ZN_COND_IMP_OPEN] +
		st->cond[ZN_COND_EXP_OPEN], st->cond[ZN_COND_CLOSED],
		st->cond[ZN_COND_FULL], st->cond[ZN_COND_READONLY],
		st->cond[ZN_COND_OFFLINE]);
	fprintf(out, "%-36s%llu (the erase counts summed)\n",
		"Block Erases (resets):", U(st->lifetime_erases));
	if (st->g.pe_cycles)
		snprintf(b, sizeof(b), " of %u rated", st->g.pe_cycles);
	else
		b[0] = '\0';
	fprintf(out, "%-36smean %.2f, min %u, max %u%s\n",
		"Erase Count per Block:", st->erase_mean, st->erase_min,
		st->erase_max, b);
	fprintf(out, "%-36s%u\n", "Wear Spread:", st->erase_max -
		st->erase_min);
}
