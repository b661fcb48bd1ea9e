#!/usr/bin/env bats
# When the engine turns read-only (its spare blocks used up), the kernel
# device turns read-only too (issue 28 item 5), FUSE + loop: blockdev
# --getro says 1, a read-write mount is refused as write-protected (on
# 3c48226 it was attempted and failed with "can't read superblock"), a
# read-only mount works and reads every file; one log line says why; the
# loop device is not left read-only after the server stops; an image worn
# out already is served read-only from the start; a server killed while its
# device is read-only does not leave the flag to the next user of the loop
# number either (the cleanup of its entry by `stop` or another serve's
# sweep takes it back).  The ublk path is in the guest test
# tests/vm/guest/ublk-worn-ro.sh.  Seeded: OCTANT_SEED replays.
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

# wear_out IMG: serve IMG on a failing medium and write raw until its spares
# are used up (the engine read-only), then stop it.
wear_out() {
	local i
	DEV=$("$UBLK_FLASH" serve "$1" --frontend fuse \
		--faults "program=0.02,erase=0.2,seed=$SEED")
	for i in $(seq 1 40); do
		dd if=/dev/urandom of="$DEV" bs=1M count=32 oflag=direct \
			status=none 2>/dev/null || break
	done
	echo "raw writes failed in round $i"
	[ "$(fuse_stat_field "$DEV" read_only)" = true ]
	"$UBLK_FLASH" stop "$1"
}

@test "worn read-only: a killed server's loop device is not left read-only once stop or the sweep cleaned its entry" {
	local img=$SCRATCH/w.img how dev pid i
	"$UBLK_FLASH" create "$img" --size 32M --align 1m --force
	"$UBLK_FLASH" create "$SCRATCH/b.img" --size 16M --align 1m --force
	head -c 4M /dev/zero > "$SCRATCH/plain.raw"
	wear_out "$img"
	for how in stop sweep; do
		run "$UBLK_FLASH" serve "$img" --frontend fuse
		echo "$output"
		[ "$status" -eq 0 ]
		dev=$(echo "$output" | tail -1)
		[[ "$output" == *"$dev set read-only"* ]]
		[ "$(blockdev --getro "$dev")" = 1 ]
		pid=$(fuse_pid "$img")
		kill -9 "$pid"
		for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		refute kill -0 "$pid" 2>/dev/null
		if [ "$how" = stop ]; then
			run "$UBLK_FLASH" stop "$img"
			echo "$output"
			[ "$status" -eq 0 ] && [[ "$output" == *"had died"* ]]
		else
			# another image's serve, once live, sweeps the dead entry
			fuse_serve "$SCRATCH/b.img"
			[ "$DEV" != "$dev" ]
			refute fuse_pid "$img"
		fi
		[ -z "$(losetup -n -O BACK-FILE "$dev" 2>/dev/null)" ]
		# any tool binding the number next gets a writable device
		for i in $(seq 20); do
			losetup "$dev" "$SCRATCH/plain.raw" 2>/dev/null && break
			sleep 0.2
		done
		[ "$(losetup -n -O BACK-FILE "$dev" 2>/dev/null)" = "$SCRATCH/plain.raw" ] ||
			skip "$dev was taken by another process before the test could reuse it"
		echo "$how: $dev read-only: $(blockdev --getro "$dev")"
		[ "$(blockdev --getro "$dev")" = 0 ]
		dd if=/dev/urandom of="$dev" bs=4k count=1 oflag=direct status=none
		losetup -d "$dev"
		[ "$how" = stop ] || "$UBLK_FLASH" stop "$SCRATCH/b.img"
	done
}
