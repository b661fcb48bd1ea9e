#!/usr/bin/env bats
# No command destroys a served image or acts on the wrong device (issue 11):
# create / fsck --repair refuse a served image (exit 5, device and pid named);
# stop --force with ext4 mounted ends in bounded time; stop DEV checks the
# loop's backing file against the registry; a stop whose clean checkpoint
# failed says so; a failed serve leaves nothing in the run folder.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

# files_sum DIR: one checksum over every file under DIR.
files_sum() {
	(cd "$1" && find . -type f ! -name lost+found -print0 | sort -z |
		xargs -0 sha256sum) | sha256sum
}

@test "create --force and fsck --repair refuse a served image: exit 5, device and pid named, data intact" {
	fuse_requires_fs ext4
	fuse_create a 256M odd
	img=$SCRATCH/a.img
	fuse_serve "$img"
	pid=$(fuse_pid "$img")
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	head -c 3M /dev/urandom > "$SCRATCH/m/f1"
	sync
	sum=$(files_sum "$SCRATCH/m")
	for args in "create $img --size 1G --align odd --force" \
		    "create $img --size 1G --align 1m" \
		    "fsck $img --repair"; do
		run "$UBLK_FLASH" $args
		echo "$args -> $status: $output"
		[ "$status" -eq 5 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *"$DEV"* ]]
		[[ "$output" == *"pid $pid"* ]]
	done
	# Nothing was changed: the filesystem and the image are whole.
	[ "$(files_sum "$SCRATCH/m")" = "$sum" ]
	umount "$SCRATCH/m"
	fuse_fsck ext4 "$DEV"
	"$UBLK_FLASH" stop "$DEV"
	"$UBLK_FLASH" fsck "$img"
	[ "$("$UBLK_FLASH" info "$img" --json | grep -o '"logical_size":[0-9]*')" = \
	  '"logical_size":268435456' ]
	fuse_serve "$img"
	mount "$DEV" "$SCRATCH/m"
	[ "$(files_sum "$SCRATCH/m")" = "$sum" ]
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
}
