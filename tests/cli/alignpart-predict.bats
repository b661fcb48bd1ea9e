#!/usr/bin/env bats
# alignpart predict (issue 32 item 1): what sfdisk, parted, sgdisk, mkfs.xfs and mke2fs do to
# a target, each prediction checked against the real tool on the same target (image files;
# loop devices of 512- and 4096-byte sectors as root) by tests/vm/guest/predict-lib.bash,
# which the guest's align-matrix.sh runs on scsi_debug disks of every kind.
load ../helpers
load alignpart-lib

setup() {
	ap_setup
	requires sfdisk parted sgdisk mkfs.xfs mke2fs jq
	. "$OCTANT_TOP/tests/vm/guest/predict-lib.bash"
	PV_AP=$ALIGNPART
	FAILS=$SCRATCH/fails
	: >"$FAILS"
}
teardown() {
	[ -z "${LOOPDEV:-}" ] || losetup -d "$LOOPDEV" 2>/dev/null
	ap_teardown
}

# predict-lib.bash reports through these: failures are collected, then shown.
t_ok() { echo "ok $1"; }
t_fail() {
	local d=$1; shift
	{ echo "not ok $d"; printf '#   %s\n' "$@"; } | tee -a "$FAILS"
}
no_fails() {
	[ ! -s "$FAILS" ] || { cat "$FAILS"; return 1; }
}

@test "image files of 4 MiB, 64 MiB, 1 GiB: every prediction is what the real tool does" {
	for size in 4M 64M 1G; do
		img f.img "$size"
		pv_verify "file $size" f.img --profile 512n
	done
	no_fails
}

@test "odd profile on a file: the tools' 2048 is misaligned there, and every avoid command gets 2047" {
	img odd.img 1G
	pv_verify "odd file" odd.img --profile odd
	no_fails
	# the avoid commands were run: sfdisk, parted (msdos and gpt), sgdisk
	[ "$(jq '[.predictions[] | select(.avoid != null and .avoid != "")] | length' <<<"$PV_JSON")" -ge 6 ]
}

@test "predict: readable table, details, exit 1 when a tool misaligns (odd profile)" {
	img odd.img 1G
	run --separate-stderr "$ALIGNPART" predict odd.img --profile odd
	[ "$status" -eq 1 ]
	assert_matches_file "$EXP/predict-odd.txt" "$output"
	[[ "$output" == *"sgdisk -a 1 -n 1:2047:0 odd.img"* ]]
}

@test "predict: exit 0 when every tool aligns (512n profile, 1 GiB)" {
	img n.img 1G
	run --separate-stderr "$ALIGNPART" predict n.img --profile 512n
	[ "$status" -eq 0 ]
	[[ "$output" == *"misaligning_tools: 0"* ]]
}

@test "predict --json: offset 3584 as a disk reports it: fdisk 7 and 2047, parted 2048 warns, gdisk 2048, mkfs.xfs refuses" {
	img t.img 1G
	run --separate-stderr "$ALIGNPART" predict t.img --topology 512/4096/3584/4096/524288 --json
	[ "$status" -eq 1 ]
	assert_matches_file "$EXP/predict-3584.json" "$output"
	sel() { jq -r ".predictions[] | select(.tool == \"$1\" and .label == \"$2\") | $3" <<<"$output"; }
	[ "$(sel sfdisk dos .start_sector)" = 7 ]
	[ "$(sel sfdisk gpt .start_sector)" = 2047 ]
	[ "$(sel 'parted 1MiB' gpt .verdict)" = "MISALIGNED, warns" ]
	[ "$(sel 'parted 0%' gpt .start_sector)" = 2055 ]
	[ "$(sel sgdisk gpt .kernel_offset)" = 3584 ]
	[ "$(jq -r '.predictions[] | select(.tool == "mkfs.xfs") | .verdict' <<<"$output")" = REFUSES ]
}

@test "--topology with IO_MIN/IO_OPT: a 3-disk stripe and a USB bridge's 33553920, each with a note" {
	img t.img 1G
	run --separate-stderr "$ALIGNPART" predict t.img --topology 512/4096/0/12288/36864 --json
	[ "$status" -eq 1 ]          # fdisk's 2048 cuts a 12 KiB chunk
	[[ "$stderr" == *"minimum_io_size 12288 is not a power of two (a RAID chunk): partitions go on multiples of 1069056 bytes"* ]]
	sel() { jq -r ".predictions[] | select(.tool == \"$1\" and .label == \"$2\") | $3" <<<"$output"; }
	[ "$(sel sfdisk gpt .verdict)" = "MISALIGNED, warns" ]
	[ "$(sel sfdisk gpt .kernel_offset)" = 8192 ]
	[ "$(sel alignpart gpt .start_sector)" = 2088 ]
	[ "$(sel 'parted 0%' gpt .start_sector)" = 72 ]
	run --separate-stderr "$ALIGNPART" predict t.img --topology 512/512/0/512/33553920 --json
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"optimal_io_size 33553920 is no partition grain (65535 x 512, what some USB bridges report): ignored, grain 1MiB"* ]]
	[ "$(jq -r '.predictions[] | select(.tool == "mke2fs") | .stripe_width_bytes' <<<"$output")" = $((8191 * 4096)) ]
}

@test "predict: bad input is one line and a documented exit code" {
	img t.img 64M
	run "$ALIGNPART" predict t.img
	one_line_error 2
	run "$ALIGNPART" predict t.img --profile 1m --label mbr
	one_line_error 2
	run "$ALIGNPART" predict t.img --topology 512/4096/0/1000
	one_line_error 2
	run "$ALIGNPART" predict t.img --topology 512/4096/0/4096/100
	one_line_error 2
	run "$ALIGNPART" predict t.img --profile 1m -o tool,nosuch
	one_line_error 2
	run "$ALIGNPART" predict t.img --profile 1m --part 8M
	one_line_error 2
	run "$ALIGNPART" predict nosuch.img --profile 1m
	one_line_error 3
	octant_image flash.img 1
	run "$ALIGNPART" predict flash.img
	one_line_error 2
}

@test "root: loop devices of 512- and 4096-byte sectors, 8 MiB and 1 GiB: predictions hold, kernel offsets too" {
	requires_root
	for ss in 512 4096; do
		for size in 8M 1G; do
			img l.img "$size"
			LOOPDEV=$(losetup -f --show -P --sector-size "$ss" l.img)
			pv_verify "loop $ss $size" "$LOOPDEV"
			losetup -d "$LOOPDEV"
			LOOPDEV=
		done
	done
	no_fails
}
