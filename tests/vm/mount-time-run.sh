#!/usr/bin/env bash
# Issue 15 (3), the long version: boots the 6.12 guest, runs tests/vm/guest/mount-time.sh at
# several medium sizes, and writes OUT/mount-time.txt (the "SIZE SYSTEM PHASE SECONDS"
# lines), OUT/mount-time.dat (one row per size) and OUT/mount-time.png/.svg (gnuplot).
# usage: tests/vm/mount-time-run.sh [--sizes "32 64 128 256"] [--mem MB] OUT
# Needs qemu (mk/deps.sh vm) and gnuplot (mk/deps.sh compare).  See docs/results.md.
set -euo pipefail
. "$(dirname "$0")/vm-lib.sh"
sizes="32 64 128 256" mem=3072
while [ $# -gt 1 ]; do
	case "$1" in
	--sizes) sizes=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	*) echo "mount-time-run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
out=${1:?usage: mount-time-run.sh [--sizes \"32 64 ...\"] [--mem MB] OUT}
mkdir -p "$out"
"$VM_DIR/vm-run.sh" --kernel 6.12 --mem "$mem" --scratch 8G --timeout 3600 --out "$out" \
	"$VM_DIR/guest/mount-time.sh" --sizes "$sizes" --out /octant/out/mount-time.txt
awk '{ v[$1 " " $2 " " $3] = $4; s[$1] = 1 }
     END { for (z in s) print z, v[z " jffs2 mount"], v[z " ubi+ubifs total"],
                             v[z " ublk-flash roll-forward"], v[z " ublk-flash clean"],
                             v[z " ublk-flash scan"] }' "$out/mount-time.txt" |
	sort -n >"$out/mount-time.dat"
for t in png svg; do gnuplot -e "dir='$out'; term='$t'" "$VM_DIR/mount-time.gp"; done
column -t "$out/mount-time.dat"
