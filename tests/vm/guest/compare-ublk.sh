#!/usr/bin/env bash
# Guest test (issue 15, item 4): `make compare` over ublk gives the same physics as over
# FUSE + loop — the frontend must not change the answer.  A reduced matrix ({raw, ext4} x
# {odd, 1m} x starts {63, 2048}) with the deterministic workload direct-n (every 4K block of a
# 2 MiB fileset written once with O_DIRECT, in the order of one fio seed; ext4 mounted
# lazytime,commit=600 so no timer writes; guest/compare-args.bash) runs
#   - over ublk (all 8 cells) and over ublk + dm (serve --dm, the odd scheme at its start 63: raw
#     and ext4; the 8 cells over plain ublk cover the misaligned starts),
# and every cell's counters must equal the reference run's: host bytes, pages programmed and
# read, erases, sub-page and straddling RMWs, straddling RMWs per page, WA, GC relocations.
# The reference is the host's FUSE run of the same command and seed, which guest-tap.sh makes
# before the boot ($OCTANT_VM_OUT/compare-host/results.json); without it (vm-run.sh by hand,
# no /dev/fuse on the host) the same matrix runs over FUSE + loop in this guest.  The seed is
# the reference's; a guest-made reference draws one (OCTANT_SEED replays it).
# Results: $OCTANT_VM_OUT/compare-<kernel>/ when the host folder is shared.
# Runs on the kernels of OCTANT_VM_COMPARE_KERNELS (default 6.12: the time budget), and says so
# on the others.  Under TCG at load 3-5 the 12 cells it had took 6.1 min; it has 10:
# vm-timeout: 600
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash
. /octant/tests/vm/guest/compare-args.bash

series=$(uname -r | cut -d. -f1,2)
case " $CMP_VM_KERNELS " in
*" $series "*) ;;
*) echo "SKIP: compare over ublk runs on kernel(s) $CMP_VM_KERNELS only, to keep the vm tier in its time budget (OCTANT_VM_COMPARE_KERNELS=\"$CMP_VM_KERNELS $series\" adds $series)"
   exit 77 ;;
esac

ublk_require_driver
CMP=/octant/tests/compare/run
[ -x "$CMP" ] || { echo "SKIP: no $CMP in the guest"; exit 77; }
[ -x "$ALIGNPART" ] || { echo "SKIP: no $ALIGNPART (not built)"; exit 77; }
for t in jq fio mkfs.ext4; do command -v $t >/dev/null || { echo "SKIP: no $t in the guest"; exit 77; }; done
kver=$(uname -r)
work=${OCTANT_VM_SCRATCH:-/tmp}/compare-ublk
rm -rf "$work"; mkdir -p "$work"
t_cleanup "rm -rf $work"
ARGS=("${CMP_VM_ARGS[@]}")

ref=${OCTANT_VM_OUT:-/nonexistent}/compare-host/results.json
if [ -s "$ref" ]; then
	seed=$(jq -r '.meta.seed' "$ref")
	refname="host FUSE"
	echo "# reference: the host's FUSE run ($(jq -r '.meta.kernel' "$ref"), seed $seed)"
else
	seed=${OCTANT_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 + 1 ))}
	echo "seed $seed (replay: OCTANT_SEED=$seed)"
	refname="guest FUSE"
	if ! out=$("$CMP" "${ARGS[@]}" --seed "$seed" --frontend fuse --out "$work/fuse" 2>&1); then
		t_fail "$kver: reference run over FUSE + loop" "$(tail -n 20 <<<"$out")"; t_done
	fi
	ref=$work/fuse/results.json
	echo "# reference: FUSE + loop in this guest, seed $seed"
fi

# the physics of one record, as one line.  Programs and WA leave out the flush summary pages
# (one per host flush that follows writes, ftl_fsum.c): how many flushes ext4's journal sends
# is the kernel's choice (6.18's ext4 sent 3 where 6.12's sent 2 for the same writes), not
# the frontend's; the host flushes are printed beside the result.
PHYS='(.page_programs - (.flush_pages // 0)) as $p
      | [.host_bytes, $p, .page_reads, .block_erases, .rmw_subpage, .rmw_straddle,
         .straddle_per_page, ($p * .page_size / .host_bytes), .gc_relocations]
      | map(tostring) | join(" ")'
FIELDS="host_bytes page_programs-flush_pages page_reads block_erases rmw_subpage rmw_straddle straddle/page WA-flush_pages gc_relocations"
FLUSHES='"\(.host_flushes) flushes, \(.flush_pages // 0) flush pages"'

# run_and_compare LABEL [compare options]: one run, each cell against the reference
run_and_compare() {
	local label=$1 out dir cell got want n=0 t0 f
	shift
	dir=$work/$label
	t0=$(cut -d' ' -f1 /proc/uptime)
	if ! out=$("$CMP" "${ARGS[@]}" --seed "$seed" --frontend ublk "$@" --out "$dir" 2>&1); then
		t_fail "$kver: compare over $label" "$(tail -n 20 <<<"$out")"
		for f in "$dir"/cells/*/setup.log; do [ -f "$f" ] && tail -n 5 "$f" | sed "s|^|# $f: |"; done
		return
	fi
	echo "# compare over $label: $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.0f", b - a }')s"
	sed -n '/^fs /,/^$/p' <<<"$out" | sed 's/^/# /'
	for cell in $(jq -r '.results[].cell' "$dir/results.json"); do
		got=$(jq -r --arg c "$cell" ".results[] | select(.cell == \$c) | $PHYS" "$dir/results.json")
		want=$(jq -r --arg c "$cell" ".results[] | select(.cell == \$c) | $PHYS" "$ref")
		n=$((n + 1))
		if [ -n "$want" ] && [ "$got" = "$want" ]; then
			t_ok "$kver: $label $cell: physics = $refname's ($(cut -d' ' -f6-8 <<<"$got" | awk '{ printf "straddling RMWs %s, %.3f/page, WA %.3f", $1, $2, $3 }'); $(jq -r --arg c "$cell" ".results[] | select(.cell == \$c) | $FLUSHES" "$dir/results.json") here, $(jq -r --arg c "$cell" ".results[] | select(.cell == \$c) | $FLUSHES" "$ref") in the reference)"
		else
			t_fail "$kver: $label $cell: physics = $refname's" "fields: $FIELDS" "$label: $got" "$refname: ${want:-no such cell}"
		fi
	done
	[ $n -gt 0 ] || t_fail "$kver: compare over $label gave no records"
	if [ -n "${OCTANT_VM_OUT:-}" ]; then
		mkdir -p "$OCTANT_VM_OUT/compare-$kver" &&
			cp "$dir/results.json" "$dir/table.md" "$OCTANT_VM_OUT/compare-$kver/" 2>/dev/null &&
			mv "$OCTANT_VM_OUT/compare-$kver/results.json" "$OCTANT_VM_OUT/compare-$kver/$label.json" &&
			mv "$OCTANT_VM_OUT/compare-$kver/table.md" "$OCTANT_VM_OUT/compare-$kver/$label.md"
	fi
}

run_and_compare ublk
run_and_compare ublk-dm --modes odd --starts 63 --dm
t_done
