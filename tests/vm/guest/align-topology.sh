#!/usr/bin/env bash
# vm-kernels: 6.1
# libalign's predictions (through alignpart) against what the REAL kernel reports in sysfs:
# on a 512e scsi_debug disk with alignment_offset 3584, a 4096-physical RAM disk with offset
# 0, and a dm-linear starting at sector 1 of that RAM disk (offset 3584 through dm).
. /octant/tests/vm/guest-lib.sh
AP=${ALIGNPART:-/octant/build/alignpart}
[ -x "$AP" ] || { echo "SKIP: $AP not built yet"; exit 77; }
has_cmd() { "$AP" "$1" --help 2>&1 | grep -qi "usage: alignpart $1"; }

# part_offsets DEV: "N start alignment_offset" for each kernel partition of DEV, from sysfs.
part_offsets() {
	local b p; b=$(basename "$1")
	for p in /sys/class/block/"$b"/"$b"*; do
		[ -e "$p/partition" ] && echo "$(cat "$p/partition") $(cat "$p/start") $(cat "$p/alignment_offset")"
	done | sort -n
}
# reread DEV: make the kernel re-read the table and wait for the nodes (no udev).
reread() {
	local n
	blockdev --rereadpt "$1" || return 1
	for _ in $(seq 50); do
		n=$(part_offsets "$1" | wc -l); [ "$n" -gt 0 ] && break; sleep 0.1
	done
}

# device_cases LABEL DEV: tables written with sfdisk audited by `alignpart check`, the starts
# `alignpart suggest` proposes, and a table `alignpart create` writes.
device_cases() {
	local label=$1 dev=$2 out json want got nr start off kern
	# 1. a dos table with starts 7, 63, 2048, 2055 (aligned on one of the two kinds of disk)
	if has_cmd check; then
		printf 'label: dos\nstart=7,size=56\nstart=63,size=1985\nstart=2048,size=7\nstart=2055,size=4096\n' |
			sfdisk -q -w always "$dev" >/dev/null 2>&1 && reread "$dev"
		json=$("$AP" check "$dev" --json 2>&1)
		want=$(jq -r '.. | objects | select(has("nr") and has("kernel_offset")) | "\(.nr) \(.start_sector) \(.kernel_offset)"' <<<"$json" 2>/dev/null | sort -n)
		got=$(part_offsets "$dev")
		if [ -n "$got" ] && [ "$got" = "$want" ]; then
			t_ok "$label: alignpart check predicts the kernel's per-partition alignment_offset (starts 7 63 2048 2055)"
		else
			t_fail "$label: alignpart check predicts the kernel's per-partition alignment_offset" \
				"kernel (nr start offset):" "$got" "alignpart:" "$want" "$json"
		fi
		# the reference formula, independently: (gran + A - start*512 % gran) % gran
		local A g; A=$(sysq "$dev" alignment_offset); g=$(sysq "$dev" physical_block_size)
		out=$(while read -r nr start kern; do
			off=$(( (g + A - start * 512 % g) % g ))
			[ "$off" = "$kern" ] || echo "partition $nr at $start: kernel $kern, formula $off"
		done <<<"$got")
		[ -z "$out" ] && t_ok "$label: kernel partition offsets match the reference formula" ||
			t_fail "$label: kernel partition offsets match the reference formula" "$out"
		jv=$(jq -r '.. | objects | select(has("alignment_offset") and has("physical")) | "\(.alignment_offset) \(.physical)"' <<<"$json" 2>/dev/null | head -n1)
		t_eq "$label: alignpart reads alignment_offset/physical" "$jv" "$A $g"
	else
		t_skip "$label: alignpart check vs kernel" "alignpart has no check command yet"
	fi
	# 2. the starts alignpart suggests are aligned for the kernel
	if has_cmd suggest; then
		json=$("$AP" suggest "$dev" --json 2>&1)
		for lab in dos gpt; do
			start=$(jq -r --arg l $lab '.. | objects | select(.label? == $l and has("first_lba")) | .first_lba' <<<"$json" 2>/dev/null | head -n1)
			kern=$(jq -r --arg l $lab '.. | objects | select(.label? == $l and has("first_lba")) | .kernel_offset' <<<"$json" 2>/dev/null | head -n1)
			if [ -z "$start" ] || [ "$start" = null ]; then
				t_fail "$label: alignpart suggest gives a $lab start" "$json"; continue
			fi
			if ! out=$(printf 'label: %s\nstart=%s,size=2048\n' $lab "$start" | sfdisk -q -w always "$dev" 2>&1) ||
			   ! reread "$dev"; then
				t_fail "$label: $lab partition at the suggested start $start" "$out"; continue
			fi
			got=$(part_offsets "$dev" | awk '$1 == 1 { print $3 }')
			t_eq "$label: $lab partition at suggested start $start: kernel alignment_offset (alignpart: $kern)" "$got" 0
		done
	else
		t_skip "$label: alignpart suggest vs kernel" "alignpart has no suggest command yet"
	fi
	# 3. a table alignpart creates
	if has_cmd create; then
		if out=$("$AP" create "$dev" --label gpt --part 8MiB --part 8MiB --part 4MiB --force 2>&1) && reread "$dev"; then
			got=$(part_offsets "$dev" | awk '{ printf "%s ", $3 }')
			t_eq "$label: alignpart create gpt: every kernel alignment_offset is 0" "$got" "0 0 0 "
			t_check "$label: alignpart check passes on the table it created" "$AP" check "$dev"
		else
			t_fail "$label: alignpart create --label gpt" "$out"
		fi
	else
		t_skip "$label: alignpart create vs kernel" "alignpart has no create command yet"
	fi
	wipefs -a -q "$dev" >/dev/null 2>&1; blockdev --rereadpt "$dev" 2>/dev/null
}

modprobe scsi_debug physblk_exp=3 lowest_aligned=7 dev_size_mb=64 && t_cleanup "rmmod scsi_debug"
sd=$(scsi_debug_dev) || sd=
if [ -n "$sd" ]; then device_cases "scsi_debug A=3584" "$sd"
else t_fail "scsi_debug disk appears"; fi

# brd scans partition tables only with max_part
modprobe brd rd_nr=1 rd_size=65536 max_part=8 && t_cleanup "rmmod brd"
if wait_for /dev/ram0; then device_cases "brd A=0" /dev/ram0
else t_fail "brd /dev/ram0 appears"; fi

# dm-linear at sector 1 of the RAM disk: the kernel says 3584; dm devices have no partitions,
# so a second dm-linear at alignpart's suggested start stands in for one.
if has_cmd suggest && [ -b /dev/ram0 ]; then
	len=$(( $(blockdev --getsz /dev/ram0) - 1 ))
	if out=$(dmsetup create at-odd --table "0 $len linear /dev/ram0 1" 2>&1); then
		t_cleanup "dmsetup remove at-odd"
		t_eq "dm-linear at sector 1: kernel alignment_offset" "$(sysq /dev/mapper/at-odd alignment_offset)" 3584
		json=$("$AP" suggest /dev/mapper/at-odd --json 2>&1)
		start=$(jq -r '.. | objects | select(.label? == "dos" and has("first_lba")) | .first_lba' <<<"$json" 2>/dev/null | head -n1)
		if [ -n "$start" ] && [ "$start" != null ] &&
		   out=$(dmsetup create at-odd-p1 --table "0 2048 linear /dev/mapper/at-odd $start" 2>&1); then
			t_cleanup "dmsetup remove at-odd-p1"
			t_eq "dm stack: a mapping at the suggested start $start is aligned" \
				"$(sysq /dev/mapper/at-odd-p1 alignment_offset)" 0
		else
			t_fail "dm stack: alignpart suggest on /dev/mapper/at-odd" "$json" "$out"
		fi
	else
		t_fail "dm-linear at sector 1 of /dev/ram0" "$out"
	fi
else
	t_skip "dm stack vs alignpart suggest" "alignpart has no suggest command yet"
fi
t_done
