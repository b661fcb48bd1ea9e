#!/usr/bin/env bash
# Issue 15 (2), the long version's filesystem level, on the host: replays every log that
# `crash-replay.sh --keep DIR --fs-check 0` saved from the guest (DIR/FS-MODE.log with
# FS-MODE.meta) onto a fresh sparse file, stopping at EVERY FLUSH/FUA point; at each, a copy
# of the replay is loop-mounted (journal/log recovery), every file made durable before the
# last mark must read back exactly, and the checker (e2fsck -fn, btrfs check --readonly) must
# be clean (tests/vm/crash-check.bash).  Native speed: thousands of points in minutes.
# usage: tests/vm/crash-replay-host.sh DIR        (as root: loop devices, mount)
# Env: BUILD (default build), CR_TRACE (non-empty: a timing line per point).
# Prints per log "crash-replay-host: FS-MODE: logreplay: entries ... checked N failures F"
# and a total; exit 1 if any point failed, 77 (SKIP) without root, loop, or the filesystem.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
dir=${1:?usage: crash-replay-host.sh DIR}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (loop devices, mount)"; exit 77; }
LR=$build/tests/vm/logreplay
export CR_WL=$build/tests/vm/fsync-workload CR_SNAP=copy
[ -x "$LR" ] && [ -x "$CR_WL" ] || { echo "SKIP: build logreplay and fsync-workload (make)"; exit 77; }
work=$(mktemp -d /dev/shm/crash-replay-host.XXXXXX)
export CR_MNT=$work/mnt CR_COPY=$work/copy
mkdir -p "$CR_MNT"
trap 'umount "$CR_MNT" 2>/dev/null; rm -rf "$work"' EXIT
total=0 failed=0 n=0
for log in "$dir"/*.log; do
	[ -f "$log" ] || continue
	name=$(basename "$log" .log); fs=${name%%-*}
	grep -qw "$fs" /proc/filesystems || modprobe "$fs" 2>/dev/null ||
		{ echo "SKIP: $name: no $fs in this kernel"; continue; }
	read -r ops seed sectors <"$dir/$name.meta" || { echo "crash-replay-host: $name: no .meta"; failed=1; continue; }
	rm -f "$work/R"; truncate -s $((sectors * 512)) "$work/R"
	t0=$(date +%s)
	out=$(CR_FS=$fs CR_DEV=$work/R CR_OPS=$ops CR_SEED=$seed "$LR" replay "$log" "$work/R" \
		--check "bash $top/tests/vm/crash-check.bash" --after-mark mkfs-done 2>&1); rc=$?
	sum=$(grep '^logreplay: entries' <<<"$out")
	[ -n "${CR_TRACE:-}" ] && grep '^# point' <<<"$out"
	echo "crash-replay-host: $name (ops $ops, seed $seed): ${sum#logreplay: } ($(( $(date +%s) - t0 ))s)"
	[ $rc -eq 0 ] || { failed=1; grep -v '^logreplay: entries\|^# point' <<<"$out" | head -n 20; }
	c=$(sed -n 's/.* checked \([0-9]*\) .*/\1/p' <<<"$sum"); f=$(sed -n 's/.* failures \([0-9]*\).*/\1/p' <<<"$sum")
	total=$((total + ${c:-0})); n=$((n + ${f:-1}))
	rm -f "$work/R"
done
echo "crash-replay-host: $total FLUSH/FUA points checked, $n failures"
[ $failed -eq 0 ] && [ $n -eq 0 ]
