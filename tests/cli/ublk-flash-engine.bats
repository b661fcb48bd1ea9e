#!/usr/bin/env bats
# ublk-flash create / info / fsck on image files (no root needed).
load ../helpers

setup() {
	setup_scratch
	IMG=$SCRATCH/disk.img
}

teardown() {
	teardown_scratch
}

sum() { md5sum "$1" | cut -d' ' -f1; }

@test "create + info: odd mode reports alignment_offset 3584" {
	run "$UBLK_FLASH" create "$IMG" --size 64M --align odd
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" info "$IMG"
	[ "$status" -eq 0 ]
	[[ "$output" == *"alignment offset     3584 bytes"* ]]
	[[ "$output" == *"logical size         64 MiB (67108864 bytes, 131072 sectors of 512)"* ]]
	[[ "$output" == *"io_min               4 KiB"* ]]
	[[ "$output" == *"medium layout        1.2 (OOB beside its page, erase stamps, delta checkpoints, flush summaries)"* ]]
	run "$UBLK_FLASH" info "$IMG" --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"align":"odd"'* ]]
	[[ "$output" == *'"alignment_offset":3584'* ]]
	[[ "$output" == *'"io_min":4096'* ]]
}

@test "create + info: 1m mode, 16K pages, 12.5 % OP" {
	run "$UBLK_FLASH" create "$IMG" --size 1G --align 1m --page-size 16K \
		--pages-per-block 128 --over-provision 12.5
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" info "$IMG" --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"align":"1m"'* ]]
	[[ "$output" == *'"alignment_offset":0'* ]]
	[[ "$output" == *'"page_size":16384'* ]]
	[[ "$output" == *'"op_permille":125'* ]]
	[[ "$output" == *'"layout":"1.2","erase_stamps":true'* ]]
	# sparse: a fresh 1 GiB image takes almost no space
	[ "$(du -k "$IMG" | cut -f1)" -lt 4096 ]
}

@test "create refuses an existing image or another signature without --force" {
	"$UBLK_FLASH" create "$IMG" --size 8M --align odd
	before=$(sum "$IMG")
	run "$UBLK_FLASH" create "$IMG" --size 8M --align 1m
	[ "$status" -eq 5 ]
	[[ "$output" == *"--force"* ]]
	[ "$(sum "$IMG")" = "$before" ]
	run "$UBLK_FLASH" create "$IMG" --size 8M --align 1m --force
	[ "$status" -eq 0 ]
	requires mkfs.ext4
	other=$SCRATCH/ext4.img
	truncate -s 16M "$other"
	mkfs.ext4 -q -F "$other"
	before=$(sum "$other")
	run "$UBLK_FLASH" create "$other" --size 8M --align odd
	[ "$status" -eq 5 ]
	[ "$(sum "$other")" = "$before" ]
}

@test "create: bad arguments are usage errors (exit 2)" {
	run "$UBLK_FLASH" create "$IMG" --size 1000 --align odd
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" create "$IMG" --size 8M --align sideways
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" create "$IMG" --size 8M --align odd --page-size 3000
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" create "$IMG" --size 8M
	[ "$status" -eq 2 ]
	[ ! -e "$IMG" ] || [ ! -s "$IMG" ]
}

@test "create: of two creates of one new image at once exactly one writes it (exit 0), the other exits 5; the image is whole (20 pairs)" {
	local r a b ra rb
	for r in $(seq 20); do
		rm -f "$IMG"
		"$UBLK_FLASH" create "$IMG" --size 64M --align odd 2>"$SCRATCH/a.err" & a=$!
		"$UBLK_FLASH" create "$IMG" --size 64M --align 1m 2>"$SCRATCH/b.err" & b=$!
		ra=0; wait $a || ra=$?
		rb=0; wait $b || rb=$?
		echo "round $r: exit $ra $rb"
		[ $((ra == 0)) -ne $((rb == 0)) ] || { cat "$SCRATCH"/?.err; false; }
		[ $((ra + rb)) -eq 5 ]
		run "$UBLK_FLASH" fsck "$IMG"
		echo "$output"
		[ "$status" -eq 0 ]
	done
}

@test "create: a create whose lock comes after another create wrote the new image leaves that image (exit 5)" {
	# the race the 20 pairs above hit once in ~1400: this create makes the
	# file (O_EXCL), then its flock is held back 400 ms (flock-delay.so)
	# while the second create locks it, writes it and lets go
	[ -f "$BUILD/flock-delay.so" ] || skip "SKIP: $BUILD/flock-delay.so not built"
	rm -f "$IMG"
	LD_PRELOAD=$BUILD/flock-delay.so OCTANT_TEST_FLOCK_DELAY_MS=400 \
		"$UBLK_FLASH" create "$IMG" --size 64M --align odd 2>"$SCRATCH/a.err" & a=$!
	for i in $(seq 100); do [ -e "$IMG" ] && break; sleep 0.01; done
	run "$UBLK_FLASH" create "$IMG" --size 64M --align 1m
	[ "$status" -eq 0 ]
	ra=0; wait $a || ra=$?
	cat "$SCRATCH/a.err"
	[ "$ra" -eq 5 ]
	grep -q 'holds a signature\|is not empty' "$SCRATCH/a.err"
	run "$UBLK_FLASH" fsck "$IMG"
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" info "$IMG"
	echo "$output" | grep -q '^align  *1m '        # the winner's image
}

@test "fsck: clean image exits 0, JSON is one object" {
	"$UBLK_FLASH" create "$IMG" --size 8M --align odd
	run "$UBLK_FLASH" fsck "$IMG"
	[ "$status" -eq 0 ]
	[[ "$output" == clean:* ]]
	run "$UBLK_FLASH" fsck "$IMG" --json
	[ "$status" -eq 0 ]
	[[ "$output" == '{"clean":true'* ]]
}

@test "fsck: a damaged superblock copy is reported (exit 4, no write), --repair fixes it (exit 1)" {
	"$UBLK_FLASH" create "$IMG" --size 8M --align odd
	printf 'Z' | dd of="$IMG" bs=1 seek=40 conv=notrunc status=none
	before=$(sum "$IMG")
	run "$UBLK_FLASH" fsck "$IMG"
	[ "$status" -eq 4 ]
	[[ "$output" == *"superblock copy 0 is damaged"* ]]
	[ "$(sum "$IMG")" = "$before" ]
	run "$UBLK_FLASH" fsck "$IMG" --repair
	[ "$status" -eq 1 ]
	run "$UBLK_FLASH" fsck "$IMG"
	[ "$status" -eq 0 ]
}

@test "corrupt, truncated and other-version images: one-line error, exit 4, unchanged" {
	"$UBLK_FLASH" create "$IMG" --size 8M --align odd
	cp "$IMG" "$SCRATCH/good.img"
	# both superblock copies
	printf 'Z' | dd of="$IMG" bs=1 seek=3 conv=notrunc status=none
	printf 'Z' | dd of="$IMG" bs=1 seek=4099 conv=notrunc status=none
	before=$(sum "$IMG")
	for cmd in info fsck; do
		run "$UBLK_FLASH" $cmd "$IMG"
		[ "$status" -eq 4 ] || { echo "$cmd: $status $output"; false; }
	done
	run "$UBLK_FLASH" info "$IMG"
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "ublk-flash: info: "* ]]
	[ "$(sum "$IMG")" = "$before" ]
	# truncated
	cp "$SCRATCH/good.img" "$IMG"
	truncate -s 4M "$IMG"
	before=$(sum "$IMG")
	run "$UBLK_FLASH" info "$IMG"
	[ "$status" -eq 4 ]
	[ "${#lines[@]}" -eq 1 ]
	run "$UBLK_FLASH" fsck "$IMG"
	[ "$status" -eq 4 ]
	[ "$(sum "$IMG")" = "$before" ]
	# not an image at all
	head -c 1M /dev/urandom >"$IMG"
	run "$UBLK_FLASH" info "$IMG"
	[ "$status" -eq 4 ]
	[ "${#lines[@]}" -eq 1 ]
}

@test "info --json / fsck --json / stats --json: one valid document, an image path with a quote, a backslash and a newline escaped" {
	requires python3
	img=$(printf '%s/a "q" \\b\nc.img' "$SCRATCH")
	run "$UBLK_FLASH" create "$img" --size 64M --align odd
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" info "$img" --json
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["image"] == sys.argv[2], d
assert d["align"] == "odd" and d["logical_size"] == 64 << 20, d' "$output" "$img"
	[[ "$output" == '{"image":"'"$SCRATCH"'/a \"q\" \\b\nc.img","align":"odd",'* ]]
	for cmd in fsck stats; do
		run "$UBLK_FLASH" "$cmd" "$img" --json
		[ "$status" -eq 0 ]
		python3 -m json.tool <<<"$output" >/dev/null
	done
	# the table: the path as it is, dates in ISO 8601, sizes with units
	run "$UBLK_FLASH" stats "$img"
	[[ "$output" =~ last\ read-write\ mount\ +(never|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{4}) ]]
	[[ "$output" =~ page\ size\ +4\ KiB ]]
	[[ "$output" =~ bad\ blocks\ +0\ factory,\ 0\ grown\;\ 0.0\ %\ of ]]
}
