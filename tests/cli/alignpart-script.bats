#!/usr/bin/env bats
# alignpart create --script: sfdisk scripts through libfdisk's script API,
# the profile's alignment applied to every start, moved starts reported.
load ../helpers
load alignpart-lib

setup() { ap_setup; }
teardown() { ap_teardown; }

@test "script on stdin: misaligned starts are moved and reported, peers agree" {
	img s.img 64M
	run --separate-stderr "$ALIGNPART" create s.img --profile odd --script - <<-'EOS'
	label: gpt

	start=2048, size=8MiB, type=L, name="root"
	size=4MiB, type=S
	start=40000, size=2MiB
	EOS
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"partition 1: start 2048 moved to 4095"* ]]
	[[ "$stderr" == *"partition 3: start 40000 moved to 40959"* ]]
	[[ "$stderr" != *"partition 2: start"* ]]
	[[ "$output" == *"moved from 2048"* ]]
	xval s.img gpt "4095:16384 20479:8192 40959:4096"
	run sfdisk -d s.img
	[[ "$output" == *'name="root"'* ]]
	[[ "$output" == *0657FD6D-A4AB-43C4-84E5-0933C84B4F4F* ]]
	run "$ALIGNPART" check s.img --profile odd
	[ "$status" -eq 0 ]
}

@test "script file with --no-act: expected plan, nothing written" {
	img s.img 64M
	printf 'label: dos\nstart=63, size=16MiB, type=83\nsize=8MiB, type=82\ntype=83\n' >in.sfdisk
	before=$(sum s.img)
	run --separate-stderr "$ALIGNPART" create s.img --profile odd --script in.sfdisk --no-act
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/script-odd-dos-noact.txt" "$output"
	[[ "$stderr" == *"start 63 moved to 2047"* ]]
	[ "$(sum s.img)" = "$before" ]
}

@test "--label overrides the script's label; aligned starts are kept" {
	img s.img 64M
	printf 'label: gpt\nstart=2048, size=8MiB\nstart=18432\n' | \
		"$ALIGNPART" create s.img --label dos --profile 1m --script - 2>err
	refute grep -q moved err
	xval s.img dos "2048:16384 18432:112640"
}

@test "a script without a label header needs --label (exit 2)" {
	img s.img 64M
	before=$(sum s.img)
	run "$ALIGNPART" create s.img --profile 1m --script - <<<'size=8MiB'
	one_line_error 2
	[ "$(sum s.img)" = "$before" ]
}

@test "a broken script is one line, exit 2; a missing file exit 3" {
	img s.img 64M
	before=$(sum s.img)
	run "$ALIGNPART" create s.img --profile 1m --label dos --script - <<<'this is not sfdisk'
	one_line_error 2
	run "$ALIGNPART" create s.img --profile 1m --label dos --script nosuch.sfdisk
	one_line_error 3
	[ "$(sum s.img)" = "$before" ]
}
