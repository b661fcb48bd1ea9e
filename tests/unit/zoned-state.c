/* SPDX-License-Identifier: MIT */
/*
 * The zone state machine (docs/engine.md, "Zone state machine"): every
 * condition change a write, open, close, finish and reset make, the
 * write pointer rules (a write only at the write pointer, none into a
 * FULL zone, none across a zone's end, whole pages only) with the errors
 * the kernel's zoned block layer expects, reads past the write pointer
 * (zeroes), and the open / active limits (-ETOOMANYREFS, -EOVERFLOW, an
 * implicitly open zone closed to make room, an explicit one never).
 */
#include <errno.h>

#include "zoned-test.h"

static uint8_t buf[ZT_ZPAGES * ZN_LBS], rbuf[ZT_ZPAGES * ZN_LBS];

static uint64_t zs(uint32_t i)
{
	return (uint64_t)i * ZT_ZSECT;
}

static void write_rules(struct zn *z)
{
	struct zn_counters c;
	struct zn_zone r;

	for (uint32_t p = 0; p < ZT_ZPAGES; p++)
		zt_fill(buf + p * ZN_LBS, 0, p, 1);
	T_EQ_U64(zt_zone(z, 0).cond, ZN_COND_EMPTY, "fresh zone");
	T_EQ_U64(zn_write(z, 8, 8, buf, 0), -EIO, "write off the wp (empty)");
	T_EQ_U64(zn_write(z, 0, 4, buf, 0), -EINVAL, "half a page");
	T_EQ_U64(zn_write(z, 4, 8, buf, 0), -EINVAL, "off a page");
	T_EQ_U64(zt_zone(z, 0).cond, ZN_COND_EMPTY, "a refused write opens nothing");
	T_EQ_U64(zn_write(z, 0, 16, buf, 0), 0, "two pages at the wp");
	r = zt_zone(z, 0);
	T_EQ_U64(r.cond, ZN_COND_IMP_OPEN, "implicitly open");
	T_EQ_U64(r.wp, 16, "wp after two pages");
	T_EQ_U64(r.len, ZT_ZSECT, "zone length");
	T_EQ_U64(r.capacity, ZT_ZSECT, "zone capacity");
	T_EQ_U64(zn_write(z, 8, 8, buf, 0), -EIO, "rewrite below the wp");
	T_EQ_U64(zn_write(z, 24, 8, buf, 0), -EIO, "write past the wp");
	T_EQ_U64(zn_write(z, 16, ZT_ZSECT, buf, 0), -EIO, "across the zone end");
	zn_counters_get(z, &c);
	T_EQ_U64(c.wp_violations, 3, "violations counted (empty, below, past)");
	T_EQ_U64(zn_read(z, 0, 32, rbuf), 0, "read");
	T_CHECK(!memcmp(rbuf, buf, 2 * ZN_LBS), "data read back");
	for (uint32_t k = 2 * ZN_LBS; k < 4 * ZN_LBS; k++)
		if (rbuf[k]) {
			T_CHECK(0, "past the wp reads zeroes (byte %u)", k);
			break;
		}
	T_EQ_U64(zn_write(z, 16, ZT_ZSECT - 16, buf + 2 * ZN_LBS, 0), 0,
		 "the rest of the zone");
	r = zt_zone(z, 0);
	T_EQ_U64(r.cond, ZN_COND_FULL, "full at its end");
	T_EQ_U64(r.wp, ZT_ZSECT, "wp of a full zone: its end");
	T_EQ_U64(zn_write(z, ZT_ZSECT - 8, 8, buf, 0), -EIO, "into a full zone");
	T_EQ_U64(zn_read(z, 0, ZT_ZSECT, rbuf), 0, "read the zone");
	T_CHECK(!memcmp(rbuf, buf, sizeof(buf)), "the full zone reads back");
	T_EQ_U64(zn_read(z, zs(ZT_NZONES) - 8, 16, rbuf), -EINVAL, "past the disk");
}

static void mgmt(struct zn *z)
{
	/* zone 1: open / close / finish / reset and what each refuses */
	T_EQ_U64(zn_mgmt(z, ZN_OP_CLOSE, zs(1), false), -EIO, "close empty");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, zs(1), false), 0, "reset empty: no-op");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(1), false), 0, "open empty");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_EXP_OPEN, "explicitly open");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(1), false), 0, "open open: no-op");
	T_EQ_U64(zn_mgmt(z, ZN_OP_CLOSE, zs(1), false), 0, "close empty open");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_EMPTY, "closed with nothing: empty");
	T_EQ_U64(zn_write(z, zs(1), 8, buf, 0), 0, "write");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(1), false), 0, "open imp open");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_EXP_OPEN, "imp -> exp");
	T_EQ_U64(zn_mgmt(z, ZN_OP_CLOSE, zs(1), false), 0, "close");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_CLOSED, "closed");
	T_EQ_U64(zt_zone(z, 1).wp, zs(1) + 8, "closed keeps its wp");
	T_EQ_U64(zn_mgmt(z, ZN_OP_CLOSE, zs(1), false), 0, "close closed: no-op");
	T_EQ_U64(zn_write(z, zs(1) + 8, 8, buf + ZN_LBS, 0), 0,
		 "write a closed zone");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_IMP_OPEN, "closed -> imp open");
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, zs(1), false), 0, "finish");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_FULL, "finished: full");
	T_EQ_U64(zt_zone(z, 1).wp, zs(2), "finished: wp at the end");
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, zs(1), false), 0, "finish full: no-op");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(1), false), -EIO, "open full");
	T_EQ_U64(zn_mgmt(z, ZN_OP_CLOSE, zs(1), false), -EIO, "close full");
	T_EQ_U64(zn_write(z, zs(1) + 16, 8, buf, 0), -EIO, "write finished");
	T_EQ_U64(zn_read(z, zs(1), 32, rbuf), 0, "read finished");
	T_CHECK(!memcmp(rbuf, buf, 2 * ZN_LBS), "finished keeps its data");
	for (uint32_t k = 2 * ZN_LBS; k < 4 * ZN_LBS; k++)
		if (rbuf[k]) {
			T_CHECK(0, "past a finish reads zeroes (byte %u)", k);
			break;
		}
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, zs(1), false), 0, "reset full");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_EMPTY, "reset: empty");
	T_EQ_U64(zt_zone(z, 1).wp, zs(1), "reset: wp at the start");
	T_EQ_U64(zn_read(z, zs(1), 8, rbuf), 0, "read reset");
	T_CHECK(rbuf[0] == 0 && rbuf[ZN_LBS - 1] == 0, "a reset zone reads zeroes");
	T_EQ_U64(zn_write(z, zs(1), 8, buf, 0), 0, "write after a reset");
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, zs(2), false), 0, "finish empty");
	T_EQ_U64(zt_zone(z, 2).cond, ZN_COND_FULL, "empty -> full");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(1) + 8, false), -EINVAL,
		 "not a zone start");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(ZT_NZONES), false), -EINVAL,
		 "past the disk");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, 0, true), -EINVAL, "open all");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 0, true), 0, "reset all");
	for (uint32_t i = 0; i < ZT_NZONES; i++)
		T_EQ_U64(zt_zone(z, i).cond, ZN_COND_EMPTY, "zone %u after reset all",
			 i);
}

/* max_open 2, max_active 3 */
static void limits(struct zn *z)
{
	struct zn_counters c;

	T_EQ_U64(zn_write(z, zs(0), 8, buf, 0), 0, "imp open 0");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(1), false), 0, "exp open 1");
	/* a third open closes the implicitly open zone 0 */
	T_EQ_U64(zn_write(z, zs(2), 8, buf, 0), 0, "imp open 2");
	T_EQ_U64(zt_zone(z, 0).cond, ZN_COND_CLOSED, "zone 0 closed for room");
	T_EQ_U64(zt_zone(z, 1).cond, ZN_COND_EXP_OPEN, "exp open stays");
	/* three active: a fourth zone is refused */
	T_EQ_U64(zn_write(z, zs(3), 8, buf, 0), -EOVERFLOW, "active limit");
	T_EQ_U64(zt_zone(z, 3).cond, ZN_COND_EMPTY, "refused: still empty");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(3), false), -EOVERFLOW,
		 "active limit (open)");
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, zs(3), false), -EOVERFLOW,
		 "active limit (finish of an empty zone)");
	/* a closed zone may reopen: the implicitly open 2 makes room */
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(0), false), 0, "reopen 0");
	T_EQ_U64(zt_zone(z, 2).cond, ZN_COND_CLOSED, "2 closed for room");
	/* both open explicitly: no room for a third */
	T_EQ_U64(zn_write(z, zs(2) + 8, 8, buf, 0), -ETOOMANYREFS, "open limit");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(2), false), -ETOOMANYREFS,
		 "open limit (open)");
	zn_counters_get(z, &c);
	T_EQ_U64(c.resource_refusals, 5, "refusals counted");
	/* finishing and resetting free them */
	T_EQ_U64(zn_mgmt(z, ZN_OP_FINISH, zs(1), false), 0, "finish 1");
	T_EQ_U64(zn_write(z, zs(2) + 8, 8, buf, 0), 0, "room again");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, zs(2), false), 0, "reset 2");
	T_EQ_U64(zn_write(z, zs(3), 8, buf, 0), 0, "active room again");
	/* closing an explicitly open zone gives room for another */
	T_EQ_U64(zn_mgmt(z, ZN_OP_CLOSE, zs(0), false), 0, "close 0");
	T_EQ_U64(zn_mgmt(z, ZN_OP_OPEN, zs(0), false), 0, "open 0 again");
}

int main(void)
{
	struct nand_backing *b;
	struct nand_counters nc;
	struct zn *z;
	uint64_t size;

	b = zt_medium(false, &size);
	T_EQ_U64(zt_open(b, 0, 0, &z), 0, "open");
	write_rules(z);
	mgmt(z);
	nand_counters_get(zn_nand(z), &nc);
	T_EQ_U64(nc.violations, 0, "no NAND rule broken");
	T_EQ_U64(zn_close(z), 0, "close");

	T_EQ_U64(zt_open(b, 2, 3, &z), 0, "open with limits 2/3");
	T_EQ_U64(zn_mgmt(z, ZN_OP_RESET, 0, true), 0, "reset all");
	limits(z);
	nand_counters_get(zn_nand(z), &nc);
	T_EQ_U64(nc.violations, 0, "no NAND rule broken");
	T_EQ_U64(zn_close(z), 0, "close");
	b->ops->destroy(b);
	return t_result();
}
