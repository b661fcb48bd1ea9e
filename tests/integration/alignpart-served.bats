#!/usr/bin/env bats
# alignpart on devices ublk-flash serves (issue 11, items 4 and 5): the
# FUSE + loop device of an odd image reports 512/512 offset 0 to the
# kernel; alignpart must use the image's topology (from the run registry),
# say so, and believe a registry entry only when it is live and really
# describes the device.  Partition nodes appear after create and re-serve.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	requires flock truncate sfdisk
	[ -x "$ALIGNPART" ] || skip "alignpart not built ($ALIGNPART)"
	PLAIN_LOOPS=()
	LOCK_FD=
	ENTRY=
}

teardown() {
	local d
	release_lock
	for d in "${PLAIN_LOOPS[@]}"; do losetup -d "$d" 2>/dev/null || true; done
	# no server made the fake entry: fuse_teardown must not try to stop it
	[ -z "${ENTRY:-}" ] || rm -rf "$ENTRY"
	fuse_teardown
}

# plain_loop FILE: attach FILE to a loop device of our own; path in $LOOP.
plain_loop() {
	LOOP=$(losetup -f --show "$1")
	PLAIN_LOOPS+=("$LOOP")
}

# part_start DEV N: the kernel's start sector of partition N (sysfs).
part_start() {
	cat "/sys/class/block/$(basename "$1")p$2/start"
}

# fake_entry IMG: a registry entry for IMG that no server made: its mnt/disk
# is a plain file of the image's size, attached to a loop device ($LOOP),
# so everything but the lock matches.  The folder in $ENTRY.
fake_entry() {
	local st
	st=$(stat -c '%d %i' "$1")
	ENTRY=$UBLK_FLASH_RUN_DIR/$(printf 'img-%x-%s' ${st% *} ${st#* })
	mkdir -p "$ENTRY/mnt"
	: >"$ENTRY/lock"
	truncate -s 64M "$ENTRY/mnt/disk"
	plain_loop "$ENTRY/mnt/disk"
	echo "$(realpath "$1")" >"$ENTRY/image"
	echo "$LOOP" >"$ENTRY/dev"
	echo fuse >"$ENTRY/frontend"
	echo 2147483646 >"$ENTRY/pid"      # no such process
}

# hold_lock FILE: hold an exclusive flock on FILE (in this shell, as a
# server holds its lock) until release_lock.
hold_lock() {
	exec {LOCK_FD}<>"$1"
	flock -x -n "$LOCK_FD"
}
release_lock() {
	[ -z "${LOCK_FD:-}" ] || exec {LOCK_FD}>&-
	LOCK_FD=
}

@test "served odd image: create with no options starts at 2047, check exits 0, --topology 512/4096/0 exits 1" {
	fuse_create odd 256M odd
	fuse_serve "$SCRATCH/odd.img"
	run "$ALIGNPART" suggest "$DEV" --label gpt
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"source:       served"* ]]
	[[ "$output" == *"served_image: $SCRATCH/odd.img"* ]]
	[[ "$output" == *"is served by ublk-flash from $SCRATCH/odd.img: using the image's topology 512/4096 offset 3584, not the kernel's 512/512 offset 0"* ]]
	echo "$output" | grep -Eq '^gpt +34 +2047 '

	run "$ALIGNPART" create "$DEV" --label gpt --part rest
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -Eq '^ *1 +2047 .* yes '
	sfdisk -d "$DEV" | grep -q 'start= *2047,'

	run "$ALIGNPART" check "$DEV"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"verdict:          aligned"* ]]

	run "$ALIGNPART" check "$DEV" --topology 512/4096/0
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"source:           override"* ]]
	"$UBLK_FLASH" stop "$DEV"
}

@test "served 1m image: the image's 4K pages with offset 0, first LBA 2048" {
	fuse_create onem 128M 1m
	fuse_serve "$SCRATCH/onem.img"
	run "$ALIGNPART" suggest "$DEV" --json
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"source": "served"'* ]]
	[[ "$output" == *'"granularity": 4096'* ]]
	"$UBLK_FLASH" stop "$DEV"
}

@test "an image path with a newline: alignpart uses the served image's topology; list, info, stats and stop find it" {
	local img=$SCRATCH/a$'\n'b.img
	"$UBLK_FLASH" create "$img" --size 64M --align odd --force >/dev/null
	fuse_serve "$img"
	run "$ALIGNPART" suggest "$DEV" --label gpt
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"source:       served"* ]]
	[[ "$output" == *"topology:     512/4096 offset 3584 "* ]]
	[[ "$output" != *"does not check out"* ]]
	echo "$output" | grep -Eq '^gpt +34 +2047 '
	# the key: value report stays one line per key: the newline is \x0a
	[ "$(grep '^served_image:' <<<"$output")" = "served_image: $SCRATCH/a\x0ab.img" ]
	[ -z "$(grep -x 'b.img' <<<"$output")" ]
	run "$ALIGNPART" suggest "$DEV" --json
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"served_image": "'"$SCRATCH"'/a\nb.img"'* ]]
	run "$UBLK_FLASH" list -r -n -o DEVICE,IMAGE,STATE
	echo "$output"
	[ "$output" = "$DEV $SCRATCH/a\x0ab.img running" ]
	run "$UBLK_FLASH" info "$DEV" --json
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == '{"image":"'"$SCRATCH"'/a\nb.img","align":"odd",'* ]]
	run "$UBLK_FLASH" stats "$DEV" --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"host_write_sectors":'* ]]
	"$UBLK_FLASH" stop "$DEV"
	[ -z "$(ls "$UBLK_FLASH_RUN_DIR")" ]
}

@test "an image path with a tab, a backslash and a newline: the report, the note and JSON escape them" {
	requires python3
	local img=$SCRATCH/t$'\t'b\\s$'\n'served_image:\ x.img
	"$UBLK_FLASH" create "$img" --size 64M --align odd --force >/dev/null
	fuse_serve "$img"
	run "$ALIGNPART" suggest "$DEV" --label gpt
	echo "$output"
	[ "$status" -eq 0 ]
	# util-linux's \xHH: control characters and the backslash itself
	[ "$(grep '^served_image:' <<<"$output")" = "served_image: $SCRATCH/t\x09b\x5cs\x0aserved_image: x.img" ]
	[ "$(grep -c '^served_image:' <<<"$output")" -eq 1 ]
	[[ "$output" == *"is served by ublk-flash from $SCRATCH/t\x09b\x5cs\x0aserved_image: x.img: using the image's topology"* ]]
	run "$ALIGNPART" suggest "$DEV" --json
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"served_image": "'"$SCRATCH"'/t\tb\\s\nserved_image: x.img"'* ]]
	"$ALIGNPART" suggest "$DEV" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["device"][0]["served_image"] == sys.argv[1], d' "$img"
	"$UBLK_FLASH" stop "$DEV"
}

@test "registry entry without a live lock holder is not believed; with one it is" {
	"$UBLK_FLASH" create "$SCRATCH/f.img" --size 64M --align odd --force >/dev/null
	fake_entry "$SCRATCH/f.img"
	run "$ALIGNPART" suggest "$LOOP" --label dos
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"source:      device"* ]]
	[[ "$output" != *"does not check out"* ]]    # a dead server's entry: nothing to say
	hold_lock "$ENTRY/lock"
	run "$ALIGNPART" suggest "$LOOP" --label dos
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"source:       served"* ]]
	echo "$output" | grep -Eq '^dos +1 +2047 '
}

@test "a live entry whose device is another loop (not backed by its FUSE file) is not believed" {
	"$UBLK_FLASH" create "$SCRATCH/f.img" --size 64M --align odd --force >/dev/null
	fake_entry "$SCRATCH/f.img"
	hold_lock "$ENTRY/lock"
	truncate -s 64M "$SCRATCH/other"
	plain_loop "$SCRATCH/other"
	echo "$LOOP" >"$ENTRY/dev"     # a recycled number: the entry names it
	run "$ALIGNPART" suggest "$LOOP" --label dos
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"source:      device"* ]]
	# not silently: one line says the kernel's topology is used, and why not the image's
	[[ "$output" == *"alignpart: warning: $LOOP is recorded as served by ublk-flash from $SCRATCH/f.img, but the entry does not check out: using the kernel's topology 512/512 offset 0 (LIBALIGN_DEBUG=1 says why)"* ]]
	[ "$(grep -c 'does not check out' <<<"$output")" -eq 1 ]
}

@test "a live entry whose image was replaced by another file is not believed" {
	"$UBLK_FLASH" create "$SCRATCH/f.img" --size 64M --align odd --force >/dev/null
	fake_entry "$SCRATCH/f.img"
	hold_lock "$ENTRY/lock"
	"$UBLK_FLASH" create "$SCRATCH/g.img" --size 64M --align odd --force >/dev/null
	mv "$SCRATCH/g.img" "$SCRATCH/f.img"
	run "$ALIGNPART" suggest "$LOOP" --label dos
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"source:      device"* ]]
	[[ "$output" == *"alignpart: warning: $LOOP is recorded as served by ublk-flash from $SCRATCH/f.img, but the entry does not check out: using the kernel's topology 512/512 offset 0 (LIBALIGN_DEBUG=1 says why)"* ]]
}

@test "partition nodes appear after create on a served loop device, follow a new table, and come back on re-serve" {
	fuse_create parts 256M odd
	fuse_serve "$SCRATCH/parts.img"
	"$ALIGNPART" create "$DEV" --label dos --part 64MiB --part rest
	[ -b "${DEV}p1" ]
	[ -b "${DEV}p2" ]
	[ "$(part_start "$DEV" 1)" = 2047 ]
	[ "$(part_start "$DEV" 2)" = $(( 2047 + 131072 )) ]
	# a new table with one partition: p2 goes, p1 changes size
	"$ALIGNPART" create "$DEV" --label gpt --part rest --force
	[ -b "${DEV}p1" ]
	[ ! -e "/sys/class/block/$(basename "$DEV")p2" ]
	[ "$(part_start "$DEV" 1)" = 2047 ]
	[ "$(cat "/sys/class/block/$(basename "$DEV")p1/size")" = $(( 524254 - 2047 + 1 )) ]
	"$UBLK_FLASH" stop "$DEV"
	[ ! -b "${DEV}p1" ]
	fuse_serve "$SCRATCH/parts.img"
	[ -b "${DEV}p1" ]
	[ "$(part_start "$DEV" 1)" = 2047 ]
	"$UBLK_FLASH" stop "$DEV"
}

@test "a partition of a served device: the image's topology with the partition's own offset" {
	fuse_create pp 256M odd
	fuse_serve "$SCRATCH/pp.img"
	# p1 forced to 2048 (medium byte 2048*512+512: mid-page), p2 aligned
	"$ALIGNPART" create "$DEV" --label dos --start 2048 --part 64MiB --part rest 2>/dev/null
	run "$ALIGNPART" suggest "${DEV}p1" --label gpt
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"topology:     512/4096 offset 3584 "*"(served image)"* ]]
	echo "$output" | grep -Eq '^gpt +34 +2047 '
	run "$ALIGNPART" suggest "${DEV}p2" --label gpt
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"topology:     512/4096 offset 0 "*"(served image)"* ]]
	echo "$output" | grep -Eq '^gpt +34 +2048 '
	"$UBLK_FLASH" stop "$DEV"
}

# registry_scans CMD...: run alignpart CMD... with LIBALIGN_DEBUG=1 and print
# how many times it looked through the run registry (libalign says "run
# registry DIR: an entry for MAJ:MIN?" at each scan), then its other lines.
registry_scans() {
	local out
	out=$(LIBALIGN_DEBUG=1 "$ALIGNPART" "$@" 2>&1)
	grep -c "^libalign: run registry $UBLK_FLASH_RUN_DIR: an entry for" <<<"$out" || true
	grep -v '^libalign: ' <<<"$out"
}

# Issue 32 item 4: libalign's probe returns what it learned (align_probe:
# source, the registry's verdict, the image), so a command probes once.
# Before, create/check/suggest looked through the registry twice (the
# probe, then again for the served note or the "does not check out"
# warning; strace -f -e openat counts 2 opens of the run folder): with the
# fix in topology.c reverted this test counts 2.
@test "alignpart create/suggest look through the run registry once: served, plain, and an entry that does not check out" {
	fuse_create once 64M odd
	fuse_serve "$SCRATCH/once.img"
	run registry_scans create "$DEV" --label gpt --part 8MiB
	echo "$output"
	[ "${lines[0]}" = 1 ]
	[[ "$output" == *"is served by ublk-flash from $SCRATCH/once.img: using the image's topology 512/4096 offset 3584"* ]]
	sfdisk -d "$DEV" | grep -q 'start= *2047,'
	"$UBLK_FLASH" stop "$DEV"

	truncate -s 64M "$SCRATCH/plain"
	plain_loop "$SCRATCH/plain"
	run registry_scans create "$LOOP" --label dos --part 8MiB
	echo "$output"
	[ "${lines[0]}" = 1 ]
	[[ "$output" != *"ublk-flash"* ]]

	"$UBLK_FLASH" create "$SCRATCH/f.img" --size 64M --align odd --force >/dev/null
	fake_entry "$SCRATCH/f.img"
	hold_lock "$ENTRY/lock"
	"$UBLK_FLASH" create "$SCRATCH/g.img" --size 64M --align odd --force >/dev/null
	mv "$SCRATCH/g.img" "$SCRATCH/f.img"
	run registry_scans suggest "$LOOP" --label dos
	echo "$output"
	[ "${lines[0]}" = 1 ]
	[[ "$output" == *"alignpart: warning: $LOOP is recorded as served by ublk-flash from $SCRATCH/f.img, but the entry does not check out"* ]]
}
