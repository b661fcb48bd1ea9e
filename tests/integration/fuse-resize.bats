#!/usr/bin/env bats
# ublk-flash resize on FUSE + loop (issue 29 item 3): a filesystem with
# checksummed, fsync'd files (and fio --verify) on a served image; stop,
# resize, serve again: the device has the new size, the filesystem grows
# mounted (resize2fs, btrfs filesystem resize max), every checksum
# matches, fsck clean.  A served image is refused (exit 5, nothing
# changed).  Each case failed before resize existed (unknown command).
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

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

	# served: refused, nothing changed
	run "$UBLK_FLASH" resize "$img" --size 320M
	echo "$output"
	[ "$status" -eq 5 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"online resize is not supported"* ]]
	run "$UBLK_FLASH" resize "$DEV" --size 320M
	echo "$output"
	[ "$status" -eq 5 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$DEV is served from $img"* ]]
	[ "$(blockdev --getsize64 "$DEV")" = $((160 << 20)) ]

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
