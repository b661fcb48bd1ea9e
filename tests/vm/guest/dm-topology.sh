#!/usr/bin/env bash
# vm-kernels: 6.1
# Issue 7 (a): dm-linear devices made by dm-stack (libdevmapper, not dmsetup; driven through
# $BUILD/dmstack-tool) show the kernel the true topology: over a 512/4096 scsi_debug disk
# with alignment_offset 0, a dm-linear at sector 1 reports 3584 and one at sector 8 reports 0
# ((4096 + A - start*512 mod 4096) mod 4096, /work/shared/reference.md); blkid -i and lsblk -t
# show it.  Then the error paths: existing name, too long, busy, missing driver.
. /octant/tests/vm/guest-lib.sh
DMT=$BUILD/dmstack-tool
[ -x "$DMT" ] || { echo "SKIP: $DMT not built (make BUILD=...)"; exit 77; }

# sd_load ARGS...: (re)load scsi_debug with ARGS and print its disk.
sd_load() {
	rmmod scsi_debug 2>/dev/null
	modprobe sd_mod 2>/dev/null
	modprobe scsi_debug dev_size_mb=64 "$@" && scsi_debug_dev
}
# one_line_err DESC OUT RC PATTERN: the command failed with one line matching PATTERN.
one_line_err() {
	if [ "$3" -ne 0 ] && [ "$(printf '%s\n' "$2" | wc -l)" -eq 1 ] &&
	   printf '%s' "$2" | grep -Eq -- "$4"; then
		t_ok "$1"
	else
		t_fail "$1" "exit $3, output:" "$2" "wanted one line matching: $4"
	fi
}

sd=$(sd_load physblk_exp=3 lowest_aligned=0) || { t_fail "scsi_debug 512/4096 disk appears"; t_done; }
t_cleanup "rmmod scsi_debug"
t_eq "scsi_debug lowest_aligned=0: physical_block_size" "$(sysq "$sd" physical_block_size)" 4096
t_eq "scsi_debug lowest_aligned=0: alignment_offset" "$(sysq "$sd" alignment_offset)" 0
size=$(blockdev --getsz "$sd")

# --- offsets --------------------------------------------------------------------------------
for c in 1:3584 7:512 8:0 9:3584; do
	start=${c%:*} want=${c#*:} name=dmt-$start
	if ! out=$("$DMT" create "$name" "$sd" "$start" $((size - start)) 2>&1); then
		t_fail "dm-linear at sector $start: create" "$out"; continue
	fi
	t_cleanup "$DMT remove $name"
	t_eq "dm-linear at sector $start: create prints its node, a block device" \
		"$out:$([ -b "$out" ] && echo blk)" "/dev/mapper/$name:blk"
	t_eq "dm-linear at sector $start: sysfs alignment_offset" \
		"$(sysq "/dev/mapper/$name" alignment_offset)" "$want"
	t_eq "dm-linear at sector $start: dm-stack reads the same offset" \
		"$("$DMT" offset "$name" 2>&1)" "$want"
done
d1=/dev/mapper/dmt-1
if [ -b $d1 ]; then
	read -r maj min < <(stat -L -c '%t %T' $d1)
	b=$(basename "$(readlink -f "/sys/dev/block/$((16#$maj)):$((16#$min))")")
	t_eq "dm-linear at 1: /sys/block/$b/dm/name" "$(cat "/sys/block/$b/dm/name" 2>&1)" dmt-1
	t_eq "dm-linear at 1: logical/physical" \
		"$(sysq $d1 logical_block_size)/$(sysq $d1 physical_block_size)" 512/4096
	t_eq "dm-linear at 1: size in sectors" "$(blockdev --getsz $d1)" $((size - 1))
	out=$(blkid -i $d1 2>&1)
	if grep -q 'ALIGNMENT_OFFSET="3584"' <<<"$out" && grep -q 'PHYSICAL_SECTOR_SIZE="4096"' <<<"$out"; then
		t_ok "blkid -i shows ALIGNMENT_OFFSET 3584, physical 4096"
	else
		t_fail "blkid -i shows ALIGNMENT_OFFSET 3584, physical 4096" "$out"
	fi
	out=$(lsblk -t -n -o NAME,ALIGNMENT,PHY-SEC,LOG-SEC $d1 2>&1)
	t_eq "lsblk -t shows alignment 3584, 4096/512" "$(echo $out)" "dmt-1 3584 4096 512"
fi

# --- errors: one line each, nothing left behind ---------------------------------------------
out=$("$DMT" create dmt-1 "$sd" 1 8 2>&1); rc=$?
one_line_err "create an existing name: EEXIST" "$out" $rc "already exists.*EEXIST"
out=$("$DMT" create dmt-big "$sd" 1 "$size" 2>&1); rc=$?
one_line_err "create past the end of the lower device: ENOSPC" "$out" $rc "do not fit.*ENOSPC"
t_eq "... and nothing is left behind" "$(ls /dev/mapper/dmt-big 2>/dev/null; "$DMT" exists dmt-big)" no
out=$("$DMT" create 'bad/name' "$sd" 1 8 2>&1); rc=$?
one_line_err "create a name with '/': EINVAL" "$out" $rc "invalid dm device name.*EINVAL"
out=$("$DMT" remove dmt-none 2>&1); rc=$?
one_line_err "remove a name that does not exist: ENOENT" "$out" $rc "no dm device 'dmt-none'.*ENOENT"
if [ -b /dev/mapper/dmt-8 ]; then
	exec 3</dev/mapper/dmt-8
	out=$("$DMT" remove dmt-8 2>&1); rc=$?
	exec 3<&-
	one_line_err "remove while open: EBUSY" "$out" $rc "in use.*EBUSY"
	t_check "remove once closed" "$DMT" remove dmt-8
	b=$(ls /sys/block | grep '^dm-' | while read -r d; do [ "$(cat /sys/block/$d/dm/name)" = dmt-8 ] && echo "$d"; done)
	t_eq "after remove: no /dev/mapper/dmt-8, no sysfs entry" "$(ls /dev/mapper/dmt-8 2>/dev/null)$b" ""
fi
truncate -s 32M /tmp/dmt-lower.img
if lo=$(losetup -f --show /tmp/dmt-lower.img) && mkfs.ext4 -q -F "$lo" && mkdir -p /tmp/dmt-mnt &&
   mount "$lo" /tmp/dmt-mnt; then
	out=$("$DMT" create dmt-mnt "$lo" 1 8 2>&1); rc=$?
	one_line_err "create over a mounted device: EBUSY" "$out" $rc "busy.*EBUSY"
	t_eq "... and nothing is left behind" "$("$DMT" exists dmt-mnt)" no
	umount /tmp/dmt-mnt
else
	t_fail "a mounted loop device for the busy case"
fi
[ -n "${lo:-}" ] && losetup -d "$lo"
rm -f /tmp/dmt-lower.img

# --- the serve --dm entry points ---------------------------------------------------------------
bytes=$(( (size - 8) * 512 ))
if out=$("$DMT" attach dmt-srv "$sd" 512 $bytes 2>&1); then
	t_cleanup "$DMT detach dmt-srv"
	t_eq "serve_attach shift 512: alignment_offset 3584, $((bytes / 512)) sectors" \
		"$(sysq "$out" alignment_offset) $(blockdev --getsz "$out")" "3584 $((bytes / 512))"
	t_check "serve_attach again with the same table keeps it (serve --recover)" \
		"$DMT" attach dmt-srv "$sd" 512 $bytes
	out=$("$DMT" attach dmt-srv "$sd" 0 $bytes 2>&1); rc=$?
	one_line_err "serve_attach with another table: EEXIST" "$out" $rc "already exists.*EEXIST"
	t_check "detach" "$DMT" detach dmt-srv
	out=$("$DMT" detach dmt-srv 2>&1); rc=$?
	one_line_err "detach again: ENOENT" "$out" $rc "no dm device.*ENOENT"
else
	t_fail "serve_attach shift 512" "$out"
fi
out=$("$DMT" attach dmt-srv "$sd" 100 $bytes 2>&1); rc=$?
one_line_err "serve_attach with a shift not a multiple of 512: EINVAL" "$out" $rc "multiple of 512.*EINVAL"

# --- a disk that is itself odd-aligned (lowest_aligned=7, A=3584) ---------------------------
t_run_cleanup
if sd=$(sd_load physblk_exp=3 lowest_aligned=7); then
	t_cleanup "rmmod scsi_debug"
	t_eq "scsi_debug lowest_aligned=7: alignment_offset" "$(sysq "$sd" alignment_offset)" 3584
	for c in 0:3584 1:3072 7:0; do
		start=${c%:*} want=${c#*:} name=dmt7-$start
		if out=$("$DMT" create "$name" "$sd" "$start" 1024 2>&1); then
			t_cleanup "$DMT remove $name"
			t_eq "A=3584 disk, dm-linear at sector $start: alignment_offset" \
				"$(sysq "/dev/mapper/$name" alignment_offset)" "$want"
		else
			t_fail "A=3584 disk, dm-linear at sector $start: create" "$out"
		fi
	done
	t_run_cleanup
else
	t_fail "scsi_debug lowest_aligned=7 disk appears"
fi

# --- no device-mapper driver ------------------------------------------------------------------
if ls /sys/block | grep -q '^dm-'; then
	t_skip "no dm driver: ENODEV with 'modprobe dm_mod'" "dm devices of another test still exist"
elif ! rmmod dm_mod 2>/dev/null; then
	t_skip "no dm driver: ENODEV with 'modprobe dm_mod'" "dm_mod cannot be unloaded here"
else
	out=$("$DMT" create dmt-x /dev/null 1 8 2>&1); rc=$?
	one_line_err "no dm driver: create says device-mapper not available (modprobe dm_mod)" \
		"$out" $rc "device-mapper not available \(modprobe dm_mod\).*ENODEV"
	modprobe dm-mod
	t_check "dm_mod back: dm-stack available again" "$DMT" available
fi
t_done
