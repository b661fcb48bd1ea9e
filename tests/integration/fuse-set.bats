#!/usr/bin/env bats
# A set of engines served over FUSE + loop: a 2-part set (create --parts 2,
# 64K and 1M stripes, odd and 1m) takes an O_DIRECT pattern across stripe
# boundaries and reads it back; ext4 on it (mkfs, files, umount, e2fsck
# -fn); stop and serve again, the data intact; kill -9 after a sync, serve
# again, fsck of the image clean (every part) and the synced data intact;
# stats of the served set are the parts' combined.  Every device byte
# lands in the part the stripe formula names, so a routing mistake shows
# as a compare failure after the reopen (the parts are read afresh).
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

# set_create NAME SIZE MODE PARTS [STRIPE]: a fresh set $SCRATCH/NAME.img.
set_create() {
	"$UBLK_FLASH" create "$SCRATCH/$1.img" --size "$2" --align "$3" \
		--parts "$4" ${5:+--stripe "$5"} --force >/dev/null
}

# pattern_write DEV FILE SEEK_SECTORS: FILE to DEV at 512-byte sector SEEK,
# O_DIRECT, then fsync.
pattern_write() {
	dd if="$2" of="$1" bs=512 seek="$3" oflag=direct conv=fsync,notrunc status=none
}

# pattern_check DEV FILE SEEK_SECTORS: DEV holds FILE there (O_DIRECT).
pattern_check() {
	local n=$(( $(stat -c %s "$2") / 512 ))
	dd if="$1" bs=512 skip="$3" count="$n" iflag=direct status=none | cmp - "$2"
}

# A pattern of 3 MiB + 1.5 KiB at sector 125 (odd), and 1 MiB at the last
# MiB: it crosses several 64K / 1M stripe boundaries of both parts.
patterns() {
	head -c $((3 * 1048576 + 1536)) /dev/urandom > "$SCRATCH/a"
	head -c 1048576 /dev/urandom > "$SCRATCH/b"
}

set_rw_case() { # MODE STRIPE
	local img=$SCRATCH/s.img last
	set_create s 128M "$1" 2 "$2"
	patterns
	last=$(( 128 * 2048 - 2048 ))
	fuse_serve "$img"
	pattern_write "$DEV" "$SCRATCH/a" 125
	pattern_write "$DEV" "$SCRATCH/b" "$last"
	pattern_check "$DEV" "$SCRATCH/a" 125
	pattern_check "$DEV" "$SCRATCH/b" "$last"
	# the kernel sees the set's size
	[ "$(blockdev --getsize64 "$DEV")" = $((128 * 1048576)) ]
	"$UBLK_FLASH" stop "$img"
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"part 0:"*"part 1:"* ]]
	fuse_serve "$img"
	pattern_check "$DEV" "$SCRATCH/a" 125
	pattern_check "$DEV" "$SCRATCH/b" "$last"
	"$UBLK_FLASH" stop "$img"
}

@test "set: 2 parts, odd, 64K stripes: an O_DIRECT pattern across stripes reads back, and after stop + serve" {
	set_rw_case odd 64K
}

@test "set: 2 parts, 1m, 1M stripes: an O_DIRECT pattern across stripes reads back, and after stop + serve" {
	set_rw_case 1m 1M
}

@test "set: 3 parts, odd: ext4 mkfs, files, umount, e2fsck -fn clean; stop, serve again, files intact" {
	requires mkfs.ext4 e2fsck
	local img=$SCRATCH/s.img
	set_create s 192M odd 3 64K
	fuse_serve "$img"
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	fuse_files_make "$SCRATCH/m" 40
	umount "$SCRATCH/m"
	run fuse_fsck ext4 "$DEV"
	echo "$output"
	[ "$status" -eq 0 ]
	"$UBLK_FLASH" stop "$img"
	fuse_check_files "$img"
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "set: kill -9 the server after a sync: serve again, fsck clean on every part, synced data intact" {
	local img=$SCRATCH/s.img pid i
	set_create s 128M 1m 2 64K
	patterns
	fuse_serve "$img"
	pattern_write "$DEV" "$SCRATCH/a" 9     # fsynced
	pid=$(fuse_pid "$img")
	kill -9 "$pid"
	for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	refute kill -0 "$pid" 2>/dev/null
	# the image as the crash left it: each part rolls forward alone
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"part 0:"*"part 1:"* ]]
	fuse_serve "$img"          # cleans the dead loop, rolls forward
	pattern_check "$DEV" "$SCRATCH/a" 9
	[ "$(fuse_stat_field "$img" last_mount)" != '"clean"' ]
	"$UBLK_FLASH" stop "$img"
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	fuse_serve "$img"
	pattern_check "$DEV" "$SCRATCH/a" 9
	"$UBLK_FLASH" stop "$img"
}

@test "set: stats and health of a served 2-part set are the parts' combined" {
	local img=$SCRATCH/s.img w
	set_create s 128M 1m 2 64K
	fuse_serve "$img"
	# 8 MiB of 64K stripes: exactly half of it in each part
	dd if=/dev/urandom of="$DEV" bs=1M count=8 oflag=direct conv=fsync status=none
	w=$(fuse_stat_field "$img" host_write_sectors)
	echo "host_write_sectors $w"
	[ "$w" -ge 16384 ]
	# the mapped pages of both parts: 8 MiB of 4K pages
	[ "$(fuse_stat_field "$img" mapped_pages)" -ge 2048 ]
	"$UBLK_FLASH" stop "$img"
	# offline, the same counters (summed over the parts, persisted)
	w2=$(fuse_stat_field "$img" host_write_sectors)
	[ "$w2" = "$w" ]
	run "$UBLK_FLASH" health "$img" --json
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c "import json,sys; h=json.load(sys.stdin); \
		assert h['host_write_sectors'] == $w, h"
	# each part holds half of the pages written (64K stripes alternate)
	run "$UBLK_FLASH" fsck "$img" --json
	echo "$output" | python3 -c "import json,sys; d=json.load(sys.stdin); \
		m=[p['mapped_pages'] for p in d['parts']]; print(m); \
		assert m[0] == m[1] == 1024, m"
}

@test "set: resize of a served 2-part set: refused, one line, exit 6; it keeps serving" {
	local img=$SCRATCH/s.img
	set_create s 128M 1m 2
	patterns
	fuse_serve "$img"
	pattern_write "$DEV" "$SCRATCH/b" 0
	bad 6 "a set of 2 parts cannot grow" "$UBLK_FLASH" resize "$img" --size 256M
	[ "$(blockdev --getsize64 "$DEV")" = $((128 * 1048576)) ]
	pattern_check "$DEV" "$SCRATCH/b" 0
	"$UBLK_FLASH" stop "$img"
}
