#!/usr/bin/env bash
# Guest test: ublk user recovery.  The server is killed with SIGKILL while fio writes and
# verifies (--verify=crc32c, mixed sizes); `ublk-flash serve IMG --recover` re-attaches the same
# /dev/ublkbN, the requests the dead server held are reissued, and fio finishes without an I/O
# or verify error.  Three cycles, then one with ext4 mounted; the image passes fsck after a
# clean stop.  Also: --recover with nothing to recover, and the no-driver message.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
# the kernel log is the guest's, shared with the scripts before this one (ublk-integrity
# makes its guard tag error on purpose): only what this script adds is read below
klog0=$(dmesg | wc -l)
img=/tmp/ublk-recover.img
if ! out=$(ublk_mkimg "$img" 256M 1m 2>&1); then t_fail "create image" "$out"; t_done; fi
t_cleanup "rm -f $img"

out=$("$UBLK_FLASH" serve "$img" --frontend ublk --recover 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "no ublk device left by a server" <<<"$out"; then
	t_ok "serve --recover with nothing to recover fails clearly (exit $rc)"
else
	t_fail "serve --recover with nothing to recover fails clearly" "exit $rc: $out"
fi

if ! dev=$(ublk_serve "$img"); then
	t_fail "serve --frontend ublk" "$dev"; t_done
fi
t_cleanup "$UBLK_FLASH stop --force $img"

# kill_recover LABEL [SERVE-OPTIONS...]: SIGKILL the server, wait until it has exited,
# `serve --recover`.
kill_recover() {
	local label=$1 pid out t0 t1
	shift
	pid=$(ublk_server_pid "$img")
	if [ -z "$pid" ]; then t_fail "$label: server pid in the run registry"; return 1; fi
	kill -9 "$pid"
	if ! ublk_wait_dead "$pid" 300; then t_fail "$label: killed server exits"; return 1; fi
	t0=$(cut -d' ' -f1 /proc/uptime)
	if ! out=$(ublk_serve "$img" --recover "$@"); then
		t_fail "$label: serve --recover" "$out"; return 1
	fi
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "# $label: recovered in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s"
	t_eq "$label: serve --recover re-attaches the same device" "$out" "$dev"
}

# dstat FIELD: a counter of the device from /sys/block/NAME/stat (3 sectors read, 7 written).
dstat() { awk -v f="$1" '{ print $f }' "/sys/block/${dev#/dev/}/stat"; }
# wait_progress FIELD SECTORS PID: until the counter grew by SECTORS (or PID ended, or 120 s).
wait_progress() {
	local base i=0
	base=$(dstat "$1")
	while [ $(($(dstat "$1") - base)) -lt "$2" ]; do
		kill -0 "$3" 2>/dev/null || return 1
		i=$((i + 1)); [ $i -ge 1200 ] && return 1
		sleep 0.1
	done
}

# Cycles 1 and 2 kill while fio writes (after 8 and 24 MiB of its 48), cycle 3 while it reads
# back and verifies (after 8 MiB of verify reads); the kill point is found from the device's
# own counters, so it does not depend on how fast the guest runs.
for i in 1 2 3; do
	log=/tmp/ublk-recover-fio.$i
	fio --name=rec$i --filename="$dev" --ioengine=io_uring --direct=1 --rw=randwrite \
		--bsrange=512-128k --size=48M --offset=$(((i - 1) * 56))M --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --iodepth=16 --randseed=$((1000 + i)) >"$log" 2>&1 &
	fpid=$!
	case $i in
	1) at="write phase"; wait_progress 7 $((8 * 2048)) "$fpid" ;;
	2) at="write phase"; wait_progress 7 $((24 * 2048)) "$fpid" ;;
	3) at="verify phase"; wait_progress 7 $((48 * 2048)) "$fpid" &&
		wait_progress 3 $((8 * 2048)) "$fpid" ;;
	esac
	if ! kill -0 "$fpid" 2>/dev/null; then
		wait "$fpid"
		t_fail "cycle $i: kill -9 during the fio $at" "fio ended first: $(tail -n 5 "$log")"
		continue
	fi
	kill_recover "cycle $i ($at)"
	if wait "$fpid"; then
		t_ok "cycle $i: fio --verify=crc32c completes across kill -9 in its $at + --recover"
	else
		t_fail "cycle $i: fio --verify=crc32c completes across kill -9 in its $at + --recover" \
			"$(grep -iE 'verify|error|err=|bad|fail' "$log" | head -n 12)"
	fi
done

# ext4 mounted across a kill: the filesystem never notices.  (--recover --dev-id N this time.)
mnt=$(mktemp -d)
if mkfs.ext4 -q -F "$dev" && mount "$dev" "$mnt"; then
	t_cleanup "umount $mnt 2>/dev/null; rmdir $mnt"
	(for j in $(seq 1 30); do head -c $((j * 7919)) /dev/urandom >"$mnt/f$j"; sync "$mnt/f$j"; done) &
	wpid=$!
	sleep 1
	kill_recover "ext4 mounted" --dev-id "${dev#/dev/ublkb}"
	wait "$wpid"
	sum1=$(cd "$mnt" && sha256sum f* | sha256sum)
	umount "$mnt"
	echo 3 >/proc/sys/vm/drop_caches
	mount "$dev" "$mnt" && sum2=$(cd "$mnt" && sha256sum f* | sha256sum)
	umount "$mnt"
	t_eq "ext4 mounted: files read back after remount" "${sum2:-}" "$sum1"
	t_check "ext4 mounted: e2fsck clean" e2fsck -fn "$dev"
	if dmesg | tail -n +$((klog0 + 1)) | grep -q "I/O error.*ublkb\|ublkb.*I/O error\|EXT4-fs error"; then
		t_fail "no I/O errors in the kernel log" "$(dmesg | tail -n +$((klog0 + 1)) | grep -i 'error' | tail -n 5)"
	else
		t_ok "no I/O errors in the kernel log"
	fi
else
	t_fail "ext4 on the recovered device: mkfs + mount"
fi

# Clean stop by SIGTERM this time (ublk-basic stops with `ublk-flash stop IMG|DEV`).
pid=$(ublk_server_pid "$img")
if [ -n "$pid" ] && kill -TERM "$pid" && ublk_wait_dead "$pid" 600; then
	t_ok "SIGTERM stops the server"
else
	t_fail "SIGTERM stops the server" "pid '$pid'"
fi
ublk_wait_gone "$dev"
t_eq "clean stop removes the device" "$([ -e "$dev" ] && echo present || echo gone)" gone
t_check "image passes ublk-flash fsck" "$UBLK_FLASH" fsck "$img"

# Without the driver: one clear line naming modprobe and --frontend fuse.
if rmmod ublk_drv 2>/dev/null; then
	out=$("$UBLK_FLASH" serve "$img" --frontend ublk 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && grep -q "modprobe ublk_drv" <<<"$out" && grep -q -- "--frontend fuse" <<<"$out"; then
		t_ok "no driver: serve fails naming modprobe ublk_drv and --frontend fuse (exit $rc)"
	else
		t_fail "no driver: serve fails naming modprobe ublk_drv and --frontend fuse" "exit $rc: $out"
	fi
	modprobe ublk_drv
else
	t_skip "no driver message" "ublk_drv could not be unloaded"
fi
t_done
