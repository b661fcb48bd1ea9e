#!/usr/bin/env bash
# vm-kernels: 7.3
# vm-timeout: 600
# Guest test: ublk serving on an RBD medium.  The one-node Ceph cluster runs on the host
# (tests/vm/ceph-guest.bash, started by guest-tap.sh when OCTANT_VM_RBD=1); this guest,
# booted with vm-run.sh --rbd, reaches it through its NIC (slirp) and socat, and serves
# rbd://rbd/IMAGE over ublk with librbd: ext4, fsync'd files, kill -9 of the server while a
# writer runs, `serve --recover` (which first waits for the dead server's RBD lock to be
# broken), every file read back after a remount, e2fsck, a clean stop.
# SKIPs (exit 77) without the cluster or the --rbd part.  Phase times are printed (# lines).
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
env=${OCTANT_VM_OUT:-/nonexistent}/ceph/guest.env
[ -r "$env" ] || { echo "SKIP: no Ceph cluster on the host ($env missing: OCTANT_VM_RBD=1, and ceph-mon ceph-mgr ceph-osd ceph-common on the host)"; exit 77; }
[ -d /octant/rbd/modules ] || { echo "SKIP: no librbd in this guest (vm-run.sh --rbd; guest-tap.sh passes it with OCTANT_VM_RBD=1)"; exit 77; }
# shellcheck source=/dev/null
. "$env"
export CEPH_CONF=${env%/*}/guest.conf

now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t0=$(now)
for m in failover net_failover virtio_net; do
	[ -e "/octant/rbd/modules/$m.ko" ] && insmod "/octant/rbd/modules/$m.ko"
done
wait_for /sys/class/net/eth0 100 || { t_fail "virtio_net: eth0 appears"; t_done; }
ip addr show dev eth0 | grep -q 10.0.2.15/ ||
	{ ip link set lo up && ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0; } ||
	{ t_fail "eth0 up at 10.0.2.15"; t_done; }
# the monitor and the OSD advertise 127.0.0.1: here, that is socat to the host's (10.0.2.2)
for p in "$CEPH_MON_PORT" "$CEPH_OSD_PORT"; do
	socat "TCP-LISTEN:$p,bind=127.0.0.1,fork,reuseaddr" "TCP:10.0.2.2:$p" &
	t_cleanup "kill $!"
done
echo "# network up in $(since "$t0")s"

img=rbd://rbd/vm-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
# serve_pid: the pid the run registry records for $img's server
serve_pid() {
	local d
	for d in "${UBLK_FLASH_RUN_DIR:-/run/octant}"/*/; do
		[ "$(cat "$d/image" 2>/dev/null)" = "$img" ] && cat "$d/pid" 2>/dev/null && return 0
	done
	return 1
}

t0=$(now)
if ! out=$("$UBLK_FLASH" create "$img" --size 64M --align odd 2>&1); then
	t_fail "create $img" "$out"; t_done
fi
echo "# create on RBD: $(since "$t0")s"
t0=$(now)
if ! dev=$(ublk_serve "$img"); then t_fail "serve $img --frontend ublk" "$dev"; t_done; fi
echo "# serve --frontend ublk on RBD: $(since "$t0")s"
t_ok "serve rbd:// --frontend ublk: $dev"
t_cleanup "$UBLK_FLASH stop --force $img"

mnt=$(mktemp -d)
src=$(mktemp -d)
t0=$(now)
mkfs.ext4 -q -F "$dev" && mount "$dev" "$mnt" || { t_fail "ext4 on $dev"; t_done; }
t_cleanup "umount $mnt 2>/dev/null; rm -rf $mnt $src"
echo "# mkfs.ext4 + mount: $(since "$t0")s"
for j in $(seq 1 40); do head -c $((j * 7919)) /dev/urandom >"$src/f$j"; done
for j in $(seq 1 20); do cp "$src/f$j" "$mnt/" && sync "$mnt/f$j"; done
# a writer keeps going (file by file, each fsync'd) across the kill and the recovery
(for j in $(seq 21 40); do cp "$src/f$j" "$mnt/" && sync "$mnt/f$j"; done) &
wpid=$!
sleep 0.5
pid=$(serve_pid)
if [ -z "$pid" ]; then t_fail "server pid in the run registry"; t_done; fi
kill -9 "$pid"
ublk_wait_dead "$pid" 300 || { t_fail "killed server exits"; t_done; }
t0=$(now)
if out=$(ublk_serve "$img" --recover); then
	echo "# serve --recover on RBD (the dead server's lock broken first): $(since "$t0")s"
	t_eq "kill -9 + serve --recover re-attaches the same device" "$out" "$dev"
else
	t_fail "serve --recover after kill -9" "$out"
	"$UBLK_FLASH" stop --force "$img" >/dev/null 2>&1   # fails the writer's I/O
	kill "$wpid" 2>/dev/null
	t_done
fi
wait "$wpid"; wrc=$?
t_eq "the writer's fsyncs all succeed across the kill" "$wrc" 0
umount "$mnt"
echo 3 >/proc/sys/vm/drop_caches
bad=''
if mount "$dev" "$mnt"; then
	for j in $(seq 1 40); do cmp -s "$src/f$j" "$mnt/f$j" || bad+=" f$j"; done
	umount "$mnt"
	t_eq "every fsync'd file reads back after a remount (40)" "${bad:-none}" none
else
	t_fail "remount after the recovery"
fi
t_check "e2fsck -fn clean" e2fsck -fn "$dev"
# what a read costs here (slirp + socat under TCG): the time above goes to round trips
t0=$(now)
dd if="$dev" of=/dev/null bs=4k count=200 skip=1000 iflag=direct status=none
echo "# 200 4 KiB O_DIRECT reads: $(since "$t0")s"
t0=$(now)
t_check "stop" "$UBLK_FLASH" stop "$img"
echo "# stop: $(since "$t0")s"
# (the engine's fsck on RBD, ~100 s here at load 10, is left to rbd-backing.bats on the host)
t_done
