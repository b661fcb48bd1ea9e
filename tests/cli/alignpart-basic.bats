#!/usr/bin/env bats
# alignpart: --help, --version, the man page and usage errors.
load ../helpers
load alignpart-lib

setup() { ap_setup; }
teardown() { ap_teardown; }

@test "--version and --help (global and per command) exit 0" {
	run "$ALIGNPART" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "alignpart "* ]]
	run "$ALIGNPART" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *check*create*suggest* ]]
	[[ "$output" == *odd*1m*legacy*4kn*512n*auto* ]]
	for c in check create suggest predict convert; do
		run "$ALIGNPART" $c --help
		[ "$status" -eq 0 ]
		[[ "$output" == "Usage: alignpart $c"* ]]
		run "$ALIGNPART" $c --version
		[ "$status" -eq 0 ]
	done
}

@test "no arguments: usage on stderr, exit 2" {
	run --separate-stderr "$ALIGNPART"
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[[ "$stderr" == Usage:* ]]
}

@test "the man page is valid troff and documents commands, profiles, exit codes" {
	requires man
	page=$OCTANT_TOP/docs/alignpart.8
	[ -f "$page" ]
	run env MANWIDTH=100 man -l "$page"
	[ "$status" -eq 0 ]
	for w in check create suggest --topology --profile --script --start --no-act \
		 --force --json odd 1m legacy 4kn 512n auto "EXIT STATUS"; do
		[[ "$output" == *"$w"* ]] || { echo "man page lacks $w"; return 1; }
	done
	run bash -c "LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings -l '$page' 2>&1 >/dev/null"
	[ -z "$output" ] || { echo "troff warnings: $output"; return 1; }
}

@test "every exit code in the man page matches the implementation's" {
	page=$OCTANT_TOP/docs/alignpart.8
	for code in 0 1 2 3 4; do
		grep -q "^\.IP $code\$" "$page" || { echo "exit $code not documented"; return 1; }
	done
}
