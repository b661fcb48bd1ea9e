#!/usr/bin/env bats
# When the engine turns read-only (its spare blocks used up), the kernel
# device turns read-only too (issue 28 item 5), FUSE + loop: blockdev
# --getro says 1, a read-write mount is refused as write-protected (on
# 3c48226 it was attempted and failed with "can't read superblock"), a
# read-only mount works and reads every file; one log line says why; the
# loop device is not left read-only after the server stops; an image worn
# out already is served read-only from the start.  The ublk path is in the
# guest test tests/vm/guest/ublk-worn-ro.sh.  Seeded: OCTANT_SEED replays.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	requires mkfs.ext4 blockdev sha256sum
	SEED=${OCTANT_SEED:-$(( (RANDOM << 15) | RANDOM ))}
	echo "seed $SEED (OCTANT_SEED to replay)"
}
teardown() { fuse_teardown; }

# check_ro DEV: read-only for the kernel; rw mount refused, ro mount reads
# every file of $SCRATCH/sums.
check_ro() {
	local n s
	[ "$(blockdev --getro "$1")" = 1 ]
	[ "$(cat "/sys/block/${1#/dev/}/ro")" = 1 ]
	run mount -w "$1" "$SCRATCH/m"
	echo "mount -w: $status: $output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"write-protected"* ]]
	mount -o ro "$1" "$SCRATCH/m"
	while read -r n s; do
		[ "$(sha256sum < "$SCRATCH/m/$n" | cut -d' ' -f1)" = "$s" ] ||
			{ echo "$n changed"; umount "$SCRATCH/m"; return 1; }
	done < "$SCRATCH/sums"
	umount "$SCRATCH/m"
}

@test "worn read-only: the spares run out while served: the device turns read-only, rw mount refused, ro mount reads every file" {
	local img=$SCRATCH/w.img i n dev0
	"$UBLK_FLASH" create "$img" --size 32M --align 1m --force
	fuse_serve "$img"
	# ext4 on the first half, the second half left for raw writes
	mkfs.ext4 -q -F "$DEV" 16M
	mount "$DEV" "$SCRATCH/m"
	: > "$SCRATCH/sums"
	for i in $(seq 1 8); do
		head -c $(( (RANDOM % 512 + 1) * 1024 )) /dev/urandom > "$SCRATCH/m/f$i"
		echo "f$i $(sha256sum < "$SCRATCH/m/f$i" | cut -d' ' -f1)" >> "$SCRATCH/sums"
	done
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$img"

	# program/erase failures until more blocks went bad than the spares
	# absorb (this geometry absorbs 2)
	DEV=$("$UBLK_FLASH" serve "$img" --frontend fuse --log "$SCRATCH/log" \
		--faults "program=0.02,erase=0.2,seed=$SEED")
	dev0=$DEV
	[ "$(blockdev --getro "$DEV")" = 0 ]
	for i in $(seq 1 20); do
		dd if=/dev/urandom of="$DEV" bs=1M seek=16 count=16 oflag=direct \
			status=none 2>/dev/null || break
	done
	echo "raw writes failed in round $i"
	[ "$i" -lt 20 ]
	for i in $(seq 50); do
		[ "$(blockdev --getro "$DEV")" = 1 ] && break
		sleep 0.1
	done
	cat "$SCRATCH/log"
	[ "$(blockdev --getro "$DEV")" = 1 ]
	[ "$(fuse_stat_field "$DEV" read_only)" = true ]
	[ "$(grep -c "ublk-flash: $DEV set read-only: the flash's spare blocks are used up" "$SCRATCH/log")" -eq 1 ]
	check_ro "$DEV"
	"$UBLK_FLASH" stop "$img"
	# the loop device does not stay read-only for its next user
	[ "$(blockdev --getro "$dev0")" = 0 ]

	# worn out already: read-only from the start, said on serve's stderr
	run "$UBLK_FLASH" serve "$img" --frontend fuse
	echo "$output"
	[ "$status" -eq 0 ]
	DEV=$(echo "$output" | tail -1)
	[[ "$output" == *"set read-only: the flash's spare blocks are used up"* ]]
	check_ro "$DEV"
	"$UBLK_FLASH" stop "$img"
	[ "$(blockdev --getro "$DEV")" = 0 ]
}
