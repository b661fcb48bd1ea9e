#!/usr/bin/env bash
# vm-kernels: 7.3 6.12 6.1
# vm-timeout: 900
# Guest test: an image with protection information (`create --integrity t10dif`: the T10-DIF
# CRC16 guard of every 512-byte sector in its page's OOB) served over ublk's INTEGRITY mode
# (Linux 7.0+, with USER_COPY).  On a kernel without it (6.1) serve refuses with its reason
# (exit 3) and nothing is left.  Where it has it: /sys/block/ublkbN/integrity says
# T10-DIF-TYPE1-CRC, 8 bytes per 512, the kernel generates and verifies; ext4 is made,
# written, checked (e2fsck) on it with no change; then one byte of one sector is damaged on
# the medium (the image file, the server stopped): the kernel reports a guard tag error for
# exactly that sector, a read of it fails with EILSEQ, and the other 7 sectors of its flash
# page read their data (without PI the engine fails the whole page with EIO).  Then the CPU
# cost: fio 4K random writes and reads on the same geometry with and without PI, the guest's
# busy CPU time per I/O from /proc/stat (docs/ublk.md "Protection information").
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
dir=${OCTANT_VM_SCRATCH:-/tmp}
img=$dir/ublk-pi.img
kv=$(uname -r)
if ! out=$("$UBLK_FLASH" create "$img" --size 64M --align odd --integrity t10dif \
	--force 2>&1); then
	t_fail "create --integrity t10dif" "$out"; t_done
fi
t_cleanup "rm -f $img"
t_eq "$kv: info shows the profile" \
	"$("$UBLK_FLASH" info "$img" | sed -n 's/^integrity *\([a-z0-9]*\).*/\1/p')" t10dif

maj=${kv%%.*}
if [ "$maj" -lt 7 ]; then
	# no UBLK_F_INTEGRITY before 7.0: refused with the reason, exit 3, nothing left
	out=$("$UBLK_FLASH" serve "$img" --frontend ublk 2>&1); rc=$?
	t_eq "$kv: serve of an image with PI exits 3" "$rc" 3
	if grep -q "has no integrity ublk (UBLK_F_INTEGRITY with USER_COPY: Linux 7.0+)" \
		<<<"$out"; then
		t_ok "$kv: the reason is said: $(head -n 1 <<<"$out")"
	else
		t_fail "$kv: the reason is said" "$out"
	fi
	t_eq "$kv: no ublk device left" "$(ls /dev/ublkb* 2>/dev/null | wc -l)" 0
	t_check "$kv: the image is untouched (fsck clean)" "$UBLK_FLASH" fsck "$img"
	t_done
fi

if ! dev=$(ublk_serve "$img"); then
	t_fail "$kv: serve an image with PI over ublk" "$dev"; t_done
fi
t_cleanup "$UBLK_FLASH stop --force $img"
t_ok "$kv: served on $dev"
name=${dev#/dev/}
t_eq "$kv: integrity/format" "$(sysq "$dev" integrity/format)" T10-DIF-TYPE1-CRC
t_eq "$kv: integrity/protection_interval_bytes" \
	"$(sysq "$dev" integrity/protection_interval_bytes)" 512
t_eq "$kv: integrity/device_is_integrity_capable" \
	"$(sysq "$dev" integrity/device_is_integrity_capable)" 1
t_eq "$kv: integrity/read_verify" "$(sysq "$dev" integrity/read_verify)" 1
t_eq "$kv: integrity/write_generate" "$(sysq "$dev" integrity/write_generate)" 1
t_eq "$kv: logical_block_size" "$(sysq "$dev" logical_block_size)" 512
lst=$("$UBLK_FLASH" list -o +PI 2>&1)
if grep -q "t10dif" <<<"$lst"; then t_ok "$kv: list shows the profile"
else t_fail "$kv: list shows the profile" "$lst"; fi
st=$("$UBLK_FLASH" stats "$img" 2>&1)
if grep -q "^integrity *t10dif" <<<"$st"; then t_ok "$kv: stats shows the profile"
else t_fail "$kv: stats shows the profile" "$st"; fi

# a filesystem on top: no change, every block checked end to end
mnt=/tmp/pi-mnt
mkdir -p $mnt
t_check "$kv: mkfs.ext4" mkfs.ext4 -q -F -E nodiscard "$dev"
if mount "$dev" $mnt; then
	t_cleanup "umount $mnt"
	dd if=/dev/urandom of=$mnt/big bs=1M count=12 status=none
	for i in $(seq 1 30); do head -c $((i * 1531)) /dev/urandom >$mnt/small$i; done
	sum=$(cat $mnt/big $mnt/small* | md5sum)
	umount $mnt && mount "$dev" $mnt
	t_eq "$kv: ext4 files read back after a remount" "$(cat $mnt/big $mnt/small* | md5sum)" "$sum"
	umount $mnt
else
	t_fail "$kv: mount ext4"
fi
t_check "$kv: e2fsck -fn clean" e2fsck -fn "$dev"

# one damaged sector: a 4 KiB flash page of 8 marked sectors (odd mode: the page boundary is
# one sector before a 4K-aligned LBA), one byte of one of them flipped on the medium
page0=$(( (60 << 20) / 512 + 7 ))      # LBA 7 mod 8: medium bytes at a page start
victim=$((page0 + 5))
: >/tmp/pi-page
for s in 0 1 2 3 4 5 6 7; do
	for _ in $(seq 1 16); do printf 'OCTANT-PI-S%05d-%014d/' $s $((page0 + s)); done >>/tmp/pi-page
done
t_eq "$kv: the marked page is 4096 bytes" "$(stat -c %s /tmp/pi-page)" 4096
t_check "$kv: write the marked page" dd if=/tmp/pi-page of="$dev" bs=4096 \
	seek=$((page0 * 512)) oflag=direct,seek_bytes conv=fsync status=none
t_check "$kv: ... and read it back" cmp /tmp/pi-page <(dd if="$dev" bs=512 skip=$page0 \
	count=8 iflag=direct status=none)
"$UBLK_FLASH" stop "$img" >/dev/null 2>&1 || t_fail "$kv: stop to damage the medium"
off=$("$BUILD/tests/vm/find-bytes" "$img" "OCTANT-PI-S00005-$(printf %014d $victim)/")
if [ -z "$off" ]; then t_fail "$kv: the victim sector found in the image"; t_done; fi
printf 'X' | dd of="$img" bs=1 seek=$((off + 100)) conv=notrunc status=none
t_ok "$kv: one byte of sector $victim damaged at image byte $((off + 100))"
if ! dev=$(ublk_serve "$img"); then
	t_fail "$kv: served again" "$dev"; t_done
fi
name=${dev#/dev/}
dmesg -C
out=$(dd if="$dev" of=/dev/null bs=512 skip=$victim count=1 iflag=direct status=none 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -qi "invalid or incomplete multibyte" <<<"$out"; then
	t_ok "$kv: the damaged sector's read fails with EILSEQ (BLK_STS_PROTECTION): $out"
else
	t_fail "$kv: the damaged sector's read fails with EILSEQ" "rc $rc: $out"
fi
errs=$(dmesg | grep "$name: guard tag error at sector")
t_eq "$kv: the kernel reports exactly that sector" \
	"$(sed -n 's/.*guard tag error at sector \([0-9]*\) .*/\1/p' <<<"$errs" | sort -u)" \
	"$victim"
[ -n "$errs" ] && t_ok "$kv: dmesg: $(head -n 1 <<<"$errs" | sed 's/^\[[^]]*\] //')"
good=0
for s in 0 1 2 3 4 6 7; do
	if cmp -s <(dd if="$dev" bs=512 skip=$((page0 + s)) count=1 iflag=direct status=none) \
		<(dd if=/tmp/pi-page bs=512 skip=$s count=1 status=none); then
		good=$((good + 1))
	fi
done
t_eq "$kv: the page's 7 other sectors read their data" "$good" 7
if dd if="$dev" of=/dev/null bs=4096 skip=$((page0 * 512)) count=1 iflag=direct,skip_bytes \
	status=none 2>/dev/null; then
	t_fail "$kv: a read of the whole page fails"
else
	t_ok "$kv: a read of the whole page fails"
fi
# told not to verify, the kernel sends no PI buffer: the engine's EIO then, never bad data
echo 0 >"/sys/block/$name/integrity/read_verify"
out=$(dd if="$dev" of=/dev/null bs=512 skip=$victim count=1 iflag=direct status=none 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -qi "input/output error" <<<"$out"; then
	t_ok "$kv: read_verify 0: the damaged sector is EIO, not bad data"
else
	t_fail "$kv: read_verify 0: the damaged sector is EIO" "rc $rc: $out"
fi
echo 1 >"/sys/block/$name/integrity/read_verify"
"$UBLK_FLASH" stop "$img" >/dev/null 2>&1
rm -f /tmp/pi-page

# the CPU cost: the same geometry with and without PI, fio 4K random I/O, QD32
if ! command -v fio >/dev/null || ! command -v jq >/dev/null; then
	t_skip "$kv: CPU cost" "no fio or jq in the guest"; t_done
fi
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK 2>/dev/null) || hz=100
for mode in none t10dif; do
	bimg=$dir/ublk-pi-$mode.img
	"$UBLK_FLASH" create "$bimg" --size 256M --align 1m --oob-size 128 \
		--integrity $mode --force >/dev/null 2>&1 || { t_fail "$kv: create $mode"; continue; }
	t_cleanup "rm -f $bimg"
done
# $1 rounds (default 1), the modes alternating (TCG is noisy: several for figures, e.g.
# tests/vm/vm-run.sh --kernel 7.3 --scratch 8G tests/vm/guest/ublk-integrity.sh 3)
for round in $(seq 1 "${1:-1}"); do
	for mode in none t10dif; do
		bimg=$dir/ublk-pi-$mode.img
		bdev=$(ublk_serve "$bimg") || { t_fail "$kv: serve $mode" "$bdev"; continue; }
		for rw in randwrite randread; do
			b0=$(busy)
			js=$(fio --name=pi --filename="$bdev" --ioengine=io_uring --direct=1 \
				--iodepth=32 --rw=$rw --bs=4k --size=128M --time_based --runtime=5 \
				--output-format=json 2>/dev/null)
			b1=$(busy)
			ios=$(jq '.jobs[0].read.total_ios + .jobs[0].write.total_ios' <<<"$js")
			iops=$(jq '.jobs[0].read.iops + .jobs[0].write.iops | floor' <<<"$js")
			us=$(awk -v b=$((b1 - b0)) -v hz="$hz" -v n="${ios:-0}" \
				'BEGIN { if (n > 0) printf "%.0f", b * 1e6 / hz / n; else print "?" }')
			d="$kv: cpu cost (round $round): integrity $mode $rw 4K QD32"
			if [ "${iops:-0}" -gt 0 ]; then
				t_ok "$d: $iops IOPS, $us us busy CPU per I/O"
			else
				t_fail "$d: fio ran" "$js"
			fi
		done
		"$UBLK_FLASH" stop "$bimg" >/dev/null 2>&1
	done
done
t_done
