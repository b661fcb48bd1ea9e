#!/usr/bin/env bats
# create on a block device (a loop device) that holds an old image: without --force it is
# refused (exit 5); with --force the create zeroes the medium's metadata first (the superblock
# area before the rest, synced: nand_backing_wipe, so a create cut short never leaves the old
# image half zeroed: tests/unit/ftl-create-cut.c), and the new image is clean and reads zeroes
# whatever the old one held.  Engine images, sets and zoned images, each over another kind.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	truncate -s 80M "$SCRATCH/dev.bin"
	LOOP=$(losetup -f --show "$SCRATCH/dev.bin")
}

teardown() {
	[ -z "${LOOP:-}" ] || losetup -d "$LOOP" 2>/dev/null || true
	fuse_teardown
}

@test "create --force over an old image full of data on a loop device: fsck clean, every byte of the new one reads zero" {
	"$UBLK_FLASH" create "$LOOP" --size 64M --align odd --force >/dev/null
	fuse_serve "$LOOP"
	dd if=/dev/urandom of="$DEV" bs=1M count=64 oflag=direct status=none
	"$UBLK_FLASH" stop "$DEV"
	bad 5 "is not empty (it holds an octant image); use --force" \
		"$UBLK_FLASH" create "$LOOP" --size 64M --align 1m
	"$UBLK_FLASH" create "$LOOP" --size 64M --align 1m --force
	run "$UBLK_FLASH" fsck "$LOOP"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"clean: 0 problems"*", 0 mapped pages"* ]]
	fuse_serve "$LOOP"
	cmp -n $((64 << 20)) "$DEV" /dev/zero
	"$UBLK_FLASH" stop "$DEV"
}

@test "create --force on a loop device, each kind over another: engine, set of 2 parts, zoned, engine; each fsck clean and info names its kind" {
	"$UBLK_FLASH" create "$LOOP" --size 64M --align odd --force >/dev/null
	"$UBLK_FLASH" fsck "$LOOP"
	"$UBLK_FLASH" create "$LOOP" --size 64M --align 1m --parts 2 --force >/dev/null
	run "$UBLK_FLASH" fsck "$LOOP"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"part 0:"*"clean"*"part 1:"*"clean"* ]]
	[[ "$("$UBLK_FLASH" info "$LOOP")" == *"parts"*"2"* ]]
	"$UBLK_FLASH" create "$LOOP" --size 32M --zoned --force >/dev/null
	run "$UBLK_FLASH" fsck "$LOOP"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"zoned, 0 pages checked, clean"* ]]
	"$UBLK_FLASH" create "$LOOP" --size 64M --align odd --force >/dev/null
	run "$UBLK_FLASH" fsck "$LOOP"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$("$UBLK_FLASH" info "$LOOP")" != *zoned* ]]
}
