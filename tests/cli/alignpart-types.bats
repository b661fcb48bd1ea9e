#!/usr/bin/env bats
# Partition types (issue 11, item 6): the shortcuts and aliases sfdisk
# accepts (L S H U R V; linux swap home uefi raid lvm) on both labels, as
# the type a peer (sfdisk -d) reads back; an MBR hex code on GPT is refused
# (sfdisk refuses it too) instead of being read as the Nth entry of
# libfdisk's type list ("83" was "Linux /usr verity (x86-64)").
load ../helpers
load alignpart-lib

setup() { ap_setup; }
teardown() { ap_teardown; }

# written_type LABEL TYPE: create one partition of TYPE on a fresh image
# and print "LABEL TYPE -> <type as sfdisk -d reads it> (<alignpart's name>)".
written_type() {
	local out got
	img t.img 16M
	out=$("$ALIGNPART" create t.img --label "$1" --profile odd --part "rest:$2") ||
		{ echo "$1 $2 -> create failed: $out"; return 0; }
	got=$(sfdisk -d t.img | sed -n 's/.*type=\([^,]*\).*/\1/p')
	echo "$1 $2 -> $got ($(echo "$out" | awk '$1 == "1" { for (i = 6; $i != "yes" && $i != "no"; i++) printf "%s%s", (i > 6 ? " " : ""), $i }'))"
}

@test "sfdisk's shortcuts and aliases give the same types on gpt and dos (expected file)" {
	requires sfdisk
	local l t all=
	for l in gpt dos; do
		for t in L S H U R V linux swap home uefi raid lvm; do
			all+=$(written_type "$l" "$t")$'\n'
		done
	done
	all+=$(written_type dos 83)$'\n'
	all+=$(written_type dos 0x8e)$'\n'
	all+=$(written_type gpt 0FC63DAF-8483-4772-8E79-3D69D8477DE4)
	assert_matches_file "$EXP/types.txt" "$all"
}

@test "an MBR hex code on gpt is refused: exit 2, one line, image unchanged" {
	local t
	img g.img 16M
	before=$(sum g.img)
	for t in 83 8e 0x83 ef 7; do
		run "$ALIGNPART" create g.img --label gpt --profile odd --part "rest:$t"
		one_line_error 2
		[[ "$output" == *"'$t' is an MBR type code; a gpt type is a GUID, a shortcut (L linux, S swap, H home, U uefi, R raid, V lvm) or a type name"* ]]
		[ "$(sum g.img)" = "$before" ]
	done
}

@test "a script's MBR type on a gpt label is refused too" {
	img g.img 16M
	before=$(sum g.img)
	run "$ALIGNPART" create g.img --profile odd --script - <<<$'label: gpt\nsize=4M, type=83'
	one_line_error 2
	[[ "$output" == *"'83' is an MBR type code"* ]]
	[ "$(sum g.img)" = "$before" ]
}

@test "a type libfdisk does not know: exit 2, one line naming what is accepted" {
	img d.img 16M
	run "$ALIGNPART" create d.img --label dos --profile odd --part rest:100
	one_line_error 2
	[[ "$output" == *"unknown dos partition type '100' (want a hex code, a shortcut L S H U R V, or a type name)"* ]]
	run "$ALIGNPART" create d.img --label gpt --profile odd --part rest:nosuchtype
	one_line_error 2
	[[ "$output" == *"unknown gpt partition type 'nosuchtype'"* ]]
}
