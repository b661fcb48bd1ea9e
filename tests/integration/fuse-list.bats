#!/usr/bin/env bats
# ublk-flash list, and info / stats / stop given a served device or a
# partition of it instead of the image (issue 14), over FUSE + loop; a
# registry entry whose loop number now belongs to another file is refused.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	requires sfdisk partx python3
	PLAIN_LOOPS=()
	ENTRY=
}

teardown() {
	local d
	for d in "${PLAIN_LOOPS[@]}"; do losetup -d "$d" 2>/dev/null || true; done
	[ -z "${ENTRY:-}" ] || rm -rf "$ENTRY"      # no server made it
	fuse_teardown
}

# one_partition DEV: a DOS table with one partition, its node made.
one_partition() {
	printf 'label: dos\nstart=2048,size=8192\n' | sfdisk -q "$1"
	partx -u "$1" 2>/dev/null || true
	udevadm settle 2>/dev/null || true
	[ -b "${1}p1" ]
}

@test "list: a live server with its device, image, mode, pid, state and uptime; --json" {
	fuse_create a 64M odd
	fuse_serve "$SCRATCH/a.img"
	pid=$(cat "$UBLK_FLASH_RUN_DIR"/img-*/pid)
	run "$UBLK_FLASH" list -n -o DEVICE,IMAGE,MODE,FRONTEND,DM,PID,STATE
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^$DEV\ +$SCRATCH/a.img\ +odd\ +fuse\ +-\ +$pid\ +running$ ]]
	sleep 1.1
	run "$UBLK_FLASH" list --json -o +SIZE,STARTED
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys, time
e = json.loads(sys.argv[1])["devices"][0]
assert e["device"] == sys.argv[2] and e["image"] == sys.argv[3], e
assert e["state"] == "running" and e["frontend"] == "fuse", e
assert e["size"] == 64 << 20 and e["uptime"] >= 1, e
assert abs(time.time() - e["uptime"] - e["started"]) < 5, e' \
		"$output" "$DEV" "$SCRATCH/a.img"
}

@test "info, stats and stop take the served device or a partition of it" {
	fuse_create b 64M 1m
	fuse_serve "$SCRATCH/b.img"
	one_partition "$DEV"
	for d in "$DEV" "${DEV}p1"; do
		run "$UBLK_FLASH" info "$d"
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "image                $SCRATCH/b.img" ]
		run "$UBLK_FLASH" info "$d" --json
		[[ "$output" == '{"image":"'"$SCRATCH"'/b.img","align":"1m",'* ]]
		run "$UBLK_FLASH" stats "$d" --json
		[ "$status" -eq 0 ]
		python3 -c 'import json,sys; assert json.loads(sys.argv[1])["host_write_sectors"] > 0' "$output"
	done
	# the table for a person: units and an ISO 8601 date, not raw epochs
	run "$UBLK_FLASH" stats "${DEV}p1"
	[[ "$output" =~ host\ written\ +[0-9.]+\ (B|KiB|MiB)\ \([0-9]+\ sectors\) ]]
	[[ "$output" =~ last\ read-write\ mount\ +$(date +%Y-%m-%d)T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{4} ]]
	run "$UBLK_FLASH" stop "${DEV}p1"
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" list
	[ -z "$output" ]
}

@test "list: a killed server's entry is shown as dead; stop DEV cleans it" {
	fuse_create c 64M odd
	fuse_serve "$SCRATCH/c.img"
	pid=$(cat "$UBLK_FLASH_RUN_DIR"/img-*/pid)
	kill -9 "$pid"
	for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	run "$UBLK_FLASH" list -n -r -o DEVICE,STATE,UPTIME
	[ "$output" = "$DEV dead -" ]
	run "$UBLK_FLASH" stop "$DEV"
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" list
	[ -z "$output" ]
}

@test "a loop number reused by another file: list says stale; info, stats, stop of DEV and DEVp1 refuse (exit 3), the device stays" {
	requires truncate
	fuse_create d 64M odd
	# an entry as a dead server left it, naming a loop device that is now
	# bound to a file of someone else's (with a partition table)
	truncate -s 64M "$SCRATCH/other"
	printf 'label: dos\nstart=2048,size=8192\n' | sfdisk -q "$SCRATCH/other"
	LOOP=$(losetup -P -f --show "$SCRATCH/other")
	PLAIN_LOOPS+=("$LOOP")
	partx -u "$LOOP" 2>/dev/null || true    # no DOS parser in the kernel?
	udevadm settle 2>/dev/null || true
	st=$(stat -c '%d %i' "$SCRATCH/d.img")
	ENTRY=$UBLK_FLASH_RUN_DIR/$(printf 'img-%x-%s' ${st% *} ${st#* })
	mkdir -p "$ENTRY/mnt"
	: >"$ENTRY/lock"
	echo "$SCRATCH/d.img" >"$ENTRY/image"
	echo "$LOOP" >"$ENTRY/dev"
	echo fuse >"$ENTRY/frontend"
	echo 0:0:0 >"$ENTRY/backing"
	echo 2147483646 >"$ENTRY/pid"      # no such process
	run "$UBLK_FLASH" list -n -r -o DEVICE,STATE
	[ "$output" = "$LOOP stale" ]
	[ -b "${LOOP}p1" ]
	for d in "$LOOP" "${LOOP}p1"; do
		for cmd in info stats stop; do
			run "$UBLK_FLASH" "$cmd" "$d"
			echo "$cmd $d: $output"
			[ "$status" -eq 3 ]
			[[ "$output" == "ublk-flash: $cmd: $d is not served by ublk-flash now: the server of $SCRATCH/d.img (pid 2147483646, gone) had it, but it is no longer bound to that server"* ]]
		done
	done
	[ "$(losetup -n -O BACK-FILE "$LOOP")" = "$SCRATCH/other" ]
	[ -d "$ENTRY" ]
}

@test "losetup -l names the image: the loop device is bound through RUNDIR/mnt/IMAGE-NAME" {
	fuse_create 'my disk' 64M odd
	fuse_serve "$SCRATCH/my disk.img"
	dir=$(cd "$UBLK_FLASH_RUN_DIR"/img-*/ && pwd -P)
	[ "$(losetup -n -O BACK-FILE "$DEV")" = "$dir/mnt/my disk.img" ]
	# the stable name is there too, the same file
	[ "$(stat -c %i "$dir/mnt/disk")" = "$(stat -c %i "$dir/mnt/my disk.img")" ]
	# stop DEV still knows it as its own; kill -9, and stop cleans the loop
	pid=$(cat "$dir/pid")
	kill -9 "$pid"
	for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	run "$UBLK_FLASH" stop "$DEV"
	[ "$status" -eq 0 ]
	[ -z "$(losetup -n -O BACK-FILE "$DEV" 2>/dev/null | grep "$dir")" ]
	# a name with a newline cannot be shown on one sysfs line: "disk"
	img=$(printf '%s/new\nline.img' "$SCRATCH")
	"$UBLK_FLASH" create "$img" --size 64M --align 1m >/dev/null
	fuse_serve "$img"
	dir=$(cd "$UBLK_FLASH_RUN_DIR"/img-*/ && pwd -P)
	[ "$(losetup -n -O BACK-FILE "$DEV")" = "$dir/mnt/disk" ]
	run "$UBLK_FLASH" list -n -r -o IMAGE,STATE
	[ "$output" = "$SCRATCH/new\\x0aline.img running" ]
	run "$UBLK_FLASH" stop "$DEV"
	[ "$status" -eq 0 ]
}
