#!/usr/bin/env bats
# Sets of engines on the CLI (create --parts N --stripe SIZE): images of
# 2 and 3 parts in both align modes, info shows the header and each part,
# fsck checks each part; bad --parts / --stripe values and the options a
# set cannot take give one line and exit 2; resize refuses a set (exit 6).
# No root: nothing is served here (tests/integration/fuse-set.bats does).
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	cd "$SCRATCH"
}

teardown() {
	teardown_scratch
}

# info_field IMG KEY: one number or string from `info --json` (top level).
info_field() {
	"$UBLK_FLASH" info "$1" --json | python3 -c \
		"import json,sys; print(json.load(sys.stdin).get('$2', ''))"
}

@test "create --parts 2 (odd) and --parts 3 --stripe 64K (1m): info shows the set, then each part" {
	"$UBLK_FLASH" create s2.img --size 64M --align odd --parts 2
	"$UBLK_FLASH" create s3.img --size 96M --align 1m --parts 3 --stripe 64K
	run "$UBLK_FLASH" info s2.img
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"parts                2"* ]]
	[[ "$output" == *"stripe               1 MiB (1048576 bytes)"* ]]
	[[ "$output" == *"align                odd"* ]]
	[[ "$output" == *"67108864 bytes"* ]]
	[[ "$output" == *"part 0: bytes 1048576.."* ]]
	[[ "$output" == *"part 1: bytes "* ]]
	[[ "$output" != *"part 2:"* ]]
	[ "$(info_field s3.img parts)" = 3 ]
	[ "$(info_field s3.img stripe)" = 65536 ]
	[ "$(info_field s3.img align)" = 1m ]
	[ "$(info_field s3.img logical_size)" = 100663296 ]
	# each part an align-1m engine holding its third of the stripes
	n=$("$UBLK_FLASH" info s3.img --json | python3 -c \
		"import json,sys; p=json.load(sys.stdin)['part']; \
		 print(len(p), sum(x['logical_size'] for x in p), \
		       set(x['align'] for x in p))")
	[ "$n" = "3 100663296 {'1m'}" ]
	# the file is exactly the header area and the parts
	[ "$(stat -c %s s3.img)" = "$(info_field s3.img image_size)" ]
}

@test "create --parts 1: today's plain image; info and fsck as before" {
	"$UBLK_FLASH" create p.img --size 64M --align odd --parts 1
	"$UBLK_FLASH" create q.img --size 64M --align odd
	run "$UBLK_FLASH" info p.img
	[ "$status" -eq 0 ]
	[[ "$output" != *"parts"* ]]
	[ "$(stat -c %s p.img)" = "$(stat -c %s q.img)" ]
	[ "$(info_field p.img logical_size)" = 67108864 ]
	[ -z "$(info_field p.img parts)" ]
}

@test "fsck of a set: a damaged header copy is a problem (exit 4) that a plain fsck leaves alone and --repair rewrites (exit 1, then clean)" {
	"$UBLK_FLASH" create s.img --size 64M --align 1m --parts 2
	# one bit of header copy 1 (bytes 4096..4607)
	printf '\x5a' | dd of=s.img bs=1 seek=4396 conv=notrunc status=none
	sum=$(head -c 8192 s.img | sha256sum)
	run "$UBLK_FLASH" fsck s.img
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"set header: PROBLEM: copy 1 is damaged (copy 0 is used; --repair or the next serve rewrites it)"* ]]
	[[ "$output" == *"part 0:"*"clean"*"part 1:"*"clean"* ]]
	[ "$(head -c 8192 s.img | sha256sum)" = "$sum" ]
	run "$UBLK_FLASH" fsck s.img --json
	[ "$status" -eq 4 ]
	echo "$output" | python3 -c "import json,sys; d=json.load(sys.stdin); \
		h=d['header']; assert not h['clean'] and h['damaged_copies'] == [1] \
		and not h['repaired'] and len(d['parts']) == 2, d"
	run "$UBLK_FLASH" fsck s.img --repair
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"copy 1 is damaged (copy 0 is used): rewritten"* ]]
	run "$UBLK_FLASH" fsck s.img
	[ "$status" -eq 0 ]
	cmp <(head -c 512 s.img) <(tail -c +4097 s.img | head -c 512)
	run "$UBLK_FLASH" fsck s.img --json
	echo "$output" | python3 -c "import json,sys; d=json.load(sys.stdin); \
		assert d['header'] == {'clean': True, 'damaged_copies': [], 'repaired': False}, d"
}

@test "fsck of a set: each part labelled and clean, exit 0; a damaged part: exit 4" {
	"$UBLK_FLASH" create s.img --size 64M --align 1m --parts 2
	run "$UBLK_FLASH" fsck s.img
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"part 0:"*"clean"*"part 1:"*"clean"* ]]
	run "$UBLK_FLASH" fsck s.img --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c "import json,sys; d=json.load(sys.stdin); \
		assert len(d['parts']) == 2 and all(p['clean'] for p in d['parts'])"
	# both superblock copies of part 1 gone: that part has no superblock
	off1=$("$UBLK_FLASH" info s.img | sed -n 's/^part 1: bytes \([0-9]*\)\.\..*/\1/p')
	dd if=/dev/zero of=s.img bs=4096 seek=$((off1 / 4096)) count=2 conv=notrunc status=none
	run "$UBLK_FLASH" fsck s.img
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"part 0:"*"clean"*"part 1:"*"no valid superblock"* ]]
}

@test "create --parts with a bad value: 0, 17, abc: one line, exit 2, nothing made" {
	for v in 0 17 abc -1; do
		bad 2 "--parts" "$UBLK_FLASH" create x.img --size 64M --align 1m --parts "$v"
		[ ! -e x.img ]
	done
}

@test "create --stripe: not a power of 2, below the page, above 1G, without --parts: one line, exit 2" {
	for v in 3M 1536K 2K 2G; do
		bad 2 "--stripe: $v is not a power of 2" \
			"$UBLK_FLASH" create x.img --size 64M --align 1m --parts 2 --stripe "$v"
		[ ! -e x.img ]
	done
	bad 2 "--stripe: 8K is not a power of 2, a multiple of the 16384-byte page" \
		"$UBLK_FLASH" create x.img --size 64M --align 1m --parts 2 --stripe 8K --page-size 16384
	bad 2 "--stripe needs --parts 2 or more" \
		"$UBLK_FLASH" create x.img --size 64M --align 1m --stripe 64K
	[ ! -e x.img ]
}

@test "create --parts 2 with --zoned, --integrity t10dif or --max-size: one line, exit 2" {
	bad 2 "a zoned image cannot be a set" \
		"$UBLK_FLASH" create x.img --size 64M --zoned --parts 2
	bad 2 "a set cannot carry --integrity" \
		"$UBLK_FLASH" create x.img --size 64M --align 1m --integrity t10dif --parts 2
	bad 2 "a set cannot grow yet" \
		"$UBLK_FLASH" create x.img --size 64M --align 1m --max-size 128M --parts 2
	[ ! -e x.img ]
}

@test "create over a set: refused without --force (exit 5), made with it" {
	"$UBLK_FLASH" create s.img --size 64M --align 1m --parts 2
	bad 5 "s.img is not empty (it holds an octant image)" \
		"$UBLK_FLASH" create s.img --size 64M --align 1m
	"$UBLK_FLASH" create s.img --size 64M --align 1m --force
	[ -z "$(info_field s.img parts)" ]
}

@test "resize of a set: refused, one line, exit 6, the image unchanged" {
	"$UBLK_FLASH" create s.img --size 64M --align 1m --parts 2
	s=$(sha256sum < s.img)
	bad 6 "s.img is a set of 2 parts: it cannot grow" \
		"$UBLK_FLASH" resize s.img --size 128M
	[ "$(sha256sum < s.img)" = "$s" ]
}

@test "fsck --repair of a set: a part's damaged superblock copy repaired (exit 1), then clean (exit 0)" {
	"$UBLK_FLASH" create s.img --size 64M --align 1m --parts 2
	off1=$("$UBLK_FLASH" info s.img | sed -n 's/^part 1: bytes \([0-9]*\)\.\..*/\1/p')
	dd if=/dev/zero of=s.img bs=4096 seek=$((off1 / 4096)) count=1 conv=notrunc status=none
	run "$UBLK_FLASH" fsck s.img
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"part 1:"*"superblock copy 0 is damaged"* ]]
	run "$UBLK_FLASH" fsck --repair s.img
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"part 1:"*"after repair:"*"clean"* ]]
	run "$UBLK_FLASH" fsck s.img
	[ "$status" -eq 0 ]
}
