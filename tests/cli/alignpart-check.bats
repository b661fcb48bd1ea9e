#!/usr/bin/env bats
# alignpart check: verdicts, exit codes, readable and JSON output.
load ../helpers
load alignpart-lib

setup() { ap_setup; }
teardown() { ap_teardown; }

# mk IMG LABEL "START:SECTORS ..." — a table written by sfdisk (a peer),
# so check is tested on tables alignpart did not make.
mk() {
	local img=$1 label=$2 s script="label: $2"$'\n'
	requires sfdisk
	img "$img" 64M
	for s in $3; do
		script+="start=${s%:*}, size=${s#*:}"$'\n'
	done
	echo "$script" | sfdisk -q --no-reread "$img" >/dev/null
}

@test "odd profile: partitions at 2047 and 34815 are aligned (exit 0)" {
	mk odd.img dos "2047:32768 34815:65536"
	run --separate-stderr "$ALIGNPART" check odd.img --profile odd
	[ "$status" -eq 0 ]
	assert_matches_file "$EXP/check-odd-aligned.txt" "$output"
}

@test "odd profile: a partition at 2048 is misaligned (exit 1) with 2048s % 8s != 7s" {
	mk odd.img gpt "2048:32768"
	run --separate-stderr "$ALIGNPART" check odd.img --profile odd
	[ "$status" -eq 1 ]
	[[ "$output" == *"2048s % 8s != 7s"* ]]
	[[ "$output" == *MISALIGNED* ]]
	assert_matches_file "$EXP/check-odd-2048.txt" "$output"
}

@test "1m profile: a partition at 63 is misaligned (exit 1), kernel offset 512" {
	mk legacy.img dos "63:32705 32768:32768"
	run --separate-stderr "$ALIGNPART" check legacy.img --profile 1m
	[ "$status" -eq 1 ]
	assert_matches_file "$EXP/check-1m-63.txt" "$output"
}

@test "1m profile: partitions at 2048 are aligned (exit 0)" {
	mk one.img gpt "2048:16384 18432:16384"
	run "$ALIGNPART" check one.img --profile 1m
	[ "$status" -eq 0 ]
}

@test "--topology overrides the profile: 512/4096/3584 makes 63 aligned, 2048 not" {
	mk t.img dos "63:1985 2048:2048"
	run --separate-stderr "$ALIGNPART" check t.img --profile 1m --topology 512/4096/3584
	[ "$status" -eq 1 ]
	[[ "$output" == *"source:"*override* ]]
	[[ "$output" == *"63s % 8s == 7s"* ]]
	[[ "$output" == *"2048s % 8s != 7s"* ]]
}

@test "check --json is valid JSON with the verdict per partition" {
	requires python3
	mk j.img gpt "2048:16384 20480:8192"
	run --separate-stderr "$ALIGNPART" check j.img --topology 512/4096/3584 --json
	[ "$status" -eq 1 ]
	assert_matches_file "$EXP/check-json.json" "$output"
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["device"][0]["source"] == "override", d
p = d["partitions"]
assert [x["start_sector"] for x in p] == [2048, 20480], p
assert [x["size_bytes"] for x in p] == [16384 * 512, 8192 * 512], p
assert [x["aligned"] for x in p] == [False, False], p
assert [x["kernel_offset"] for x in p] == [3584, 3584], p
'
}

@test "4kn profile on a 4K-sector image: LBAs in 4096-byte sectors" {
	img k.img 64M
	"$ALIGNPART" create k.img --label gpt --profile 4kn --part 8MiB --part rest
	run --separate-stderr "$ALIGNPART" check k.img --profile 4kn
	[ "$status" -eq 0 ]
	[[ "$output" == *"4096/4096"* ]]
	[[ "$output" == *" 256 "*"aligned"* ]]
}

@test "check: a file without a table is an I/O/probe error (exit 3), one line" {
	img empty.img 8M
	run "$ALIGNPART" check empty.img --profile 1m
	one_line_error 3
}

@test "check: a plain file without --profile/--topology is a usage error (exit 2)" {
	mk p.img dos "2048:2048"
	run "$ALIGNPART" check p.img
	one_line_error 2
	[[ "$output" == *"--topology"* ]]
}

@test "check: a missing target is exit 3, a bad --topology exit 2" {
	run "$ALIGNPART" check nothing.img --profile 1m
	one_line_error 3
	mk p.img dos "2048:2048"
	run "$ALIGNPART" check p.img --topology 512/1000
	one_line_error 2
	run "$ALIGNPART" check p.img --topology 512/4096/100
	one_line_error 2
}

@test "dos extended partition: listed as container, logical partitions judged" {
	requires sfdisk
	img e.img 64M
	printf 'label: dos\nstart=2047,size=8M\nstart=20480,type=5\nstart=22527,size=4M\nstart=32768,size=4M\n' |
		sfdisk -q --no-reread e.img >/dev/null
	run --separate-stderr "$ALIGNPART" check e.img --profile odd
	[ "$status" -eq 1 ]
	[[ "$output" == *"container"* ]]
	[[ "$output" == *" 5 22527 "*" aligned "* ]]
	[[ "$output" == *" 6 32768 "*"MISALIGNED"* ]]
	[[ "$output" == *"misaligned:       1"* ]]
}
