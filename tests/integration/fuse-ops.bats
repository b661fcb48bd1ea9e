#!/usr/bin/env bats
# serve/stop/stats over FUSE + loop: fstrim reaches the engine, live stats,
# signals, and every error case (clear message, exit code, nothing left).
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

# nothing_left: no mount, loop device or registry entry of the scratch.
nothing_left() {
	refute grep -q "$SCRATCH/run" /proc/self/mountinfo
	[ -z "$(losetup -l -n -O BACK-FILE | grep "$SCRATCH")" ] || return 1
	[ -z "$(ls "$UBLK_FLASH_RUN_DIR"/img-*/pid 2>/dev/null)" ]
}

@test "fstrim frees flash pages; stats show discarded sectors" {
	requires fstrim mkfs.ext4
	fuse_create trim 384M 1m
	fuse_serve "$SCRATCH/trim.img"
	mkfs.ext4 -q -F -E nodiscard "$DEV"
	mount "$DEV" "$SCRATCH/m"
	dd if=/dev/urandom of="$SCRATCH/m/big" bs=1M count=100 conv=fsync status=none
	mapped0=$(fuse_stat_field "$DEV" mapped_pages)
	disc0=$(fuse_stat_field "$DEV" host_discard_sectors)
	rm "$SCRATCH/m/big"
	sync
	fstrim "$SCRATCH/m"
	mapped1=$(fuse_stat_field "$DEV" mapped_pages)
	disc1=$(fuse_stat_field "$DEV" host_discard_sectors)
	echo "mapped $mapped0 -> $mapped1, discard sectors $disc0 -> $disc1"
	[ "$disc1" -ge $(( disc0 + 100 * 2048 )) ]
	[ "$mapped1" -le $(( mapped0 - 100 * 256 + 512 )) ]   # ~25600 4K pages freed
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
}

@test "stats: live by DEV and IMG (json and text), offline from the image after stop" {
	fuse_create st 256M odd
	fuse_serve "$SCRATCH/st.img"
	dd if=/dev/urandom of="$DEV" bs=4k count=256 oflag=direct status=none
	w=$(fuse_stat_field "$DEV" host_write_sectors)
	[ "$w" -ge 2048 ]
	[ "$(fuse_stat_field "$SCRATCH/st.img" host_write_sectors)" = "$w" ]
	run "$UBLK_FLASH" stats "$DEV"
	[ "$status" -eq 0 ] && [ -n "$output" ]
	"$UBLK_FLASH" stop "$SCRATCH/st.img"
	[ "$(fuse_stat_field "$SCRATCH/st.img" host_write_sectors)" -ge "$w" ]
}

# Budget: 8 serving threads' 1 MiB stacks and 1 MiB request buffers, the
# 8 MiB read/RMW pool, the map, the libraries -- all locked by mlockall,
# ~33 MiB.  libnbd (loaded only for an NBD medium) would add gnutls,
# libxml2 and ICU's data: 44 MiB more.
@test "memory: a server on a local image maps no libnbd nor what it pulls in; peak RSS under 48 MiB" {
	fuse_create rss 256M 1m
	fuse_serve "$SCRATCH/rss.img"
	dd if=/dev/urandom of="$DEV" bs=1M count=64 oflag=direct status=none
	dd if="$DEV" of=/dev/null bs=1M count=64 iflag=direct status=none
	pid=$(fuse_pid "$SCRATCH/rss.img")
	run grep -E 'libnbd|libgnutls|libxml2|libicu' "/proc/$pid/maps"
	echo "$output"
	[ "$status" -eq 1 ]
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
	echo "VmHWM $hwm KiB"
	[ "$hwm" -lt $((48 * 1024)) ]
	"$UBLK_FLASH" stop "$DEV"
}

@test "flush and discard reach the engine; unaligned file I/O is exact" {
	requires python3
	fuse_create fl 64M 1m
	fuse_serve "$SCRATCH/fl.img"
	f0=$(fuse_stat_field "$DEV" host_flushes)
	dd if=/dev/urandom of="$DEV" bs=64k count=4 oflag=direct conv=fsync status=none
	[ "$(fuse_stat_field "$DEV" host_flushes)" -gt "$f0" ]
	blkdiscard -o 0 -l 65536 "$DEV"
	[ "$(fuse_stat_field "$DEV" host_discard_sectors)" -ge 128 ]
	cmp -n 65536 "$DEV" /dev/zero
	# Byte-granular I/O on the FUSE file itself (bounce-buffer path).
	file=$(ls -d "$UBLK_FLASH_RUN_DIR"/img-*/mnt)/disk
	python3 - "$file" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
data = os.urandom(1000)
os.pwrite(fd, data, 12345)
assert os.pread(fd, 1000, 12345) == data
before = os.pread(fd, 600, 12000)
os.pwrite(fd, b"x" * 7, 12003)
after = os.pread(fd, 600, 12000)
assert after[:3] == before[:3] and after[3:10] == b"x" * 7 and after[10:] == before[10:]
os.close(fd)
PY
	"$UBLK_FLASH" stop "$DEV"
}

@test "serving an image that is already served: exit 5, the first server untouched" {
	fuse_create busy 64M odd
	fuse_serve "$SCRATCH/busy.img"
	run "$UBLK_FLASH" serve "$SCRATCH/busy.img" --frontend fuse
	[ "$status" -eq 5 ]
	[[ "$output" == *"already served on $DEV"* ]]
	[ "$(echo "$output" | wc -l)" -eq 1 ]
	dd if="$DEV" of=/dev/null bs=4k count=16 iflag=direct status=none
	[ "$(losetup -l -n -O BACK-FILE | grep -c "$SCRATCH")" -eq 1 ]
	"$UBLK_FLASH" stop "$DEV"
	nothing_left
}

@test "a corrupt image: exit 4, one line, nothing mounted or attached" {
	fuse_create bad 64M odd
	dd if=/dev/urandom of="$SCRATCH/bad.img" bs=4k count=64 conv=notrunc status=none
	sum=$(sha256sum < "$SCRATCH/bad.img")
	run "$UBLK_FLASH" serve "$SCRATCH/bad.img" --frontend fuse
	echo "$output"
	[ "$status" -eq 4 ]
	[ "$(echo "$output" | wc -l)" -eq 1 ]
	[[ "$output" == *corrupt* ]]
	[ "$(sha256sum < "$SCRATCH/bad.img")" = "$sum" ]
	nothing_left
}

@test "no /dev/fuse: exit 3, one clear line, nothing changed" {
	requires unshare
	fuse_create nofuse 64M odd
	sum=$(sha256sum < "$SCRATCH/nofuse.img")
	run unshare -m sh -c 'mount -t tmpfs none /dev && exec "$0" serve "$1" --frontend fuse' \
		"$UBLK_FLASH" "$SCRATCH/nofuse.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == *"/dev/fuse"* ]]
	[ "$(echo "$output" | wc -l)" -eq 1 ]
	[ "$(sha256sum < "$SCRATCH/nofuse.img")" = "$sum" ]
	nothing_left
}

@test "no usable loop device: exit 5, one clear line, FUSE unmounted" {
	requires unshare
	fuse_create noloop 64M odd
	# /dev/loop-control that is not one: LOOP_CTL_GET_FREE cannot hand out a device.
	run unshare -m sh -c 'mount --bind /dev/null /dev/loop-control && exec "$0" serve "$1" --frontend fuse' \
		"$UBLK_FLASH" "$SCRATCH/noloop.img"
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"loop device"* ]]
	[ "$(echo "$output" | wc -l)" -eq 1 ]
	nothing_left
	fuse_serve "$SCRATCH/noloop.img"     # and the image still serves
	"$UBLK_FLASH" stop "$DEV"
}

@test "stop: not served -> exit 3; in use -> exit 5; bad usage -> exit 2" {
	fuse_create s 64M odd
	run "$UBLK_FLASH" stop "$SCRATCH/s.img"
	[ "$status" -eq 3 ] && [[ "$output" == *"not served"* ]]
	run "$UBLK_FLASH" stop
	[ "$status" -eq 2 ]
	fuse_serve "$SCRATCH/s.img"
	mkfs.ext4 -q -F "$DEV"
	mount "$DEV" "$SCRATCH/m"
	run "$UBLK_FLASH" stop "$DEV"
	[ "$status" -eq 5 ] && [[ "$output" == *"in use"* ]]
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
	nothing_left
	run "$UBLK_FLASH" stop "$DEV"
	[ "$status" -ne 0 ]
}

@test "SIGTERM and SIGINT stop a server cleanly (exit 0, clean checkpoint)" {
	fuse_create sig 64M odd
	for sig in TERM INT; do
		"$UBLK_FLASH" serve "$SCRATCH/sig.img" --frontend fuse --foreground \
			> "$SCRATCH/dev" 2> "$SCRATCH/err" &
		pid=$!
		for i in $(seq 100); do [ -s "$SCRATCH/dev" ] && break; sleep 0.1; done
		DEV=$(cat "$SCRATCH/dev")
		[ -b "$DEV" ]
		# failing, say why: the server's own lines (a store without
		# room names itself) and the room the scratch has
		dd if=/dev/urandom of="$DEV" bs=4k count=8 oflag=direct status=none ||
			{ cat "$SCRATCH/err"; df -h "$SCRATCH"; false; }
		kill -$sig "$pid"
		wait "$pid"
		nothing_left
		run "$UBLK_FLASH" stats "$SCRATCH/sig.img" --json
		[[ "$output" == *'"last_mount":"clean"'* ]]
	done
}

@test "kill -9: the next serve cleans the dead loop and FUSE mount, then serves" {
	fuse_create k 128M 1m
	fuse_serve "$SCRATCH/k.img"
	dd if=/dev/urandom of="$SCRATCH/data" bs=64k count=16 status=none
	dd if="$SCRATCH/data" of="$DEV" bs=64k oflag=direct conv=fsync status=none
	kill -9 "$(fuse_pid "$SCRATCH/k.img")"
	sleep 0.3
	# The dead server's device fails fast instead of hanging.
	refute timeout 10 dd if="$DEV" of=/dev/null bs=4k count=1 iflag=direct status=none
	fuse_serve "$SCRATCH/k.img"
	[ "$(losetup -l -n -O BACK-FILE | grep -c "$SCRATCH")" -eq 1 ]
	[ "$(grep -c "$SCRATCH/run" /proc/self/mountinfo)" -eq 1 ]
	cmp -n $((1024 * 1024)) "$SCRATCH/data" "$DEV"
	"$UBLK_FLASH" stop "$DEV"
	nothing_left
}
