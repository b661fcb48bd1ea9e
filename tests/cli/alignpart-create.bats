#!/usr/bin/env bats
# alignpart create: layouts per profile, --no-act output, --start, JSON,
# and cross-validation of every written table with sfdisk, parted, sgdisk.
load ../helpers
load alignpart-lib

setup() { ap_setup; }
teardown() { ap_teardown; }

@test "create --no-act (odd, dos) prints the plan and writes nothing" {
	img a.img 64M
	before=$(sum a.img)
	run --separate-stderr "$ALIGNPART" create a.img --label dos --profile odd \
		--part 16MiB --part 8MiB:82 --part rest --no-act
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/create-odd-dos-noact.txt" "$output"
	[ "$(sum a.img)" = "$before" ]
}

@test "create --no-act (1m, gpt, --json) prints the plan and writes nothing" {
	img a.img 64M
	before=$(sum a.img)
	run --separate-stderr "$ALIGNPART" create a.img --label gpt --profile 1m \
		--part 8MiB:L --part 8MiB:S --part rest --no-act --json
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/create-1m-gpt-noact.json" "$output"
	[ "$(sum a.img)" = "$before" ]
}

@test "odd profile, dos: starts 2047/34815/51199; peers agree; check exit 0" {
	img o.img 64M
	run "$ALIGNPART" create o.img --label dos --profile odd --part 16MiB --part 8MiB --part rest
	[ "$status" -eq 0 ]
	xval o.img dos "2047:32768 34815:16384 51199:79872"
	run "$ALIGNPART" check o.img --profile odd
	[ "$status" -eq 0 ]
}

@test "odd profile, gpt: first partition at 2047; sgdisk -v no problems" {
	img o.img 64M
	run "$ALIGNPART" create o.img --label gpt --profile odd --part 16MiB:L --part rest
	[ "$status" -eq 0 ]
	xval o.img gpt "2047:32768 34815:96224"
	run "$ALIGNPART" check o.img --profile odd
	[ "$status" -eq 0 ]
}

@test "1m profile, gpt: starts at 2048; peers agree; check exit 0" {
	img m.img 64M
	run "$ALIGNPART" create m.img --label gpt --profile 1m --part 8MiB --part 16MiB --part rest
	[ "$status" -eq 0 ]
	xval m.img gpt "2048:16384 18432:32768 51200:79832"
	run "$ALIGNPART" check m.img --profile 1m
	[ "$status" -eq 0 ]
}

@test "legacy profile: first at 63 with a loud warning; 1m check says misaligned" {
	img l.img 64M
	run --separate-stderr "$ALIGNPART" create l.img --label dos --profile legacy --part 8MiB --part rest
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"PARTITION 1 STARTS AT LBA 63, WHICH IS NOT PHYSICALLY ALIGNED"* ]]
	xval l.img dos "63:16384 32130:98942"
	run "$ALIGNPART" check l.img --profile 1m
	[ "$status" -eq 1 ]
}

@test "--start 63 with one rest partition (the make compare call) on an odd topology" {
	img c.img 64M
	run --separate-stderr "$ALIGNPART" create c.img --label dos --profile odd --start 63 --part rest --force
	[ "$status" -eq 0 ]
	xval c.img dos "63:131008"
	run "$ALIGNPART" check c.img --topology 512/4096/3584 --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"kernel_offset": 0'* ]]
}

@test "--start 2048 on the odd profile is forced but warned LOUDLY; check exit 1" {
	img c.img 64M
	run --separate-stderr "$ALIGNPART" create c.img --label gpt --profile odd --start 2048 --part 8MiB --part rest
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"NOT PHYSICALLY ALIGNED"*"2048s % 8s != 7s"*"forced with --start"* ]]
	[[ "$output" == *"forced (--start)"* ]]
	xval c.img gpt "2048:16384 20479:110560"
	run "$ALIGNPART" check c.img --profile odd
	[ "$status" -eq 1 ]
}

@test "4kn profile: 4096-byte sectors, first partition at 256" {
	img k.img 64M
	run --separate-stderr "$ALIGNPART" create k.img --label gpt --profile 4kn --part 4MiB --part rest
	[ "$status" -eq 0 ]
	[[ "$output" == *" 256 "* ]]
	run "$ALIGNPART" check k.img --profile 4kn --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"start_sector": 256'* ]]
	[[ "$output" == *'"start_sector": 1280'* ]]
}

@test "an octant flash image's topology is used by suggest; create refuses the image" {
	[ -x "$UBLK_FLASH" ] || skip "ublk-flash not built"
	"$UBLK_FLASH" create --help >/dev/null 2>&1 || skip "ublk-flash create not available"
	run "$UBLK_FLASH" create flash.img --size 64M --align odd
	[ "$status" -eq 0 ] || skip "ublk-flash create flash.img --size 64M --align odd: $output"
	run "$ALIGNPART" suggest flash.img
	[ "$status" -eq 0 ]
	[[ "$output" == *"(image)"* ]]
	before=$(sum flash.img)
	run "$ALIGNPART" create flash.img --label dos --part rest --force
	one_line_error 5
	[ "$(sum flash.img)" = "$before" ]
}

@test "a synthetic octant image header (odd): suggest uses it, check/create refuse" {
	octant_image f.img 1
	run --separate-stderr "$ALIGNPART" suggest f.img
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/suggest-image-odd.txt" "$output"
	before=$(sum f.img)
	run "$ALIGNPART" create f.img --label gpt --part rest --force
	one_line_error 5
	run "$ALIGNPART" check f.img
	one_line_error 2
	[ "$(sum f.img)" = "$before" ]
}

@test "suggest: odd -> 2047, 1m -> 2048, legacy -> 63, with reasons" {
	img s.img 64M
	run "$ALIGNPART" suggest s.img --profile odd
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/suggest-odd.txt" "$output"
	run "$ALIGNPART" suggest s.img --profile 1m --label gpt --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"first_lba": 2048'* ]]
	run "$ALIGNPART" suggest s.img --profile legacy --label dos
	[ "$status" -eq 0 ]
	[[ "$output" == *" 63 "* ]]
}

@test "the make compare calls on a real loop device: --topology overrides the device" {
	requires_root
	requires losetup
	img c.img 64M
	LOOP=$(losetup -f --show c.img) || skip "cannot attach a loop device"
	run --separate-stderr "$ALIGNPART" create "$LOOP" --label dos --profile odd --start 63 --part rest --force
	status_create=$status
	run --separate-stderr "$ALIGNPART" check "$LOOP" --topology 512/4096/3584 --json
	status_check=$status
	out=$output
	run --separate-stderr "$ALIGNPART" check "$LOOP" --topology 512/4096/0
	status_1m=$status
	losetup -d "$LOOP"
	[ "$status_create" -eq 0 ]
	[ "$status_check" -eq 0 ]
	[[ "$out" == *'"source": "override"'* ]]
	[[ "$out" == *'"start_sector": 63'* ]]
	[ "$status_1m" -eq 1 ]
	xval c.img dos "63:131009"
}
