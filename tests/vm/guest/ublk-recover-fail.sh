#!/usr/bin/env bash
# Guest test: a `serve --recover` that fails part-way never removes the device the dead server
# left: it keeps waiting for its recovery (its writers blocked, not failed), the dead server's
# registry entry is kept, and the next `--recover` re-attaches the same /dev/ublkbN with the
# data intact.  The failures are real: the server runs out of descriptors (RLIMIT_NOFILE,
# `ulimit -n N` for N = 4, 5, ... until a --recover succeeds), so every step that opens one fails
# in turn -- the registry, the image, /dev/ublk-control, the queues' rings and eventfds,
# /dev/ublkcN -- with 2 queues, so one can fail after the other is up.  (Before, a --recover that
# failed after START_USER_RECOVERY -- a queue's ring or /dev/ublkcN out of descriptors -- sent
# STOP_DEV and DEL_DEV: the device was gone, and with it a filesystem mounted on it.)
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
img=/tmp/ublk-recover-fail.img
data=/tmp/ublk-recover-fail.data
if ! out=$(ublk_mkimg "$img" 64M 1m 2>&1); then t_fail "create image" "$out"; t_done; fi
t_cleanup "rm -f $img $data"
t_cleanup "$UBLK_FLASH stop --force $img >/dev/null 2>&1"

if ! dev=$(ublk_serve "$img" --queues 2); then t_fail "serve --queues 2" "$dev"; t_done; fi
dd if=/dev/urandom of="$data" bs=1M count=4 status=none
dd if="$data" of="$dev" bs=1M oflag=direct conv=fsync status=none
ublk_kill_server "$img" "serve" || t_done

recovered=; failed=0; gone=; unlisted=
for n in $(seq 4 64); do
	out=$( (ulimit -n "$n" && exec "$UBLK_FLASH" serve "$img" --frontend ublk --recover) 2>&1 )
	rc=$?
	if [ "$rc" -eq 0 ]; then
		recovered=$(tail -n 1 <<<"$out")   # (a note may come first)
		echo "# --recover with $n descriptors: $out"
		break
	fi
	failed=$((failed + 1))
	echo "# --recover with $n descriptors: exit $rc: $(tr '\n' ' ' <<<"$out")"
	[ -n "$out" ] || t_fail "--recover with $n descriptors: exit $rc without a word"
	# (a --recover finds the device by the image's tag, not by the entry:
	# go on after a lost entry, to see whether the device survives)
	listed=$("$UBLK_FLASH" list -n -r -o DEVICE,STATE 2>&1)
	if [ -z "$unlisted" ] && [ "$listed" != "$dev dead" ]; then
		unlisted="$n descriptors (exit $rc: $(tr '\n' ' ' <<<"$out"); list: $listed)"
	fi
	if [ ! -b "$dev" ]; then
		gone="$n descriptors (exit $rc: $(tr '\n' ' ' <<<"$out"))"
		break
	fi
done
t_eq "failed --recover attempts leave the device waiting (first that did not: ${gone:-none})" \
	"$gone" ""
t_eq "failed --recover attempts keep the dead server's entry (first that did not: ${unlisted:-none})" \
	"$unlisted" ""
t_eq "some --recover failed for want of descriptors before one succeeded" "$([ "$failed" -ge 3 ] && echo yes)" yes
t_eq "the next --recover re-attaches the same device" "$recovered" "$dev"
if [ "$recovered" = "$dev" ]; then
	t_eq "its entry is the new server's" "$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev running"
	t_check "the data written before the kill reads back" cmp -n $((4 << 20)) "$data" "$dev"
	t_check "stop" "$UBLK_FLASH" stop "$img"
	ublk_wait_gone "$dev"
fi
t_check "image passes ublk-flash fsck" "$UBLK_FLASH" fsck "$img"
t_done
