#!/usr/bin/env bats
# The medium on a network block store: an octant image whose bytes live on
# an NBD export (nbdkit's memory and file plugins here; qemu-nbd, rbd-nbd
# or any NBD server alike), served over FUSE + loop with real ext4.
load ../helpers
load fuse-lib
load ../nbd-lib

setup() {
	fuse_setup
	requires nbdkit
	SOCK=$SCRATCH/medium.sock
	URI="nbd+unix:///?socket=$SOCK"
}

teardown() {
	# servers first (they flush to the medium), then the medium's nbdkit
	local d img
	for d in "${UBLK_FLASH_RUN_DIR:-/nonexistent}"/img-*; do
		[ -f "$d/image" ] || continue
		img=$(cat "$d/image")
		timeout 60 "$UBLK_FLASH" stop --force "$img" >/dev/null 2>&1 || true
	done
	medium_down -9
	fuse_teardown
}

# medium_up PLUGIN ARGS...: an nbdkit export on $SOCK.  medium_down [SIGNAL].
medium_up() { nbd_start "$SOCK" "$SCRATCH/mpid" "$@"; }
medium_down() { [ -n "${SCRATCH:-}" ] && nbd_stop "$SCRATCH/mpid" "${1:--TERM}"; }

# check_files: serve $URI again; ext4 clean and every file's sum matches.
check_files() {
	fuse_serve "$URI"
	run fuse_fsck ext4 "$DEV"
	echo "$output"
	[ "$status" -eq 0 ] || return 1
	mount -o ro "$DEV" "$SCRATCH/m"
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums") || return 1
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$URI"
}

files_make() { # DIR: 40 files of random sizes, their sums in $SCRATCH/sums
	local i
	mkdir -p "$1/d"
	for i in $(seq 40); do
		head -c $(( (RANDOM % 256 + 1) * 1024 + RANDOM % 999 )) /dev/urandom > "$1/d/f$i"
	done
	(cd "$1" && sha256sum d/*) > "$SCRATCH/sums"
}

@test "nbd backing: create on an NBD export, serve, ext4, stop, serve again: data intact" {
	fuse_requires_fs ext4
	medium_up memory 96M
	run "$UBLK_FLASH" create "$URI" --size 64M --align odd
	echo "$output"
	[ "$status" -eq 0 ]
	# a second create refuses: the export holds an image now
	run "$UBLK_FLASH" create "$URI" --size 64M --align odd
	echo "$output"
	[ "$status" -ne 0 ]
	fuse_serve "$URI"
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	files_make "$SCRATCH/m"
	umount "$SCRATCH/m"
	run "$UBLK_FLASH" stats "$URI"
	echo "$output"
	[ "$status" -eq 0 ]
	# list names the server by its URI, and its device
	run "$UBLK_FLASH" list -n -r -o IMAGE,DEVICE,STATE
	echo "$output"
	[ "$output" = "$URI $DEV running" ]
	run "$UBLK_FLASH" stop "$URI"
	[ "$status" -eq 0 ]
	check_files
}

@test "nbd backing: kill -9 of ublk-flash: every fsynced file survives (medium on nbdkit file)" {
	fuse_requires_fs ext4
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 64M --align 1m >/dev/null
	medium_up file "$SCRATCH/medium.img"
	fuse_serve "$URI"
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	files_make "$SCRATCH/m"
	sync -f "$SCRATCH/m"
	local pid
	pid=$(cat "$UBLK_FLASH_RUN_DIR"/img-nbd-*/pid)
	kill -9 "$pid"
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	umount -l "$SCRATCH/m" 2>/dev/null || true
	"$UBLK_FLASH" stop "$URI" >/dev/null 2>&1 || true   # a dead server's leftovers
	check_files                                       # rolls forward over NBD
	medium_down
	run "$UBLK_FLASH" fsck "$SCRATCH/medium.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbd backing: a network error surfaces as EIO, not as lost or stale data" {
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 64M --align 1m >/dev/null
	medium_up --filter=error file "$SCRATCH/medium.img" error=EIO \
		error-pwrite-rate=100% error-file="$SCRATCH/fail"
	fuse_serve "$URI"
	head -c 4M /dev/urandom > "$SCRATCH/A"
	head -c 4M /dev/urandom > "$SCRATCH/B"
	dd if="$SCRATCH/A" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	touch "$SCRATCH/fail"                   # the store now fails every write
	run dd if="$SCRATCH/B" of="$DEV" bs=1M seek=8 oflag=direct conv=fsync status=none
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	run dd if="$SCRATCH/B" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	[ "$status" -ne 0 ]
	rm "$SCRATCH/fail"                      # the network is back
	# the failed overwrite did not replace A; new writes work again
	dd if="$DEV" bs=1M count=4 iflag=direct status=none | cmp - "$SCRATCH/A"
	dd if="$SCRATCH/B" of="$DEV" bs=1M seek=8 oflag=direct conv=fsync status=none
	"$UBLK_FLASH" stop "$URI"
	fuse_serve "$URI"
	dd if="$DEV" bs=1M count=4 iflag=direct status=none | cmp - "$SCRATCH/A"
	dd if="$DEV" bs=1M skip=8 count=4 iflag=direct status=none | cmp - "$SCRATCH/B"
	"$UBLK_FLASH" stop "$URI"
	medium_down
	run "$UBLK_FLASH" fsck "$SCRATCH/medium.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbd backing: bad exports get one clear line (no server, too small, read-only)" {
	run "$UBLK_FLASH" serve "nbd+unix:///?socket=$SCRATCH/none.sock" --frontend fuse
	echo "$output"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	medium_up memory 8M
	run "$UBLK_FLASH" create "$URI" --size 64M --align 1m
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space"* || "$output" == *"too small"* || "$output" == *"smaller"* ]]
	medium_down
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 16M --align 1m >/dev/null
	medium_up -r file "$SCRATCH/medium.img"
	run "$UBLK_FLASH" serve "$URI" --frontend fuse
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only"* || "$output" == *"read-only"* ]]
}
