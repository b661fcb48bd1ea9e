/* SPDX-License-Identifier: MIT */
/*
 * What zones cost the flash (docs/engine.md, "Zone state machine"): a
 * reset erases exactly the blocks written since the last one (the last
 * first), each erase counted as wear (nand erase counters and per-block
 * erase counts, which survive a reopen); a reset of an empty zone erases
 * nothing; a finish programs one page; zone appends land at the write
 * pointer and say where; the NAND rules are never broken (the nand counts
 * violations); a block the medium fails turns its zone READONLY (a
 * program) or OFFLINE (an erase) with EIO, as the kernel expects.
 */
#include <errno.h>

#include "zoned-test.h"

static uint8_t buf[ZT_ZPAGES * ZN_LBS], rbuf[ZT_ZPAGES * ZN_LBS];

static uint64_t erases(struct zn *z)
{
	struct nand_counters c;

	nand_counters_get(zn_nand(z), &c);
	return c.erases;
}

static void appends(struct zn *z)
{
	uint64_t at = 0;

	for (uint32_t p = 0; p < ZT_ZPAGES; p++)
		zt_fill(buf + p * ZN_LBS, 4, p, 40);
	T_EQ_U64(zn_append(z, 4 * ZT_ZSECT, 24, buf, 0, &at), 0, "append 3");
	T_EQ_U64(at, 4 * ZT_ZSECT, "first append at the zone start");
	T_EQ_U64(zn_append(z, 4 * ZT_ZSECT, 8, buf + 3 * ZN_LBS, ZN_FUA, &at),
		 0, "append 1 (FUA)");
	T_EQ_U64(at, 4 * ZT_ZSECT + 24, "second append after the first");
	T_EQ_U64(zn_append(z, 4 * ZT_ZSECT + 8, 8, buf, 0, &at), -EINVAL,
		 "append not at a zone start");
	T_EQ_U64(zn_append(z, 4 * ZT_ZSECT, 4, buf, 0, &at), -EINVAL,
		 "append of half a page");
	T_EQ_U64(zn_append(z, 4 * ZT_ZSECT, ZT_ZSECT, buf, 0, &at), -EIO,
		 "append past the zone end");
	T_EQ_U64(zn_append(z, 4 * ZT_ZSECT, ZT_ZSECT - 32, buf + 4 * ZN_LBS, 0,
			   &at), 0, "append to the end");
	T_EQ_U64(zt_zone(z, 4).cond, ZN_COND_FULL, "appended full");
	T_EQ_U64(zn_append(z, 4 * ZT_ZSECT, 8, buf, 0, &at), -EIO,
		 "append to a full zone");
	T_EQ_U64(zn_read(z, 4 * ZT_ZSECT, ZT_ZSECT, rbuf), 0, "read");
	T_CHECK(!memcmp(buf, rbuf, sizeof(buf)), "appended data reads back");
}

static void wear(struct nand_backing *b, struct zn **zp)
{
	struct zn *z = *zp;
	uint64_t e0 = erases(z);
	uint32_t blk0 = 5 * ZT_ZBLK;      /* zone 5's first block */

	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 5 * ZT_ZSECT, false), 0, "reset empty");
	T_EQ_U64(erases(z) - e0, 0, "an empty zone erases nothing");
	/* one page: a reset erases one block */
	T_EQ_U64(zn_write(z, 5 * ZT_ZSECT, 8, buf, 0), 0, "one page");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 5 * ZT_ZSECT, false), 0, "reset");
	T_EQ_U64(erases(z) - e0, 1, "one block written, one erased");
	T_EQ_U64(nand_block_ec(zn_nand(z), blk0) > 0, 1, "its erase count rose");
	T_EQ_U64(nand_block_ec(zn_nand(z), blk0 + 1), 0, "the other not erased");
	/* a block and one page: two */
	T_EQ_U64(zn_write(z, 5 * ZT_ZSECT, (ZT_PPB + 1) * 8, buf, 0), 0, "9 pages");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 5 * ZT_ZSECT, false), 0, "reset");
	T_EQ_U64(erases(z) - e0, 3, "two blocks written, two erased");
	/* a finish programs a page; its reset erases its block */
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, 5 * ZT_ZSECT, false), 0, "finish empty");
	{
		struct zn_counters zc;

		zn_counters_get(z, &zc);
		T_EQ_U64(zc.finish_pages, 1, "a finish costs one page");
	}
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 5 * ZT_ZSECT, false), 0, "reset");
	T_EQ_U64(erases(z) - e0, 4, "the finish mark's block erased");
	/* wear survives a reopen: written blocks carry their erase count */
	uint32_t ec = nand_block_ec(zn_nand(z), blk0);
	T_EQ_U64(ec, 3, "block %u erased 3 times", blk0);
	T_EQ_U64(zn_write(z, 5 * ZT_ZSECT, ZT_ZSECT, buf, 0), 0, "fill");
	T_EQ_U64(zn_close(z), 0, "close");
	T_EQ_U64(zt_open(b, 0, 0, zp), 0, "reopen");
	z = *zp;
	T_EQ_U64(nand_block_ec(zn_nand(z), blk0), ec, "erase count after a reopen");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 5 * ZT_ZSECT, false), 0, "reset");
	T_EQ_U64(nand_block_ec(zn_nand(z), blk0), ec + 1, "and it goes on");
}

static void failures(struct zn *z)
{
	struct zn_counters c;
	uint32_t blk = 6 * ZT_ZBLK + 1;   /* zone 6's second block */

	nand_mark_bad(zn_nand(z), blk, true);
	T_EQ_U64(zn_write(z, 6 * ZT_ZSECT, ZT_PPB * 8, buf, 0), 0, "first block");
	T_EQ_U64(zn_write(z, 6 * ZT_ZSECT + ZT_PPB * 8, 8, buf, 0), -EIO,
		 "a program the medium fails");
	T_EQ_U64(zt_zone(z, 6).cond, ZN_COND_READONLY, "zone read-only");
	T_EQ_U64(zn_read(z, 6 * ZT_ZSECT, ZT_PPB * 8, rbuf), 0, "still readable");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 6 * ZT_ZSECT, false), -EIO,
		 "reset read-only");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 0, true), 0, "reset all skips it");
	nand_mark_bad(zn_nand(z), 7 * ZT_ZBLK, true);
	nand_mark_bad(zn_nand(z), 7 * ZT_ZBLK, false);
	T_EQ_U64(zn_write(z, 7 * ZT_ZSECT, 8, buf, 0), 0, "zone 7");
	nand_mark_bad(zn_nand(z), 7 * ZT_ZBLK, true);
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 7 * ZT_ZSECT, false), -EIO,
		 "an erase the medium fails");
	T_EQ_U64(zt_zone(z, 7).cond, ZN_COND_OFFLINE, "zone offline");
	T_EQ_U64(zn_read(z, 7 * ZT_ZSECT, 8, rbuf), -EIO, "offline: no read");
	T_EQ_U64(zn_write(z, 7 * ZT_ZSECT + 8, 8, buf, 0), -EIO, "nor write");
	zn_counters_get(z, &c);
	T_EQ_U64(c.media_failures, 2, "media failures counted");
}

int main(void)
{
	struct nand_backing *b;
	struct nand_counters nc;
	struct zn *z;
	uint64_t size;

	b = zt_medium(false, &size);
	T_EQ_U64(zt_open(b, 0, 0, &z), 0, "open");
	appends(z);
	wear(b, &z);
	failures(z);
	nand_counters_get(zn_nand(z), &nc);
	T_EQ_U64(nc.violations, 0, "no NAND rule broken");
	zn_close(z);
	b->ops->destroy(b);
	return t_result();
}
