#!/usr/bin/env bash
# Guest test: a `serve --recover` that fails after its checks (here: the image cannot be
# opened, another process holds its write lock) keeps the dead server's registry entry, so
# the next attempt (and `list`, `stop`, the systemd helper) still knows the waiting
# /dev/ublkbN is this image's; the next `serve --recover` re-attaches it and its entry replaces
# the dead one.  (Before, the failed attempt removed the entry.)
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
img=/tmp/ublk-recover-keep.img
if ! out=$(ublk_mkimg "$img" 64M odd 2>&1); then t_fail "create image" "$out"; t_done; fi
t_cleanup "rm -f $img"
t_cleanup "$UBLK_FLASH stop --force $img >/dev/null 2>&1"

if ! dev=$(ublk_serve "$img"); then t_fail "serve" "$dev"; t_done; fi
dd if=/dev/urandom of="$dev" bs=4k count=16 oflag=direct status=none
pid=$(ublk_server_pid "$img")
kill -9 "$pid"
ublk_wait_dead "$pid" 300 || { t_fail "killed server exits"; t_done; }
t_eq "listed dead" "$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev dead"

# This shell holds the image's write lock (flock LOCK_EX): the engine cannot open it.
exec 9<"$img"
flock -x 9
out=$("$UBLK_FLASH" serve "$img" --frontend ublk --recover 2>&1 9<&-); rc=$?
echo "# serve --recover said: $out"
t_eq "image locked: serve --recover fails busy (exit 5)" "$rc" 5
# (the pid the kernel records is flock(1)'s, which took the lock for this shell)
t_eq "image locked: the lock holder is named, not the dead server as serving" \
	"$(grep -c "open for writing by pid" <<<"$out")/$(grep -c "served on" <<<"$out")" 1/0
t_eq "image locked: the dead server's entry is kept" \
	"$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev dead"
t_eq "image locked: the device still waits" "$([ -b "$dev" ] && echo present)" present
exec 9<&-

if out=$(ublk_serve "$img" --recover); then
	t_eq "the next --recover re-attaches the same device" "$out" "$dev"
	t_eq "its entry replaces the dead one" \
		"$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev running"
	t_check "stop" "$UBLK_FLASH" stop "$img"
	ublk_wait_gone "$dev"
else
	t_fail "the next --recover re-attaches the same device" "$out"
fi
t_check "image passes ublk-flash fsck" "$UBLK_FLASH" fsck "$img"
t_done
