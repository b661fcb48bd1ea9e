#!/usr/bin/env bats
# ublk-flash resize IMG --size N (offline grow, issue 29 item 3): data kept,
# the image opens at the new size and fsck is clean; bad input gets one
# line, its exit code, and the image unchanged.  Every case failed before
# the command existed (exit 2: unknown command).
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	cd "$SCRATCH"
}

teardown() {
	[ -z "${HOLDER:-}" ] || kill "$HOLDER" 2>/dev/null || true
	teardown_scratch
}

sum() { sha256sum <"$1" | cut -d' ' -f1; }

# mk ALIGN SIZE [MAX]: a fresh image (data kept across a grow is checked
# by tests/unit/ftl-grow.c and, through a filesystem, by
# tests/integration/fuse-resize.bats)
mk() {
	local max=()
	[ -z "${3:-}" ] || max=(--max-size "$3")
	"$UBLK_FLASH" create img --size "$2" --align "$1" "${max[@]}" >/dev/null
}

size_of() { "$UBLK_FLASH" info img --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["logical_size"])'; }

@test "resize grows an image made with --max-size (odd and 1m); fsck clean" {
	requires python3
	for a in odd 1m; do
		rm -f img
		mk $a 64M 256M
		run "$UBLK_FLASH" resize img --size 128M
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$(size_of)" = $((128 << 20)) ]
		"$UBLK_FLASH" fsck img
		run "$UBLK_FLASH" resize img --size 256M
		[ "$status" -eq 0 ]
		[ "$(size_of)" = $((256 << 20)) ]
		"$UBLK_FLASH" fsck img
	done
}

@test "resize to the same size: exit 0, image unchanged" {
	mk odd 64M 256M; s=$(sum img)
	run "$UBLK_FLASH" resize img --size 64M
	[ "$status" -eq 0 ]
	[ "$(sum img)" = "$s" ]
}

@test "resize smaller: shrinking is not supported, exit 6, unchanged" {
	mk odd 64M 256M; s=$(sum img)
	bad 6 "shrinking is not supported" "$UBLK_FLASH" resize img --size 32M
	[ "$(sum img)" = "$s" ]
}

@test "resize beyond the --max-size room: says the limit, exit 6, unchanged" {
	mk 1m 64M 128M; s=$(sum img)
	bad 6 "its checkpoint area holds up to" "$UBLK_FLASH" resize img --size 1G
	[[ "$output" == *"create --max-size"* ]]
	[ "$(sum img)" = "$s" ]
}

@test "resize an image made without --max-size far: exit 6, unchanged" {
	mk 1m 64M; s=$(sum img)
	bad 6 "re-create it for" "$UBLK_FLASH" resize img --size 1G
	[ "$(sum img)" = "$s" ]
}

@test "resize --size not whole sectors: exit 2, unchanged" {
	mk odd 64M 256M; s=$(sum img)
	bad 2 "not a whole number of 512-byte sectors" \
		"$UBLK_FLASH" resize img --size 67109000
	[ "$(sum img)" = "$s" ]
}

@test "resize --size garbage / missing: exit 2" {
	mk odd 64M 256M
	bad 2 "--size" "$UBLK_FLASH" resize img --size 12XB
	bad 2 "expected IMG --size SIZE" "$UBLK_FLASH" resize img
}

@test "resize an image another process holds: exit 5, unchanged" {
	requires flock
	mk odd 64M 256M; s=$(sum img)
	flock -x img sleep 30 &
	HOLDER=$!
	for _ in $(seq 50); do
		flock -xn img true 2>/dev/null || break
		sleep 0.1
	done
	run "$UBLK_FLASH" resize img --size 128M
	echo "exit $status: $output"
	[ "$status" -eq 5 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$(sum img)" = "$s" ]
}

@test "resize a file that is no octant image: exit 4, unchanged" {
	head -c 1M /dev/urandom >img; s=$(sum img)
	run "$UBLK_FLASH" resize img --size 128M
	echo "exit $status: $output"
	[ "$status" -eq 4 ]
	[ "$(sum img)" = "$s" ]
}

@test "resize killed between its two superblock writes: the old size; fsck exit 0 with a note, no write; --repair mends it (exit 1); resize again finishes" {
	requires python3
	[ -f "$BUILD/die-at-write.so" ] || skip "SKIP: $BUILD/die-at-write.so not built"
	mk odd 64M 256M
	# die-at-write.so: SIGKILL right before the write of superblock copy
	# 0 (bytes 0-511), after copy 1 of the new size is synced
	# (ftl_grow.c, steps 4 and 5)
	run env LD_PRELOAD="$BUILD/die-at-write.so" \
		OCTANT_TEST_DIE_AT_WRITE=0+512 "$UBLK_FLASH" resize img --size 128M
	echo "exit $status: $output"
	[ "$status" -eq 137 ]
	[ "$(size_of)" = $((64 << 20)) ]
	s=$(sum img)
	# before: "superblock copy 1 is damaged", a damaged checkpoint: exit 4
	run "$UBLK_FLASH" fsck img
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"note: superblock copy 1 checks out but gives another size: a resize was cut short"* ]]
	[[ "$output" == *"note: not cleanly closed"* ]]
	[[ "$output" == *"clean: 0 problems, 2 notes"* ]]
	[ "$(sum img)" = "$s" ]
	run "$UBLK_FLASH" fsck img --repair
	echo "$output"
	[ "$status" -eq 1 ]
	run "$UBLK_FLASH" fsck img
	[ "$status" -eq 0 ]
	[[ "$output" == *"clean: 0 problems, 0 notes"* ]]
	run "$UBLK_FLASH" resize img --size 128M
	[ "$status" -eq 0 ]
	[ "$(size_of)" = $((128 << 20)) ]
	run "$UBLK_FLASH" fsck img
	[ "$status" -eq 0 ]
	[[ "$output" == *"clean: 0 problems, 0 notes"* ]]
}
