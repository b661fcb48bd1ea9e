/* SPDX-License-Identifier: MIT */
/* Live stats of a zoned image (zoned.h): this serve's counters and the
 * medium's erase counts, under the stats keys the FTL uses where they
 * mean the same (docs/serve.md), so `make compare` reads both alike. */
#include <math.h>
#include <string.h>

#include "oct-json.h"
#include "zn-int.h"

#define ZN_ERASE_HIST 16u    /* erase-count histogram buckets (as the FTL) */
#define ZN_WEAR_MAP 2048u    /* wear-map cells at most (as the FTL) */

struct zn_wear {
	uint32_t min, max, hist_base, hist_width, map_group, map_len;
	double mean, stddev;
	uint32_t hist[ZN_ERASE_HIST];
	uint32_t map[ZN_WEAR_MAP];   /* a group's highest erase count */
};

/* Erase counts of every block (lock held). */
static void wear(struct zn *z, struct zn_wear *w)
{
	uint32_t nb = z->g.nzones * z->g.zone_blocks;
	double sum = 0, sq = 0;
	uint64_t span;

	memset(w, 0, sizeof(*w));
	w->min = UINT32_MAX;
	w->map_group = (nb + ZN_WEAR_MAP - 1) / ZN_WEAR_MAP;
	w->map_len = (nb + w->map_group - 1) / w->map_group;
	for (uint32_t b = 0; b < nb; b++) {
		uint32_t ec = nand_block_ec(z->nand, b);

		w->min = ec < w->min ? ec : w->min;
		w->max = ec > w->max ? ec : w->max;
		if (ec > w->map[b / w->map_group])
			w->map[b / w->map_group] = ec;
		sum += ec;
		sq += (double)ec * ec;
	}
	span = (uint64_t)w->max - w->min + 1;
	w->hist_base = w->min;
	w->hist_width = (uint32_t)((span + ZN_ERASE_HIST - 1) / ZN_ERASE_HIST);
	for (uint32_t b = 0; b < nb; b++)
		w->hist[(nand_block_ec(z->nand, b) - w->min) / w->hist_width]++;
	w->mean = sum / nb;
	w->stddev = sqrt(fmax(0, sq / nb - w->mean * w->mean));
}

void zn_stats_print(struct zn *z, FILE *out, bool json)
{
	struct nand_counters n;
	struct zn_counters c;
	struct zn_wear w;
	struct oct_json j;

	pthread_mutex_lock(&z->lock);
	c = z->c;
	nand_counters_get(z->nand, &n);
	wear(z, &w);
	pthread_mutex_unlock(&z->lock);
	const struct { const char *k; uint64_t v; } u[] = {
		{ "host_read_sectors", c.host_reads * ZN_SPP },
		{ "host_write_sectors", c.host_writes * ZN_SPP },
		{ "host_discard_sectors", 0 },
		{ "page_reads", n.reads },
		{ "page_programs", n.programs },
		{ "block_erases", n.erases },
		/* no FTL: no GC, WL, checkpoints or read-modify-writes */
		{ "gc_relocations", 0 }, { "wl_relocations", 0 },
		{ "rmw_subpage", 0 }, { "rmw_straddle", 0 },
		{ "programs_host", c.host_writes },
		{ "programs_gc", 0 }, { "programs_ckpt", 0 },
		{ "zone_appends", c.appends },
		{ "zone_resets", c.resets },
		{ "zone_finishes", c.finishes },
		{ "zone_opens", c.opens },
		{ "zone_closes", c.closes },
		{ "zone_reset_erases", c.erases },
		{ "finish_pages", c.finish_pages },
		{ "wp_violations", c.wp_violations },
		{ "resource_refusals", c.resource_refusals },
		{ "read_crc_errors", c.crc_errors },
		{ "media_failures", c.media_failures },
		{ "recovery_finishes", c.recovery_finishes },
		{ "nand_violations", n.violations },
		{ "page_size", ZN_LBS },
		{ "erase_min", w.min },
		{ "erase_max", w.max },
		{ "erase_hist_base", w.hist_base },
		{ "erase_hist_width", w.hist_width },
		{ "wear_map_group", w.map_group },
	};
	size_t i;

	if (!json) {
		for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
			fprintf(out, "%-22s %llu\n", u[i].k,
				(unsigned long long)u[i].v);
		fprintf(out, "%-22s %.2f\n%-22s %.2f\n", "erase_mean", w.mean,
			"erase_stddev", w.stddev);
		return;
	}
	oct_json_init(&j, out);
	oct_json_obj(&j, NULL);
	oct_json_str(&j, "kind", "zoned");
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		oct_json_u64(&j, u[i].k, u[i].v);
	oct_json_dbl(&j, "erase_mean", w.mean);
	oct_json_dbl(&j, "erase_stddev", w.stddev);
	oct_json_dbl(&j, "write_amplification", c.host_writes ?
		     (double)n.programs / (double)c.host_writes : 0);
	oct_json_arr(&j, "erase_hist");
	for (i = 0; i < ZN_ERASE_HIST; i++)
		oct_json_u64(&j, NULL, w.hist[i]);
	oct_json_end(&j);
	oct_json_arr(&j, "wear_map");
	for (i = 0; i < w.map_len; i++)
		oct_json_u64(&j, NULL, w.map[i]);
	oct_json_end(&j);
	oct_json_end(&j);
}
