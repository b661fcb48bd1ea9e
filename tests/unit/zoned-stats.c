/* SPDX-License-Identifier: MIT */
/*
 * The figures of `ublk-flash stats` / `health` on a zoned medium
 * (zn_stats_get, zn_stats_print): zones by condition (implicitly and
 * explicitly open, closed, full, empty), the pages below the write
 * pointers, resets as block erases and the wear spread they make, the
 * write amplification of a finish, and the JSON keys with those values
 * (ublk-flash(8), JSON, "stats of a zoned image"); after a reopen an open zone is closed.
 */
#include <stdlib.h>

#include "zoned-test.h"

static uint8_t buf[ZT_ZPAGES * ZN_LBS];

/* @st as JSON (or the health log) contains @key with @want. */
static void has(const struct zn_stats *st, bool health, const char *want)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	if (!m)
		exit(T_EXIT_FAIL);
	(health ? zn_health_print : zn_stats_print)(st, m, true);
	fclose(m);
	T_CHECK(strstr(out, want) != NULL, "%s JSON has %s: %s",
		health ? "health" : "stats", want, out);
	free(out);
}

int main(void)
{
	struct zn_stats st;
	struct nand_backing *b;
	struct zn *z;
	uint64_t size;

	b = zt_medium(false, &size);
	T_EQ_U64(zt_open(b, 0, 0, &z), 0, "open");
	for (uint32_t p = 0; p < ZT_ZPAGES; p++)
		zt_fill(buf + p * ZN_LBS, 0, p, 1);
	T_EQ_U64(zn_write(z, 0, ZT_ZSECT, buf, 0), 0, "zone 0 filled");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 0, false), 0, "zone 0 reset");
	T_EQ_U64(zn_write(z, ZT_ZSECT, 3 * 8, buf, 0), 0, "zone 1: 3 pages");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, 2 * ZT_ZSECT, false), 0, "zone 2 open");
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, 3 * ZT_ZSECT, false), 0, "zone 3 finish");
	zn_stats_get(z, &st);
	T_EQ_U64(st.g.nzones, ZT_NZONES, "zones");
	T_EQ_U64(st.zone_bytes, ZT_ZPAGES * ZN_LBS, "zone size");
	T_EQ_U64(st.cond[ZN_COND_EMPTY], ZT_NZONES - 3, "empty zones");
	T_EQ_U64(st.cond[ZN_COND_IMP_OPEN], 1, "implicitly open");
	T_EQ_U64(st.cond[ZN_COND_EXP_OPEN], 1, "explicitly open");
	T_EQ_U64(st.cond[ZN_COND_FULL], 1, "full (finished)");
	T_EQ_U64(st.written_pages, 3 + ZT_ZPAGES, "below the write pointers");
	T_EQ_U64(st.c.host_writes, ZT_ZPAGES + 3, "host pages");
	T_EQ_U64(st.n.programs, ZT_ZPAGES + 3 + 1, "programs: + a finish mark");
	T_EQ_U64(st.c.resets, 1, "one reset");
	T_EQ_U64(st.c.erases, ZT_ZBLK, "it erased the zone's blocks");
	T_EQ_U64(st.lifetime_erases, ZT_ZBLK, "erase counts summed");
	T_EQ_U64(st.erase_min, 0, "min erase count");
	T_EQ_U64(st.erase_max, 1, "max erase count");
	T_CHECK(st.write_amplification > 1.05 && st.write_amplification < 1.06,
		"WA 20/19: %f", st.write_amplification);
	has(&st, false, "\"zone_model\":\"host-managed\"");
	has(&st, false, "\"zones_implicit_open\":1,\"zones_explicit_open\":1");
	has(&st, false, "\"zones_full\":1");
	has(&st, false, "\"block_erases\":2,\"erase_min\":0,\"erase_max\":1,"
	    "\"wear_spread\":1");
	has(&st, false, "\"zone_resets\":1");
	has(&st, false, "\"host_write_sectors\":152");
	has(&st, true, "\"media_errors\":0");
	has(&st, true, "\"wear_spread\":1");
	T_EQ_U64(zn_close(z), 0, "close");
	T_EQ_U64(zt_open(b, 0, 0, &z), 0, "reopen");
	zn_stats_get(z, &st);
	T_EQ_U64(st.cond[ZN_COND_CLOSED], 1, "the written open zone: closed");
	T_EQ_U64(st.cond[ZN_COND_FULL], 1, "the finished one: full");
	T_EQ_U64(st.cond[ZN_COND_EMPTY], ZT_NZONES - 2,
		 "the explicitly opened empty one: empty");
	T_EQ_U64(st.c.host_writes, 0, "counters: since this open");
	zn_close(z);
	b->ops->destroy(b);
	return t_result();
}
