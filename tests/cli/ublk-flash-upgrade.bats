#!/usr/bin/env bats
# ublk-flash upgrade (live upgrade, docs/ublk.md): the refusals that need no
# kernel -- usage, a path that is not there, a device or file that no server
# serves, a dead server's entry, a live server over FUSE, an entry whose pid
# does not hold it, a ublk server on a kernel without the ublk driver.  Each
# is one line and a documented exit code (2 usage, 3 not served / no
# server, 6 not possible here), and nothing is touched: the image and the
# registry entry stay as they were.
# No root, no ublk: the registry entries are made by hand, as a server leaves
# them (serve.h), and a live server is a process holding the entry's lock.
# (tests/integration/serve-upgrade.bats: a real FUSE server's side;
# tests/vm/guest/ublk-upgrade.sh: the handover itself, and the refusal on
# kernels without QUIESCE_DEV.)
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	mkdir -p "$UBLK_FLASH_RUN_DIR"
	HOLDER=
	"$UBLK_FLASH" create "$SCRATCH/x.img" --size 64M --align odd >/dev/null
	SUM=$(sha256sum <"$SCRATCH/x.img")
}

teardown() {
	[ -z "${HOLDER:-}" ] || kill "$HOLDER" 2>/dev/null || true
	teardown_scratch
}

# entry FRONTEND DEV: the registry entry of a server of x.img (named as a
# server names it, after the image's device and inode) in $ENTRY, its pid a
# process that has exited (a dead server) in $PID.
entry() {
	ENTRY=$UBLK_FLASH_RUN_DIR/$(printf 'img-%x-%s' \
		"$(stat -c %d "$SCRATCH/x.img")" "$(stat -c %i "$SCRATCH/x.img")")
	mkdir -p "$ENTRY"
	printf '%s\n' "$SCRATCH/x.img" >"$ENTRY/image"
	echo "$2" >"$ENTRY/dev"
	echo "$1" >"$ENTRY/frontend"
	echo rw >"$ENTRY/access"
	sh -c 'echo $$' >"$ENTRY/pid"
	PID=$(cat "$ENTRY/pid")
	: >"$ENTRY/lock"
}

# live [PIDFILE-TOO]: a process holds the entry's lock, as a live server
# does ($HOLDER); with an argument the entry names it as its pid.
live() {
	( exec 9<>"$ENTRY/lock" && flock -x -n 9 && exec sleep 120 ) &
	HOLDER=$!
	local i
	for i in $(seq 50); do
		[ "$(readlink "/proc/$HOLDER/exe")" != "$(readlink /proc/self/exe)" ] &&
			! flock -n -s "$ENTRY/lock" true && break
		sleep 0.1
	done
	[ -z "${1:-}" ] || { echo "$HOLDER" >"$ENTRY/pid"; PID=$HOLDER; }
}

# untouched: the image, and the entry if any, are as they were.
untouched() {
	[ "$(sha256sum <"$SCRATCH/x.img")" = "$SUM" ]
	[ -z "${ENTRY:-}" ] || [ "$(cat "$ENTRY/pid")" = "$PID" ]
	[ -z "${ENTRY:-}" ] || [ -e "$ENTRY/lock" ]
}

@test "upgrade: usage errors exit 2; --help names the exit codes" {
	run "$UBLK_FLASH" upgrade
	[ "$status" -eq 2 ]
	[ "$output" = "ublk-flash: upgrade: expected one DEV or IMG (try --help)" ]
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img" "$SCRATCH/x.img"
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img" --bogus
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img" --binary "$SCRATCH/nothing-here"
	[ "$status" -eq 2 ]
	[ "$output" = "ublk-flash: upgrade: --binary $SCRATCH/nothing-here: not an executable file" ]
	chmod 644 "$SCRATCH/x.img"
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img" --binary "$SCRATCH/x.img"
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" upgrade --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: ublk-flash upgrade DEV|IMG [--binary PATH]"* ]]
	[[ "$output" == *"6 not possible here, nothing changed"* ]]
	run "$UBLK_FLASH" --help
	[[ "$output" == *"upgrade DEV|IMG"* ]]
	[[ "$output" == *"6 not possible here"* ]]
	untouched
}

@test "upgrade: a path that is not there, a device or file nobody serves: one line, exit 3" {
	run "$UBLK_FLASH" upgrade "$SCRATCH/nothing.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "ublk-flash: upgrade: $SCRATCH/nothing.img: No such file or directory" ]
	run "$UBLK_FLASH" upgrade /dev/ublkb-octant-none
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	# not a ublk device and served by nobody: a character device, a directory
	for t in /dev/null "$SCRATCH"; do
		run "$UBLK_FLASH" upgrade "$t"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "$output" = "ublk-flash: upgrade: $t is not served" ]
	done
	# a file that is not an image, and an image no server serves
	echo junk >"$SCRATCH/junk"
	for t in "$SCRATCH/junk" "$SCRATCH/x.img"; do
		run "$UBLK_FLASH" upgrade "$t"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "$output" = "ublk-flash: upgrade: $t is not served" ]
	done
	untouched
}

@test "upgrade: the server died (its entry left): exit 3, names serve --recover, nothing touched" {
	entry ublk /dev/ublkb7
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "ublk-flash: upgrade: the server of $SCRATCH/x.img has died; its device waits for \`ublk-flash serve IMG --recover\`" ]
	untouched
}

@test "upgrade: a live server over FUSE + loop: exit 6, one line, nothing touched" {
	entry fuse /dev/loop7
	live pid
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img"
	echo "$output"
	[ "$status" -eq 6 ]
	[ "$output" = "ublk-flash: upgrade: $SCRATCH/x.img is served over FUSE + loop on /dev/loop7: a live upgrade needs the ublk frontend (stop, then serve again); nothing changed" ]
	kill -0 "$HOLDER"
	untouched
}

@test "upgrade: the entry's pid does not hold it (a stale pid file): exit 3, nothing signalled" {
	entry ublk /dev/ublkb7
	live                           # held by $HOLDER, the entry names a dead pid
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "ublk-flash: upgrade: pid $PID that the entry of $SCRATCH/x.img names is not the process holding it; nothing changed" ]
	kill -0 "$HOLDER"
	untouched
}

@test "upgrade: a live ublk server where the kernel has no ublk driver: exit 3, says so" {
	[ ! -e /dev/ublk-control ] || skip "this kernel has /dev/ublk-control (the guest tests cover it)"
	entry ublk /dev/ublkb7
	live pid
	run "$UBLK_FLASH" upgrade "$SCRATCH/x.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "ublk-flash: upgrade: /dev/ublkb7: no /dev/ublk-control: the ublk driver is not loaded; nothing changed" ]
	kill -0 "$HOLDER"
	untouched
}
