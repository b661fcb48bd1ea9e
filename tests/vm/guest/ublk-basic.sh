#!/usr/bin/env bash
# Guest test: `ublk-flash serve --frontend ublk` in both alignment modes.  /dev/ublkbN shows the
# engine's topology (logical 512, physical 4096, io_min 4096, io_opt = erase block 256 KiB,
# write cache + FUA, discard at page granularity); ext4 and btrfs mkfs/mount/checksums/fsck;
# discard and write-zeroes read back zeroes; fio --verify=crc32c with mixed sizes 512 B..128 KiB;
# a clean stop removes the device and the image passes `ublk-flash fsck`; --read-only (also with
# --dm): a read-only device, writes fail, reads return the data, the image bytes unchanged.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver

fs_case() { # LABEL DEV MKFS FSCK
	local label=$1 dev=$2 mkfs=$3 fsck=$4 mnt out sum1 sum2
	mnt=$(mktemp -d)
	if ! out=$($mkfs "$dev" 2>&1); then t_fail "$label: mkfs" "$out"; rmdir "$mnt"; return; fi
	if ! out=$(mount "$dev" "$mnt" 2>&1); then t_fail "$label: mount" "$out"; rmdir "$mnt"; return; fi
	t_cleanup "umount $mnt 2>/dev/null; rmdir $mnt"
	dd if=/dev/urandom of="$mnt/big" bs=64k count=96 status=none
	for i in $(seq 1 40); do head -c $((i * 1531)) /dev/urandom >"$mnt/small$i"; done
	sum1=$(cd "$mnt" && sha256sum big small* | sha256sum)
	umount "$mnt"
	echo 3 >/proc/sys/vm/drop_caches
	if ! out=$(mount "$dev" "$mnt" 2>&1); then t_fail "$label: remount" "$out"; return; fi
	sum2=$(cd "$mnt" && sha256sum big small* | sha256sum)
	umount "$mnt"
	t_eq "$label: checksums after remount" "$sum2" "$sum1"
	t_check "$label: fsck clean" $fsck "$dev"
}

mode_case() { # MODE [SERVE-OPTIONS...]
	local mode=$1 img dev out n what
	shift
	img=/tmp/ublk-basic-$mode.img
	if ! out=$(ublk_mkimg "$img" 256M "$mode" 2>&1); then
		t_fail "$mode: create image" "$out"; return
	fi
	t_cleanup "rm -f $img"
	if ! dev=$(ublk_serve "$img" "$@"); then
		t_fail "$mode: serve --frontend ublk $*" "$dev"; return
	fi
	t_cleanup "$UBLK_FLASH stop --force $img"
	if [[ $dev =~ ^/dev/ublkb[0-9]+$ ]] && [ -b "$dev" ]; then
		t_ok "$mode: serve prints a live $dev"
	else
		t_fail "$mode: serve prints a live /dev/ublkbN" "got '$dev'"; return
	fi
	n=${dev#/dev/ublkb}

	t_eq "$mode: logical_block_size" "$(sysq "$dev" logical_block_size)" 512
	t_eq "$mode: physical_block_size" "$(sysq "$dev" physical_block_size)" 4096
	t_eq "$mode: minimum_io_size" "$(sysq "$dev" minimum_io_size)" 4096
	t_eq "$mode: optimal_io_size (erase block)" "$(sysq "$dev" optimal_io_size)" 262144
	t_eq "$mode: write_cache" "$(sysq "$dev" write_cache)" "write back"
	t_eq "$mode: fua" "$(sysq "$dev" fua)" 1
	t_eq "$mode: discard_granularity" "$(sysq "$dev" discard_granularity)" 4096
	# ublk has no alignment-offset field: 0 in both modes (--dm shows the odd shift)
	t_eq "$mode: alignment_offset" "$(sysq "$dev" alignment_offset)" 0
	t_eq "$mode: discard_alignment" "$(sysq "$dev" discard_alignment)" 0
	t_eq "$mode: size in sectors" "$(blockdev --getsz "$dev")" $((256 * 2048))

	# discard and write zeroes: the range reads back as zeroes
	dd if=/dev/urandom of="$dev" bs=64k count=16 oflag=direct status=none
	blkdiscard -o 0 -l 524288 "$dev" 2>/dev/null
	blkdiscard -z -o 524288 -l 524288 "$dev" 2>/dev/null
	if cmp -s -n 1048576 "$dev" /dev/zero; then
		t_ok "$mode: DISCARD and WRITE_ZEROES read back zeroes"
	else
		t_fail "$mode: DISCARD and WRITE_ZEROES read back zeroes"
	fi

	# FUA: an O_DSYNC direct write reaches the server as a write with REQ_FUA
	# (block/fops.c), which the engine must make durable before it completes
	# (ftl_write's FTL_FUA, counted as host_fua); the flag is bit 13 of the
	# descriptor's op_flags, not of ublksrv_get_flags() (op_flags >> 8), where
	# the server looked until 2026-12-06 and never found it
	local fua0 fua1
	fua0=$($UBLK_FLASH stats "$dev" --json 2>/dev/null | jq -r .host_fua)
	dd if=/dev/urandom of="$dev" bs=4k count=8 seek=512 oflag=direct,dsync status=none
	fua1=$($UBLK_FLASH stats "$dev" --json 2>/dev/null | jq -r .host_fua)
	if [[ $fua0 =~ ^[0-9]+$ && $fua1 =~ ^[0-9]+$ ]] && [ $((fua1 - fua0)) -ge 8 ]; then
		t_ok "$mode: 8 O_DSYNC writes arrive as FUA and the engine makes them durable (host_fua $fua0 -> $fua1)"
	else
		t_fail "$mode: 8 O_DSYNC writes arrive as FUA (host_fua $fua0 -> $fua1, want 8 more)"
	fi

	fs_case "$mode: ext4" "$dev" "mkfs.ext4 -q -F" "e2fsck -fn"
	fs_case "$mode: btrfs" "$dev" "mkfs.btrfs -q -f" "btrfs check"

	if out=$(fio --name=mixed --filename="$dev" --ioengine=io_uring --direct=1 --rw=randwrite \
		--bsrange=512-128k --size=24M --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--iodepth=16 2>&1); then
		t_ok "$mode: fio randwrite 512..128k --verify=crc32c"
	else
		t_fail "$mode: fio randwrite 512..128k --verify=crc32c" "$(tail -n 15 <<<"$out")"
	fi

	# stop by image in odd mode, by device in 1m mode
	what=$img; [ "$mode" = 1m ] && what=$dev
	if out=$($UBLK_FLASH stop "$what" 2>&1); then t_ok "$mode: stop $what"; else t_fail "$mode: stop $what" "$out"; fi
	ublk_wait_gone "$dev"
	if [ ! -e "$dev" ] && [ ! -e "/sys/block/ublkb$n" ] && [ ! -e "/dev/ublkc$n" ]; then
		t_ok "$mode: clean stop removes $dev and /dev/ublkc$n"
	else
		t_fail "$mode: clean stop removes $dev" "$(ls -l /dev/ublk* 2>&1)"
	fi
	t_check "$mode: image passes ublk-flash fsck" "$UBLK_FLASH" fsck "$img"
}

# --read-only (also under --dm): the kernel marks the device read-only, writes fail at the
# device, reads return what a read-write serve wrote, and the image's bytes are unchanged.
ro_case() { # LABEL [SERVE-OPTIONS...]
	local label=$1 img=/tmp/ublk-ro.img dev out sum0 sum1 want
	shift
	if ! out=$(ublk_mkimg "$img" 64M odd 2>&1) || ! dev=$(ublk_serve "$img"); then
		t_fail "$label: create and serve read-write" "$out $dev"; return
	fi
	t_cleanup "rm -f $img"
	head -c 1048576 /dev/urandom >/tmp/ublk-ro.pat
	dd if=/tmp/ublk-ro.pat of="$dev" bs=64k oflag=direct status=none
	$UBLK_FLASH stop "$img" >/dev/null
	ublk_wait_gone "$dev"
	sum0=$(sha256sum <"$img")
	if ! dev=$(ublk_serve "$img" --read-only "$@"); then
		t_fail "$label: serve --read-only $*" "$dev"; return
	fi
	t_eq "$label: blockdev --getro $dev" "$(blockdev --getro "$dev")" 1
	if dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none 2>/dev/null; then
		t_fail "$label: a write to $dev fails"
	else
		t_ok "$label: a write to $dev fails"
	fi
	want=$(sha256sum </tmp/ublk-ro.pat)
	t_eq "$label: reads return the data" "$(head -c 1048576 "$dev" | sha256sum)" "$want"
	if out=$($UBLK_FLASH stop "$img" 2>&1); then t_ok "$label: stop"; else t_fail "$label: stop" "$out"; fi
	ublk_wait_gone "$dev"
	sum1=$(sha256sum <"$img")
	t_eq "$label: image bytes unchanged" "$sum1" "$sum0"
	rm -f /tmp/ublk-ro.pat
}

mode_case odd --queues 2 --depth 32
mode_case 1m
ro_case "read-only"
ro_case "read-only --dm" --dm octant-ro
t_done
