#!/usr/bin/env bash
# Guest test: a set of engines (`create --parts`, docs/engine.md "A partitioned engine") served
# over ublk with two queues.  A 2-part odd set with 64 KiB stripes: the device has the set's
# size and the engine's topology; fio --verify=crc32c with 512 B..128 KiB writes (most of them
# cross a stripe, so two parts) from two jobs; discard and write-zeroes across stripes read back
# zeroes; ext4 mkfs / e2fsck clean; a clean stop, `fsck` of every part clean, and a second
# serve reads back what the first wrote.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver

img=/tmp/ublk-set.img
if ! out=$(ublk_mkimg "$img" 128M odd --parts 2 --stripe 64K 2>&1); then
	t_fail "create --parts 2 --stripe 64K" "$out"; t_done
fi
t_cleanup "rm -f $img"
if ! dev=$(ublk_serve "$img" --queues 2 --depth 32); then
	t_fail "serve a 2-part set --frontend ublk --queues 2" "$dev"; t_done
fi
t_cleanup "$UBLK_FLASH stop --force $img"
if [[ $dev =~ ^/dev/ublkb[0-9]+$ ]] && [ -b "$dev" ]; then
	t_ok "serve a 2-part set prints a live $dev"
else
	t_fail "serve a 2-part set prints a live /dev/ublkbN" "got '$dev'"; t_done
fi
t_eq "size in sectors" "$(blockdev --getsz "$dev")" $((128 * 2048))
t_eq "physical_block_size" "$(sysq "$dev" physical_block_size)" 4096
t_eq "minimum_io_size" "$(sysq "$dev" minimum_io_size)" 4096

if out=$(fio --name=mixed --filename="$dev" --ioengine=io_uring --direct=1 --rw=randwrite \
	--bsrange=512-128k --size=32M --numjobs=2 --offset_increment=48M --verify=crc32c \
	--do_verify=1 --verify_fatal=1 --iodepth=16 2>&1); then
	t_ok "fio randwrite 512..128k --verify=crc32c, 2 jobs, across stripes"
else
	t_fail "fio randwrite 512..128k --verify=crc32c, 2 jobs" "$(tail -n 15 <<<"$out")"
fi

# discard and write zeroes from inside one stripe to inside another: zeroes, and the bytes
# around them kept
dd if=/dev/urandom of=/tmp/ublk-set.pat bs=64k count=8 status=none
dd if=/tmp/ublk-set.pat of="$dev" bs=64k seek=1600 oflag=direct status=none
blkdiscard -o $((1600 * 65536 + 4096)) -l 131072 "$dev" 2>/dev/null
blkdiscard -z -o $((1600 * 65536 + 200704)) -l 98304 "$dev" 2>/dev/null
head -c 524288 /tmp/ublk-set.pat >/tmp/ublk-set.want
dd if=/dev/zero of=/tmp/ublk-set.want bs=4096 seek=1 count=32 conv=notrunc status=none
dd if=/dev/zero of=/tmp/ublk-set.want bs=4096 seek=49 count=24 conv=notrunc status=none
if cmp -s <(dd if="$dev" bs=64k skip=1600 count=8 iflag=direct status=none) /tmp/ublk-set.want; then
	t_ok "DISCARD and WRITE_ZEROES across stripes read back zeroes, the rest kept"
else
	t_fail "DISCARD and WRITE_ZEROES across stripes read back zeroes, the rest kept"
fi

mnt=$(mktemp -d)
t_cleanup "umount $mnt 2>/dev/null; rmdir $mnt"
if out=$(mkfs.ext4 -q -F "$dev" 2>&1) && out=$(mount "$dev" "$mnt" 2>&1); then
	dd if=/dev/urandom of="$mnt/big" bs=64k count=64 status=none
	sum1=$(sha256sum <"$mnt/big")
	umount "$mnt"
	t_check "ext4 on the set: e2fsck clean" e2fsck -fn "$dev"
else
	t_fail "ext4 on the set: mkfs and mount" "$out"
fi
head -c 8388608 "$dev" | sha256sum >/tmp/ublk-set.sum

n=${dev#/dev/ublkb}
if out=$($UBLK_FLASH stop "$img" 2>&1); then t_ok "stop"; else t_fail "stop" "$out"; fi
ublk_wait_gone "$dev"
[ ! -e "/sys/block/ublkb$n" ] && t_ok "clean stop removes $dev" || t_fail "clean stop removes $dev"
t_check "fsck of the set (every part) clean" "$UBLK_FLASH" fsck "$img"
out=$($UBLK_FLASH info "$img" 2>&1)
if [ "$(sed -n 's/^parts  *\([0-9]*\) .*/\1/p; s/^\(part [0-9]\):.*/\1/p' <<<"$out" |
	tr '\n' ' ')" = "2 part 0 part 1 " ]; then
	t_ok "info: a set of 2 parts, each shown"
else
	t_fail "info: a set of 2 parts, each shown" "$(head -n 12 <<<"$out")"
fi

if ! dev=$(ublk_serve "$img"); then
	t_fail "serve the set again" "$dev"; t_done
fi
t_eq "the first 8 MiB read back after a second serve" "$(head -c 8388608 "$dev" | sha256sum)" \
	"$(cat /tmp/ublk-set.sum)"
if mount "$dev" "$mnt" 2>/dev/null; then
	t_eq "ext4 file intact after a second serve" "$(sha256sum <"$mnt/big")" "$sum1"
	umount "$mnt"
else
	t_fail "mount ext4 after a second serve"
fi
if out=$($UBLK_FLASH stop "$img" 2>&1); then t_ok "stop again"; else t_fail "stop again" "$out"; fi
ublk_wait_gone "$dev"
rm -f /tmp/ublk-set.pat /tmp/ublk-set.want /tmp/ublk-set.sum
t_done
