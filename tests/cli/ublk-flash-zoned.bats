#!/usr/bin/env bats
# ublk-flash create --zoned (no root): a zoned image (no FTL,
# docs/image-format.md "Zoned images"): created sparse, info text and
# --json, fsck clean, stats and health against expected output, and every refusal with its one line and exit code:
# odd mode, another page size, over-provisioning, bad blocks, --zone-size
# alone or not a power of two, an image there already, fsck --repair,
# and serve over FUSE (exit 2 asked
# for; exit 3 when the kernel has no ublk, before anything changes).
# Serving over ublk: tests/vm/guest/ublk-zoned.sh.
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


@test "create --zoned: a sparse zoned image; info and fsck know it" {
	run "$UBLK_FLASH" create z.img --size 100M --zoned --zone-size 8M
	[ "$status" -eq 0 ]
	# 13 zones of 8 MiB (100M rounded up), 4160-byte page slots, 8 KiB head
	[ "$(stat -c %s z.img)" -eq $((8192 + 13 * 32 * 64 * (4096 + 64))) ]
	[ "$(stat -c %b z.img)" -lt 64 ]       # sparse
	run "$UBLK_FLASH" info z.img
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"kind:           zoned, host-managed, no FTL"* ]]
	[[ "$output" == *"13 zones of 8388608 bytes"* ]]
	[[ "$output" == *"limits:         13 open, 13 active zones"* ]]
	[[ "$output" == *"13 empty, 0 closed, 0 full"* ]]
	run "$UBLK_FLASH" info z.img --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"kind":"zoned"'* ]]
	[[ "$output" == *'"zone_size":8388608'* ]]
	[[ "$output" == *'"max_active":13'* ]]
	run "$UBLK_FLASH" fsck z.img
	[ "$status" -eq 0 ]
	[[ "$output" == *"clean"* ]]
}

@test "create --zoned refusals: one line each, exit 2, nothing made" {
	bad 2 "a zoned image has no odd mode" \
		"$UBLK_FLASH" create z.img --size 64M --zoned --align odd
	bad 2 "a zoned image has 4096-byte pages" \
		"$UBLK_FLASH" create z.img --size 64M --zoned --page-size 16384
	bad 2 "no spare area" \
		"$UBLK_FLASH" create z.img --size 64M --zoned --over-provision 10
	bad 2 "--bad-blocks: not supported on a zoned image" \
		"$UBLK_FLASH" create z.img --size 64M --zoned --bad-blocks 0.01
	bad 2 "--zone-size needs --zoned" \
		"$UBLK_FLASH" create z.img --size 64M --align 1m --zone-size 8M
	bad 2 "zone size 3145728: a power of two" \
		"$UBLK_FLASH" create z.img --size 64M --zoned --zone-size 3M
	bad 2 "OOB size 48" \
		"$UBLK_FLASH" create z.img --size 64M --zoned --oob-size 48
	[ ! -e z.img ]
}

@test "create --zoned over an image: exit 5 without --force; --force replaces it" {
	"$UBLK_FLASH" create z.img --size 64M --align odd
	s=$(sum z.img)
	bad 5 "z.img is not empty; use --force" \
		"$UBLK_FLASH" create z.img --size 64M --zoned
	[ "$(sum z.img)" = "$s" ]
	"$UBLK_FLASH" create z.img --size 64M --zoned --force
	run "$UBLK_FLASH" info z.img
	[[ "$output" == *"zoned"* ]]
}

@test "a zoned image: fsck --repair of a clean one exit 0, image untouched; a damaged superblock copy: fsck exit 4 names it, --repair rewrites it (exit 1), then clean" {
	"$UBLK_FLASH" create z.img --size 64M --zoned
	s=$(sum z.img)
	run "$UBLK_FLASH" fsck z.img --repair
	[ "$status" -eq 0 ]
	[ "$(sum z.img)" = "$s" ]
	# one byte of superblock copy 1
	printf '\x5a' | dd of=z.img bs=1 seek=$((4096 + 40)) conv=notrunc status=none
	s=$(sum z.img)
	run "$UBLK_FLASH" fsck z.img
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"superblock copy 1: does not check out"* ]]
	[ "$(sum z.img)" = "$s" ]
	run "$UBLK_FLASH" fsck z.img --repair
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"superblock copy 1: does not check out: rewritten from copy 0"* ]]
	[[ "$output" == *"clean"* ]]
	cmp <(head -c 512 z.img) <(tail -c +4097 z.img | head -c 512)
	run "$UBLK_FLASH" fsck z.img --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c "import json,sys; d=json.load(sys.stdin); \
		assert d['clean'] and not d['repaired'], d"
}

@test "stats and health of a zoned image: text and JSON as expected, the image untouched" {
	"$UBLK_FLASH" create z.img --size 100M --zoned --zone-size 8M --endurance 3000
	s=$(sum z.img)
	for c in stats health; do
		run "$UBLK_FLASH" $c z.img
		[ "$status" -eq 0 ]
		assert_matches_file "$EXP/zoned-$c-fresh.txt" "$output"
		run "$UBLK_FLASH" $c z.img --json
		[ "$status" -eq 0 ]
		assert_matches_file "$EXP/zoned-$c-fresh.json" "$output"
	done
	[ "$(sum z.img)" = "$s" ]
	# a damaged image: the one line of the others, exit 4
	printf 'garbage!' | dd of=z.img bs=1 seek=64 conv=notrunc status=none
	printf 'garbage!' | dd of=z.img bs=1 seek=4160 conv=notrunc status=none
	bad 4 "corrupt" "$UBLK_FLASH" stats z.img
	bad 4 "corrupt" "$UBLK_FLASH" health z.img
}

@test "serve a zoned image over FUSE: one line, exit 2; no ublk here: exit 3" {
	"$UBLK_FLASH" create z.img --size 64M --zoned
	s=$(sum z.img)
	bad 2 "is a zoned image: FUSE + loop cannot show zones" \
		"$UBLK_FLASH" serve z.img --frontend fuse
	if [ ! -e /dev/ublk-control ]; then
		bad 3 "and this kernel has no ublk" "$UBLK_FLASH" serve z.img
	fi
	[ "$(sum z.img)" = "$s" ]
	[ ! -e "$UBLK_FLASH_RUN_DIR/servers" ] || [ -z "$(ls -A "$UBLK_FLASH_RUN_DIR/servers")" ]
}

@test "serve a zoned image with an FTL option or --dm: one line, exit 2, image untouched" {
	"$UBLK_FLASH" create z.img --size 64M --zoned
	s=$(sum z.img)
	for o in --scan "--gc cost-benefit" "--wl-threshold 5" "--gc-thread off" "--streams on"; do
		# shellcheck disable=SC2086 # the option and its value
		bad 2 "is a zoned image: ${o%% *} is an FTL option, and a zoned image has no FTL" \
			"$UBLK_FLASH" serve z.img $o
	done
	bad 2 "is a zoned image: --dm is not supported on zoned images yet" \
		"$UBLK_FLASH" serve z.img --dm x
	run "$UBLK_FLASH" serve z.img --faults program=0.1
	[ "$status" -eq 2 ]
	[[ "${lines[-1]}" == *"--faults is an FTL option, and a zoned image has no FTL"* ]]
	[ "$(sum z.img)" = "$s" ]
}

@test "alignpart on a zoned image: one line with the zone size, exit 6, image untouched" {
	# Linux allows no partitions on a host-managed zoned disk
	# (block/genhd.c: GENHD_FL_NO_PART); the served device: tests/vm/guest/ublk-zoned.sh
	"$UBLK_FLASH" create z.img --size 64M --zoned --zone-size 8M
	s=$(sum z.img)
	for c in check suggest predict "convert --to 4096" \
		"create --label gpt --part 8M" "create --label dos --part 8M --no-act"; do
		# shellcheck disable=SC2086 # the command and its options
		bad 6 "z.img: a host-managed zoned image (zones of 8MiB): Linux allows no partitions on it; the alignment that matters is the zone size, 8388608 bytes" \
			"$ALIGNPART" $c z.img
	done
	# --topology does not make it partitionable
	bad 6 "Linux allows no partitions on it" \
		"$ALIGNPART" check z.img --topology 512/4096
	[ "$(sum z.img)" = "$s" ]
}
