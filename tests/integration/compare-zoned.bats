#!/usr/bin/env bats
# make compare --zoned / --vm (lib/zoned.sh) on the host: its refusals.  The cells
# themselves need ublk's ZONED mode and run in the 7.3 guest (tests/vm/guest/compare-zoned.sh).
load ../helpers
load compare-lib

@test "compare --zoned: a bad cell or setting is one line and exit 2" {
	run "$COMPARE" --zoned --cells zoned:ext4:fresh
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"not ftl:ext4|btrfs|f2fs or zoned:btrfs|f2fs"* ]]
	run "$COMPARE" --zoned --cells zoned:btrfs:aged:online
	[ "$status" -eq 2 ]
	[[ $output == *"resets (zoned)"* ]]
	run "$COMPARE" --vm --fill 95
	[ "$status" -eq 2 ]
	[[ $output == *"--fill: '95' is not a percentage 10..90"* ]]
}

@test "compare --zoned without zoned ublk: exit 3, naming --vm" {
	requires_root
	[ ! -e /dev/ublk-control ] || skip "this kernel has ublk: the cells would run"
	modprobe ublk_drv 2>/dev/null && skip "ublk_drv loads here: the cells would run"
	run "$COMPARE" --zoned --no-plot --cells zoned:btrfs:fresh --out "$SCRATCH/out"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == *"no ublk on this kernel"*"tests/compare/run --vm"* ]]
	[ ! -e "$SCRATCH/out" ]                 # refused before it made anything
}
