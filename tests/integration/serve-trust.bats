#!/usr/bin/env bats
# A served image with a forged OOB erase count (issue 28 item 8, repro
# erase-count-overflow, tests/data/repro): on 3c48226 the roll-forward took
# 0xffffffff as the block's count and `stats DEV` killed the server (SIGFPE
# in the erase-count histogram of its control thread).  Now the record does
# not check out: stats answer, the server lives, writes and a clean stop go.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	requires gzip
}
teardown() { fuse_teardown; }

@test "trust: stats DEV of a served image with a forged erase count: the server answers and lives" {
	local img=$SCRATCH/ec.img pid
	gzip -dc "$OCTANT_TOP/tests/data/repro/erase-count-overflow.img.gz" >"$img"
	fuse_serve "$img"
	pid=$(fuse_pid "$img")
	run "$UBLK_FLASH" stats "$DEV"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"erase count per block"* ]]
	run "$UBLK_FLASH" stats "$DEV" --json
	[ "$status" -eq 0 ]
	[ "$(fuse_stat_field "$DEV" erase_max)" -le 16777216 ]
	kill -0 "$pid"
	dd if=/dev/urandom of="$DEV" bs=1M count=8 oflag=direct conv=fsync status=none
	"$UBLK_FLASH" stats "$DEV" >/dev/null
	kill -0 "$pid"
	"$UBLK_FLASH" stop "$img"
}
