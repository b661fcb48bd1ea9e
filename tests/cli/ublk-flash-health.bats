#!/usr/bin/env bats
# ublk-flash health IMG (no root): the health log of an image read
# offline, text and --json against expected output (tests/cli/expected/
# ublk-flash: the values of these images are deterministic), and create
# --endurance.  Bad input: ublk-flash-badinput.bats and
# ublk-flash-target.bats; live from a server:
# tests/integration/fuse-health.bats.
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	EXP=$OCTANT_TOP/tests/cli/expected/ublk-flash
	cd "$SCRATCH"
}

teardown() {
	teardown_scratch
}

sum() { sha256sum <"$1" | cut -d' ' -f1; }

@test "health of a fresh image: text and JSON as expected, the image untouched" {
	"$UBLK_FLASH" create new.img --size 64M --align odd >/dev/null
	s=$(sum new.img)
	run "$UBLK_FLASH" health new.img
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/health-fresh.txt" "$output"
	run "$UBLK_FLASH" health new.img --json
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/health-fresh.json" "$output"
	[ "$(sum new.img)" = "$s" ]
}

@test "health of an image made before the lifetime counters: its counters carried, the new ones 0" {
	requires gzip
	# made by the engine at 3c48226 (checkpoint version 4 + a version-1
	# delta record): tests/data/health/README
	gzip -dc "$OCTANT_TOP/tests/data/health/old-v4.img.gz" >old.img
	s=$(sum old.img)
	run "$UBLK_FLASH" health old.img
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/health-old-v4.txt" "$output"
	run "$UBLK_FLASH" health old.img --json
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/health-old-v4.json" "$output"
	[ "$(sum old.img)" = "$s" ]
	run "$UBLK_FLASH" fsck old.img
	[ "$status" -eq 0 ]
}

@test "create --endurance: stored in the image, shown by info and health" {
	"$UBLK_FLASH" create e.img --size 8M --align 1m --endurance 100 >/dev/null
	run "$UBLK_FLASH" info e.img
	[[ "$output" == *"rated endurance      100 erases per block"* ]]
	run "$UBLK_FLASH" info e.img --json
	[[ "$output" == *'"pe_cycles":100,'* ]]
	run "$UBLK_FLASH" health e.img --json
	[[ "$output" == *'"pe_cycles":100,'* ]]
	run "$UBLK_FLASH" health e.img
	[[ "$output" == *"Erase Count per Block:              mean 0.00, max 0 of 100 rated"* ]]
}
