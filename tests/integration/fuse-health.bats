#!/usr/bin/env bats
# health DEV through a FUSE server: the health log comes live from the
# server (serve/control.c), its lifetime counters survive a kill -9 up to
# the last checkpoint, the next server counts the unsafe shutdown and both
# power cycles, and a clean stop leaves them all in the image.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

# hfield DEV|IMG FIELD: one number from `health --json`.
hfield() {
	"$UBLK_FLASH" health "$1" --json | tr ',{}' '\n\n\n' | \
		awk -F: -v k="\"$2\"" '$1 == k { print $2 }'
}

@test "health DEV: live from the server; after kill -9 the image keeps the last checkpoint's counters; the next server counts the unsafe shutdown" {
	local img=$SCRATCH/h.img pid w0 w1 w2 r1
	fuse_create h 64M odd
	fuse_serve "$img"
	# 32 MiB of writes: past one checkpoint interval (68 block
	# allocations on this image), so the session checkpoints
	dd if=/dev/urandom of="$DEV" bs=1M count=32 oflag=direct status=none
	dd if="$DEV" of=/dev/null bs=64k count=16 iflag=direct status=none
	run "$UBLK_FLASH" health "$DEV"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Critical Warning:                   0x00"* ]]
	[[ "$output" == *"Power Cycles:                       1"* ]]
	[[ "$output" == *"Unsafe Shutdowns:                   0"* ]]
	w1=$(hfield "$DEV" host_write_sectors)
	r1=$(hfield "$DEV" host_read_sectors)
	echo "live: written $w1 read $r1 sectors"
	[ "$w1" -ge 65536 ]
	[ "$r1" -ge 2048 ]
	[ "$(hfield "$DEV" data_units_written)" -eq $(( (w1 + 999) / 1000 )) ]
	[ "$(hfield "$DEV" host_write_commands)" -ge 32 ]
	[ "$(hfield "$img" host_write_sectors)" = "$w1" ]  # IMG: the server too

	pid=$(fuse_pid "$img")
	kill -9 "$pid"
	for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	refute kill -0 "$pid" 2>/dev/null
	# a dead server's DEV: its image, read offline (the last checkpoint)
	run "$UBLK_FLASH" health "$DEV" --json
	echo "$output"
	[ "$status" -eq 0 ]
	w0=$(hfield "$DEV" host_write_sectors)
	echo "after the kill: $w0 of $w1 sectors"
	[ "$w0" -gt 0 ] && [ "$w0" -le "$w1" ]
	[ "$(hfield "$DEV" power_cycles)" -eq 1 ]
	[ "$(hfield "$DEV" unsafe_shutdowns)" -eq 0 ]    # not known yet

	fuse_serve "$img"                    # rolls forward
	[ "$(hfield "$DEV" unsafe_shutdowns)" -eq 1 ]
	[ "$(hfield "$DEV" power_cycles)" -eq 2 ]
	[ "$(hfield "$DEV" host_write_sectors)" -eq "$w0" ]
	dd if=/dev/zero of="$DEV" bs=4k count=8 oflag=direct status=none
	w2=$(hfield "$DEV" host_write_sectors)
	[ "$w2" -eq $((w0 + 64)) ]
	"$UBLK_FLASH" stop "$DEV"
	# a clean stop: everything in the image
	run "$UBLK_FLASH" health "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Power Cycles:                       2"* ]]
	[[ "$output" == *"Unsafe Shutdowns:                   1"* ]]
	[ "$(hfield "$img" host_write_sectors)" -eq "$w2" ]
	"$UBLK_FLASH" fsck "$img"
}

@test "health of a device ublk-flash does not serve: one line, exit 3" {
	local loop
	truncate -s 16M "$SCRATCH/plain"
	loop=$(losetup -f --show "$SCRATCH/plain")
	run "$UBLK_FLASH" health "$loop"
	losetup -d "$loop"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "ublk-flash: health: $loop is not served by ublk-flash" ]
}
