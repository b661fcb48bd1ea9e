#!/usr/bin/env bats
# ext4 and btrfs on `ublk-flash serve --frontend fuse` (FUSE file + loop),
# in both align modes: write with checksums (and fio --verify=crc32c), fsck
# clean, stop, serve again, every checksum matches.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

roundtrip() { # FS MODE
	local fs=$1 mode=$2 img i
	fuse_requires_fs "$fs"
	fuse_create "$fs-$mode" 384M "$mode"
	img=$SCRATCH/$fs-$mode.img
	fuse_serve "$img"
	local n=${DEV#/dev/loop}
	[ "$(cat /sys/block/loop$n/queue/logical_block_size)" = 512 ]
	[ "$(cat /sys/block/loop$n/loop/dio)" = 1 ]   # direct I/O in loop

	fuse_mkfs "$fs" "$DEV"
	mount "$DEV" "$SCRATCH/m"
	for i in $(seq 1 24); do
		head -c $(( (RANDOM % 512 + 1) * 1024 + RANDOM % 4096 )) /dev/urandom \
			> "$SCRATCH/m/file$i"
	done
	dd if=/dev/urandom of="$SCRATCH/m/big" bs=1M count=40 status=none
	if command -v fio >/dev/null; then
		fio --name=verify --directory="$SCRATCH/m" --size=32M --bs=4k \
		    --rw=randwrite --ioengine=psync --direct=1 --verify=crc32c \
		    --do_verify=1 --verify_state_save=0 --output=/dev/null
	fi
	(cd "$SCRATCH/m" && sha256sum file* big > "$SCRATCH/sums")
	umount "$SCRATCH/m"
	fuse_fsck "$fs" "$DEV"

	"$UBLK_FLASH" stop "$DEV"
	[ ! -e "$UBLK_FLASH_RUN_DIR"/img-*/pid ]
	refute grep -q "$SCRATCH/run" /proc/self/mountinfo
	[ -z "$(losetup -l -n -O BACK-FILE | grep "$SCRATCH")" ]

	fuse_serve "$img"
	[ "$(fuse_stat_field "$DEV" last_mount)" = '"clean"' ]
	fuse_fsck "$fs" "$DEV"
	mount "$DEV" "$SCRATCH/m"
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums")
	if command -v fio >/dev/null; then
		fio --name=verify --directory="$SCRATCH/m" --size=32M --bs=4k \
		    --rw=randwrite --ioengine=psync --direct=1 --verify=crc32c \
		    --verify_only --output=/dev/null
	fi
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$img"
}

@test "ext4 on fuse+loop, odd mode: checksums survive stop/serve, fsck clean" {
	roundtrip ext4 odd
}

@test "ext4 on fuse+loop, 1m mode: checksums survive stop/serve, fsck clean" {
	roundtrip ext4 1m
}

@test "btrfs on fuse+loop, odd mode: checksums survive stop/serve, check clean" {
	roundtrip btrfs odd
}

@test "btrfs on fuse+loop, 1m mode: checksums survive stop/serve, check clean" {
	roundtrip btrfs 1m
}

@test "partition scan: a partition table on the loop device shows /dev/loopNp1" {
	requires sfdisk
	fuse_create part 256M odd
	fuse_serve "$SCRATCH/part.img"
	[ "$(cat /sys/block/${DEV#/dev/}/loop/partscan)" = 1 ]
	echo 'start=2048, type=83' | sfdisk -q "$DEV"
	for i in $(seq 30); do [ -b "${DEV}p1" ] && break; sleep 0.1; done
	# Kernels built without the DOS partition parser only learn partitions
	# from userspace (BLKPG): partx adds them, as make compare does.
	[ -b "${DEV}p1" ] || { requires partx; partx -a "$DEV"; }
	[ -b "${DEV}p1" ]
	[ "$(blockdev --getsz "${DEV}p1")" = $(( 256 * 2048 - 2048 )) ]
	"$UBLK_FLASH" stop "$DEV"
	[ ! -b "${DEV}p1" ]
}
