#!/usr/bin/env bats
# alignpart safety: every bad input is a one-line error with the documented
# exit code and leaves the image byte-for-byte unchanged; existing data is
# refused without --force; a failed write leaves the old table intact; a
# mounted or attached target is refused.
load ../helpers
load alignpart-lib

setup() {
	ap_setup
	# an image holding a dos table (the "old data" every case must keep)
	img t.img 64M
	"$ALIGNPART" create t.img --label dos --profile 1m --part 16MiB --part rest >/dev/null 2>&1
	OLD=$(sum t.img)
}

teardown() {
	[ -n "${MNT:-}" ] && umount "$MNT" 2>/dev/null
	[ -n "${LOOP:-}" ] && losetup -d "$LOOP" 2>/dev/null
	ap_teardown
}

# bad CODE ARGS...: alignpart ARGS fails with CODE, one line, t.img unchanged.
bad() {
	local code=$1; shift
	run "$ALIGNPART" "$@"
	one_line_error "$code"
	[ "$(sum t.img)" = "$OLD" ] || { echo "t.img changed by: $*"; return 1; }
}

@test "usage errors: exit 2, one line, image unchanged" {
	bad 2 frobnicate t.img
	bad 2 create t.img --label dos --profile odd --part rest --bogus
	bad 2 create t.img --label bsd --profile odd --part rest --force
	bad 2 create t.img --profile odd --part rest --force
	bad 2 create t.img --label dos --profile odd --force
	bad 2 create t.img --label dos --profile nosuch --part rest --force
	bad 2 create t.img --label dos --profile odd --part rest --start x --force
	bad 2 create t.img --label dos --profile odd --part rest --script - --force
	bad 2 create --label dos --profile odd --part rest
	bad 2 create t.img u.img --label dos --profile odd --part rest
	bad 2 check t.img --part rest --profile odd
	bad 2 create t.img --label dos --topology 512/4096/9999 --part rest --force
}

@test "bad sizes and types: exit 2, one line, image unchanged" {
	bad 2 create t.img --label dos --profile odd --part 12QB --force
	bad 2 create t.img --label dos --profile odd --part 0 --force
	bad 2 create t.img --label dos --profile odd --part :L --force
	bad 2 create t.img --label dos --profile odd --part 8MiB: --force
	bad 2 create t.img --label dos --profile odd --part 8MiB:nosuchtype --force
	bad 2 create t.img --label gpt --profile odd --part 8MiB:zz --force
}

@test "impossible layouts: beyond the end, too small, rest not last, too many, table area" {
	bad 2 create t.img --label dos --profile odd --part 100MiB --force
	bad 2 create t.img --label gpt --profile odd --part 32MiB --part 32MiB --force
	bad 2 create t.img --label dos --profile odd --part 1s --force
	bad 2 create t.img --label dos --profile odd --part rest --part 8MiB --force
	bad 2 create t.img --label dos --profile odd --part 1M --part 1M --part 1M --part 1M --part 1M --force
	bad 2 create t.img --label gpt --profile odd --start 10 --part rest --force
	bad 2 create t.img --label dos --profile odd --start 0 --part rest --force
	bad 2 create t.img --label dos --profile odd --start 999999999 --part rest --force
	[[ "$output" == *"beyond the end"* ]]
}

@test "overlapping script partitions: exit 2 before anything is written" {
	run "$ALIGNPART" create t.img --profile 1m --force --script - <<-'EOS'
	label: gpt
	start=2048, size=8MiB
	start=4096, size=8MiB
	EOS
	one_line_error 2
	[[ "$output" == *overlaps* ]]
	[ "$(sum t.img)" = "$OLD" ]
}

@test "I/O and probe errors: exit 3" {
	run "$ALIGNPART" create nothing.img --label dos --profile odd --part rest
	one_line_error 3
	run "$ALIGNPART" check nothing.img --profile odd
	one_line_error 3
}

@test "an existing table is refused without --force (exit 5), replaced with it" {
	bad 5 create t.img --label gpt --profile odd --part rest
	[[ "$output" == *"dos partition table"*"--force"* ]]
	run "$ALIGNPART" create t.img --label gpt --profile odd --part rest --force
	[ "$status" -eq 0 ]
	xval t.img gpt "2047:128992"
}

@test "a filesystem signature is refused; --force writes the table and wipes it" {
	requires mkfs.ext4 blkid
	img fs.img 64M
	mkfs.ext4 -q -F fs.img
	before=$(sum fs.img)
	run "$ALIGNPART" create fs.img --label dos --profile 1m --part rest
	one_line_error 5
	[[ "$output" == *ext4* ]]
	[ "$(sum fs.img)" = "$before" ]
	run "$ALIGNPART" create fs.img --label dos --profile 1m --part rest --force
	[ "$status" -eq 0 ]
	run blkid -p -o value -s TYPE fs.img
	[ -z "$output" ]
	xval fs.img dos "2048:129024"
}

@test "dos over gpt: the old GPT headers are wiped, peers see only dos" {
	img g.img 64M
	"$ALIGNPART" create g.img --label gpt --profile 1m --part rest >/dev/null 2>&1
	run "$ALIGNPART" create g.img --label dos --profile odd --part rest --force
	[ "$status" -eq 0 ]
	xval g.img dos "2047:129024"
	requires sgdisk
	run sgdisk -v g.img
	[[ "$output" != *"Main header: OK"* ]]
}

@test "a failed write (file size limit) exits 3 and leaves the old table intact" {
	# RLIMIT_FSIZE 0: every write fails with EFBIG (SIGXFSZ ignored)
	run bash -c "trap '' XFSZ; ulimit -f 0; exec \"$ALIGNPART\" create t.img --label gpt --profile odd --part rest --force"
	[ "$status" -eq 3 ]
	[[ "$output" == *"failed"* ]]
	[ "$(sum t.img)" = "$OLD" ]
	# 1 KiB limit: the first sector is writable, the rest is not; libfdisk
	# writes the backup GPT (at the end) first, so nothing changes
	run bash -c "trap '' XFSZ; ulimit -f 1; exec \"$ALIGNPART\" create t.img --label gpt --profile odd --part rest --force"
	[ "$status" -eq 3 ]
	[ "$(sum t.img)" = "$OLD" ]
	xval t.img dos "2048:32768 34816:96256"
}

@test "--no-act never writes, even with --force over existing data" {
	run "$ALIGNPART" create t.img --label gpt --profile odd --part rest --force --no-act
	[ "$status" -eq 0 ]
	[ "$(sum t.img)" = "$OLD" ]
}

@test "an image attached to a loop device is refused (exit 5)" {
	requires_root
	requires losetup
	LOOP=$(losetup -f --show t.img) || skip "cannot attach a loop device"
	bad 5 create t.img --label gpt --profile odd --part rest --force
	[[ "$output" == *"attached to $LOOP"* ]]
}

@test "a mounted device is refused (exit 5) and left unchanged" {
	requires_root
	requires losetup mkfs.ext4 mount
	img m.img 64M
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 m.img   # no ext4lazyinit writes after mount
	LOOP=$(losetup -f --show m.img) || skip "cannot attach a loop device"
	MNT=$SCRATCH/mnt
	mkdir -p "$MNT"
	# read-only: a rw ext4 mount keeps writing its bitmaps for a while,
	# which would make the "left unchanged" check below flaky
	mount -o ro "$LOOP" "$MNT" || skip "cannot mount ext4 here"
	before=$(sum "$LOOP")
	run "$ALIGNPART" create "$LOOP" --label dos --part rest --force
	one_line_error 5
	[[ "$output" == *"mounted on $MNT"* ]]
	[ "$(sum "$LOOP")" = "$before" ]
}

@test "a mount point with spaces is named as it is (a tab as \\x09), not with mountinfo's \\040 escapes" {
	requires_root
	requires losetup mkfs.ext4 mount
	img m.img 64M
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 m.img   # no ext4lazyinit writes after mount
	LOOP=$(losetup -f --show m.img) || skip "cannot attach a loop device"
	MNT="$SCRATCH/my disk	tab"
	mkdir -p "$MNT"
	mount "$LOOP" "$MNT" || skip "cannot mount ext4 here"
	run "$ALIGNPART" create "$LOOP" --label dos --part rest --force
	one_line_error 5
	# spaces as they are; the tab (a control character) as \x09, as every
	# message escapes them to stay one line; never mountinfo's \040 or \011
	[[ "$output" == *"is mounted on $SCRATCH/my disk\x09tab"* ]]
	[[ "$output" != *'\040'* ]]
	[[ "$output" != *'\011'* ]]
}

@test "a loop device over an octant image is the image: create refused even with --force, image intact" {
	requires_root
	requires losetup
	[ -x "$UBLK_FLASH" ] || skip "ublk-flash not built ($UBLK_FLASH)"
	"$UBLK_FLASH" create o.img --size 64M --align odd --force >/dev/null
	before=$(sum o.img)
	LOOP=$(losetup -f --show o.img) || skip "cannot attach a loop device"
	run "$ALIGNPART" create "$LOOP" --label gpt --profile odd --part rest --force
	one_line_error 5
	[[ "$output" == *"$LOOP is an octant flash image: a table would destroy it"* ]]
	run "$ALIGNPART" check "$LOOP"
	one_line_error 2
	run "$ALIGNPART" suggest "$LOOP"
	[ "$status" -eq 0 ]
	[[ "$output" == *"source:      image"* ]]
	losetup -d "$LOOP"
	LOOP=
	[ "$(sum o.img)" = "$before" ]
	"$UBLK_FLASH" info o.img >/dev/null
}

@test "a loop device over a damaged octant image is not a blank disk: exit 3, untouched" {
	requires_root
	requires losetup
	octant_image d.img 1
	printf 'X' | dd of=d.img bs=1 seek=100 conv=notrunc status=none     # copy 0 crc
	printf 'X' | dd of=d.img bs=1 seek=4196 conv=notrunc status=none    # copy 1 crc
	before=$(sum d.img)
	LOOP=$(losetup -f --show d.img) || skip "cannot attach a loop device"
	run "$ALIGNPART" create "$LOOP" --label gpt --profile odd --part rest --force
	one_line_error 3
	[[ "$output" == *"Bad message"* ]]
	losetup -d "$LOOP"
	LOOP=
	[ "$(sum d.img)" = "$before" ]
}
