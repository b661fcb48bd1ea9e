#!/usr/bin/env bash
# vm-kernels: 7.3 6.12 6.1
# vm-timeout: 900
# Guest test: a zoned image (`create --zoned`: the flash as a host-managed zoned disk, no FTL)
# served over ublk's ZONED mode (Linux 6.6+, with USER_COPY).  On a kernel without it (6.1)
# serve refuses with its reason (exit 3) and nothing is left.  Where it has it: the device is
# host-managed with the image's zones (16 MiB, 64 of them), 4096-byte logical blocks, limits
# 16 open / 16 active; blkzone report/open/close/finish/reset give the conditions and write
# pointers the zone state machine says (docs/engine.md); a write off the write pointer fails;
# data written at the pointer reads back; mkfs.btrfs -O zoned, mount, write, remount and
# verify, btrfs check; mkfs.f2fs -m (with a regular device for its metadata: f2fs needs
# random-write space a zoned disk without an FTL has not), mount, write, verify, fsck.f2fs;
# kill -9 of the server: served again, every write pointer and condition comes back from the
# pages' OOB records and f2fs mounts with its files; a clean stop, then `ublk-flash fsck` of
# the image is clean and `info` shows the zones written.  Also: live stats/health of the
# served device, `upgrade` refused (exit 6), partitions refused by the kernel (ext_range 1) and by alignpart
# (exit 6, the zone size),
# dm-linear on whole zones (a mapping off a zone boundary refused) with btrfs -O zoned on it.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
dir=${OCTANT_VM_SCRATCH:-/tmp}
img=$dir/ublk-zoned.img
kv=$(uname -r)
if ! out=$("$UBLK_FLASH" create "$img" --size 1G --zoned --force 2>&1); then
	t_fail "create --zoned" "$out"; t_done
fi
t_cleanup "rm -f $img"
t_ok "create --zoned 1G: $(sed -n 's/^size: *//p' < <("$UBLK_FLASH" info "$img"))"

maj=${kv%%.*}; rest=${kv#*.}; min=${rest%%[.-]*}
if [ "$maj" -lt 6 ] || { [ "$maj" -eq 6 ] && [ "$min" -lt 6 ]; }; then
	# no UBLK_F_ZONED before 6.6: refused with the reason, exit 3, nothing left behind
	out=$("$UBLK_FLASH" serve "$img" --frontend ublk 2>&1); rc=$?
	t_eq "$kv: serve of a zoned image exits 3" "$rc" 3
	if grep -q "has no zoned ublk (UBLK_F_ZONED with USER_COPY: Linux 6.6+)" <<<"$out"; then
		t_ok "$kv: the reason is said: $(head -n 1 <<<"$out")"
	else
		t_fail "$kv: the reason is said" "$out"
	fi
	t_eq "$kv: no ublk device left" "$(ls /dev/ublkb* 2>/dev/null | wc -l)" 0
	t_check "$kv: the image is untouched (fsck clean)" "$UBLK_FLASH" fsck "$img"
	t_done
fi

if ! dev=$(ublk_serve "$img"); then
	t_fail "$kv: serve a zoned image over ublk" "$dev"; t_done
fi
t_cleanup "$UBLK_FLASH stop --force $img"
t_ok "$kv: served on $dev"
zs=32768      # sectors per 16 MiB zone

t_eq "$kv: queue/zoned" "$(sysq "$dev" zoned)" host-managed
t_eq "$kv: nr_zones" "$(sysq "$dev" nr_zones)" 64
t_eq "$kv: chunk_sectors (zone)" "$(sysq "$dev" chunk_sectors)" $zs
t_eq "$kv: logical_block_size" "$(sysq "$dev" logical_block_size)" 4096
t_eq "$kv: max_open_zones" "$(sysq "$dev" max_open_zones)" 16
t_eq "$kv: max_active_zones" "$(sysq "$dev" max_active_zones)" 16
app=$(sysq "$dev" zone_append_max_bytes)
if [ "${app:-0}" -gt 0 ]; then t_ok "$kv: zone append: $app bytes"; else t_fail "$kv: zone append" "'$app'"; fi

# partitions: the kernel allows none on a host-managed zoned disk (block/genhd.c marks it
# GENHD_FL_NO_PART: no scan, BLKPG_ADD_PARTITION EINVAL), and alignpart says so in one line, exit 6, with the
# zone size it probed (queue/zoned, chunk_sectors) as the alignment that matters
AP=${ALIGNPART:-/octant/build/alignpart}
# an MBR at zone 0's write pointer with one partition on zone 1 (4096-byte LBAs 4096..8191)
head -c 4096 /dev/zero >/tmp/mbr
printf '\x83' | dd of=/tmp/mbr bs=1 seek=450 conv=notrunc status=none
printf '\x00\x10\x00\x00\x00\x10\x00\x00' | dd of=/tmp/mbr bs=1 seek=454 conv=notrunc status=none
printf '\x55\xaa' | dd of=/tmp/mbr bs=1 seek=510 conv=notrunc status=none
if dd if=/tmp/mbr of="$dev" bs=4096 count=1 oflag=direct status=none; then
	blockdev --rereadpt "$dev" 2>/dev/null; rr=$?
	t_eq "$kv: the partition scan adds none (BLKRRPART exit $rr)" "$(ls -d /sys/class/block/${dev#/dev/}p* 2>/dev/null | wc -l)" 0
	if out=$(partx --add --nr 1 "$dev" 2>&1); then
		t_fail "$kv: BLKPG_ADD_PARTITION refused (partx --add)" "$out"
		partx --delete "$dev" 2>/dev/null
	else
		t_ok "$kv: BLKPG_ADD_PARTITION refused: $out"
	fi
	# 7.x: add_disk marks a zoned disk GENHD_FL_NO_PART (block/genhd.c), sysfs ext_range 1;
	# 6.12 keeps the usual ext_range and refuses at the scan and at BLKPG (the two checks
	# above), so there the value is only reported
	er=$(cat /sys/block/${dev#/dev/}/ext_range)
	if [ "$maj" -ge 7 ]; then
		t_eq "$kv: ext_range (GENHD_FL_NO_PART: no partitions)" "$er" 1
	else
		t_ok "$kv: ext_range $er (this kernel refuses at the scan and at BLKPG instead)"
	fi
	t_check "$kv: blkzone reset zone 0 (the MBR)" blkzone reset -o 0 -c 1 "$dev"
else
	t_fail "$kv: an MBR written at zone 0's write pointer"
fi
rm -f /tmp/mbr
for c in check suggest predict "create --label gpt --part 16M --no-act"; do
	# shellcheck disable=SC2086 # the command and its options
	out=$("$AP" $c "$dev" 2>&1); rc=$?
	if [ "$rc" -eq 6 ] && [ "$(wc -l <<<"$out")" -eq 1 ] &&
	   grep -q "zoned disk (zones of 16MiB): Linux allows no partitions on it; the alignment that matters is the zone size, 16777216 bytes" <<<"$out"; then
		t_ok "$kv: alignpart ${c%% *}: exit 6, one line"
	else
		t_fail "$kv: alignpart ${c%% *}: exit 6 and the zone size" "exit $rc: $out"
	fi
done

# zcond N: condition and write pointer of zone N as blkzone prints them ("em 0x0")
zcond() {
	blkzone report -o $(($1 * zs)) -c 1 "$dev" |
		sed -n 's/.*wptr 0x\([0-9a-f]*\).*zcond:[ ]*\([0-9]*\)(\([a-z]*\)).*/\3 \1/p'
}
n=$(blkzone report "$dev" | grep -c "zcond: *1(em)")
t_eq "$kv: blkzone report: every zone empty" "$n" 64

# writes: at the write pointer, and one off it
head -c $((1 << 20)) /dev/urandom >/tmp/z.dat
if dd if=/tmp/z.dat of="$dev" bs=64k oflag=direct status=none 2>/dev/null; then
	t_ok "$kv: 1 MiB written at zone 0's write pointer"
else
	t_fail "$kv: 1 MiB written at zone 0's write pointer"
fi
t_eq "$kv: zone 0 implicitly open, wp 1 MiB" "$(zcond 0)" "oi 000800"
if dd if=/tmp/z.dat of="$dev" bs=4k count=1 oflag=direct status=none 2>/dev/null; then
	t_fail "$kv: a write off the write pointer fails"
else
	t_ok "$kv: a write off the write pointer fails"
fi
t_check "$kv: the data reads back" cmp -n $((1 << 20)) /tmp/z.dat "$dev"
# live stats from the server: the zone model, the open zone, the pages written
out=$("$UBLK_FLASH" stats "$dev" --json 2>&1)
if grep -q '"zone_model":"host-managed"' <<<"$out" &&
   grep -q '"zones":64,"max_open":16,"max_active":16,"zones_empty":63,"zones_implicit_open":1,' <<<"$out" &&
   grep -q '"written_bytes":1048576,' <<<"$out" &&
   grep -q '"host_write_pages":257,' <<<"$out" && grep -q '"zone_resets":1,' <<<"$out"; then
	# 257: the MBR's page and the 1 MiB; the write off the pointer never reaches the server
	# (the kernel's zone write plugging refuses it first), so wp_violations stays 0
	t_ok "$kv: stats --json live: zone model, 1 zone open, 1 MiB below the pointers, 257 pages written, 1 reset"
else
	t_fail "$kv: stats --json live from the server" "$out"
fi
# live upgrade: refused before anything changes (exit 6), the server serves on
out=$("$UBLK_FLASH" upgrade "$dev" 2>&1); rc=$?
if [ "$rc" -eq 6 ] && grep -q "is a zoned image: live upgrade is not supported on zoned images yet" <<<"$out"; then
	t_ok "$kv: upgrade of a zoned image: exit 6, one line"
else
	t_fail "$kv: upgrade of a zoned image: exit 6" "exit $rc: $out"
fi
t_check "$kv: still served after the refused upgrade" cmp -n $((1 << 20)) /tmp/z.dat "$dev"
out=$("$UBLK_FLASH" health "$dev" 2>&1)
if grep -q "^Zone Model: *host-managed, 64 zones of 16 MiB" <<<"$out"; then
	t_ok "$kv: health live: $(grep '^Zones by State' <<<"$out")"
else
	t_fail "$kv: health live from the server" "$out"
fi
beyond=$(dd if="$dev" bs=4k skip=256 count=1 status=none | tr -d '\0' | wc -c)
t_eq "$kv: past the write pointer reads zeroes" "$beyond" 0

# management: open, close, finish, reset
t_check "$kv: blkzone open zone 1" blkzone open -o $zs -c 1 "$dev"
t_eq "$kv: zone 1 explicitly open (wp relative to its start)" "$(zcond 1)" "oe 000000"
t_check "$kv: blkzone close zone 0" blkzone close -o 0 -c 1 "$dev"
t_eq "$kv: zone 0 closed" "$(zcond 0)" "cl 000800"
t_check "$kv: blkzone finish zone 0" blkzone finish -o 0 -c 1 "$dev"
t_eq "$kv: zone 0 full" "$(zcond 0)" "fu 008000"
t_check "$kv: the data survives the finish" cmp -n $((1 << 20)) /tmp/z.dat "$dev"
t_check "$kv: blkzone reset zone 0" blkzone reset -o 0 -c 1 "$dev"
t_eq "$kv: zone 0 empty again" "$(zcond 0)" "em 000000"
t_check "$kv: blkzone reset (all zones)" blkzone reset "$dev"
t_eq "$kv: zone 1 empty" "$(zcond 1)" "em 000000"

# the active limit: 16 zones partly written, a 17th refused
for z in $(seq 0 15); do
	dd if=/tmp/z.dat of="$dev" bs=4k count=1 seek=$((z * zs / 8)) oflag=direct status=none
done
if dd if=/tmp/z.dat of="$dev" bs=4k count=1 seek=$((16 * zs / 8)) oflag=direct status=none 2>/dev/null
then
	t_fail "$kv: a 17th active zone is refused"
else
	t_ok "$kv: a 17th active zone is refused"
fi
# ... with the status the zoned block layer expects (EOVERFLOW: BLK_STS_ZONE_ACTIVE_RESOURCE)
if dmesg | grep -q "active zones exceeded error, dev ${dev#/dev/}"; then
	t_ok "$kv: the kernel logs BLK_STS_ZONE_ACTIVE_RESOURCE (\"active zones exceeded\")"
else
	t_fail "$kv: the kernel logs BLK_STS_ZONE_ACTIVE_RESOURCE" "$(dmesg | tail -n 5)"
fi
t_check "$kv: blkzone reset (all zones) again" blkzone reset "$dev"
rm -f /tmp/z.dat

# fs_files MNT: write a set of files; their sum on stdout
fs_files() {
	dd if=/dev/urandom of="$1/big" bs=1M count=96 status=none
	for i in $(seq 1 40); do head -c $((i * 1531)) /dev/urandom >"$1/small$i"; done
	sync
	(cd "$1" && sha256sum big small* | sha256sum)
}
mnt=$(mktemp -d)
t_cleanup "umount $mnt 2>/dev/null; rmdir $mnt"

# fs_case LABEL FSTYPE MOUNTDEV FSCK MKFS...: mkfs, mount, write, remount, verify, fsck
fs_case() {
	local label=$1 type=$2 mdev=$3 fsck=$4 out sum1 sum2 n
	shift 4
	if ! out=$("$@" 2>&1); then t_fail "$kv: $label: $*" "$out"; return; fi
	t_ok "$kv: $label: $*"
	if ! out=$(mount -t "$type" "$mdev" "$mnt" 2>&1); then
		t_fail "$kv: $label: mount" "$out"; return
	fi
	sum1=$(fs_files "$mnt")
	umount "$mnt"
	echo 3 >/proc/sys/vm/drop_caches
	mount -t "$type" "$mdev" "$mnt"
	sum2=$(cd "$mnt" && sha256sum big small* | sha256sum)
	umount "$mnt"
	t_eq "$kv: $label: checksums after remount" "$sum2" "$sum1"
	fs_sum=$sum1
	t_check "$kv: $label: $fsck" $fsck "$mdev"
	n=$(blkzone report "$dev" | grep -vc "zcond: *1(em)")
	if [ "$n" -gt 0 ]; then t_ok "$kv: $label wrote $n zones"; else t_fail "$kv: $label wrote zones"; fi
}

fs_case "btrfs zoned" btrfs "$dev" "btrfs check" mkfs.btrfs -q -f -O zoned "$dev"

# dm-linear over the zoned disk, where the zone rules allow: whole zones only (dm-table.c
# refuses a start or length off the zone size), then btrfs -O zoned on the mapping
dmlin=octant-zlin
modprobe dm_mod 2>/dev/null
if ! command -v dmsetup >/dev/null || ! dmsetup version >/dev/null 2>&1; then
	t_skip "$kv: dm-linear over the zoned disk" "no device-mapper in the guest"
else
	t_check "$kv: blkzone reset (all zones) before dm-linear" blkzone reset "$dev"
	if out=$(dmsetup create "$dmlin" --table "0 $((32 * zs)) linear $dev $((32 * zs + 8))" 2>&1); then
		dmsetup remove "$dmlin"
		t_fail "$kv: dm-linear off a zone boundary is refused"
	else
		t_ok "$kv: dm-linear off a zone boundary is refused"
	fi
	if out=$(dmsetup create "$dmlin" --table "0 $((32 * zs)) linear $dev $((32 * zs))" 2>&1); then
		t_cleanup "dmsetup remove $dmlin 2>/dev/null"
		dmdev=/dev/mapper/$dmlin
		t_eq "$kv: dm-linear: host-managed" "$(sysq "$dmdev" zoned)" host-managed
		t_eq "$kv: dm-linear: 32 zones" "$(sysq "$dmdev" nr_zones)" 32
		if out=$(mkfs.btrfs -q -f -O zoned "$dmdev" 2>&1) && mount -t btrfs "$dmdev" "$mnt" 2>&1; then
			head -c $((4 << 20)) /dev/urandom >"$mnt/f"
			sum1=$(sha256sum <"$mnt/f"); umount "$mnt"
			echo 3 >/proc/sys/vm/drop_caches
			mount -t btrfs "$dmdev" "$mnt"; sum2=$(sha256sum <"$mnt/f"); umount "$mnt"
			t_eq "$kv: btrfs zoned on dm-linear: the file after remount" "$sum2" "$sum1"
			t_check "$kv: btrfs zoned on dm-linear: btrfs check" btrfs check "$dmdev"
			n=$(blkzone report -o $((32 * zs)) "$dev" | grep -vc "zcond: *1(em)")
			z0=$(blkzone report -c 32 "$dev" | grep -vc "zcond: *1(em)")
			if [ "$n" -gt 0 ] && [ "$z0" -eq 0 ]; then
				t_ok "$kv: dm-linear: $n zones written, all in the mapped half"
			else
				t_fail "$kv: dm-linear: zones written in the mapped half only" "$n there, $z0 below"
			fi
		else
			t_fail "$kv: btrfs zoned on dm-linear" "$out"
		fi
		dmsetup remove "$dmlin"
	else
		t_fail "$kv: dm-linear on whole zones" "$out"
	fi
fi

# zones_now: every zone's start, write pointer and condition, open ones as closed (what an
# open after a crash makes of them)
zones_now() {
	blkzone report "$dev" |
		sed -n 's/.*start: \(0x[0-9a-f]*\).*wptr \(0x[0-9a-f]*\).*zcond:[ ]*[0-9]*(\([a-z]*\)).*/\1 \2 \3/p' |
		sed 's/ o[ie]$/ cl/'
}

# kill -9 of the server with f2fs's zones written (and flushed by its umount): the dead
# server's device removed by `stop`, the image served again on the same number: every
# write pointer rebuilt from the pages' OOB records, f2fs mounts with its files intact.
kill9_case() {
	local before after n=${dev#/dev/ublkb} sum out
	before=$(zones_now)
	ublk_kill_server "$img" "$kv: kill -9" || return
	t_ok "$kv: kill -9 of the server"
	if ! out=$("$UBLK_FLASH" stop "$img" 2>&1); then
		t_fail "$kv: stop removes the dead server's device" "$out"; return
	fi
	ublk_wait_gone "$dev"
	if ! dev=$(ublk_serve "$img" --dev-id "$n"); then
		t_fail "$kv: serve again after kill -9" "$dev"; return
	fi
	after=$(zones_now)
	if [ "$after" = "$before" ] && [ -n "$after" ]; then
		t_ok "$kv: kill -9: all $(wc -l <<<"$after") write pointers and conditions back"
	else
		t_fail "$kv: kill -9: write pointers and conditions back" \
			"$(diff <(echo "$before") <(echo "$after") | head -n 20)"
	fi
	if out=$(mount -t f2fs "$loopdev" "$mnt" 2>&1); then
		sum=$(cd "$mnt" && sha256sum big small* | sha256sum)
		umount "$mnt"
		t_eq "$kv: kill -9: f2fs files intact" "$sum" "$fs_sum"
		t_check "$kv: kill -9: fsck.f2fs" fsck.f2fs "$loopdev"
	else
		t_fail "$kv: kill -9: mount f2fs" "$out"
	fi
}

# f2fs: its metadata on a regular device (a loop device), its main area on the zoned one
if ! command -v mkfs.f2fs >/dev/null; then
	t_skip "$kv: f2fs on the zoned device" "no mkfs.f2fs in the guest"
elif ! modprobe f2fs 2>/dev/null && ! grep -qw f2fs /proc/filesystems; then
	t_skip "$kv: f2fs on the zoned device" "no f2fs in this kernel"
else
	modprobe crc32_generic 2>/dev/null    # 6.12's f2fs asks the crypto API for crc32
	modprobe crc32-pclmul 2>/dev/null
	t_check "$kv: blkzone reset (all zones) before f2fs" blkzone reset "$dev"
	truncate -s 64M "$dir/f2fs-meta.img"   # its main area goes on into the zones
	# f2fs wants one sector size over its devices: the zoned one's 4096
	loopdev=$(losetup -f --show -b 4096 "$dir/f2fs-meta.img")
	t_cleanup "losetup -d $loopdev; rm -f $dir/f2fs-meta.img"
	fs_case "f2fs zoned (metadata on $loopdev)" f2fs "$loopdev" fsck.f2fs \
		mkfs.f2fs -f -m -c "$dev" "$loopdev"
	kill9_case
fi

if out=$("$UBLK_FLASH" stop "$img" 2>&1); then t_ok "$kv: stop"; else t_fail "$kv: stop" "$out"; fi
ublk_wait_gone "$dev"
t_check "$kv: ublk-flash fsck of the zoned image" "$UBLK_FLASH" fsck "$img"
out=$("$UBLK_FLASH" info "$img" 2>&1)
if grep -q "^written: *[1-9]" <<<"$out"; then
	t_ok "$kv: info after the stop: $(grep '^zones:' <<<"$out")"
else
	t_fail "$kv: info shows zones written" "$out"
fi
t_done
