#!/usr/bin/env bash
# Issue 15 (2): crash consistency by replay (the method of xfstests generic/455 and CrashMonkey).
# For each filesystem (ext4, btrfs) and mode (odd, 1m): dm-log-writes is stacked on the
# /dev/mapper device of `ublk-flash serve --dm`; mkfs, mount, a deterministic workload of
# create/fdatasync/append/rename-over/unlink/truncate operations, each ended at a durability
# point and a dm mark (tests/vm/fsync-workload.c), umount.  Then:
#  (a) filesystem level: the log is replayed (tests/vm/logreplay.c) onto a fresh file-backed
#      device, stopping at EVERY FLUSH or FUA entry; at each, a dm-snapshot of the replay is
#      mounted (journal/log recovery), every file made durable before the last mark must read
#      back exactly (the one the next operation touches excepted), and after umount the checker
#      (e2fsck -fn, btrfs check --readonly) must be clean;
#  (b) engine level: the same log is replayed with O_DIRECT onto a fresh ublk-flash image (same
#      size and mode) served plainly, the log's FLUSHes sent as fdatasync and FUA writes as
#      RWF_DSYNC; at some FLUSH/FUA points the server is killed (kill -9) and re-served
#      (--recover), and every sector written so far must read back as written.
# usage (in the guest): crash-replay.sh [--ops N] [--pairs "ext4:odd:6 btrfs:1m:2"]
#                       [--fs "ext4 btrfs" --modes "odd 1m"  (every pair of the two)]
#                       [--kills K] [--size 256M] [--seed S] [--keep DIR] [--fs-check 0|1]
#                       [--trace N]
#   --keep DIR     copy each log to DIR/FS-MODE.log (+ FS-MODE.meta: ops, seed, device sectors) for the host
#                  replay (tests/vm/crash-replay-host.sh), e.g. DIR=/octant/out (vm-run --out)
#   --fs-check 0   leave the filesystem-level replay to the host (the engine level still runs)
#   --trace N      print the timing of the first N filesystem-level points
# The vm tier runs it reduced (defaults below); the figures in docs/results.md come from the
# long run documented there.  Needs dm-log-writes and dm-snapshot; the vm tier runs it on the
# 7.3 guest (docs/vm.md: which script runs where).
# vm-timeout: 480
# vm-kernels: 7.3
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ops=0 pairs=" ext4:odd:6 btrfs:1m:2" fss='' modes='' kills=1 size=256M keep='' fscheck=1
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
while [ $# -gt 0 ]; do
	case "$1" in
	--ops) ops=$2 ;; --pairs) pairs=$2 ;; --fs) fss=$2 ;; --modes) modes=$2 ;;
	--kills) kills=$2 ;;
	--size) size=$2 ;; --seed) seed=$2 ;; --trace) export CR_TRACE=$2 ;;
	--keep) keep=$2 ;; --fs-check) fscheck=$2 ;;
	*) echo "crash-replay.sh: unknown option $1"; exit 2 ;;
	esac
	shift 2
done
if [ -n "$fss$modes" ]; then
	pairs=''
	for mode in ${modes:-odd 1m}; do for fs in ${fss:-ext4 btrfs}; do pairs+=" $fs:$mode"; done; done
fi
ublk_require_driver
for m in dm-log-writes dm-snapshot; do
	modprobe $m 2>/dev/null || { echo "SKIP: no $m module in the guest"; exit 77; }
done
LR=$BUILD/tests/vm/logreplay WL=$BUILD/tests/vm/fsync-workload CHECK=/octant/tests/vm/crash-check.bash
[ -x "$LR" ] && [ -x "$WL" ] || { echo "SKIP: logreplay/fsync-workload not built"; exit 77; }
echo "# crash-replay: seed $seed (replay: --seed $seed), pairs (FS:MODE[:OPERATIONS]):$pairs$([ "$ops" -gt 0 ] && echo ", $ops operations each")"
W=${OCTANT_VM_SCRATCH:-/tmp}/crash-replay
mkdir -p $W /tmp/cr-mnt
t_cleanup "rm -rf $W"
export CR_WL=$WL CR_SEED=$seed CR_MNT=/tmp/cr-mnt

# The check of the engine level: kill -9 the server, re-serve with --recover (logreplay then
# reopens the device and compares every sector written so far).
cat >/tmp/cr-kill <<'EOF'
#!/bin/bash
# env: CR_IMG CR_UF CR_RUNDIR LR_INDEX
. /octant/tests/vm/guest-lib.sh >/dev/null; trap - EXIT
. /octant/tests/vm/guest/ublk-lib.bash
pid=$(ublk_server_pid "$CR_IMG") || { echo "# no server pid for $CR_IMG"; exit 1; }
kill -9 "$pid"; ublk_wait_dead "$pid" 300 || { echo "# server $pid did not die"; exit 1; }
out=$("$CR_UF" serve "$CR_IMG" --frontend ublk --recover 2>&1) || {
	echo "# at entry $LR_INDEX: serve --recover: $out"; exit 1; }
exit 0
EOF
chmod +x /tmp/cr-kill
t_cleanup "rm -f /tmp/cr-kill"

total_points=0 total_fail=0
for pair in $pairs; do
	IFS=: read -r fs mode pops <<<"$pair"
	[ "$ops" -gt 0 ] && pops=$ops
	: "${pops:=10}"
	export CR_OPS=$pops
	{
		tag="$fs on $mode"
		img=$W/$fs-$mode.img name=cr-$fs-$mode
		rm -f $W/log $W/R $W/cow
		out=$(ublk_mkimg "$img" "$size" "$mode" 2>&1) || { t_fail "$tag: create image" "$out"; continue; }
		dev=$("$UBLK_FLASH" serve "$img" --frontend ublk --dm "$name" 2>&1) ||
			{ t_fail "$tag: serve --dm" "$dev"; continue; }
		sz=$(blockdev --getsz "$dev")
		truncate -s 2G $W/log
		logdev=$(losetup -f --show $W/log)
		if ! dmsetup create "lw-$name" --table "0 $sz log-writes $dev $logdev"; then
			t_fail "$tag: dm-log-writes on $dev"
			losetup -d "$logdev"; "$UBLK_FLASH" stop --force "$img" >/dev/null 2>&1; continue
		fi
		lw=/dev/mapper/lw-$name
		t0=$(cut -d' ' -f1 /proc/uptime)
		case $fs in
		ext4)  mkfs.ext4 -q -F -E nodiscard "$lw" ;;
		btrfs) mkfs.btrfs -q -f --nodiscard "$lw" ;;
		esac
		dmsetup message "lw-$name" 0 mark mkfs-done
		if mount -t $fs "$lw" /tmp/cr-mnt; then
			"$WL" run /tmp/cr-mnt --ops "$pops" --seed "$seed" --mark "lw-$name"; wrc=$?
			umount /tmp/cr-mnt
		else
			wrc=99
		fi
		dmsetup remove "lw-$name"
		losetup -d "$logdev"
		t_eq "$tag: workload of $pops operations with marks under dm-log-writes" "$wrc" 0
		"$UBLK_FLASH" stop "$img" >/dev/null 2>&1 || "$UBLK_FLASH" stop --force "$img" >/dev/null 2>&1
		rm -f "$img"
		info=$("$LR" info $W/log)
		if [ -n "$keep" ]; then
			used=$(awk '{ for (i = 1; i < NF; i++) if ($i == "bytes") print $(i + 1) }' <<<"$info")
			dd if=$W/log of="$keep/$fs-$mode.log" bs=1M count=$(( (used >> 20) + 1 )) status=none &&
				echo "$pops $seed $sz" >"$keep/$fs-$mode.meta" ||
				t_fail "$tag: copy the log to $keep"
		fi
		echo "# $tag: log: $info (workload $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }')s)"

		# (a) filesystem level: every FLUSH/FUA point
		if [ "$fscheck" = 1 ]; then
		truncate -s $((sz * 512)) $W/R
		truncate -s 256M /tmp/cr-cow
		R=$(losetup -f --show $W/R) && COW=$(losetup -f --show /tmp/cr-cow)
		t0=$(cut -d' ' -f1 /proc/uptime)
		CR_FS=$fs CR_DEV=$R CR_COW=$COW CR_SNAP=dm CR_SECTORS=$sz "$LR" replay $W/log "$R" \
			--check "bash $CHECK" --after-mark mkfs-done >/tmp/cr-out 2>&1; rc=$?
		out=$(cat /tmp/cr-out)
		[ -n "${CR_TRACE:-}" ] && grep '^# point' /tmp/cr-out | head -n "$CR_TRACE"
		losetup -d "$R"; losetup -d "$COW"; rm -f $W/R /tmp/cr-cow
		sum=$(grep '^logreplay: entries' <<<"$out")
		echo "# $tag: fs level: $sum ($(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }')s)"
		checked=$(sed -n 's/.* checked \([0-9]*\) .*/\1/p' <<<"$sum")
		fails=$(sed -n 's/.* failures \([0-9]*\).*/\1/p' <<<"$sum")
		total_points=$((total_points + ${checked:-0})); total_fail=$((total_fail + ${fails:-1}))
		if [ $rc -eq 0 ] && [ "${checked:-0}" -gt 0 ]; then
			t_ok "$tag: replayed to each of $checked FLUSH/FUA points: fsck clean, fsynced files exact"
		else
			t_fail "$tag: replay to every FLUSH/FUA point: fsck clean, fsynced files exact" \
				"$(grep -v '^logreplay: entries' <<<"$out" | head -n 20)" "$sum"
		fi
		fi

		# (b) engine level: the same log onto a fresh image, kill -9 + --recover at K points
		npts=$(awk '{ for (i = 1; i < NF; i++) if ($i == "points") print $(i + 1) }' <<<"$info")
		every=$(( npts / (kills > 0 ? kills : 1) )); [ $every -ge 1 ] || every=1
		img2=$W/engine-$mode.img
		out=$(ublk_mkimg "$img2" "$size" "$mode" 2>&1) || { t_fail "$tag: create engine image" "$out"; continue; }
		dev2=$(ublk_serve "$img2") || { t_fail "$tag: serve engine image" "$dev2"; rm -f "$img2"; continue; }
		t0=$(cut -d' ' -f1 /proc/uptime)
		out=$(CR_IMG=$img2 CR_UF=$UBLK_FLASH "$LR" replay $W/log "$dev2" --direct --verify \
			--check /tmp/cr-kill --every $every 2>&1); rc=$?
		sum=$(grep '^logreplay: entries' <<<"$out")
		echo "# $tag: engine level: $sum, kill -9 every $every points ($(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }')s)"
		checked=$(sed -n 's/.* checked \([0-9]*\) .*/\1/p' <<<"$sum")
		if [ $rc -eq 0 ] && [ "${checked:-0}" -gt 0 ]; then
			t_ok "$tag: engine keeps every flushed sector across $checked kill -9 + serve --recover"
		else
			t_fail "$tag: engine keeps every flushed sector across kill -9 + serve --recover" \
				"$(grep -v '^logreplay: entries' <<<"$out" | head -n 20)" "$sum"
		fi
		"$UBLK_FLASH" stop "$img2" >/dev/null 2>&1 || "$UBLK_FLASH" stop --force "$img2" >/dev/null 2>&1
		out=$("$UBLK_FLASH" fsck "$img2" 2>&1) || t_fail "$tag: ublk-flash fsck of the engine image" "$out"
		rm -f "$img2" $W/log
	}
done
echo "# crash-replay: $total_points FLUSH/FUA points checked at the filesystem level, $total_fail failures (seed $seed)"
t_done
