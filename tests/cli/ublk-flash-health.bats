#!/usr/bin/env bats
# ublk-flash health IMG (no root): the health log of an image read
# offline, text and --json against expected output (tests/cli/expected/
# ublk-flash: the values of these images are deterministic), create
# --endurance, and bad input (one line, the documented exit code).
# Live from a server: tests/integration/fuse-health.bats.
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	EXP=$OCTANT_TOP/tests/cli/expected/ublk-flash
	cd "$SCRATCH"
}

teardown() {
	[ -z "${LOCK_FD:-}" ] || exec {LOCK_FD}>&-
	teardown_scratch
}

sum() { sha256sum <"$1" | cut -d' ' -f1; }

# bad CODE TEXT CMD...: CMD exits CODE and prints exactly one line holding
# TEXT.
bad() {
	local code=$1 text=$2
	shift 2
	run "$@"
	echo "\$ $*"
	echo "exit $status (want $code): $output"
	[ "$status" -eq "$code" ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$text"* ]]
}

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

@test "create --endurance: out of range or not a number, exit 2, no image" {
	bad 2 "--endurance: 0 is out of range (1..10000000)" \
		"$UBLK_FLASH" create e.img --size 8M --align odd --endurance 0
	bad 2 "--endurance: 10000001 is out of range (1..10000000)" \
		"$UBLK_FLASH" create e.img --size 8M --align odd --endurance 10000001
	bad 2 "--endurance: 'lots' is not a whole number (1..10000000)" \
		"$UBLK_FLASH" create e.img --size 8M --align odd --endurance lots
	[ ! -e e.img ]
}

@test "health of a non-image, a missing file, a directory, /dev/null: one line each, exit 4 / 3 / 2 / 2" {
	requires mkfs.ext4
	truncate -s 32M e.img
	mkfs.ext4 -q -F e.img
	s=$(sum e.img)
	bad 4 "health: e.img: not an octant image (it holds ext4)" \
		"$UBLK_FLASH" health e.img
	[ "$(sum e.img)" = "$s" ]
	bad 3 "health: $SCRATCH/missing.img: No such file or directory" \
		"$UBLK_FLASH" health "$SCRATCH/missing.img"
	bad 3 "health: missing.img: no such file, and no device-mapper device /dev/mapper/missing.img" \
		"$UBLK_FLASH" health missing.img
	mkdir d
	bad 2 "d: is a directory, not an image" "$UBLK_FLASH" health d
	bad 2 "/dev/null: is a character device, not an image file or a block device" \
		"$UBLK_FLASH" health /dev/null
	bad 2 "health: expected one IMG or DEV" "$UBLK_FLASH" health
	bad 2 "health: unknown option '--frob'" "$UBLK_FLASH" health e.img --frob
}

# entry NAME: the registry entry of a ublk server of x.img with --dm NAME,
# as a server leaves it (serve.h; named after the image's device and inode).
entry() {
	ENTRY=$UBLK_FLASH_RUN_DIR/$(printf 'img-%x-%s' "$(stat -c %d x.img)" \
				   "$(stat -c %i x.img)")
	mkdir -p "$ENTRY"
	printf '%s\n' "$SCRATCH/x.img" >"$ENTRY/image"
	echo /dev/ublkb7 >"$ENTRY/dev"
	echo "/dev/mapper/$1" >"$ENTRY/dm"
	echo ublk >"$ENTRY/frontend"
	echo rw >"$ENTRY/access"
	sh -c 'echo $$' >"$ENTRY/pid"       # a process that has exited
	PID=$(cat "$ENTRY/pid")
	: >"$ENTRY/lock"
}

@test "health of a dead server's device, and of a server that does not answer: one line, exit 3" {
	local name=octant-health-$$-$RANDOM
	[ ! -e "/dev/mapper/$name" ] || skip "/dev/mapper/$name exists here"
	"$UBLK_FLASH" create x.img --size 8M --align odd >/dev/null
	entry "$name"
	bad 3 "health: $name: /dev/mapper/$name does not exist: it was the --dm device of the server of $SCRATCH/x.img (pid $PID, gone)" \
		"$UBLK_FLASH" health "$name"
	# the entry's lock held, as a live server holds it, but no control
	# socket: the server does not answer
	exec {LOCK_FD}<>"$ENTRY/lock"
	flock -x -n "$LOCK_FD"
	bad 3 "health: the server of x.img does not answer" \
		"$UBLK_FLASH" health x.img
}
