#!/usr/bin/env bash
# Guest test: a live upgrade that fails never fails an I/O nor loses the device (docs/ublk.md,
# "Live upgrade").  Where the device has UBLK_F_QUIESCE (7.3):
# - before the handover: the new server runs out of descriptors (`ulimit -n N` for N = 4, 5,
#   ... until an upgrade succeeds), so each step that opens one fails in turn -- the CLI's own,
#   the registry, the control socket, the queues' rings and eventfds, the descriptors held for
#   after the handover; each failure leaves the running server serving (the same pid in the
#   registry and the kernel, LIVE, reads answered at once);
# - after the handover: another process takes the image's lock the moment the old server lets
#   go of it, so the new server cannot open the image: `upgrade` exits 5 saying the device
#   waits quiesced; it is there (same major:minor), QUIESCED, a write issued then waits and
#   does not fail, `list` says dead; `serve --recover` re-attaches it and the write completes;
# - with --dm NAME: the dm device stacked on it stays through the handover (same major:minor,
#   same table) and reads the data.
# Where the kernel has no QUIESCE_DEV (6.1, 6.12): `serve IMG --upgrade` itself refuses with
# one line and exit 6, nothing changed.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
rel=$(uname -r)
img=/tmp/ublk-upgrade-fail.img
data=/tmp/ublk-upgrade-fail.data
if ! out=$(ublk_mkimg "$img" 64M 1m 2>&1); then t_fail "create image" "$out"; t_done; fi
t_cleanup "rm -f $img $data /tmp/ublk-upgrade-fail.dd"
t_cleanup "$UBLK_FLASH stop --force $img"
if ! dev=$(ublk_serve "$img" --queues 2); then t_fail "$rel: serve --queues 2" "$dev"; t_done; fi
dd if=/dev/urandom of="$data" bs=1M count=4 status=none
dd if="$data" of="$dev" bs=1M oflag=direct conv=fsync status=none
probe() { "$BUILD/ublk-probe" info "${dev#/dev/ublkb}" | sed -n "s/^$1 //p"; }
pid=$(ublk_server_pid "$img")
# serving DESC: the server $pid still serves $dev: registry, kernel, a read answered at once.
serving() {
	local bad=
	[ "$("$UBLK_FLASH" list -n -r -o DEVICE,PID,STATE)" = "$dev $pid running" ] || bad="list"
	[ "$(probe pid)/$(probe state)" = "$pid/1" ] || bad="$bad kernel:$(probe pid)/$(probe state)"
	timeout 20 dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none ||
		bad="$bad read"
	echo "$bad"
}

if [ $(($(probe flags) & 0x1000)) -eq 0 ]; then
	out=$("$UBLK_FLASH" serve "$img" --frontend ublk --upgrade 2>&1); rc=$?
	echo "# serve --upgrade said: $out"
	t_eq "$rel: no QUIESCE_DEV: serve --upgrade refused (exit 6)" "$rc" 6
	t_eq "$rel: ... with one line naming QUIESCE_DEV" \
		"$(wc -l <<<"$out")/$(grep -c 'no QUIESCE_DEV.*nothing changed' <<<"$out")" 1/1
	t_eq "$rel: ... the server serves on" "$(serving)" ""
	t_done
fi

# ---- before the handover: out of descriptors ----
# (one more descriptor at a time while each attempt fails at a new step; up to 4 more while
# they fail at the same one: the 16 descriptors held for after the handover)
upgraded=; failed=0; bad=; n=3; step=1; last=
while [ "$n" -lt 96 ]; do
	n=$((n + step))
	out=$( (ulimit -n "$n" && exec "$UBLK_FLASH" upgrade "$dev") 2>&1 ); rc=$?
	if [ "$(head -n 1 <<<"$out" | sed 's/pid [0-9]*/pid/')" = "$last" ]; then
		step=4
	else
		step=1; last=$(head -n 1 <<<"$out" | sed 's/pid [0-9]*/pid/')
	fi
	if [ "$rc" -eq 0 ]; then
		upgraded=$(head -n 1 <<<"$out")
		echo "# upgrade with $n descriptors: $(tr '\n' ' ' <<<"$out")"
		break
	fi
	failed=$((failed + 1))
	echo "# upgrade with $n descriptors: exit $rc: $(tr '\n' ' ' <<<"$out")"
	[ -n "$out" ] || bad="${bad:-$n descriptors: exit $rc without a word}"
	s=$(serving)
	[ -z "$s" ] || { bad="${bad:-$n descriptors (exit $rc: $(tr '\n' ' ' <<<"$out")): $s}"; break; }
done
t_eq "$rel: failed upgrades leave the server serving (first that did not: ${bad:-none})" "$bad" ""
t_eq "$rel: some upgrades failed for want of descriptors before one succeeded" \
	"$([ "$failed" -ge 3 ] && echo yes)" yes
t_eq "$rel: then an upgrade succeeds on the same device" "$upgraded" "$dev"
pid=$(ublk_server_pid "$img")
t_check "$rel: the data reads back" cmp -n $((4 << 20)) "$data" "$dev"

# ---- after the handover: the image still locked when the new server opens it ----
read -r mm0 <"/sys/block/${dev#/dev/}/dev"
# a copy of the server's descriptor of the image, its flock with it: the lock outlives the
# old server's close, so the new one finds the image busy after the handover, every time
"$BUILD/fd-hold" "$pid" "$img" 600 >/tmp/ublk-upgrade-fail.hold 2>&1 &
fl=$!
t_cleanup "kill $fl"
for i in $(seq 100); do grep -q held /tmp/ublk-upgrade-fail.hold && break; sleep 0.1; done
out=$("$UBLK_FLASH" upgrade "$dev" 2>&1); rc=$?
echo "# upgrade said: $(tr '\n' ' ' <<<"$out")"
t_eq "$rel: image taken after the handover: upgrade fails busy (exit 5)" "$rc" 5
t_eq "$rel: ... saying the device waits quiesced for serve --recover" \
	"$(grep -c 'waits quiesced.*--recover' <<<"$out")" 1
read -r mm <"/sys/block/${dev#/dev/}/dev"
t_eq "$rel: ... the device is there, the same" "$([ -b "$dev" ] && echo "$mm")" "$mm0"
t_eq "$rel: ... QUIESCED" "$(probe state)" 2
t_eq "$rel: ... listed dead (its server handed it over)" \
	"$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev dead"
rm -f /tmp/ublk-upgrade-fail.dd
( dd if="$data" of="$dev" bs=1M count=1 seek=8 oflag=direct conv=fsync status=none
  echo $? >/tmp/ublk-upgrade-fail.dd ) &
ddp=$!
sleep 2
t_eq "$rel: ... a write issued now waits" \
	"$(cat /tmp/ublk-upgrade-fail.dd 2>/dev/null || echo waiting)" waiting
kill "$fl"; wait "$fl"
if out=$(ublk_serve "$img" --recover); then
	t_eq "$rel: serve --recover re-attaches the same device" "$out" "$dev"
else
	t_fail "$rel: serve --recover re-attaches the same device" "$out"
fi
for i in $(seq 600); do kill -0 "$ddp" 2>/dev/null || break; sleep 0.1; done
t_eq "$rel: the write that waited completes without error" \
	"$(cat /tmp/ublk-upgrade-fail.dd 2>/dev/null)" 0
t_check "$rel: ... and reads back" cmp -n $((1 << 20)) "$data" "$dev" 0 $((8 << 20))
t_check "$rel: the data of before reads back" cmp -n $((4 << 20)) "$data" "$dev"
t_check "$rel: stop" "$UBLK_FLASH" stop "$img"
ublk_wait_gone "$dev"
t_check "$rel: image passes ublk-flash fsck" "$UBLK_FLASH" fsck "$img"

# ---- --dm: the stacked device stays ----
img2=/tmp/ublk-upgrade-dm.img
t_cleanup "rm -f $img2"
t_cleanup "$UBLK_FLASH stop --force $img2"
if ! out=$(ublk_mkimg "$img2" 64M odd 2>&1); then t_fail "create image (dm)" "$out"; t_done; fi
if ! dm=$(ublk_serve "$img2" --dm ublk-upgrade-dm); then t_fail "$rel: serve --dm" "$dm"; t_done; fi
dev=$("$UBLK_FLASH" list -n -r -o DEVICE)
dd if="$data" of="$dm" bs=1M oflag=direct conv=fsync status=none
dmm0=$(stat -L -c %t:%T "$dm"); table0=$(dmsetup table ublk-upgrade-dm)
out=$("$UBLK_FLASH" upgrade "$img2" 2>&1); rc=$?
echo "# upgrade said: $(tr '\n' ' ' <<<"$out")"
t_eq "$rel: --dm: upgrade exits 0" "$rc" 0
t_eq "$rel: --dm: the dm device stays, the same, with the same table" \
	"$(stat -L -c %t:%T "$dm" 2>&1) $(dmsetup table ublk-upgrade-dm 2>&1)" "$dmm0 $table0"
t_check "$rel: --dm: the data reads back through it" cmp -n $((4 << 20)) "$data" "$dm"
t_eq "$rel: --dm: listed with its dm device, running" \
	"$("$UBLK_FLASH" list -n -r -o DM,STATE)" "ublk-upgrade-dm running"
# A successor that fails once it has re-attached the device (here: the dm device's table is
# not the one it would stack) leaves the device quiesced, for a --recover, never removes it.
mm0=$(stat -L -c %t:%T "$dev")
read -r t0 tlen ttype tdev toff <<<"$table0"
t_check "$rel: --dm: its table changed (8 sectors shorter)" \
	dmsetup reload ublk-upgrade-dm --table "$t0 $((tlen - 8)) $ttype $tdev $toff"
dmsetup resume ublk-upgrade-dm
out=$("$UBLK_FLASH" upgrade "$img2" 2>&1); rc=$?
echo "# upgrade said: $(tr '\n' ' ' <<<"$out")"
t_eq "$rel: --dm: a successor that fails after the re-attach exits 3, saying it waits quiesced" \
	"$rc/$(grep -c 'waits quiesced.*--recover' <<<"$out")" 3/1
t_eq "$rel: --dm: ... the device is there, the same, QUIESCED" \
	"$(stat -L -c %t:%T "$dev" 2>&1)/$(probe state)" "$mm0/2"
t_eq "$rel: --dm: ... listed dead" "$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev dead"
dmsetup reload ublk-upgrade-dm --table "$table0" && dmsetup resume ublk-upgrade-dm
if out=$(ublk_serve "$img2" --dm ublk-upgrade-dm --recover 2>&1); then
	t_eq "$rel: --dm: serve --recover (the table put back) re-attaches it" "$out" "$dm"
else
	t_fail "$rel: --dm: serve --recover re-attaches it" "$out"
fi
t_check "$rel: --dm: the data reads back through it" cmp -n $((4 << 20)) "$data" "$dm"
t_check "$rel: --dm: stop" "$UBLK_FLASH" stop "$img2"
t_eq "$rel: --dm: stop removes the dm device" "$([ -e "$dm" ] && echo present)" ""
t_done
