#!/usr/bin/env bats
# make compare --aged, reduced: three ext4 cells on a small aged device (128 MiB,
# 4 % over-provisioning, preconditioned, filled to 70 %, aged 3 windows) and the
# relations that must hold whatever the noise:
#  - garbage collection moved data on the aged device (gc_relocations > 0);
#  - periodic fstrim lowers the device's write amplification;
#  - a misaligned partition (odd@2048) costs more device WA than its aligned
#    twin (odd@63).
# The run draws a fresh seed (printed); replay with OCTANT_SEED=N.
load ../helpers
load compare-lib


requires_aged() {
	requires_root
	requires jq fio mkfs.ext4 losetup fstrim
	[ -e /dev/fuse ] || [ -e /dev/ublk-control ] || skip "requires /dev/fuse or /dev/ublk-control"
	[ -x "$UBLK_FLASH" ] || skip "requires $UBLK_FLASH (not built)"
	[ -x "$ALIGNPART" ] || skip "requires $ALIGNPART (not built)"
}

# rec CELL KEY: one key of one cell's record.
rec() {
	jq -r --arg c "$1" --arg k "$2" '.results[] | select(.cell == $c) | .[$k]' "$SCRATCH/out/aged.json"
}

@test "compare --aged: GC runs, fstrim lowers device WA, misalignment raises it" {
	requires_aged
	run "$COMPARE" --aged --cells ext4:odd:63:none:off,ext4:odd:63:fstrim:off,ext4:odd:2048:none:off \
		--size 128M --max-windows 3 --no-plot --out "$SCRATCH/out"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"seed "*"(replay: OCTANT_SEED="* ]]
	[ "$(jq '.results | length' "$SCRATCH/out/aged.json")" -eq 3 ]
	[ -s "$SCRATCH/out/aged.csv" ]
	local none=ext4-odd-63-none-wloff trim=ext4-odd-63-fstrim-wloff mis=ext4-odd-2048-none-wloff
	local gc wn wt wm an am
	gc=$(rec $none gc_relocations)
	wn=$(rec $none device_wa) wt=$(rec $trim device_wa) wm=$(rec $mis device_wa)
	an=$(rec $none alignpart_aligned) am=$(rec $mis alignpart_aligned)
	echo "# none: gc_relocations $gc, device WA $wn; fstrim: $wt; misaligned: $wm"
	[ "$an" = true ] && [ "$am" = false ]     # alignpart's verdicts
	[ "$gc" -gt 0 ]                            # the device is aged: GC moved pages
	[ "$(rec $none host_bytes)" -gt $((16 << 20)) ]   # the window really wrote
	awk -v t="$wt" -v n="$wn" 'BEGIN { exit !(t < n) }'   # discard lowers device WA
	awk -v m="$wm" -v n="$wn" 'BEGIN { exit !(m > n) }'   # misalignment raises it
	# the erase figures are there and consistent
	[ "$(jq --arg c $none '.results[] | select(.cell == $c) | .erase_hist | add' "$SCRATCH/out/aged.json")" -eq \
	  "$(jq --arg c $none '.results[] | select(.cell == $c) | .wear_map | length' "$SCRATCH/out/aged.json")" ]
	run grep -q "$SCRATCH" /proc/mounts
	[ "$status" -ne 0 ]                         # nothing left mounted
}

@test "compare --aged: a bad cell is one line and exit 2" {
	run "$COMPARE" --aged --cells ext4:odd:63:sometimes:off
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"discard not none, fstrim or online"* ]]
	run "$COMPARE" --aged --preset huge
	[ "$status" -eq 2 ]
	[[ $output == *"--preset: unknown value 'huge'"* ]]
}
