#!/usr/bin/env bats
# ublk-flash on a failing medium, offline parts: create --bad-blocks,
# fsck and stats reporting the bad-block table, --faults spec errors.
load ../helpers

setup() {
	setup_scratch
	IMG=$SCRATCH/disk.img
}

teardown() {
	teardown_scratch
}

@test "create --bad-blocks: seeded factory bad blocks, reported by fsck and stats" {
	run "$UBLK_FLASH" create "$IMG" --size 64M --align odd \
		--over-provision 25 --bad-blocks 0.02 --bad-block-seed 7
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" fsck "$IMG"
	[ "$status" -eq 0 ]
	[[ "$output" == *" bad blocks ("*" factory, 0 grown)"* ]]
	n=$(sed -n 's/^note: \([0-9]*\) bad blocks.*/\1/p' <<<"$output")
	[ "$n" -gt 0 ]
	# the findings in --json: one valid document, the note in it
	run "$UBLK_FLASH" fsck "$IMG" --json
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["notes"] >= 1 and any("bad blocks" in f["what"] for f in d["findings"]), d' <<<"$output"
	run "$UBLK_FLASH" stats "$IMG" --json
	[ "$status" -eq 0 ]
	[[ "$output" == *"\"bad_blocks_factory\":$n,"* ]]
	[[ "$output" == *'"read_only":false'* ]]
	# the same seed draws the same blocks
	run "$UBLK_FLASH" create "$SCRATCH/b.img" --size 64M --align odd \
		--over-provision 25 --bad-blocks 0.02 --bad-block-seed 7
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" fsck "$SCRATCH/b.img"
	[[ "$output" == *"note: $n bad blocks"* ]]
}

@test "create --bad-blocks without a seed prints the one it drew" {
	run "$UBLK_FLASH" create "$IMG" --size 64M --align 1m --bad-blocks 1e-3
	[ "$status" -eq 0 ]
	[[ "$output" == *"--bad-block-seed "[0-9]* ]]
}

@test "create --bad-blocks: bad rates and too many bad blocks are usage errors" {
	for r in 2 -0.1 x 1; do
		run "$UBLK_FLASH" create "$IMG" --size 64M --align odd --bad-blocks "$r"
		[ "$status" -eq 2 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *"--bad-blocks must be a probability"* ]]
	done
	run "$UBLK_FLASH" create "$IMG" --size 64M --align odd --bad-blocks 0.5 \
		--bad-block-seed 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"more bad blocks than the spare area absorbs"* ]]
	[ ! -e "$IMG" ]         # nothing created
	# an existing file stays as it was, even with --force
	head -c 1M /dev/urandom > "$IMG"
	before=$(md5sum < "$IMG")
	run "$UBLK_FLASH" create "$IMG" --size 64M --align odd --bad-blocks 0.5 \
		--bad-block-seed 1 --force
	[ "$status" -eq 2 ]
	[ "$(md5sum < "$IMG")" = "$before" ]
}

@test "serve --faults: a bad spec is a one-line usage error, nothing served" {
	run "$UBLK_FLASH" create "$IMG" --size 64M --align odd
	[ "$status" -eq 0 ]
	for spec in "program=2" "erase=x" "bitflip=0.9" "colour=1" "seed=-1" \
		    "ecc=0" "cw=1000" "program" "program=0.1,,erase=0.1"; do
		run "$UBLK_FLASH" serve "$IMG" --faults "$spec"
		[ "$status" -eq 2 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "ublk-flash: serve: --faults: "* ]]
	done
	run "$UBLK_FLASH" serve "$IMG" --faults cw=8192
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"cw=8192 does not divide the 4096-byte flash page"* ]]
}
