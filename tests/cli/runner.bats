#!/usr/bin/env bats
# tests/runner, which CI reads: on a tree of its own (a copy of the runner,
# one bats file and two unit programs), its lines and its one summary line:
# a passing case PASS, a failing one FAIL with its diagnostics (the comment
# lines after its "not ok", at most 30) right under it, a program's exit 77
# SKIP with its reason, a failed program FAIL with its replay line; the
# summary "N passed, N failed, N skipped" last, the failures listed before
# it, and exit 1 when anything failed (0 when nothing did).
load ../helpers

setup() {
	setup_scratch
	# the runner as CI starts it: a clean environment, the system's PATH (bats puts
	# its libexec first in ours, whose "bats" is not the command)
	SYS_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	T=$SCRATCH/tree
	mkdir -p "$T/tests/cli" "$T/b/tests/unit"
	cp "$OCTANT_TOP/tests/runner" "$T/tests/runner"
	# (printf, not a here-document: bats would take its @test lines for ours)
	printf '%s\n' '#!/usr/bin/env bats' '@test "passes" { true; }' \
		'@test "fails with a reason" {' '	echo "the reason: got 3, want 4"' \
		'	false' '}' '@test "passes after" { true; }' >"$T/tests/cli/fake.bats"
	printf '#!/bin/sh\necho "SKIP: no widget here" >&2\nexit 77\n' >"$T/b/tests/unit/skipper"
	printf '#!/bin/sh\necho "seed 42 (replay: OCTANT_SEED=42)" >&2\nexit 1\n' >"$T/b/tests/unit/failer"
	chmod +x "$T/b/tests/unit/skipper" "$T/b/tests/unit/failer"
}

# run_runner TIER...: the copy of the runner on the tree, as CI starts it
run_runner() {
	run env -i PATH="$SYS_PATH" HOME="$HOME" BUILD="$T/b" OCTANT_LOGDIR="$SCRATCH/logs" \
		"$T/tests/runner" "$@" 3>&-
	echo "$output"
}

teardown() {
	teardown_scratch
}

@test "runner: PASS, FAIL with its diagnostics under it, SKIP with its reason, one summary line last" {
	run_runner unit cli
	[ "$status" -eq 1 ]
	[[ "$output" == *"SKIP  unit/skipper: no widget here"* ]]
	[[ "$output" == *"FAIL  unit/failer (exit 1; replay: OCTANT_SEED=42 "* ]]
	[[ "$output" == *"PASS  cli/fake.bats: passes"* ]]
	[[ "$output" == *"PASS  cli/fake.bats: passes after"* ]]
	# the failed case, then its diagnostics on the lines right after it
	local i
	for i in "${!lines[@]}"; do
		[[ ${lines[i]} == "FAIL  cli/fake.bats: fails with a reason" ]] && break
	done
	[[ ${lines[i]} == "FAIL  cli/fake.bats: fails with a reason" ]]
	[[ "${lines[*]:i+1:4}" == *"# the reason: got 3, want 4"* ]]
	[[ ${lines[i+1]} == "      #"* ]]
	# the failures listed, the summary last
	[[ "$output" == *"== failures"*"  cli/fake.bats: fails with a reason"* ]]
	[ "${lines[${#lines[@]} - 1]}" = "2 passed, 2 failed, 1 skipped" ]
}

@test "runner: nothing failed: exit 0 and the summary line" {
	rm "$T/b/tests/unit/failer"
	sed -i 's/\tfalse/\ttrue/' "$T/tests/cli/fake.bats"
	run_runner unit cli
	[ "$status" -eq 0 ]
	[[ "$output" != *"== failures"* ]]
	[ "${lines[${#lines[@]} - 1]}" = "3 passed, 0 failed, 1 skipped" ]
}

@test "runner: a TAP stream that ends before its plan is a failure, not a pass" {
	mkdir -p "$T/tests/vm"
	printf '#!/bin/sh\necho 1..3\necho "ok 1 the first"\n' >"$T/tests/vm/short-tap.sh"
	chmod +x "$T/tests/vm/short-tap.sh"
	run_runner vm
	[ "$status" -eq 1 ]
	[[ "$output" == *"PASS  vm/short-tap.sh: the first"* ]]
	[[ "$output" == *"FAIL  vm/short-tap.sh: ran 1 of the 3 cases it planned"* ]]
	[ "${lines[${#lines[@]} - 1]}" = "1 passed, 1 failed, 0 skipped" ]
}

# A full disk fails a test from deep down (ENOSPC from a served image's loop
# device): the runner samples the room under TMPDIR and says it at the start,
# after each failure and at the end, from what df reports for that folder.
@test "runner: room under TMPDIR said at the start, after a failure (now and least) and at the end" {
	mkdir -p "$SCRATCH/tmp"
	want=$(df -Pm "$SCRATCH/tmp" | awk 'NR == 2 { print $4 }')
	run env -i PATH="$SYS_PATH" HOME="$HOME" BUILD="$T/b" OCTANT_LOGDIR="$SCRATCH/logs" \
		TMPDIR="$SCRATCH/tmp" "$T/tests/runner" unit cli 3>&-
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" =~ ^"# room under $SCRATCH/tmp: "([0-9]+)" MiB free at the start"$ ]]
	# the same filesystem as df sees it (give or take what the run wrote)
	[ $(( BASH_REMATCH[1] - want )) -le 64 ] && [ $(( want - BASH_REMATCH[1] )) -le 64 ]
	# after each of the two failures, under its log's last lines
	[ "$(grep -cE "^# room under $SCRATCH/tmp: [0-9]+ MiB free now; least this run [0-9]+ MiB at \+[0-9]+s$" <<<"$output")" -eq 2 ]
	[[ "${lines[${#lines[@]} - 5]}" =~ ^"# room under $SCRATCH/tmp: "[0-9]+" MiB free at the end; least this run "[0-9]+" MiB at +"[0-9]+s$ ]]
	[ -s "$SCRATCH/logs/room.log" ]
	# the sampler (a subshell of the runner) is gone with it
	! pgrep -f "$T/tests/runner" >/dev/null
}
