#!/usr/bin/env bats
# What info, stats and stop make of a --dm NAME given bare (or as
# /dev/mapper/NAME) when no such dm device exists: one line that says what
# was looked for and, when the run registry records NAME as a server's --dm
# device, which server and what to name instead; exit 3, nothing touched.
# No root, no device-mapper: the registry entries are made by hand, as a
# server leaves them (serve.h); the code under test reads them as it would a
# real server's.  (With device-mapper, tests/vm/guest/dm-serve.sh serves
# --dm and names the device both ways.)
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	mkdir -p "$UBLK_FLASH_RUN_DIR"
	NAME=octant-target-$$-$RANDOM
	[ ! -e "/dev/mapper/$NAME" ] || skip "/dev/mapper/$NAME exists here"
	LOCK_FD=
	"$UBLK_FLASH" create "$SCRATCH/x.img" --size 64M --align odd >/dev/null
	SUM=$(sha256sum <"$SCRATCH/x.img")
}

teardown() {
	[ -z "${LOCK_FD:-}" ] || exec {LOCK_FD}>&-
	teardown_scratch
}

# entry: the registry entry of a ublk server of x.img that stacked --dm
# $NAME and died (no lock holder), in $ENTRY (named as a server names it,
# after the image's device and inode).
entry() {
	ENTRY=$UBLK_FLASH_RUN_DIR/$(printf 'img-%x-%s' \
		"$(stat -c %d "$SCRATCH/x.img")" "$(stat -c %i "$SCRATCH/x.img")")
	mkdir -p "$ENTRY"
	printf '%s\n' "$SCRATCH/x.img" >"$ENTRY/image"
	echo /dev/ublkb7 >"$ENTRY/dev"
	echo "/dev/mapper/$NAME" >"$ENTRY/dm"
	echo ublk >"$ENTRY/frontend"
	echo rw >"$ENTRY/access"
	sh -c 'echo $$' >"$ENTRY/pid"       # a process that has exited
	PID=$(cat "$ENTRY/pid")
	: >"$ENTRY/lock"
}

# untouched: the image and the entry are as they were.
untouched() {
	[ "$(sha256sum <"$SCRATCH/x.img")" = "$SUM" ]
	[ -z "${ENTRY:-}" ] || [ "$(cat "$ENTRY/dm")" = "/dev/mapper/$NAME" ]
}

@test "info/stats/health/stop NAME, no such dm device and no entry records it: one line saying what was looked for, exit 3" {
	local cmd
	for cmd in info stats health stop; do
		run "$UBLK_FLASH" "$cmd" "$NAME"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[ "$output" = "ublk-flash: $cmd: $NAME: no such file, and no device-mapper device /dev/mapper/$NAME (a bare NAME is a --dm NAME)" ]
	done
	untouched
}

@test "info/stats/health/stop NAME of a dead server's --dm device that is gone: names the server, the image and the device to give instead, exit 3" {
	local cmd arg
	entry
	for cmd in info stats health stop; do
		for arg in "$NAME" "/dev/mapper/$NAME"; do
			run "$UBLK_FLASH" "$cmd" "$arg"
			echo "$output"
			[ "$status" -eq 3 ]
			[ "${#lines[@]}" -eq 1 ]
			[ "$output" = "ublk-flash: $cmd: $arg: /dev/mapper/$NAME does not exist: it was the --dm device of the server of $SCRATCH/x.img (pid $PID, gone) on /dev/ublkb7; name the image or that device" ]
		done
	done
	untouched
	[ -d "$ENTRY" ]                  # stop cleaned nothing it was not asked to
}

@test "stop NAME of a running server whose --dm device is gone: nothing stopped, exit 3" {
	entry
	exec {LOCK_FD}<>"$ENTRY/lock"
	flock -x -n "$LOCK_FD"            # as the live server holds it
	run "$UBLK_FLASH" stop "$NAME"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "ublk-flash: stop: $NAME: /dev/mapper/$NAME does not exist: it was the --dm device of the server of $SCRATCH/x.img (pid $PID, running) on /dev/ublkb7; name the image or that device" ]
	run "$UBLK_FLASH" stats "$NAME"
	[ "$status" -eq 3 ]
	[[ "$output" == *"(pid $PID, running)"* ]]
	untouched
}

@test "stats/health IMG of a running server that does not answer (no control socket): one line, exit 3, nothing touched" {
	local cmd
	entry
	exec {LOCK_FD}<>"$ENTRY/lock"
	flock -x -n "$LOCK_FD"            # as the live server holds it
	for cmd in stats health; do
		run "$UBLK_FLASH" "$cmd" "$SCRATCH/x.img"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[ "$output" = "ublk-flash: $cmd: the server of $SCRATCH/x.img does not answer: No such file or directory" ]
	done
	untouched
}

@test "a bare NAME that is a file here is that file, not a dm name" {
	entry
	cd "$SCRATCH"
	cp x.img "$NAME"
	run "$UBLK_FLASH" info "$NAME" --json
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == '{"image":"'"$NAME"'","align":"odd",'* ]]
}
