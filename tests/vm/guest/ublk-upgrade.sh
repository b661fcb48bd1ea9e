#!/usr/bin/env bash
# Guest test: live upgrade (`ublk-flash upgrade DEV`, docs/ublk.md "Live upgrade").  Where the
# device has UBLK_F_QUIESCE (7.3): ext4 mounted on partition 1 with files written and synced
# one after another, and fio --verify=crc32c (io_uring, direct) in rounds on partition 2,
# while the device is handed from server to server 20 times back to back (OCTANT_LONG=1:
# 100), every other time to a copy of the binary (--binary); each upgrade waits until the
# device has completed I/O since the one before.  Asserts: every upgrade exits 0 and names a
# new pid, which the registry, --pidfile, the kernel and $NOTIFY_SOCKET (MAINPID=, the socket
# passed from server to server) then record; no I/O error (fio, the
# file writer, dmesg), no verify failure; the device node never gone and its major:minor
# unchanged (polled every 50 ms); every open after a handover a clean mount (the health log's
# unsafe shutdowns unchanged, its power cycles one more per upgrade); the files read back
# after a remount; e2fsck clean.  Prints the pause per upgrade (median, max).  Where the
# kernel has no QUIESCE_DEV (6.1, 6.12): `upgrade` is refused with one line and exit 6, and
# the device is untouched (same server, LIVE, I/O works).
# vm-timeout: 600
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
rel=$(uname -r)
img=/tmp/ublk-upgrade.img
pidf=/tmp/ublk-upgrade.pid
logf=/tmp/ublk-upgrade.log
w=/tmp/ublk-upgrade.d            # the workloads' files (not on the device)
rm -rf "$w"; mkdir -p "$w"
if ! out=$(ublk_mkimg "$img" 128M 1m 2>&1); then t_fail "create image" "$out"; t_done; fi
t_cleanup "rm -rf $img $w /tmp/ublk-flash-next $pidf $logf"
t_cleanup "$UBLK_FLASH stop --force $img"
# the first server tells a supervisor as systemd's would see it ($NOTIFY_SOCKET)
"$BUILD/dgram-listen" "$w/notify.sock" "$w/notify" &
t_cleanup "kill $!"
wait_for "$w/notify.sock" 50
if ! dev=$(NOTIFY_SOCKET=$w/notify.sock \
	   ublk_serve "$img" --queues 2 --depth 16 --pidfile "$pidf" --log "$logf"); then
	t_fail "$rel: serve --queues 2 --depth 16" "$dev"; t_done
fi
probe() { "$BUILD/ublk-probe" info "${dev#/dev/ublkb}" | sed -n "s/^$1 //p"; }
flags=$(probe flags)

if [ $((flags & 0x1000)) -eq 0 ]; then
	# No UBLK_F_QUIESCE on the device (the kernel has no QUIESCE_DEV): refused, untouched.
	pid0=$(ublk_server_pid "$img")
	before=$("$UBLK_FLASH" list -n -r -o DEVICE,PID,STATE)
	out=$("$UBLK_FLASH" upgrade "$dev" 2>&1); rc=$?
	echo "# upgrade said: $out"
	t_eq "$rel: no QUIESCE_DEV: upgrade refused (exit 6)" "$rc" 6
	t_eq "$rel: ... with one line naming QUIESCE_DEV" \
		"$(wc -l <<<"$out")/$(grep -c 'no QUIESCE_DEV.*nothing changed' <<<"$out")" 1/1
	t_eq "$rel: ... the same server serves it, listed running" \
		"$("$UBLK_FLASH" list -n -r -o DEVICE,PID,STATE)" "$before"
	t_eq "$rel: ... the kernel still records that server, LIVE" "$(probe pid)/$(probe state)" "$pid0/1"
	t_eq "$rel: ... and its --pidfile" "$(cat "$pidf")" "$pid0"
	ublk_check_io "$dev"
	t_done
fi

# ---- the device can be handed over: 20 upgrades under load ----
N=20
[ "${OCTANT_LONG:-0}" = 1 ] && N=100
seed=${OCTANT_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "# seed $seed (OCTANT_SEED=$seed replays the fio rounds), $N upgrades"
cp "$UBLK_FLASH" /tmp/ublk-flash-next      # "another build": a copy, run by path

if ! out=$(printf 'label: dos\n,48M\n,\n' | sfdisk -q "$dev" 2>&1) ||
   ! wait_for "${dev}p2" 50; then
	t_fail "$rel: two partitions on $dev" "$out"; t_done
fi
mnt=$(mktemp -d)
if ! out=$(mkfs.ext4 -q -F "${dev}p1" 2>&1 && mount "${dev}p1" "$mnt" 2>&1); then
	t_fail "$rel: ext4 on ${dev}p1" "$out"; t_done
fi
t_cleanup "umount $mnt; rmdir $mnt"
health() { "$UBLK_FLASH" health "$dev" --json | jq -r ".$1"; }
unsafe0=$(health unsafe_shutdowns); cycles0=$(health power_cycles)
dmesg -c >/dev/null

# nap USEC: sleep without a process (a read that times out on a FIFO nobody writes): under
# TCG a fork and exec costs tens of milliseconds of the guest's CPU.  The read ends early on
# a signal (bash's own SIGCHLD): again until the time is up.
mkfifo "$w/never"; exec 9<>"$w/never"
nap() {
	local end=$((${EPOCHREALTIME/./} + $1)) left frac
	while left=$((end - ${EPOCHREALTIME/./})); [ "$left" -gt 0 ]; do
		printf -v frac '%06d' $((left % 1000000))
		read -r -t "$((left / 1000000)).$frac" -u 9 _
	done
	return 0
}
# The workloads run until $w/stop exists.  Errors go to $w/err.
( i=0
  while [ ! -e "$w/stop" ]; do
	i=$((i + 1)); f=$mnt/f$i
	head -c $(( (i % 23 + 1) * 3001 )) /dev/urandom >"$f" || echo "write $f failed" >>"$w/err"
	sync "$f" || echo "sync $f failed" >>"$w/err"
	sha256sum "$f" >>"$w/sums"
	nap 200000
	[ $((i % 7)) -eq 0 ] && { rm -f "$mnt/f$((i - 5))"; sed -i "\|$mnt/f$((i - 5)) *\$|d" "$w/sums"; }
  done ) &
files=$!
( r=0
  while [ ! -e "$w/stop" ]; do
	r=$((r + 1))
	fio --name=up$r --filename="${dev}p2" --ioengine=io_uring --direct=1 --rw=randwrite \
		--bsrange=4k-64k --size=8M --offset=$(( (r % 4) * 16 ))M --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --iodepth=4 --randseed=$((seed + r)) \
		--output="$w/fio.$r" >/dev/null 2>&1 || echo "fio round $r failed" >>"$w/err"
	echo "$r" >"$w/rounds"
  done ) &
fios=$!
read -r mm0 <"/sys/block/${dev#/dev/}/dev"
( while [ ! -e "$w/stop" ]; do     # builtins only: it runs 20 times a second
	mm=gone; [ -b "$dev" ] && read -r mm <"/sys/block/${dev#/dev/}/dev" 2>/dev/null
	[ "$mm" = "$mm0" ] || { read -r up _ </proc/uptime; echo "$up $mm" >>"$w/devnode"; }
	nap 50000
  done ) &
watch=$!
t_cleanup "touch $w/stop; kill $files $fios $watch"

# done_io: I/O requests the device completed (reads + writes, /sys/block/NAME/stat) in $io.
done_io() { local r w; read -r r _ _ _ w _ <"/sys/block/${dev#/dev/}/stat"; io=$((r + w)); }
# wait_io N: until the device completed N more requests (or 60 s).
wait_io() {
	local base i=0
	done_io; base=$io
	while done_io && [ $((io - base)) -lt "$1" ]; do
		i=$((i + 1)); [ $i -ge 600 ] && return 1
		nap 100000
	done
	return 0
}

at() { echo "# t=$(cut -d' ' -f1 /proc/uptime)s: $*"; }
# now_ms: milliseconds, without a process
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
# kinfo: the kernel's pid and state of the device's server in $kpid, $kstate (one ublk-probe)
kinfo() {
	local l
	kpid=; kstate=
	while read -r l; do
		case $l in "pid "*) kpid=${l#pid } ;; "state "*) kstate=${l#state } ;; esac
	done < <("$BUILD/ublk-probe" info "${dev#/dev/ublkb}")
}
entry=$(dirname "$(grep -lx "$(realpath "$img")" "${UBLK_FLASH_RUN_DIR:-/run/octant}"/*/image)")
at "workloads started"
pauses=(); fails=(); pids=(); pid=$(ublk_server_pid "$img"); waited=0
for i in $(seq 1 "$N"); do
	w0=$(now_ms)
	wait_io 16 || { fails+=("before upgrade $i: the device completed no I/O in 60 s"); break; }
	bin=(); [ $((i % 2)) -eq 0 ] && bin=(--binary /tmp/ublk-flash-next)
	t0=$(now_ms); waited=$((waited + t0 - w0))
	out=$("$UBLK_FLASH" upgrade "$dev" "${bin[@]}" 2>&1); rc=$?
	t1=$(now_ms)
	new=; read -r new <"$entry/pid"
	p=${out##*paused }; p=${p%% s *}
	if [ $rc -ne 0 ] || [ "$p" = "$out" ]; then
		fails+=("upgrade $i: exit $rc: $(tr '\n' ' ' <<<"$out")")
		break      # the device is not served as it was: no more upgrades
	fi
	pauses+=("$p")
	[[ $out == *"open "[0-9.]*" clean"* ]] || fails+=("upgrade $i: not a clean open: $out")
	[ "${out%%$'\n'*}" = "$dev" ] || fails+=("upgrade $i: said ${out%%$'\n'*}")
	[ -n "$new" ] && [ "$new" != "$pid" ] || fails+=("upgrade $i: registry pid $pid -> '$new'")
	kinfo
	[ "$kpid/$kstate" = "$new/1" ] ||
		fails+=("upgrade $i: the kernel records $kpid/state $kstate, not $new/1")
	pf=; read -r pf <"$pidf"
	[ "$pf" = "$new" ] || fails+=("upgrade $i: --pidfile says $pf, not $new")
	pid=$new; pids+=("MAINPID=$new")
	echo "# upgrade $i ($((t1 - t0)) ms, after $((t0 - w0)) ms for I/O): ${out##*$'\n'}"
done
echo "# waited $waited ms in all for the device's I/O between upgrades"
[ ${#fails[@]} -gt 0 ] || wait_io 16 || fails+=("after the last upgrade: the device completed no I/O in 60 s")
t_eq "$rel: $N upgrades under load (the first failures: ${fails[*]:0:3})" "${#fails[@]}" 0
at "upgrades done"
touch "$w/stop"
wait "$files" "$fios" "$watch"
at "workloads ended"

t_eq "$rel: no write, sync or fio round failed (fio rounds: $(cat "$w/rounds" 2>/dev/null))" \
	"$(cat "$w/err" 2>/dev/null)" ""
bad=$(cat "$w"/fio.* | grep -E 'err= *[1-9]|verify: bad|bad magic|crc32c.*mismatch' | head -n 3)
t_eq "$rel: fio: 0 I/O errors, 0 verify failures in $(ls "$w"/fio.* | wc -l) rounds" "$bad" ""
t_eq "$rel: the device node was never gone, its major:minor $mm0 throughout" \
	"$(cat "$w/devnode" 2>/dev/null)" ""
t_eq "$rel: every successor opened the image clean (unsafe shutdowns +0, power cycles +$N)" \
	"$(($(health unsafe_shutdowns) - unsafe0))/$(($(health power_cycles) - cycles0))" "0/$N"
t_eq "$rel: the registry lists the last server, running" \
	"$("$UBLK_FLASH" list -n -r -o DEVICE,PID,STATE)" "$dev $pid running"
t_eq "$rel: each server handed its successor's pid to the supervisor (MAINPID=), whose socket it passed on" \
	"$(grep '^MAINPID=' "$w/notify" | tr '\n' ' ')" "$(printf '%s ' "${pids[@]}")"
t_eq "$rel: each server logged to the --log file of the first" \
	"$(grep -c "served on $dev .*upgraded $dev from pid" "$logf")" "$N"
umount "$mnt"
echo 3 >/proc/sys/vm/drop_caches
if mount "${dev}p1" "$mnt"; then
	t_check "$rel: $(wc -l <"$w/sums") files read back after a remount" sha256sum -c --quiet "$w/sums"
	umount "$mnt"
else
	t_fail "$rel: remount ${dev}p1"
fi
t_check "$rel: e2fsck clean" e2fsck -fn "${dev}p1"
errs=$(dmesg | grep -iE 'I/O error|EXT4-fs (error|warning)|blk_update_request|Buffer I/O' | head -n 5)
t_eq "$rel: no I/O error in the kernel log" "$errs" ""
sorted=$(printf '%s\n' "${pauses[@]}" | sort -n)
if [ ${#pauses[@]} -gt 0 ]; then
	echo "# pause per upgrade ($rel, ${#pauses[@]} upgrades): median $(sed -n "$(( (${#pauses[@]} + 1) / 2 ))p" <<<"$sorted") s, max $(tail -n 1 <<<"$sorted") s; all: $(tr '\n' ' ' <<<"$sorted")"
fi
at "checked"
t_check "$rel: stop" "$UBLK_FLASH" stop "$img"
ublk_wait_gone "$dev"
t_check "$rel: image passes ublk-flash fsck" "$UBLK_FLASH" fsck "$img"
t_done
