#!/usr/bin/env bash
# Guest test: `ublk-flash resize` with ublk (issue 29 item 3; offline: online resize is not
# built).  A served image, by its path or its /dev/ublkbN, is refused (exit 5, one line, the
# device's size unchanged); stopped, resized 64M -> 192M and served again, /sys/block/ublkbN/size
# shows the new size, ext4 (4 KiB blocks) grows mounted with resize2fs, every fsync'd file's
# checksum matches, e2fsck clean.
# vm-kernels: 7.3
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
command -v resize2fs >/dev/null || { echo "SKIP: no resize2fs in the guest"; exit 77; }

img=/tmp/ublk-resize.img
mnt=$(mktemp -d)
out=$("$UBLK_FLASH" create "$img" --size 64M --align 1m --max-size 256M --force 2>&1) ||
	{ t_fail "create --max-size" "$out"; t_done; }
t_cleanup "rm -f $img; rmdir $mnt"
dev=$(ublk_serve "$img") || { t_fail "$(uname -r): serve" "$dev"; t_done; }
t_cleanup "umount $mnt 2>/dev/null; $UBLK_FLASH stop $img 2>/dev/null"
n=${dev#/dev/ublkb}
out=$(mkfs.ext4 -q -F -b 4096 "$dev" 2>&1 && mount "$dev" "$mnt" 2>&1) ||
	{ t_fail "mkfs.ext4 and mount $dev" "$out"; t_done; }
mkdir "$mnt/d"
for i in $(seq 1 12); do head -c $((i * 3001)) /dev/urandom >"$mnt/d/f$i"; done
dd if=/dev/urandom of="$mnt/d/big" bs=1M count=8 conv=fsync status=none
sync -f "$mnt"
sums=$(cd "$mnt" && sha256sum d/*)
before=$(df -k "$mnt" | awk 'NR == 2 { print $2 * 1024 }')

for what in "$img" "$dev"; do
	out=$("$UBLK_FLASH" resize "$what" --size 192M 2>&1); rc=$?
	if [ "$rc" = 5 ] && [ "$(wc -l <<<"$out")" = 1 ]; then
		t_ok "resize $what while served: exit 5, one line ($out)"
	else
		t_fail "resize $what while served: exit 5, one line" "exit $rc: $out"
	fi
done
t_eq "the device kept its size" "$(cat /sys/block/ublkb$n/size)" $((64 << 11))

umount "$mnt"
out=$("$UBLK_FLASH" stop "$dev" 2>&1) || t_fail "stop" "$out"
t_check "resize $img --size 192M (stopped)" "$UBLK_FLASH" resize "$img" --size 192M
dev=$(ublk_serve "$img") || { t_fail "serve the grown image" "$dev"; t_done; }
n=${dev#/dev/ublkb}
t_eq "/sys/block/ublkb$n/size after the grow" "$(cat /sys/block/ublkb$n/size)" $((192 << 11))
out=$(mount "$dev" "$mnt" 2>&1) || { t_fail "mount after the grow" "$out"; t_done; }
t_check "resize2fs $dev, mounted (online grow)" resize2fs "$dev"
after=$(df -k "$mnt" | awk 'NR == 2 { print $2 * 1024 }')
if [ "$after" -gt $((before + (100 << 20))) ]; then
	t_ok "ext4 grew: $before -> $after bytes"
else
	t_fail "ext4 grew" "$before -> $after bytes"
fi
t_eq "every checksum after the grow" "$(cd "$mnt" && sha256sum d/*)" "$sums"
umount "$mnt"
t_check "e2fsck clean" e2fsck -fn "$dev"
out=$("$UBLK_FLASH" stop "$dev" 2>&1) || t_fail "stop" "$out"
t_check "ublk-flash fsck clean" "$UBLK_FLASH" fsck "$img"
t_done
