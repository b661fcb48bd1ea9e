#!/usr/bin/env bash
# vm-kernels: 6.12
# Guest test (issue 17): the engine served over NBD by nbdkit with the
# project's plugin, attached by the kernel's nbd driver (nbd-client over a
# unix socket), ext4 on it: mkfs, files, fsck, re-attach, data intact; then
# nbdkit stops cleanly and the image is clean.  Every guest kernel carries nbd.ko; one is
# enough for the NBD path (the vm-kernels line above: the vm tier's time).
. /octant/tests/vm/guest-lib.sh

PLUGIN=$BUILD/nbdkit-octant-plugin.so
for c in nbdkit nbd-client mkfs.ext4 e2fsck; do
	command -v $c >/dev/null || { echo "SKIP: no $c in the guest (host package missing)"; exit 77; }
done
[ -f "$PLUGIN" ] || { echo "SKIP: no $PLUGIN"; exit 77; }
modprobe nbd nbds_max=2 2>/dev/null
wait_for /dev/nbd0 20 || { echo "SKIP: no /dev/nbd0 (nbd.ko did not load)"; exit 77; }
kver=$(uname -r)

img=/tmp/nbd-flash.img sock=/tmp/nbd-flash.sock mnt=/tmp/nbd-mnt
mkdir -p $mnt
if ! out=$("$UBLK_FLASH" create $img --size 64M --align 1m --force 2>&1); then
	t_fail "$kver nbd: create image" "$out"; t_done
fi
nbdkit -U $sock -P /tmp/nbdkit.pid "$PLUGIN" $img align=1m || { t_fail "$kver nbd: nbdkit starts"; t_done; }
t_cleanup "kill \$(cat /tmp/nbdkit.pid) 2>/dev/null; sleep 1"
t_cleanup "nbd-client -d /dev/nbd0 >/dev/null 2>&1"
wait_for $sock 20
t_check "$kver nbd: nbd-client attaches /dev/nbd0 to nbdkit octant" \
	nbd-client -u $sock /dev/nbd0 -b 512
t_eq "$kver nbd: logical block size" "$(cat /sys/block/nbd0/queue/logical_block_size)" 512
q=/sys/block/nbd0/queue
echo "# $kver nbd: topology the kernel shows: logical $(cat $q/logical_block_size)," \
     "physical $(cat $q/physical_block_size), io_min $(cat $q/minimum_io_size)," \
     "alignment_offset $(cat /sys/block/nbd0/alignment_offset)"
t_check "$kver nbd: mkfs.ext4" mkfs.ext4 -q -F /dev/nbd0
t_check "$kver nbd: mount" mount /dev/nbd0 $mnt
mkdir -p $mnt/d
for i in $(seq 30); do
	dd if=/dev/urandom of=$mnt/d/f$i bs=1k count=$((i * 37 % 300 + 1)) status=none
done
(cd $mnt && sha256sum d/*) > /tmp/nbd-sums
sync
t_check "$kver nbd: umount" umount $mnt
t_check "$kver nbd: e2fsck -fn clean" e2fsck -fn /dev/nbd0
t_check "$kver nbd: detach" nbd-client -d /dev/nbd0
t_check "$kver nbd: re-attach" nbd-client -u $sock /dev/nbd0 -b 512
mount -o ro /dev/nbd0 $mnt && (cd $mnt && sha256sum -c --quiet /tmp/nbd-sums) >/tmp/nbd-check 2>&1
t_eq "$kver nbd: 30 files read back after re-attach" "$?" 0
umount $mnt 2>/dev/null
nbd-client -d /dev/nbd0 >/dev/null 2>&1
kill "$(cat /tmp/nbdkit.pid)"
for _ in $(seq 50); do kill -0 "$(cat /tmp/nbdkit.pid)" 2>/dev/null || break; sleep 0.1; done
t_check "$kver nbd: ublk-flash fsck of the image after nbdkit stopped" "$UBLK_FLASH" fsck $img
w=$("$UBLK_FLASH" stats $img --json | jq .host_write_sectors)
t_check "$kver nbd: the writes reached the engine (host_write_sectors $w)" test "${w:-0}" -gt 5000
t_done
