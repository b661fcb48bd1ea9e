#!/usr/bin/env bash
# Guest test (issue 28 item 5): when the engine turns read-only (its spare blocks used up by
# program/erase failures, serve --faults), /dev/ublkbN turns read-only too (BLKROSET): blockdev
# --getro 1, a read-write mount is refused, a read-only mount reads every file; one log line
# says why; an image worn out already is served read-only from the start.  The FUSE + loop
# path is tests/integration/serve-worn-ro.bats.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver

img=/tmp/ublk-worn.img
mnt=$(mktemp -d)
log=/tmp/ublk-worn.log
t_cleanup "umount $mnt 2>/dev/null; rmdir $mnt; rm -f $img $log"

# ro_checks LABEL DEV SUM: read-only for the kernel, rw mount refused, ro mount reads SUM.
ro_checks() {
	local label=$1 dev=$2 sum=$3 out
	t_eq "$label: blockdev --getro" "$(blockdev --getro "$dev")" 1
	if out=$(mount -w "$dev" "$mnt" 2>&1); then
		umount "$mnt"
		t_fail "$label: a read-write mount is refused" "it mounted"
	elif [[ $out == *write-protected* ]]; then
		t_ok "$label: a read-write mount is refused ($(head -n 1 <<<"$out"))"
	else    # 3c48226: "can't read superblock" (tried, every write failed)
		t_fail "$label: a read-write mount is refused as write-protected" "$out"
	fi
	if out=$(mount -o ro "$dev" "$mnt" 2>&1); then
		t_eq "$label: a read-only mount reads every file" \
			"$(cd "$mnt" && sha256sum f* | sha256sum)" "$sum"
		umount "$mnt"
	else
		t_fail "$label: a read-only mount works" "$out"
	fi
}

if ! out=$(ublk_mkimg "$img" 32M 1m 2>&1); then t_fail "create image" "$out"; t_done; fi
if ! dev=$(ublk_serve "$img"); then t_fail "serve" "$dev"; t_done; fi
t_cleanup "$UBLK_FLASH stop --force $img"
mkfs.ext4 -q -F "$dev" 16M && mount "$dev" "$mnt" || { t_fail "mkfs.ext4 and mount"; t_done; }
for i in 1 2 3 4 5 6; do head -c $((i * 70001)) /dev/urandom >"$mnt/f$i"; done
sum=$(cd "$mnt" && sha256sum f* | sha256sum)
umount "$mnt"
"$UBLK_FLASH" stop "$img" || { t_fail "stop"; t_done; }

# program and erase failures until more blocks went bad than the spares absorb (2 here)
if ! dev=$(ublk_serve "$img" --log "$log" --faults "program=0.02,erase=0.2,seed=11"); then
	t_fail "serve --faults" "$dev"; t_done
fi
dev=$(tail -n 1 <<<"$dev")              # after the line naming the fault model
t_eq "with faults: blockdev --getro at start" "$(blockdev --getro "$dev")" 0
for i in $(seq 1 20); do
	dd if=/dev/urandom of="$dev" bs=1M seek=16 count=16 oflag=direct status=none \
		2>/dev/null || break
done
if [ "$i" -lt 20 ]; then t_ok "raw writes fail once the spares are used up (round $i)"
else t_fail "raw writes fail once the spares are used up"; fi
for i in $(seq 50); do [ "$(blockdev --getro "$dev")" = 1 ] && break; sleep 0.1; done
n=$(grep -c "ublk-flash: $dev set read-only: the flash's spare blocks are used up" "$log")
t_eq "one log line says why" "$n" 1
ro_checks "turned read-only" "$dev" "$sum"
"$UBLK_FLASH" stop "$img" || t_fail "stop after read-only"

if ! out=$("$UBLK_FLASH" serve "$img" --frontend ublk 2>&1); then t_fail "serve worn" "$out"; t_done; fi
dev=$(tail -n 1 <<<"$out")
if [[ $out == *"set read-only: the flash's spare blocks are used up"* ]]; then
	t_ok "worn at start: serve says it"
else
	t_fail "worn at start: serve says it" "$out"
fi
ro_checks "worn at start" "$dev" "$sum"
"$UBLK_FLASH" stop "$img" || t_fail "stop worn"
t_done
