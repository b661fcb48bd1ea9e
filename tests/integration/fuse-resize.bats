#!/usr/bin/env bats
# ublk-flash resize on FUSE + loop (issue 29 item 3): a filesystem with
# checksummed, fsync'd files (and fio --verify) on a served image; stop,
# resize, serve again: the device has the new size, the filesystem grows
# mounted (resize2fs, btrfs filesystem resize max), every checksum
# matches, fsck clean.  Each case failed before resize existed (unknown
# command).  Online: the served image (and its loop device) grows while
# btrfs is mounted and written (fio --verify), refusals change nothing;
# it failed before online resize (exit 5, served).  kill -9 of the server
# during online resizes: the old or the new size, every fsync'd file.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() {
	[ -n "${FPID:-}" ] && kill -9 "$FPID" 2>/dev/null
	fuse_teardown
}

# grow FS MODE GROWCMD...: the whole round, GROWCMD run on the mount.
grow() {
	local fs=$1 mode=$2 img before after
	shift 2
	fuse_requires_fs "$fs"
	img=$SCRATCH/$fs-$mode.img
	"$UBLK_FLASH" create "$img" --size 160M --align "$mode" \
		--max-size 512M --force >/dev/null
	fuse_serve "$img"
	# ext4 with 4 KiB blocks: below 512 MiB mkfs picks 1 KiB ones, whose
	# online grow this host's kernel refuses (EPERM, on a plain loop file
	# too: not octant's)
	if [ "$fs" = ext4 ]; then mkfs.ext4 -q -F -b 4096 "$DEV"
	else fuse_mkfs "$fs" "$DEV"; fi
	mount "$DEV" "$SCRATCH/m"
	fuse_files_make "$SCRATCH/m" 30
	if command -v fio >/dev/null; then
		fio --name=verify --directory="$SCRATCH/m" --size=16M --bs=4k \
		    --rw=randwrite --ioengine=psync --direct=1 --verify=crc32c \
		    --do_verify=1 --verify_state_save=0 --output=/dev/null
	fi
	sync -f "$SCRATCH/m"
	before=$(df -B1 --output=size "$SCRATCH/m" | tail -1)

	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
	"$UBLK_FLASH" resize "$img" --size 320M
	"$UBLK_FLASH" fsck "$img"

	fuse_serve "$img"
	[ "$(blockdev --getsize64 "$DEV")" = $((320 << 20)) ]
	mount "$DEV" "$SCRATCH/m"
	"$@" "$SCRATCH/m" "$DEV"
	after=$(df -B1 --output=size "$SCRATCH/m" | tail -1)
	echo "filesystem size $before -> $after"
	[ "$after" -gt $((before + (100 << 20))) ]
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums")
	# the new space takes data
	dd if=/dev/urandom of="$SCRATCH/m/big" bs=1M count=200 status=none
	sha256sum "$SCRATCH/m/big" > "$SCRATCH/big.sum"
	umount "$SCRATCH/m"
	fuse_fsck "$fs" "$DEV"
	"$UBLK_FLASH" stop "$DEV"
	fuse_serve "$img"
	mount "$DEV" "$SCRATCH/m"
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums")
	sha256sum -c --quiet "$SCRATCH/big.sum"
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
}

# ext4: online (mounted) where the kernel allows it; this host's kernel
# (6.18) refuses every online grow with EPERM, on a plain loop file too,
# so there: unmounted (e2fsck -f, resize2fs), said on the TAP output
ext4_grow() {
	local out
	out=$(resize2fs "$2" 2>&1) && return 0
	echo "$out"
	[[ "$out" == *"Permission denied to resize"* ]] || return 1
	echo "# note: online resize2fs refused by this kernel (EPERM):" \
	     "grown unmounted" >&3
	umount "$1"
	e2fsck -fy "$2"
	resize2fs "$2"
	mount "$2" "$1"
}
btrfs_grow() { btrfs filesystem resize max "$1"; }

@test "resize: ext4 (odd) grows with resize2fs (mounted where the kernel allows), data intact" {
	requires resize2fs
	grow ext4 odd ext4_grow
}

@test "resize: btrfs (1m) grows mounted with btrfs filesystem resize max, data intact" {
	grow btrfs 1m btrfs_grow
}

@test "resize: a GPT on the grown disk: alignpart check says how to move its backup header" {
	requires parted sgdisk
	local img=$SCRATCH/gpt.img
	"$UBLK_FLASH" create "$img" --size 64M --align odd --max-size 256M >/dev/null
	fuse_serve "$img"
	parted -s "$DEV" mklabel gpt mkpart p1 1MiB 32MiB
	"$UBLK_FLASH" stop "$DEV"
	"$UBLK_FLASH" resize "$img" --size 128M
	fuse_serve "$img"
	run "$ALIGNPART" check "$DEV"
	echo "$output"
	[[ "$output" == *"backup header is not at the end"* ]]
	[[ "$output" == *"sgdisk -e $DEV"* ]]
	[[ "$output" == *"this command wrote nothing"* ]]
	sgdisk -e "$DEV"
	run "$ALIGNPART" check "$DEV"
	echo "$output"
	[[ "$output" != *"backup"* ]]
	"$UBLK_FLASH" stop "$DEV"
}

@test "resize online: btrfs (1m) mounted and written grows with the loop device, data intact; refusals change nothing" {
	requires fio
	local img=$SCRATCH/online.img before after
	fuse_requires_fs btrfs
	"$UBLK_FLASH" create "$img" --size 160M --align 1m --max-size 512M \
		--force >/dev/null
	fuse_serve "$img"
	fuse_mkfs btrfs "$DEV"
	mount "$DEV" "$SCRATCH/m"
	fuse_files_make "$SCRATCH/m" 30
	sync -f "$SCRATCH/m"
	before=$(df -B1 --output=size "$SCRATCH/m" | tail -1)

	# refused, nothing changed: smaller, beyond the room, not a size
	run "$UBLK_FLASH" resize "$img" --size 100M
	echo "$output"
	[ "$status" -eq 6 ] && [ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"shrinking is not supported"* ]]
	run "$UBLK_FLASH" resize "$DEV" --size 2G
	echo "$output"
	[ "$status" -eq 6 ] && [ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"create --max-size"* ]]
	[ "$(blockdev --getsize64 "$DEV")" = $((160 << 20)) ]

	# grown while fio writes and verifies on the mounted filesystem
	fio --name=verify --directory="$SCRATCH/m" --size=24M --bs=4k \
	    --rw=randwrite --ioengine=psync --direct=1 --verify=crc32c \
	    --do_verify=1 --verify_state_save=0 --loops=3 \
	    --output="$SCRATCH/fio.out" &
	FPID=$!
	sleep 1
	run "$UBLK_FLASH" resize "$img" --size 320M
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"335544320 bytes (served on $DEV)"* ]]
	[ "$(blockdev --getsize64 "$DEV")" = $((320 << 20)) ]
	# its device names it too
	run "$UBLK_FLASH" resize "$DEV" --size 352M
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(blockdev --getsize64 "$DEV")" = $((352 << 20)) ]
	wait "$FPID" || { cat "$SCRATCH/fio.out"; false; }
	FPID=
	btrfs filesystem resize max "$SCRATCH/m"
	after=$(df -B1 --output=size "$SCRATCH/m" | tail -1)
	echo "filesystem size $before -> $after"
	[ "$after" -gt $((before + (150 << 20))) ]
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums")
	# the new space takes data
	dd if=/dev/urandom of="$SCRATCH/m/big" bs=1M count=200 status=none
	sha256sum "$SCRATCH/m/big" > "$SCRATCH/big.sum"
	umount "$SCRATCH/m"
	fuse_fsck btrfs "$DEV"
	"$UBLK_FLASH" stop "$DEV"
	"$UBLK_FLASH" fsck "$img"
	fuse_serve "$img"
	[ "$(blockdev --getsize64 "$DEV")" = $((352 << 20)) ]
	mount "$DEV" "$SCRATCH/m"
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums")
	sha256sum -c --quiet "$SCRATCH/big.sum"
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
}

@test "resize online: kill -9 of the server during resizes leaves the old or the new size, every fsync'd file intact" {
	local img=$SCRATCH/kill.img seed=${OCTANT_SEED:-$RANDOM} it size got
	local pid delay rpid
	echo "seed $seed"
	RANDOM=$seed
	"$UBLK_FLASH" create "$img" --size 160M --align odd --max-size 512M \
		--force >/dev/null
	fuse_serve "$img"
	mkfs.ext4 -q -F -b 4096 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	fuse_files_make "$SCRATCH/m" 20
	sync -f "$SCRATCH/m"
	umount "$SCRATCH/m"
	size=$((160 << 20))
	for it in $(seq "${OCTANT_RESIZE_KILLS:-6}"); do
		pid=$(fuse_pid "$img")
		[ -n "$pid" ]
		delay=$(( RANDOM % 40 ))
		"$UBLK_FLASH" resize "$img" --size $((size + (32 << 20))) \
			>/dev/null 2>&1 &
		rpid=$!
		sleep "$delay"e-3
		kill -9 "$pid"
		wait "$rpid" || true
		for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		# what the kill left: no problem, whatever the instant (a
		# resize cut between its superblock writes is a note: it was
		# "copy 1 damaged" and a damaged checkpoint, exit 4)
		"$UBLK_FLASH" fsck "$img"
		fuse_serve "$img"             # cleans the dead loop + mount
		got=$(blockdev --getsize64 "$DEV")
		echo "iteration $it: delay ${delay} ms, $size -> $got"
		[ "$got" = "$size" ] || [ "$got" = $((size + (32 << 20))) ]
		size=$got
		"$UBLK_FLASH" stop "$DEV"
		"$UBLK_FLASH" fsck "$img"
		fuse_serve "$img"
		e2fsck -fn "$DEV"
		mount -o ro "$DEV" "$SCRATCH/m"
		(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums")
		umount "$SCRATCH/m"
	done
}
