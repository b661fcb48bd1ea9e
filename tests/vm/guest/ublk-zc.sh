#!/usr/bin/env bash
# Guest test: zero copy (issue 29; ublk-daemon.c).  Where the driver grants UBLK_F_AUTO_BUF_REG
# (7.3) the server asks for it: the driver no longer copies between a request's pages and the
# server's buffer (copy_to_user / copy_from_user); it registers the request's pages in the
# daemon's io_uring and the daemon moves the data between them and the tag's buffer -- a part
# of a memfd per queue ("memfd:ublk-flash-zc-qN" in /proc/PID/fd) -- with io_uring READ_FIXED /
# WRITE_FIXED of that memfd.  The engine computes and checks its CRCs over the tag buffer as in
# copy mode.  Proven here from the live device's flags, the memfds, and their times: only a
# write(2)-path write of the memfd moves its mtime and only a read(2)-path read its atime (the
# server's own stores and loads go through its mapping, which moves neither), so with fio and
# ext4 I/O through the device both move.  The data: fio --verify=crc32c random writes of
# 512 B..128 KiB, ext4 (files, remount after drop_caches, checksums, e2fsck), `ublk-flash
# fsck`.  OCTANT_UBLK_ZC=0 (the A/B switch) on 7.3, and 6.1 / 6.12 (no AUTO_BUF_REG): copy
# mode, no memfd, the same data checks (6.1, 6.12).
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver

kver=$(uname -r)
case "$kver" in 7.3.*) want_zc=1 ;; *) want_zc=0 ;; esac
img=/tmp/ublk-zc.img
t_cleanup "rm -f $img"

# memfds PID: the server's zero-copy memfds, one "FD" per line
memfds() { local f; for f in /proc/"$1"/fd/*; do [[ $(readlink "$f") == /memfd:ublk-flash-zc-q* ]] && echo "${f##*/}"; done; }
# times PID FDS...: "atime mtime" of each, nanoseconds
times() { local pid=$1 fd; shift; for fd in "$@"; do stat -L -c '%.9X %.9Y' "/proc/$pid/fd/$fd"; done; }

# serve_case LABEL WANT_ZC [ENV...]: serve a fresh 128 MiB image with 2 queues; the device's
# flags, the memfds, then the data checks (DATA=1) and the memfds' times.
serve_case() {
	local label=$1 zc=$2 out dev pid flags fds t0 t1 moved mnt sum1 sum2
	shift 2
	out=$(ublk_mkimg "$img" 128M 1m 2>&1) || { t_fail "$label: create image" "$out"; return; }
	if ! dev=$(env "$@" "$UBLK_FLASH" serve "$img" --frontend ublk --queues 2 2>&1); then
		t_fail "$label: serve" "$dev"; return
	fi
	t_cleanup "$UBLK_FLASH stop $img"
	pid=$(ublk_server_pid "$img")
	flags=$("$BUILD/ublk-probe" info "${dev#/dev/ublkb}" | sed -n 's/^flags //p')
	t_eq "$label: $dev carries UBLK_F_AUTO_BUF_REG" "$(( (flags >> 11) & 1 ))" "$zc"
	mapfile -t fds < <(memfds "$pid")
	t_eq "$label: zero-copy memfds of server $pid (one per queue)" "${#fds[@]}" "$((2 * zc))"
	t0=$(times "$pid" "${fds[@]}")

	if [ "${DATA:-1}" = 1 ]; then
		out=$(fio --name=zc --filename="$dev" --ioengine=io_uring --direct=1 --iodepth=16 \
			--rw=randwrite --bsrange=512-128k --size=24M --verify=crc32c --do_verify=1 \
			--randrepeat=0 2>&1) && t_ok "$label: fio --verify=crc32c, 512 B..128 KiB" ||
			t_fail "$label: fio --verify=crc32c, 512 B..128 KiB" "$(tail -n 5 <<<"$out")"
		mnt=$(mktemp -d)
		if out=$(mkfs.ext4 -q -F "$dev" 2>&1) && out=$(mount "$dev" "$mnt" 2>&1); then
			dd if=/dev/urandom of="$mnt/big" bs=64k count=64 status=none
			for i in $(seq 1 20); do head -c $((i * 1531)) /dev/urandom >"$mnt/small$i"; done
			sum1=$(cd "$mnt" && sha256sum big small* | sha256sum)
			umount "$mnt"
			echo 3 >/proc/sys/vm/drop_caches
			mount "$dev" "$mnt" && sum2=$(cd "$mnt" && sha256sum big small* | sha256sum)
			umount "$mnt"
			t_eq "$label: ext4: checksums after remount" "${sum2:-}" "$sum1"
			t_check "$label: ext4: e2fsck clean" e2fsck -fn "$dev"
		else
			t_fail "$label: ext4 mkfs and mount" "$out"
		fi
		rmdir "$mnt"
	else
		ublk_check_io "$dev"
	fi
	if [ "$zc" = 1 ]; then
		t1=$(times "$pid" "${fds[@]}")
		echo "# $label: memfd atime mtime before: $(tr '\n' ' ' <<<"$t0")after: $(tr '\n' ' ' <<<"$t1")"
		# some queue's memfd was written (a write request's data in) and read (a read's out)
		moved=$(paste <(echo "$t0") <(echo "$t1") |
			awk '$3 != $1 { a = 1 } $4 != $2 { m = 1 } END { print (m ? "written" : "") (a ? " read" : "") }')
		t_eq "$label: the memfds were written and read by io_uring copies" "$moved" "written read"
	fi
	out=$("$UBLK_FLASH" stop "$img" 2>&1) || t_fail "$label: stop" "$out"
	ublk_wait_gone "$dev" || t_fail "$label: $dev gone after stop" "still there"
	t_check "$label: ublk-flash fsck" "$UBLK_FLASH" fsck "$img"
	rm -f "$img"
}

serve_case "$kver: default" "$want_zc"
# the A/B switch: copy mode on a kernel with zero copy
[ "$want_zc" = 1 ] && DATA=0 serve_case "$kver: OCTANT_UBLK_ZC=0" 0 OCTANT_UBLK_ZC=0
t_done
