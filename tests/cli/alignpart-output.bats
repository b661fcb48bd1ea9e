#!/usr/bin/env bats
# alignpart's tables take lsblk's output options (issue 14): -o COLS (in
# that order, by heading or JSON key, also with --json), -n, -r, -b; JSON
# sizes are numbers with the unit in the key; a bad column is one line,
# exit 2, before anything is written.
load ../helpers
load alignpart-lib

setup() {
	ap_setup
	requires sfdisk
	img t.img 64M
	printf 'label: gpt\nstart=2048, size=16384\nstart=20480, size=8192, type=S\n' |
		sfdisk -q --no-reread t.img >/dev/null
	T="--topology 512/4096/3584"
}
teardown() { ap_teardown; }

@test "check -o: the columns named, in that order, by heading or JSON key, any case" {
	run --separate-stderr "$ALIGNPART" check t.img $T -o nr,size,START,verdict
	[ "$status" -eq 1 ]
	tbl=$(echo "$output" | sed -n '/^ *NR /,/^$/p')
	echo "$tbl"
	[ "$(echo "$tbl" | head -n1 | tr -s ' ')" = " NR SIZE START VERDICT" ] ||
		[ "$(echo "$tbl" | head -n1 | tr -s ' ')" = "NR SIZE START VERDICT" ]
	[ "$(echo "$tbl" | sed -n 2p | tr -s ' ' | sed 's/^ //')" = "1 8MiB 2048 MISALIGNED" ]
	[ "$(echo "$tbl" | sed -n 3p | tr -s ' ' | sed 's/^ //')" = "2 4MiB 20480 MISALIGNED" ]
	# JSON keys name the same columns
	run --separate-stderr "$ALIGNPART" check t.img $T -o nr,size_bytes,start_sector -n -r
	echo "$output" | grep -qx '1 8MiB 2048'
	echo "$output" | grep -qx '2 4MiB 20480'
}

@test "check -n -r -b: no headings, raw cells (spaces escaped), sizes in bytes" {
	run --separate-stderr "$ALIGNPART" check t.img $T -n -r -b -o nr,size,type
	[ "$status" -eq 1 ]
	echo "$output"
	echo "$output" | grep -qx '1 8388608 Linux\\x20filesystem'
	echo "$output" | grep -qx '2 4194304 Linux\\x20swap'
	[ -z "$(echo "$output" | grep -w NR)" ]
	# -b alone: the aligned table keeps its headings, sizes in bytes
	run --separate-stderr "$ALIGNPART" check t.img $T -b
	echo "$output" | grep -q '^NR '
	echo "$output" | grep -Eq '^ *1 +2048 +18431 +16384 +8388608 '
}

@test "--json: sizes are numbers of bytes, positions sectors, the unit in the key; -o selects keys" {
	requires python3
	run --separate-stderr "$ALIGNPART" check t.img $T --json
	[ "$status" -eq 1 ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
dev = d["device"][0]
assert dev["erase_block_bytes"] is None, dev
assert "erase_block" not in dev, dev
for p in d["partitions"]:
    for k in ("start_sector", "end_sector", "size_sectors", "size_bytes"):
        assert isinstance(p[k], int), (k, p)
    for k in ("start", "end", "sectors", "size"):
        assert k not in p, (k, p)
    assert p["size_bytes"] == p["size_sectors"] * 512, p
    assert p["end_sector"] == p["start_sector"] + p["size_sectors"] - 1, p
'
	run --separate-stderr "$ALIGNPART" check t.img $T --json -o nr,size
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [list(p) for p in d["partitions"]] == [["nr", "size_bytes"]] * 2, d
assert [p["size_bytes"] for p in d["partitions"]] == [8388608, 4194304], d
'
	# create --no-act and suggest: grain and usable range with units
	img n.img 64M
	run --separate-stderr "$ALIGNPART" create n.img --label gpt --profile 1m --part 8MiB --no-act --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
dev = json.load(sys.stdin)["device"][0]
assert dev["grain_bytes"] == 1048576 and dev["first_usable_sector"] == 34, dev
assert isinstance(dev["last_usable_sector"], int), dev
'
	run --separate-stderr "$ALIGNPART" suggest t.img $T --json
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert "grain" not in d["device"][0] and d["device"][0]["grain_bytes"] > 0, d
assert all(isinstance(s["first_usable_sector"], int) for s in d["suggestions"]), d
'
}

@test "suggest and create take -o/-n/-r/-b too" {
	run --separate-stderr "$ALIGNPART" suggest t.img $T -o label,first_lba -n
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | sed -n '/^dos/,$p' | tr -s ' ')" = "dos 2047
gpt 2047" ]
	img n.img 64M
	run --separate-stderr "$ALIGNPART" create n.img --label gpt --profile 1m --part 8MiB \
		--no-act -o size,nr -n -r -b
	[ "$status" -eq 0 ]
	echo "$output" | grep -qx '8388608 1'
	# -b also gives the grain in bytes
	echo "$output" | grep -Eq '^grain: +1048576$'
}

@test "-o errors: an unknown or empty column list is one line, exit 2, nothing written" {
	before=$(sum t.img)
	run "$ALIGNPART" check t.img $T -o nr,bogus
	one_line_error 2
	[[ "$output" == *"-o: unknown column 'bogus' (columns: NR,START,END,SECTORS,SIZE,TYPE,"* ]]
	run "$ALIGNPART" check t.img $T -o ""
	one_line_error 2
	run "$ALIGNPART" check t.img $T -o
	one_line_error 2
	# create checks the columns before it writes anything
	img w.img 64M
	w0=$(sum w.img)
	run "$ALIGNPART" create w.img --label gpt --profile 1m --part 8MiB -o nr,colour
	one_line_error 2
	[[ "$output" == *"unknown column 'colour'"* ]]
	[ "$(sum w.img)" = "$w0" ]
	run "$ALIGNPART" suggest t.img $T -o verdict
	one_line_error 2
	[[ "$output" == *"(columns: LABEL,FIRST_USABLE,FIRST_LBA,"* ]]
	[ "$(sum t.img)" = "$before" ]
}

# target_line: the report's one "target:" line, its padding dropped
target_line() {
	grep '^target:' <<<"$output" | sed 's/^target: */target: /'
}

@test "a target path with a newline, a tab or a backslash: the key: value report keeps one line per key (\\xHH), JSON escapes its own way" {
	requires python3
	local t=$'n\nl\tt\\b.img' c=$'c\nl.img'
	cp t.img "$t"
	img "$c" 64M
	run --separate-stderr "$ALIGNPART" check "$t" $T
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(target_line)" = 'target: n\x0al\x09t\x5cb.img' ]
	[ -z "$(grep $'^l\t' <<<"$output")" ]
	run --separate-stderr "$ALIGNPART" suggest "$t" $T
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(target_line)" = 'target: n\x0al\x09t\x5cb.img' ]
	[ -z "$(grep $'^l\t' <<<"$output")" ]
	run --separate-stderr "$ALIGNPART" create "$c" --label gpt --part 8MiB --no-act $T
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(target_line)" = 'target: c\x0al.img' ]
	[ -z "$(grep -x 'l.img' <<<"$output")" ]
	# JSON: the path itself, JSON-escaped (not \xHH)
	"$ALIGNPART" check "$t" $T --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["device"][0]["target"] == sys.argv[1], d' "$t"
	"$ALIGNPART" suggest "$t" $T --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["device"][0]["target"] == sys.argv[1], d' "$t"
}

@test "errors, warnings and notes that name a path with a newline stay one line (\\xHH)" {
	run "$ALIGNPART" check $'no\nsuch\\.img' $T
	echo "$output"
	one_line_error 3
	[ "$output" = 'alignpart: no\x0asuch\x5c.img: No such file or directory' ]
	# a refusal names the target too (existing data, exit 5)
	cp t.img $'has\ntable.img'
	run "$ALIGNPART" create $'has\ntable.img' --label gpt --part 8MiB $T
	echo "$output"
	one_line_error 5
	[[ "$output" == *'has\x0atable.img'* ]]
}
