#!/usr/bin/env bats
# serve --read-only over FUSE + loop (issue 14): the FUSE file and the loop
# device are read-only, writes fail at the device, the engine never writes
# the image (no checkpoint at open or stop; an image that needs roll-forward
# is rolled forward in memory only): the image's bytes, by checksum, are the
# same after serve and stop.  ublk (UBLK_ATTR_READ_ONLY) and --read-only
# with --dm are in the guest test tests/vm/guest/ublk-basic.sh.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

# write_pattern DEV: 1 MiB of random data at sector 0, its checksum in $PAT.
write_pattern() {
	head -c 1048576 /dev/urandom >"$SCRATCH/pat"
	PAT=$(sha256sum <"$SCRATCH/pat")
	dd if="$SCRATCH/pat" of="$1" bs=64k oflag=direct conv=fsync status=none
}

@test "read-only: device and FUSE file are read-only, writes fail, image bytes unchanged" {
	fuse_create ro 64M odd
	fuse_serve "$SCRATCH/ro.img"
	write_pattern "$DEV"
	"$UBLK_FLASH" stop "$DEV"
	sum0=$(sha256sum <"$SCRATCH/ro.img")

	DEV=$("$UBLK_FLASH" serve "$SCRATCH/ro.img" --frontend fuse --read-only)
	[ -b "$DEV" ]
	[ "$(blockdev --getro "$DEV")" = 1 ]
	[ "$(cat "/sys/block/${DEV#/dev/}/ro")" = 1 ]
	d=$(dirname "$(dirname "$(ls "$UBLK_FLASH_RUN_DIR"/img-*/mnt/disk)")")
	[ "$(cat "$d/access")" = ro ]
	# the FUSE file: mode 0400 on a read-only mount; opening it for
	# writing fails even for root
	[ "$(stat -c %a "$d/mnt/disk")" = 400 ]
	run bash -c "echo x >>'$d/mnt/disk'"
	[ "$status" -ne 0 ]
	echo "$output" | grep -q "Read-only file system"
	# the device: a write fails (EPERM from the block layer), a discard too
	run dd if=/dev/zero of="$DEV" bs=4k count=1 oflag=direct status=none
	[ "$status" -ne 0 ]
	echo "$output"
	echo "$output" | grep -Eq "Operation not permitted|Read-only file system"
	run blkdiscard -o 0 -l 65536 "$DEV"
	[ "$status" -ne 0 ]
	# reads return what the read-write serve wrote
	[ "$(head -c 1048576 "$DEV" | sha256sum)" = "$PAT" ]
	"$UBLK_FLASH" stop "$DEV"
	[ "$(sha256sum <"$SCRATCH/ro.img")" = "$sum0" ]
	[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR")" ]
}

@test "read-only: an image that needs roll-forward is rolled forward in memory, not written" {
	fuse_create rf 64M 1m
	fuse_serve "$SCRATCH/rf.img"
	write_pattern "$DEV"
	pid=$(fuse_pid "$SCRATCH/rf.img")
	kill -9 "$pid"
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	sum0=$(sha256sum <"$SCRATCH/rf.img")

	DEV=$("$UBLK_FLASH" serve "$SCRATCH/rf.img" --frontend fuse --read-only)
	[ "$(head -c 1048576 "$DEV" | sha256sum)" = "$PAT" ]
	"$UBLK_FLASH" stop "$DEV"
	[ "$(sha256sum <"$SCRATCH/rf.img")" = "$sum0" ]
	# twice: nothing was recorded, so it rolls forward again
	DEV=$("$UBLK_FLASH" serve "$SCRATCH/rf.img" --frontend fuse --read-only)
	[ "$(head -c 1048576 "$DEV" | sha256sum)" = "$PAT" ]
	"$UBLK_FLASH" stop "$DEV"
	[ "$(sha256sum <"$SCRATCH/rf.img")" = "$sum0" ]
	# a read-write serve then rolls forward for real; the data is there
	fuse_serve "$SCRATCH/rf.img"
	[ "$(head -c 1048576 "$DEV" | sha256sum)" = "$PAT" ]
	"$UBLK_FLASH" stop "$DEV"
	"$UBLK_FLASH" fsck "$SCRATCH/rf.img"
}

@test "read-only: create --force and fsck --repair of a read-only served image exit 5" {
	fuse_create busy 64M odd
	sum0=$(sha256sum <"$SCRATCH/busy.img")
	DEV=$("$UBLK_FLASH" serve "$SCRATCH/busy.img" --frontend fuse --read-only)
	run "$UBLK_FLASH" create "$SCRATCH/busy.img" --size 64M --align 1m --force
	[ "$status" -eq 5 ]
	run "$UBLK_FLASH" fsck "$SCRATCH/busy.img" --repair
	[ "$status" -eq 5 ]
	"$UBLK_FLASH" stop "$DEV"
	[ "$(sha256sum <"$SCRATCH/busy.img")" = "$sum0" ]
}
