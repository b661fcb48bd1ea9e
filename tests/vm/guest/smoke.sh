#!/usr/bin/env bash
# Guest smoke test: the drivers load, and the kernel's alignment facts hold on real devices
# (/work/shared/reference.md "Kernel and tool alignment facts"); real filesystems work.
. /octant/tests/vm/guest-lib.sh

# --- drivers ---------------------------------------------------------------------------------
modprobe ublk_drv 2>/dev/null
if grep -qw '^ublk_drv' /proc/modules && wait_for /dev/ublk-control 20; then
	t_ok "ublk_drv loads and /dev/ublk-control appears"
else
	t_fail "ublk_drv loads and /dev/ublk-control appears" "$(modprobe ublk_drv 2>&1)"
fi
modprobe dm-mod 2>/dev/null
t_check "dm-mod loads (dmsetup version)" dmsetup version

fs_case() { # LABEL DEV MKFS FSCK
	local label=$1 dev=$2 mkfs=$3 fsck=$4 mnt sum1 sum2 out
	mnt=$(mktemp -d)
	if ! out=$($mkfs "$dev" 2>&1); then t_fail "$label: mkfs" "$out"; rmdir "$mnt"; return; fi
	if ! out=$(mount "$dev" "$mnt" 2>&1); then t_fail "$label: mount" "$out"; rmdir "$mnt"; return; fi
	dd if=/dev/urandom of="$mnt/data" bs=64k count=64 status=none
	sum1=$(sha256sum <"$mnt/data")
	umount "$mnt"
	echo 3 >/proc/sys/vm/drop_caches
	mount "$dev" "$mnt"
	sum2=$(sha256sum <"$mnt/data")
	umount "$mnt"; rmdir "$mnt"
	t_eq "$label: data reads back after remount" "$sum2" "$sum1"
	t_check "$label: fsck clean" $fsck "$dev"
}

# --- scsi_debug: a 512e disk whose LBA 0 sits at byte 512 of physical sector 0 ---------------
t_check "modprobe scsi_debug physblk_exp=3 lowest_aligned=7" \
	modprobe scsi_debug physblk_exp=3 lowest_aligned=7 dev_size_mb=64
t_cleanup "rmmod scsi_debug"
sd=$(scsi_debug_dev) || sd=
if [ -n "$sd" ]; then
	t_eq "scsi_debug alignment_offset" "$(sysq "$sd" alignment_offset)" 3584
	t_eq "scsi_debug physical_block_size" "$(sysq "$sd" physical_block_size)" 4096
	t_eq "scsi_debug logical_block_size" "$(sysq "$sd" logical_block_size)" 512
	fs_case "ext4 on scsi_debug (A=3584)" "$sd" "mkfs.ext4 -q -F" "e2fsck -fn"
else
	t_fail "scsi_debug disk appears" "$(ls /sys/bus/pseudo/drivers/scsi_debug 2>&1)"
fi

# --- dm-linear offsets: over a 4096-physical disk with offset 0 (brd) and over scsi_debug ------
# queue_limit_alignment_offset: (gran + A - start*512 mod gran) % gran, gran 4096.
t_check "modprobe brd (4096-physical RAM disk)" modprobe brd rd_nr=1 rd_size=65536
t_cleanup "rmmod brd"
if wait_for /dev/ram0 && [ "$(sysq /dev/ram0 physical_block_size)" = 4096 ]; then
	t_eq "brd alignment_offset" "$(sysq /dev/ram0 alignment_offset)" 0
	dm_case() { # DEV START WANT NAME
		local name=$4 len
		len=$(( $(blockdev --getsz "$1") - $2 ))
		if ! out=$(dmsetup create "$name" --table "0 $len linear $1 $2" 2>&1); then
			t_fail "dm-linear at sector $2 of $1: create" "$out"; return
		fi
		t_cleanup "dmsetup remove $name"
		if wait_for "/dev/mapper/$name"; then
			t_eq "dm-linear at sector $2 of $1: alignment_offset" \
				"$(sysq "/dev/mapper/$name" alignment_offset)" "$3"
		else
			t_fail "dm-linear at sector $2 of $1: /dev/mapper/$name appears"
		fi
	}
	dm_case /dev/ram0 1 3584 smoke-ram-1
	dm_case /dev/ram0 8 0 smoke-ram-8
	[ -n "$sd" ] && dm_case "$sd" 1 3072 smoke-sd-1
	[ -n "$sd" ] && dm_case "$sd" 7 0 smoke-sd-7
	[ -e /dev/mapper/smoke-ram-1 ] && t_eq "dm-linear: physical_block_size stays 4096" \
		"$(sysq /dev/mapper/smoke-ram-1 physical_block_size)" 4096
else
	t_skip "dm-linear alignment facts" "brd did not give a 4096-physical /dev/ram0"
fi

# --- filesystems on loop, fio -------------------------------------------------------------
truncate -s 256M /tmp/smoke.img
loopdev=$(losetup -f --show /tmp/smoke.img) && t_cleanup "losetup -d $loopdev; rm -f /tmp/smoke.img"
if [ -n "$loopdev" ]; then
	fs_case "ext4 on loop" "$loopdev" "mkfs.ext4 -q -F" "e2fsck -fn"
	fs_case "btrfs on loop" "$loopdev" "mkfs.btrfs -q -f" "btrfs check"
	if out=$(fio --name=v --filename="$loopdev" --ioengine=io_uring --direct=1 --rw=randwrite \
		--bsrange=512-128k --size=16M --verify=crc32c --do_verify=1 --iodepth=8 2>&1); then
		t_ok "fio io_uring randwrite --verify=crc32c on loop"
	else
		t_fail "fio io_uring randwrite --verify=crc32c on loop" "$(tail -n 15 <<<"$out")"
	fi
else
	t_fail "losetup of a 256M file"
fi
if [ -n "${OCTANT_VM_DISK:-}" ]; then
	t_eq "virtio scratch disk is a block device" "$( [ -b "$OCTANT_VM_DISK" ] && echo yes)" yes
fi
if [ -n "${OCTANT_VM_SCRATCH:-}" ]; then
	if out=$(fio --name=s --directory="$OCTANT_VM_SCRATCH" --ioengine=io_uring --direct=1 \
		--rw=randwrite --bs=4k --size=8M --verify=crc32c 2>&1); then
		t_ok "ext4 /scratch on the virtio disk takes O_DIRECT io_uring I/O"
	else
		t_fail "ext4 /scratch on the virtio disk takes O_DIRECT io_uring I/O" "$(tail -n 15 <<<"$out")"
	fi
	rm -f "$OCTANT_VM_SCRATCH"/s.*
fi
t_done
