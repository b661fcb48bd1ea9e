#!/usr/bin/env bash
# Guest test: `serve --recover` keeps the device's read-only attribute (the driver cannot
# change it while recovering), so a --read-only that differs from the one the device was
# created with is refused: exit 2, one line naming the device's access and the flag to use, the
# device still waiting for its recovery, its dead server's registry entry kept and the image
# byte for byte unchanged; then the matching --recover re-attaches it with the access it
# always had.  Both ways: a read-write device recovered with --read-only, a read-only one
# recovered without it.  (Before, either recovered and the flag was silently ignored: a
# "read-only" server behind a writable device, or a read-write one behind a read-only device.)
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
img=/tmp/ublk-recover-access.img
if ! out=$(ublk_mkimg "$img" 64M odd 2>&1); then t_fail "create image" "$out"; t_done; fi
t_cleanup "rm -f $img"
t_cleanup "$UBLK_FLASH stop --force $img >/dev/null 2>&1"

# ro_attr DEV: the kernel's read-only attribute of DEV (0 or 1).
ro_attr() { cat "/sys/block/${1#/dev/}/ro"; }

# refused LABEL WANT OPTIONS...: `serve --recover OPTIONS` exits 2 with the one line WANT; the
# device is still there and the image unchanged.
refused() {
	local label=$1 want=$2 sum out rc
	shift 2
	sum=$(sha256sum <"$img")
	out=$("$UBLK_FLASH" serve "$img" --frontend ublk --recover "$@" 2>&1); rc=$?
	t_eq "$label: refused, exit 2" "$rc" 2
	t_eq "$label: one line" "$out" "$want"
	t_eq "$label: the device still waits for its recovery" \
		"$([ -b "$dev" ] && echo present)" present
	t_eq "$label: the image is untouched" "$(sha256sum <"$img")" "$sum"
	t_eq "$label: the dead server's registry entry is kept" \
		"$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev dead"
}

for access in rw ro; do
	flag=; [ $access = ro ] && flag=--read-only
	# whatever an earlier case left running (it failed half-way) goes first
	if [ -n "$(ublk_server_pid "$img")" ]; then
		"$UBLK_FLASH" stop --force "$img" >/dev/null 2>&1
		ublk_wait_gone "${dev:-/nonexistent}"
	fi
	if ! dev=$(ublk_serve "$img" $flag); then
		t_fail "$access: serve $flag" "$dev"; continue
	fi
	want_ro=$([ $access = ro ] && echo 1 || echo 0)
	t_eq "$access: /sys/block/${dev#/dev/}/ro" "$(ro_attr "$dev")" "$want_ro"
	if [ $access = rw ]; then
		dd if=/dev/urandom of="$dev" bs=4k count=64 oflag=direct status=none
		sync
	fi
	ublk_kill_server "$img" "$access" || continue

	if [ $access = rw ]; then
		refused "rw device, --recover --read-only" "ublk-flash: serve --recover: ${dev} was created read-write and recovery cannot change that: recover it without --read-only (to serve it read-only: recover, stop, serve --read-only)" --read-only
	else
		refused "ro device, --recover without --read-only" "ublk-flash: serve --recover: ${dev} was created read-only and recovery cannot change that: recover it with --read-only (to serve it read-write: recover, stop, serve)"
	fi

	if out=$(ublk_serve "$img" --recover $flag); then
		t_eq "$access: --recover ${flag:-(read-write)} re-attaches the same device" "$out" "$dev"
	else
		t_fail "$access: --recover ${flag:-(read-write)} re-attaches the same device" "$out"
		continue
	fi
	t_eq "$access: recovered /sys/block/${dev#/dev/}/ro" "$(ro_attr "$dev")" "$want_ro"
	if [ $access = ro ]; then
		if dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none 2>/dev/null; then
			t_fail "ro: a write to the recovered read-only device fails"
		else
			t_ok "ro: a write to the recovered read-only device fails"
		fi
	else
		t_check "rw: a write to the recovered device succeeds" \
			dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none
	fi
	t_check "$access: stop" "$UBLK_FLASH" stop "$img"
	ublk_wait_gone "$dev"
done
t_check "image passes ublk-flash fsck" "$UBLK_FLASH" fsck "$img"
t_done
