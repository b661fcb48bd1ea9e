#!/usr/bin/env bash
# vm-kernels: 6.1
# Issue 7 (c): `alignpart map TARGET` makes kpartx-style dm-linear mappings TARGET-partN
# (through libdevmapper) whose sysfs alignment_offset equals the prediction
# (queue_limit_alignment_offset: (4096 + A - start*512 mod 4096) mod 4096, and alignpart
# check's kernel_offset from libalign); `alignpart unmap` removes them; image files work
# through an auto-clearing loop device; busy and duplicate cases give clear errors.
. /octant/tests/vm/guest-lib.sh
DMT=$BUILD/dmstack-tool
AP=${ALIGNPART:-$BUILD/alignpart}
[ -x "$DMT" ] || { echo "SKIP: $DMT not built"; exit 77; }
"$AP" map --help >/dev/null 2>&1 || { echo "SKIP: alignpart has no map command yet"; exit 77; }

odd_dm_on_scsi_debug dmo
t_eq "the target reports alignment_offset 3584" "$(sysq "$odd" alignment_offset)" 3584
sfd() { sfdisk -q --no-reread --no-tell-kernel "$@"; }
# kernel formula with A=3584, granularity 4096
pred() { echo $(( (4096 + 3584 - ($1 * 512) % 4096) % 4096 )); }

# starts: 63 (odd legacy), 2047 (odd 1 MiB), 4100 (misaligned, 1536), 8192 (1 MiB world, 3584)
starts=(63 2047 4100 8192)
printf 'label: dos\nstart=63,size=1984\nstart=2047,size=2048\nstart=4100,size=2048\nstart=8192,size=40960\n' |
	sfd "$odd"
t_cleanup "$AP unmap $odd"
out=$("$AP" map "$odd" 2>&1); rc=$?
t_eq "alignpart map: exit 0, one path per partition" "$rc $(tr '\n' ' ' <<<"$out")" \
	"0 /dev/mapper/dmo-part1 /dev/mapper/dmo-part2 /dev/mapper/dmo-part3 /dev/mapper/dmo-part4 "
for i in 0 1 2 3; do
	n=$((i + 1)) s=${starts[$i]} p=/dev/mapper/dmo-part$((i + 1))
	t_eq "part$n (start $s): sysfs alignment_offset = kernel formula" \
		"$(sysq "$p" alignment_offset 2>&1)" "$(pred "$s")"
	t_eq "part$n: the mapping covers the partition (sectors)" "$(blockdev --getsz "$p" 2>&1)" \
		"$(sfdisk -d "$odd" | sed -n "s|.*start= *$s, *size= *\([0-9]*\).*|\1|p")"
done
# libalign's prediction, through alignpart check's kernel_offset and alignpart map --verify
cj=$("$AP" check "$odd" --json 2>/dev/null |
     jq -r '.. | objects | select(has("nr") and has("kernel_offset")) | "\(.nr) \(.kernel_offset)"' 2>/dev/null)
if [ -n "$cj" ]; then
	while read -r n off; do
		t_eq "part$n: sysfs alignment_offset = alignpart check's prediction" \
			"$(sysq "/dev/mapper/dmo-part$n" alignment_offset)" "$off"
	done <<<"$cj"
else
	t_fail "sysfs alignment_offset = alignpart check's prediction" "no kernel_offset in check --json"
fi
t_eq "alignpart check --json: 4 mapped partitions, the kernel agrees on all" \
	"$("$AP" check "$odd" --json 2>/dev/null | jq -r '.. | objects | select(has("mapped_partitions")) | "\(.mapped_partitions) \(.kernel_disagrees)"' 2>/dev/null)" "4 0"
t_eq "alignpart check (text): a predicted-vs-kernel line per mapped partition" \
	"$("$AP" check "$odd" 2>/dev/null | grep -c ': predicted [0-9-]*, kernel [0-9-]* (same)$')" "4"
out=$("$AP" map --verify "$odd" 2>&1); rc=$?
t_eq "alignpart map --verify: libalign and the kernel agree on all 4 (exit 0)" \
	"$rc $(grep -c '(same)$' <<<"$out")" "0 4"
out=$("$AP" map "$odd" 2>&1); rc=$?
t_eq "map again: exit 5, one line naming the existing mapping" \
	"$rc $(wc -l <<<"$out") $(grep -c "dm device 'dmo-part1' already exists" <<<"$out")" "5 1 1"

# ext4 on a mapped partition; unmap refuses while it is mounted
mkdir -p /tmp/dmm
if mkfs.ext4 -q -F /dev/mapper/dmo-part4 && mount /dev/mapper/dmo-part4 /tmp/dmm; then
	t_cleanup "umount /tmp/dmm"
	dd if=/dev/urandom of=/tmp/dmm/f bs=64k count=16 status=none && sum=$(sha256sum </tmp/dmm/f)
	out=$("$AP" unmap "$odd" 2>&1); rc=$?
	t_eq "unmap while part4 is mounted: exit 5, part4 stays" \
		"$rc $(grep -c "in use" <<<"$out") $([ -b /dev/mapper/dmo-part4 ] && echo kept)" "5 1 kept"
	umount /tmp/dmm
	out=$("$AP" unmap "$odd" 2>&1); rc=$?
	t_eq "unmap once unmounted: exit 0, no dmo-part* left" "$rc $(ls /dev/mapper | grep -c dmo-part)" "0 0"
	"$AP" map "$odd" >/dev/null 2>&1 && mount /dev/mapper/dmo-part4 /tmp/dmm &&
		t_eq "ext4 on part4 reads back after unmap/map" "$(sha256sum </tmp/dmm/f)" "$sum"
	umount /tmp/dmm 2>/dev/null
else
	t_fail "mkfs.ext4 + mount on dmo-part4"
fi
t_check "unmap" "$AP" unmap "$odd"
out=$("$AP" unmap "$odd" 2>&1); rc=$?
t_eq "unmap with nothing mapped: exit 0" $rc 0

# a partitioned image file: attached to an auto-clearing loop device
img=/tmp/dmi.img
truncate -s 64M $img
printf 'label: gpt\nstart=2048,size=8192\nstart=10240,size=40960\n' | sfdisk -q $img
t_cleanup "$AP unmap $img; rm -f $img"
out=$("$AP" map -v $img 2>&1); rc=$?
t_eq "map an image file: exit 0, two mappings" "$rc $(grep -c '^/dev/mapper/dmi.img-part' <<<"$out")" "0 2"
lo=$(losetup -a | grep -c "$img")
t_eq "the image sits on one loop device" "$lo" 1
if mkfs.ext4 -q -F /dev/mapper/dmi.img-part2 && mount /dev/mapper/dmi.img-part2 /tmp/dmm; then
	echo data >/tmp/dmm/x && umount /tmp/dmm && t_check "fsck clean" e2fsck -fn /dev/mapper/dmi.img-part2
else
	t_fail "ext4 on the image's part2"
fi
t_check "unmap the image" "$AP" unmap $img
for i in $(seq 20); do losetup -a | grep -q "$img" || break; sleep 0.1; done
t_eq "its loop device is cleared once unmapped" "$(losetup -a | grep -c "$img")" 0

# an image named with a newline: its mappings' names would hold it, and dm names are kept to
# A-Z a-z 0-9 #+-.:=@_; map refuses with one line (the name as \xHH), makes nothing, and
# map --verify finds nothing mapped (its partN lines go through the same escaping printer)
nl=/tmp/dm$'\n'nl.img
truncate -s 64M "$nl"
printf 'label: gpt\nstart=2048,size=8192\nstart=10240,size=40960\n' | sfdisk -q "$nl"
t_cleanup "rm -f '$nl'"
out=$("$AP" map "$nl" 2>&1); rc=$?
t_eq "map an image named with a newline: exit 3, one line, the name as \\x0a" "$rc $(wc -l <<<"$out")
$out" "3 1
alignpart map: invalid dm device name 'dm\\x0anl.img-part1' (1-127 of A-Z a-z 0-9 #+-.:=@_)"
t_eq "nothing of it is left behind: no mapping, no loop device" \
	"$(ls /dev/mapper | grep -c 'nl.img') $(losetup -a | grep -c 'nl.img')" "0 0"
out=$("$AP" map --verify "$nl" 2>&1); rc=$?
t_eq "map --verify of it: exit 3, one line: nothing mapped" "$rc $(wc -l <<<"$out") $(grep -c 'is mapped' <<<"$out")" "3 1 1"

# no table
wipefs -aq "$odd" >/dev/null 2>&1
out=$("$AP" map "$odd" 2>&1); rc=$?
t_eq "map a disk without a table: exit 3, one line" "$rc $(wc -l <<<"$out") $(grep -c 'no partition table' <<<"$out")" "3 1 1"
out=$("$AP" map 2>&1); rc=$?
t_eq "map without TARGET: exit 2" $rc 2
t_done
