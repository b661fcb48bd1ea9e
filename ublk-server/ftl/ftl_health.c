/* SPDX-License-Identifier: MIT */
/*
 * The health log: the lifetime counters (ftl-counters.h, checkpointed) as
 * NVMe's SMART / Health Information log page has them, and the flash
 * behind them.  Where ours differs from NVMe: ublk-flash(8) HEALTH.
 */
#include <stdarg.h>
#include <string.h>

#include "ftl-int.h"
#include "oct-fmt.h"
#include "oct-json.h"

/* @sectors 512-byte sectors in NVMe data units: thousands, rounded up. */
static uint64_t data_units(uint64_t sectors)
{
	return sectors / 1000 + (sectors % 1000 != 0);
}

/* Logical pages whose data was lost to media damage (they read EIO). */
static uint64_t damaged_pages(const struct ftl *f)
{
	uint64_t n = 0;

	for (uint32_t l = 0; l < f->g.nlpn; l++)
		n += ftl_map_get(f, l) == FTL_DAMAGED;
	return n;
}

/* Fill @h (ftl.h) from the counters and the erase counts now. */
void ftl_health_get(struct ftl *f, struct ftl_health *h)
{
	static _Thread_local struct ftl_stats st;   /* 9 KiB: off the stack */
	uint64_t bad, pct;

	ftl_stats_get(f, &st);
	memset(h, 0, sizeof(*h));
	h->host_read_sectors = st.host_read_sectors;
	h->host_write_sectors = st.host_write_sectors;
	h->data_units_read = data_units(st.host_read_sectors);
	h->data_units_written = data_units(st.host_write_sectors);
	h->host_read_commands = st.host_read_commands;
	h->host_write_commands = st.host_write_commands;
	h->power_cycles = st.power_cycles;
	h->power_on_seconds = st.power_on_seconds;
	h->power_on_hours = st.power_on_seconds / 3600;
	h->unsafe_shutdowns = st.unsafe_shutdowns;
	h->media_errors = st.media_errors;
	h->page_size = st.page_size;
	h->page_reads = st.page_reads;
	h->page_programs = st.page_programs;
	h->block_erases = st.block_erases;
	h->erase_mean = st.erase_mean;
	h->erase_max = st.erase_max;
	h->pe_cycles = f->g.pe_cycles;
	h->bad_blocks_factory = st.bad_blocks_factory;
	h->bad_blocks_grown = st.bad_blocks_grown;
	h->bad_block_limit = st.bad_block_limit;
	h->read_only = st.read_only;
	h->damaged_pages = damaged_pages(f);

	bad = st.bad_blocks_factory + st.bad_blocks_grown;
	h->spare_blocks = bad < st.bad_block_limit ? st.bad_block_limit - bad : 0;
	h->available_spare = st.bad_block_limit ?
		(uint32_t)(100 * h->spare_blocks / st.bad_block_limit) : 0;
	h->available_spare_threshold = FTL_SPARE_THRESHOLD;
	pct = (uint64_t)(100.0 * st.erase_mean / h->pe_cycles);
	h->percentage_used = pct > 255 ? 255 : (uint32_t)pct;
	if (h->available_spare < h->available_spare_threshold)
		h->critical_warning |= FTL_CW_SPARE;
	if (h->media_errors || h->damaged_pages)
		h->critical_warning |= FTL_CW_DEGRADED;
	if (h->read_only)
		h->critical_warning |= FTL_CW_READ_ONLY;
}

/* One row: "Label:" padded as smartctl pads it, then the value. */
static void row(FILE *out, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void row(FILE *out, const char *label, const char *fmt, ...)
{
	va_list ap;

	fprintf(out, "%-35s ", label);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}

/* "0x00", or "0x05 (spare below threshold, media errors)". */
static void warning_row(FILE *out, uint32_t cw)
{
	static const struct { uint32_t bit; const char *what; } w[] = {
		{ FTL_CW_SPARE, "available spare below threshold" },
		{ FTL_CW_DEGRADED, "reliability degraded: media errors" },
		{ FTL_CW_READ_ONLY, "read-only: spare blocks used up" },
	};
	const char *sep = " (";

	fprintf(out, "%-35s 0x%02x", "Critical Warning:", cw);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		if (!(cw & w[i].bit))
			continue;
		fprintf(out, "%s%s", sep, w[i].what);
		sep = ", ";
	}
	fputs(cw ? ")\n" : "\n", out);
}

static void print_table(const struct ftl_health *h, FILE *out)
{
	char a[32], b[32];
	unsigned long long ps = h->page_size;

	fprintf(out, "SMART/Health Information (NVMe log page 02h, kept by "
		"ublk-flash)\n");
	warning_row(out, h->critical_warning);
	row(out, "Available Spare:", "%u%%", h->available_spare);
	row(out, "Available Spare Threshold:", "%u%%",
	    h->available_spare_threshold);
	row(out, "Percentage Used:", "%u%%", h->percentage_used);
	row(out, "Data Units Read:", "%llu [%s]",
	    (unsigned long long)h->data_units_read,
	    oct_fmt_size(h->host_read_sectors * FTL_SECTOR, a, sizeof(a)));
	row(out, "Data Units Written:", "%llu [%s]",
	    (unsigned long long)h->data_units_written,
	    oct_fmt_size(h->host_write_sectors * FTL_SECTOR, a, sizeof(a)));
	row(out, "Host Read Commands:", "%llu",
	    (unsigned long long)h->host_read_commands);
	row(out, "Host Write Commands:", "%llu",
	    (unsigned long long)h->host_write_commands);
	row(out, "Power Cycles:", "%llu",
	    (unsigned long long)h->power_cycles);
	row(out, "Power On Hours:", "%llu (%s)",
	    (unsigned long long)h->power_on_hours,
	    oct_fmt_duration(h->power_on_seconds, a, sizeof(a)));
	row(out, "Unsafe Shutdowns:", "%llu",
	    (unsigned long long)h->unsafe_shutdowns);
	row(out, "Media and Data Integrity Errors:", "%llu",
	    (unsigned long long)h->media_errors);
	fprintf(out, "\nFlash\n");
	row(out, "Flash Written:", "%s (%llu pages of %s)",
	    oct_fmt_size(h->page_programs * ps, a, sizeof(a)),
	    (unsigned long long)h->page_programs,
	    oct_fmt_size(ps, b, sizeof(b)));
	row(out, "Flash Read:", "%s (%llu pages)",
	    oct_fmt_size(h->page_reads * ps, a, sizeof(a)),
	    (unsigned long long)h->page_reads);
	row(out, "Block Erases:", "%llu", (unsigned long long)h->block_erases);
	row(out, "Erase Count per Block:", "mean %.2f, max %u of %u rated",
	    h->erase_mean, h->erase_max, h->pe_cycles);
	row(out, "Bad Blocks:", "%llu factory, %llu grown",
	    (unsigned long long)h->bad_blocks_factory,
	    (unsigned long long)h->bad_blocks_grown);
	row(out, "Spare Blocks Left:", "%llu of %llu",
	    (unsigned long long)h->spare_blocks,
	    (unsigned long long)h->bad_block_limit);
	row(out, "Pages Lost to Media Damage:", "%llu",
	    (unsigned long long)h->damaged_pages);
	row(out, "Read-Only:", "%s", h->read_only ?
	    "yes (spare blocks used up)" : "no");
}

void ftl_health_print(const struct ftl_health *h, FILE *out, bool json)
{
	const struct { const char *k; uint64_t v; } u[] = {
		{ "critical_warning", h->critical_warning },
		{ "available_spare", h->available_spare },
		{ "available_spare_threshold", h->available_spare_threshold },
		{ "percentage_used", h->percentage_used },
		{ "data_units_read", h->data_units_read },
		{ "data_units_written", h->data_units_written },
		{ "host_read_commands", h->host_read_commands },
		{ "host_write_commands", h->host_write_commands },
		{ "power_cycles", h->power_cycles },
		{ "power_on_hours", h->power_on_hours },
		{ "unsafe_shutdowns", h->unsafe_shutdowns },
		{ "media_errors", h->media_errors },
		{ "power_on_seconds", h->power_on_seconds },
		{ "host_read_sectors", h->host_read_sectors },
		{ "host_write_sectors", h->host_write_sectors },
		{ "page_size", h->page_size },
		{ "page_reads", h->page_reads },
		{ "page_programs", h->page_programs },
		{ "block_erases", h->block_erases },
		{ "erase_max", h->erase_max },
		{ "pe_cycles", h->pe_cycles },
		{ "bad_blocks_factory", h->bad_blocks_factory },
		{ "bad_blocks_grown", h->bad_blocks_grown },
		{ "bad_block_limit", h->bad_block_limit },
		{ "spare_blocks", h->spare_blocks },
		{ "damaged_pages", h->damaged_pages },
	};
	struct oct_json j;

	if (!json) {
		print_table(h, out);
		return;
	}
	oct_json_init(&j, out);
	oct_json_obj(&j, NULL);
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		oct_json_u64(&j, u[i].k, u[i].v);
	oct_json_dbl(&j, "erase_mean", h->erase_mean);
	oct_json_bool(&j, "read_only", h->read_only);
	oct_json_end(&j);
}
