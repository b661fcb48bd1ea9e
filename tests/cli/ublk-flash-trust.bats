#!/usr/bin/env bats
# Images whose records carry values no engine writes (issue 28, "Trust at
# the edges"): the regression images of tests/data/repro through the CLI
# (no root needed).  Each used to give a wrong answer on 3c48226: stats
# died with SIGFPE, fsck said clean, the device stayed read-only for good.
load ../helpers

setup() {
	setup_scratch
	requires gzip
}

teardown() {
	teardown_scratch
}

unpack() {
	gzip -dc "$OCTANT_TOP/tests/data/repro/$1.img.gz" >"$SCRATCH/$1.img"
}

@test "trust: an OOB erase count of 0xffffffff: stats run, fsck reports the record (4), --repair ends clean" {
	unpack erase-count-overflow
	img=$SCRATCH/erase-count-overflow.img
	run "$UBLK_FLASH" stats "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"erase count per block    min "* ]]
	run "$UBLK_FLASH" stats "$img" --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"erase_max":'* ]]
	# no count past NAND_EC_MAX (2^24) was taken
	max=$(echo "$output" | sed -n 's/.*"erase_max":\([0-9]*\).*/\1/p')
	[ "$max" -le 16777216 ]
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"damaged OOB record"* ]]
	run "$UBLK_FLASH" fsck "$img" --repair
	[ "$status" -eq 1 ]
	run "$UBLK_FLASH" fsck "$img"
	[ "$status" -eq 0 ]
}

@test "trust: a read-only flag a full backing left (2 bad blocks of 9): fsck 4, --repair clears it (1, one line), then writable" {
	unpack enospc-readonly
	img=$SCRATCH/enospc-readonly.img
	run "$UBLK_FLASH" stats "$img" --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"read_only":true'* ]]
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"PROBLEM: bad-block table: read-only flag set with 2 bad blocks, the spare area absorbs 9: not justified"* ]]
	run "$UBLK_FLASH" fsck "$img" --repair
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(echo "$output" | grep -c '^repaired: read-only flag of the bad-block table cleared (2 bad blocks, the spare area absorbs 9)')" -eq 1 ]
	run "$UBLK_FLASH" fsck "$img"
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" stats "$img" --json
	[[ "$output" == *'"read_only":false'* ]]
}
