#!/usr/bin/env bash
# vm-kernels: 6.1
# Issue 7 (b): real fdisk and parted on a dm device that reports alignment_offset 3584 (a
# dm-linear one sector into a 512/4096 scsi_debug disk, made by dm-stack: the shape
# `ublk-flash serve --dm` gives in odd mode).  The starts alignpart chooses for the odd
# profile draw no fdisk physical-boundary warning and pass parted's align-check min; its
# align-check opt follows the optimal grid `alignpart predict` gives for parted (issue 32: 7
# mod 2048 on offset 3584, so 2047 + 2048k are "not aligned" there); a start alignpart calls
# misaligned does draw the warning.
. /octant/tests/vm/guest-lib.sh
DMT=$BUILD/dmstack-tool
AP=${ALIGNPART:-$BUILD/alignpart}
[ -x "$DMT" ] || { echo "SKIP: $DMT not built"; exit 77; }

odd_dm_on_scsi_debug dmo
t_eq "the dm device reports alignment_offset 3584" "$(sysq "$odd" alignment_offset)" 3584

MIB=1048576
sfd() { sfdisk -q --no-reread --no-tell-kernel "$@"; }
starts() { sfdisk -d "$1" | sed -n 's/.*start= *\([0-9]*\),.*/\1/p'; }
boundary_warn() { fdisk -l "$1" 2>&1 | grep "does not start on physical sector boundary"; }
# parted's verdict for partition N: "aligned" / "not aligned"
pcheck() { parted -s "$1" align-check "$2" "$3" >/dev/null 2>&1 && echo aligned || echo "not aligned"; }
# apjson DEV: "nr start kernel_offset aligned" per partition from alignpart check --json
apjson() {
	"$AP" check "$1" --json 2>/dev/null |
	jq -r '.. | objects | select(has("nr") and has("kernel_offset")) |
	       "\(.nr) \(.start_sector) \(.kernel_offset) \(.aligned)"' 2>/dev/null
}
ap_ready() { "$AP" "$1" --help >/dev/null 2>&1; }

# --- the starts alignpart chooses for the odd profile ------------------------------------------
if ap_ready create && out=$("$AP" create "$odd" --label dos --profile odd \
		--part 8MiB --part 8MiB --part 8MiB 2>&1); then
	mapfile -t st < <(starts "$odd")
	grid=$("$AP" predict "$odd" --label dos --json 2>/dev/null | jq -r '.predictions[] |
		select(.tool == "parted 1MiB") | "\(.grain_offset_sectors) \(.grain_sectors)"')
	t_eq "alignpart create --profile odd: 3 partitions" "${#st[@]}" 3
	t_eq "alignpart's odd starts: no fdisk physical-boundary warning (starts ${st[*]})" \
		"$(boundary_warn "$odd")" ""
	for i in "${!st[@]}"; do
		n=$((i + 1)) s=${st[$i]}
		t_eq "odd start $s: byte $((s * 512 + 512)) of the medium is 1 MiB-aligned" \
			$(( (s * 512 + 512) % MIB )) 0
		t_eq "parted align-check min $n (start $s)" "$(pcheck "$odd" min $n)" aligned
		# parted's optimal grid is not the medium's 1 MiB: alignpart predict models it
		# (offset 3584: 7 mod 2048, so 2047 + 2048k are "not aligned" for `opt`)
		if [ -n "$grid" ]; then
			read -r goff grain <<<"$grid"
			[ $(( (s - goff) % grain )) -eq 0 ] && want=aligned || want="not aligned"
			t_eq "parted align-check opt $n (start $s): alignpart predict's grid $goff mod $grain" \
				"$(pcheck "$odd" opt $n)" "$want"
		else
			t_fail "parted align-check opt $n (start $s): alignpart predict gives parted's grid"
		fi
	done
	if ap_ready check; then
		"$AP" check "$odd" >/dev/null 2>&1; rc=$?
		t_eq "alignpart check: every odd start aligned (exit 0)" $rc 0
	fi
else
	why=${out:-alignpart create not ready}
	t_skip "alignpart create --profile odd on the offset dm device" "$(head -n1 <<<"$why")"
fi

# --- a table with an aligned and a misaligned start -----------------------------------------
# On offset 3584: 63 and 2047 are physically aligned (odd world), 2048 is not (the 1 MiB world).
printf 'label: dos\nstart=63,size=1984\nstart=2047,size=8192\nstart=12288,size=8192\n' | sfd "$odd"
# the third starts at 12288 (a multiple of 2048, like 2048): misaligned on offset 3584
w=$(boundary_warn "$odd")
t_eq "fdisk -l warns for the misaligned partition 3 only" "$w" \
	"Partition 3 does not start on physical sector boundary."
t_eq "parted align-check min: 63 aligned" "$(pcheck "$odd" min 1)" aligned
t_eq "parted align-check min: 2047 aligned" "$(pcheck "$odd" min 2)" aligned
t_eq "parted align-check min: 12288 not aligned" "$(pcheck "$odd" min 3)" "not aligned"
if ap_ready check && [ -n "$(apjson "$odd")" ]; then
	"$AP" check "$odd" >/dev/null 2>&1; rc=$?
	t_eq "alignpart check: exit 1 (some misaligned)" $rc 1
	t_eq "alignpart check --json: aligned per partition (the one fdisk warns about is false)" \
		"$(apjson "$odd" | awk '{ print $1 ":" $4 }' | tr '\n' ' ')" "1:true 2:true 3:false "
else
	t_skip "alignpart check agrees with fdisk" "alignpart check --json not ready"
fi

# --- the 1 MiB world for contrast: dm-linear at 8, offset 0 ---------------------------------
one=$("$DMT" create dm1 "$sd" 8 $((size - 8)) 2>&1) || t_fail "dm-linear at sector 8" "$one"
if [ -b "$one" ]; then
	t_cleanup "$DMT remove dm1"
	printf 'label: dos\nstart=2048,size=8192\nstart=10303,size=8192\n' | sfd "$one"
	t_eq "offset 0: fdisk warns for start 10303 only" "$(boundary_warn "$one")" \
		"Partition 2 does not start on physical sector boundary."
	t_eq "offset 0: parted align-check opt 1 (2048)" "$(pcheck "$one" opt 1)" aligned
	t_eq "offset 0: parted align-check min 2 (10303)" "$(pcheck "$one" min 2)" "not aligned"
fi
t_done
