#!/usr/bin/env bats
# ublk-flash create --integrity (no root): an image with protection
# information (T10-DIF guards in the OOB, docs/engine.md "Protection
# information"): the OOB grows to hold them, info / stats (text and --json)
# name the profile, fsck is clean; a profile it does not know, an OOB too
# small and a zoned image are refused with one line, exit 2, nothing made.
# Serving it over ublk: tests/vm/guest/ublk-integrity.sh.
load ../helpers

setup() {
	setup_scratch
	cd "$SCRATCH"
}

teardown() {
	teardown_scratch
}

@test "create --integrity t10dif: 128-byte OOB; info, stats and fsck know it" {
	run "$UBLK_FLASH" create p.img --size 64M --align odd --integrity t10dif
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" info p.img
	[[ "$output" == *"page size            4 KiB + 128 B OOB"* ]]
	[[ "$output" == *"integrity            t10dif (T10-DIF type 1"* ]]
	run "$UBLK_FLASH" info --json p.img
	[[ "$output" == *'"integrity":"t10dif"'* ]]
	run "$UBLK_FLASH" stats p.img
	[[ "$output" == *"integrity                t10dif"* ]]
	run "$UBLK_FLASH" stats --json p.img
	[[ "$output" == *'"integrity":"t10dif"'* ]]
	run "$UBLK_FLASH" fsck p.img
	[ "$status" -eq 0 ]
	# 16K pages: 256 bytes; an image without: none, the OOB as before
	run "$UBLK_FLASH" create q.img --size 64M --align 1m --page-size 16384 \
		--integrity t10dif
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" info q.img
	[[ "$output" == *"16 KiB + 256 B OOB"* ]]
	run "$UBLK_FLASH" create n.img --size 64M --align 1m --integrity none
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" info --json n.img
	[[ "$output" == *'"oob_size":64'* ]]
	[[ "$output" == *'"integrity":"none"'* ]]
}

@test "create --integrity: bad profile, small OOB, zoned: one line, exit 2, no image" {
	bad 2 "create: --integrity must be t10dif or none, not 'crc64'" \
		"$UBLK_FLASH" create a.img --size 64M --align odd --integrity crc64
	bad 2 "create: --integrity t10dif needs --oob-size 88 or more with 4096-byte pages" \
		"$UBLK_FLASH" create a.img --size 64M --align odd --integrity t10dif --oob-size 64
	bad 2 "create: --integrity: not supported on a zoned image yet" \
		"$UBLK_FLASH" create a.img --size 64M --zoned --integrity t10dif
	[ ! -e a.img ]
}
