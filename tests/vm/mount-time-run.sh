#!/usr/bin/env bash
# Issue 15 (3), the long version: boots the 6.12 guest, runs tests/vm/guest/mount-time.sh at
# several medium sizes (each timing the least of --reps runs), and writes OUT/mount-time.txt
# (the "SIZE SYSTEM PHASE SECONDS" lines), OUT/mount-time.dat (one row per size) and
# OUT/mount-time.png/.svg (gnuplot, tests/vm/mount-time.gp).
# usage: tests/vm/mount-time-run.sh [--sizes "32 64 128 512"] [--reps 3] [--mem MB] OUT
#        tests/vm/mount-time-run.sh --plot-only OUT     (remake .dat and plots from OUT/*.txt)
# Needs qemu (mk/deps.sh vm) and gnuplot (mk/deps.sh compare).  See docs/results.md.
set -euo pipefail
. "$(dirname "$0")/vm-lib.sh"
sizes="32 64 128 512" mem=3072 reps=3 run=1
while [ $# -gt 1 ]; do
	case "$1" in
	--sizes) sizes=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--plot-only) run=0; shift ;;
	*) echo "mount-time-run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
out=${1:?usage: mount-time-run.sh [--sizes \"32 64 ...\"] [--reps N] [--mem MB] OUT}
mkdir -p "$out"
if [ $run -eq 1 ]; then
	"$VM_DIR/vm-run.sh" --kernel 6.12 --mem "$mem" --scratch 8G --timeout 3600 --out "$out" \
		"$VM_DIR/guest/mount-time.sh" --sizes "$sizes" --reps "$reps" --fill 25 \
		--out /octant/out/mount-time.txt
fi
# columns: MiB, JFFS2 mount, UBI attach + UBIFS mount, ublk-flash engine open after kill -9
# (roll-forward), clean, --scan, then the wall time of `serve` for the same three
awk 'function g(k) { return (k in v) ? v[k] : "?" }
     { v[$1 " " $2 " " $3] = $4; s[$1] = 1 }
     END { for (z in s) print z, g(z " jffs2 mount"), g(z " ubi+ubifs total"),
                             g(z " ublk-flash roll-forward-engine"), g(z " ublk-flash clean-engine"),
                             g(z " ublk-flash scan-engine"), g(z " ublk-flash roll-forward"),
                             g(z " ublk-flash clean"), g(z " ublk-flash scan") }' "$out/mount-time.txt" |
	sort -n >"$out/mount-time.dat"
for t in png svg; do gnuplot -e "dir='$out'; term='$t'" "$VM_DIR/mount-time.gp"; done
{ echo "MiB jffs2 ubi+ubifs rf-engine clean-engine scan-engine rf-serve clean-serve scan-serve"
  cat "$out/mount-time.dat"; } | column -t
