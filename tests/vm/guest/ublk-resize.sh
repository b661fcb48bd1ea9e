#!/usr/bin/env bash
# Guest test: `ublk-flash resize` with ublk (issue 29 item 3).  Online where the driver has
# UPDATE_SIZE (7.3): the served image grows by its path (64M -> 128M) and by its /dev/ublkbN
# (-> 160M) while ext4 is mounted, /sys/block/ublkbN/size follows, resize2fs grows it mounted.
# A server killed between the engine's grow and UPDATE_SIZE (the image grown, the device not):
# `serve --recover` re-attaches it and grows it.  Without UPDATE_SIZE (6.1, 6.12): refused before anything changes (exit 6, one line naming
# UPDATE_SIZE, the device's and the image's size unchanged).  Then, on every kernel: stopped,
# resized to 192M and served again, /sys/block/ublkbN/size shows it, resize2fs grows ext4
# mounted, every fsync'd file's checksum matches, e2fsck and ublk-flash fsck clean.
# vm-kernels: 7.3 6.12 6.1
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

kv=$(uname -r | awk -F. '{ print $1 * 100 + $2 }')
if [ "$kv" -ge 614 ]; then
	t_check "resize $img --size 128M while served (online)" \
		"$UBLK_FLASH" resize "$img" --size 128M
	t_eq "/sys/block/ublkb$n/size after the online grow" \
	     "$(cat /sys/block/ublkb$n/size)" $((128 << 11))
	t_check "resize $dev --size 160M while served (online)" \
		"$UBLK_FLASH" resize "$dev" --size 160M
	t_eq "/sys/block/ublkb$n/size after the second online grow" \
	     "$(cat /sys/block/ublkb$n/size)" $((160 << 11))
	t_check "resize2fs $dev, mounted, after the online grow" resize2fs "$dev"
	mid=$(df -k "$mnt" | awk 'NR == 2 { print $2 * 1024 }')
	if [ "$mid" -gt $((before + (80 << 20))) ]; then
		t_ok "ext4 grew online: $before -> $mid bytes"
	else
		t_fail "ext4 grew online" "$before -> $mid bytes"
	fi
	t_eq "every checksum after the online grow" "$(cd "$mnt" && sha256sum d/*)" "$sums"
	dd if=/dev/urandom of="$mnt/d/new" bs=1M count=60 conv=fsync status=none &&
		t_ok "60 MiB more written into the new space" ||
		t_fail "60 MiB more written into the new space" "dd failed"
	sums=$(cd "$mnt" && sha256sum d/*)
	# a server killed between the engine's grow and UPDATE_SIZE: the
	# image grown (here offline, once it died), the device still
	# smaller; serve --recover takes it and grows it (ext4 mounted)
	pid=$(ublk_server_pid "$img")
	kill -9 "$pid"
	ublk_wait_dead "$pid" 300 || t_fail "the killed server exits"
	t_check "resize $img --size 176M (its server dead)" \
		"$UBLK_FLASH" resize "$img" --size 176M
	out=$(ublk_serve "$img" --recover 2>&1)
	t_eq "serve --recover of the smaller device re-attaches it" "$out" "$dev"
	t_eq "/sys/block/ublkb$n/size after the recovery" \
	     "$(cat /sys/block/ublkb$n/size)" $((176 << 11))
	t_eq "every checksum after the recovery" "$(cd "$mnt" && sha256sum d/*)" "$sums"
else
	isz=$(stat -c %s "$img")
	for what in "$img" "$dev"; do
		out=$("$UBLK_FLASH" resize "$what" --size 128M 2>&1); rc=$?
		if [ "$rc" = 6 ] && [ "$(wc -l <<<"$out")" = 1 ] &&
		   [[ "$out" == *UPDATE_SIZE* ]]; then
			t_ok "resize $what while served, no UPDATE_SIZE: exit 6, one line ($out)"
		else
			t_fail "resize $what while served, no UPDATE_SIZE: exit 6, one line" \
			       "exit $rc: $out"
		fi
	done
	t_eq "the device kept its size" "$(cat /sys/block/ublkb$n/size)" $((64 << 11))
	t_eq "the image kept its size" "$(stat -c %s "$img")" "$isz"
	t_eq "every checksum after the refusals" "$(cd "$mnt" && sha256sum d/*)" "$sums"
fi

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
