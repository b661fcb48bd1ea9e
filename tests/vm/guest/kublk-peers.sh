#!/usr/bin/env bash
# vm-kernels: 7.3
# Guest test: the peers bench-vm measures ublk-flash against on 7.3 (issue 29) are up and
# real.  kublk is the kernel selftests' ublk server, built by tests/vm/prepare.sh from
# linux-source-7.3 against trixie's liburing (static).  With 2 queues and depth 64, as
# bench-vm runs them: its loop target over a tmpfs file carries data both ways (written
# through the device, found in the file; written in the file, read through the device),
# its null target and null_blk take I/O; kublk's daemon is the device's ublk server.
# (Only 7.3's guest carries kublk: the "vm-kernels" line above.)
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
PROBE=$BUILD/ublk-probe
kver=$(uname -r)
# the 7.3 guest always has it (prepare.sh fails when it cannot build it): missing is a defect
command -v kublk >/dev/null || { t_fail "$kver: kublk is in the guest (tests/vm/prepare.sh builds it)"; t_done; }

# kublk_add ARGS...: the id of the device kublk add made (ublkcN that was not there before)
kublk_add() {
	local before c out
	before=$(echo /sys/class/ublk-char/ublkc*)
	out=$(kublk add "$@" --quiet 2>&1) || { echo "kublk add $*: $out" >&2; return 1; }
	for c in /sys/class/ublk-char/ublkc*; do
		[[ " $before " == *" $c "* ]] || { echo "${c##*/ublkc}"; return 0; }
	done
	echo "kublk add $*: no new device ($out)" >&2
	return 1
}

# 1. the loop target over a tmpfs file
truncate -s 32M /tmp/kublk-peer.img
t_cleanup "rm -f /tmp/kublk-peer.img /tmp/kublk-peer.dat"
if ! id=$(kublk_add -t loop -q 2 -d 64 /tmp/kublk-peer.img 2>&1); then t_fail "$kver: kublk add -t loop" "$id"; t_done; fi
t_cleanup "kublk del -n $id"
dev=/dev/ublkb$id
wait_for "$dev" 50 || { t_fail "$kver: $dev appears"; t_done; }
info=$("$PROBE" info "$id" 2>&1)
pid=$(sed -n 's/^pid //p' <<<"$info")
t_eq "$kver: kublk loop: its daemon serves $dev" "$(cat "/proc/$pid/comm" 2>/dev/null)" kublk
t_eq "$kver: kublk loop: 2 queues" "$(ls -d /sys/block/ublkb"$id"/mq/* | wc -l)" 2
t_eq "$kver: kublk loop: depth 64" "$(cat /sys/block/ublkb"$id"/queue/nr_requests)" 64
dd if=/dev/urandom of=/tmp/kublk-peer.dat bs=64k count=32 status=none
if out=$(dd if=/tmp/kublk-peer.dat of="$dev" bs=64k seek=16 oflag=direct conv=fsync status=none 2>&1) &&
   out=$(cmp -i 0:$((16 * 65536)) -n $((2 << 20)) /tmp/kublk-peer.dat /tmp/kublk-peer.img 2>&1); then
	t_ok "$kver: kublk loop: 2 MiB written through $dev are in the backing file"
else
	t_fail "$kver: kublk loop: 2 MiB written through $dev are in the backing file" "$out"
fi
dd if=/dev/urandom of=/tmp/kublk-peer.dat bs=64k count=8 status=none
dd if=/tmp/kublk-peer.dat of=/tmp/kublk-peer.img bs=64k seek=100 conv=notrunc,fsync status=none
if out=$(dd if="$dev" of=/tmp/kublk-peer.rd bs=64k skip=100 count=8 iflag=direct status=none 2>&1) &&
   out=$(cmp /tmp/kublk-peer.dat /tmp/kublk-peer.rd 2>&1); then
	t_ok "$kver: kublk loop: 512 KiB written in the backing file read back through $dev"
else
	t_fail "$kver: kublk loop: 512 KiB written in the backing file read back through $dev" "$out"
fi
rm -f /tmp/kublk-peer.rd
t_check "$kver: kublk del -n $id" kublk del -n "$id"
ublk_wait_gone "$dev" || t_fail "$kver: $dev goes away after kublk del"

# 2. the null target and null_blk take I/O (fio, as bench-vm runs it: io_uring, direct, QD32)
fio_ok() {
	fio --name=p --filename="$1" --ioengine=io_uring --direct=1 --iodepth=32 --rw=randrw \
	    --bs=4k --size=16M --io_size=4M --output-format=json 2>/dev/null | sed -n '/^{/,$p' |
		jq -e '.jobs[0].error == 0 and (.jobs[0].read.io_bytes + .jobs[0].write.io_bytes) == 4194304' >/dev/null
}
if ! id=$(kublk_add -t null -q 2 -d 64 2>&1); then t_fail "$kver: kublk add -t null" "$id"; t_done; fi
dev=/dev/ublkb$id
wait_for "$dev" 50 || { t_fail "$kver: $dev appears"; t_done; }
t_check "$kver: kublk null: fio 4 MiB of 4K random I/O on $dev" fio_ok "$dev"
t_check "$kver: kublk del -n $id (null)" kublk del -n "$id"
if modprobe null_blk nr_devices=1 gb=1 submit_queues=2 hw_queue_depth=64 && wait_for /dev/nullb0 50; then
	t_cleanup "rmmod null_blk"
	t_eq "$kver: null_blk: hw_queue_depth 64" "$(cat /sys/block/nullb0/queue/nr_requests)" 64
	t_check "$kver: null_blk: fio 4 MiB of 4K random I/O on /dev/nullb0" fio_ok /dev/nullb0
else
	t_fail "$kver: modprobe null_blk submit_queues=2 hw_queue_depth=64"
fi
t_done
