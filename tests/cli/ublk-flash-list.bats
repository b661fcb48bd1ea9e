#!/usr/bin/env bats
# ublk-flash list: the run registry as a table (-o, -n, -r) and as JSON,
# dead entries shown with their state; JSON escaping of odd image paths.
# No root: the entries are made by hand, as a server that died leaves them
# (tests/integration/fuse-list.bats lists live servers).
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	mkdir -p "$UBLK_FLASH_RUN_DIR"
}

teardown() {
	teardown_scratch
}

# dead_pid: the pid of a process that has exited.
dead_pid() {
	sh -c 'echo $$'
}

# fake_entry NAME IMAGE [DEV]: a registry entry whose server died (a pid
# file, no lock holder), as serve.h describes it.
fake_entry() {
	local d=$UBLK_FLASH_RUN_DIR/img-fake-$1
	mkdir -p "$d"
	printf '%s\n' "$2" >"$d/image"
	printf '%s\n' "${3:-}" >"$d/dev"
	echo fuse >"$d/frontend"
	dead_pid >"$d/pid"
	: >"$d/lock"
}

# json_check: stdin is valid JSON (python3's parser; jq too if installed).
json_check() {
	local doc
	doc=$(cat)
	python3 -m json.tool <<<"$doc" >/dev/null
	if command -v jq >/dev/null; then jq -e . <<<"$doc" >/dev/null; fi
}

@test "list: nothing served, an empty table and {\"devices\":[]}, exit 0" {
	requires python3
	rmdir "$UBLK_FLASH_RUN_DIR"          # no registry folder at all
	run "$UBLK_FLASH" list
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run "$UBLK_FLASH" list --json
	[ "$status" -eq 0 ]
	[ "$output" = '{"devices":[]}' ]
}

@test "list: a dead server's entry is shown as dead, not hidden (table, -n, -r, -o)" {
	"$UBLK_FLASH" create "$SCRATCH/a.img" --size 64M --align odd >/dev/null
	fake_entry a "$SCRATCH/a.img"
	run "$UBLK_FLASH" list
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^DEVICE\ +IMAGE\ +MODE\ +FRONTEND\ +DM\ +PID\ +STATE\ +UPTIME$ ]]
	[[ "${lines[1]}" =~ ^-\ +$SCRATCH/a.img\ +odd\ +fuse\ +-\ +[0-9]+\ +dead\ +-$ ]]
	run "$UBLK_FLASH" list -n -r -o STATE,image,MODE,SIZE
	[ "$status" -eq 0 ]
	[ "$output" = "dead $SCRATCH/a.img odd 64\\x20MiB" ]   # raw: spaces escaped
	run "$UBLK_FLASH" list -o +SIZE -n
	[[ "$output" =~ dead\ +-\ +64\ MiB$ ]]
}

@test "list of a zoned image: MODE zoned and its size (no FTL info to read)" {
	"$UBLK_FLASH" create "$SCRATCH/z.img" --size 64M --zoned >/dev/null
	fake_entry z "$SCRATCH/z.img"
	run "$UBLK_FLASH" list -n -r -o STATE,image,MODE,SIZE
	[ "$status" -eq 0 ]
	[ "$output" = "dead $SCRATCH/z.img zoned 64\\x20MiB" ]
}

@test "list --json: raw numbers, null for what is not there, the -o columns only" {
	requires python3
	"$UBLK_FLASH" create "$SCRATCH/a.img" --size 64M --align 1m >/dev/null
	fake_entry a "$SCRATCH/a.img"
	pid=$(cat "$UBLK_FLASH_RUN_DIR"/img-fake-a/pid)
	run "$UBLK_FLASH" list --json
	[ "$status" -eq 0 ]
	json_check <<<"$output"
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])["devices"]
assert len(d) == 1, d
e = d[0]
assert sorted(e) == sorted(["device", "image", "mode", "frontend", "dm",
                            "pid", "state", "uptime"]), e
assert e["device"] is None and e["dm"] is None, e
assert e["image"] == sys.argv[2] and e["mode"] == "1m", e
assert e["pid"] == int(sys.argv[3]) and e["state"] == "dead", e
assert e["uptime"] == 0, e' "$output" "$SCRATCH/a.img" "$pid"
	run "$UBLK_FLASH" list -J -o size,state
	[ "$output" = '{"devices":[{"size":67108864,"state":"dead"}]}' ]
}

@test "list --json / -r: an image path with a quote, a backslash and a newline" {
	requires python3
	img=$(printf '%s/we"ird\\na\nme.img' "$SCRATCH")
	"$UBLK_FLASH" create "$img" --size 64M --align odd >/dev/null
	fake_entry q "$img"
	run "$UBLK_FLASH" list --json
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]             # the newline is escaped, not raw
	json_check <<<"$output"
	python3 -c '
import json, sys
e = json.loads(sys.argv[1])["devices"][0]
assert e["image"] == sys.argv[2], (e["image"], sys.argv[2])
assert e["mode"] == "odd", e' "$output" "$img"
	[[ "$output" == *'"image":"'"$SCRATCH"'/we\"ird\\na\nme.img"'* ]]
	# raw table: one line per device, unsafe bytes as \xHH
	run "$UBLK_FLASH" list -r -n -o IMAGE
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "$SCRATCH/we\"ird\\x5cna\\x0ame.img" ]
}

@test "list: an unknown column or an argument is a usage error, exit 2" {
	run "$UBLK_FLASH" list -o DEVICE,BOGUS
	[ "$status" -eq 2 ]
	[ "$output" = "ublk-flash: list: unknown column 'BOGUS' (see list --help)" ]
	run "$UBLK_FLASH" list /dev/loop0
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" list --bogus
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" list --help
	[ "$status" -eq 0 ]
	for c in DEVICE IMAGE MODE SIZE FRONTEND DM PID STATE UPTIME STARTED RUNDIR; do
		[[ "$output" == *" $c "* ]]
	done
}

@test "list as a user who may not read root's entries: says so on stderr, exit 0" {
	requires_root
	requires setpriv
	"$UBLK_FLASH" create "$SCRATCH/a.img" --size 64M --align odd >/dev/null
	fake_entry a "$SCRATCH/a.img"
	chmod 700 "$UBLK_FLASH_RUN_DIR"/img-fake-a
	chmod 755 "$SCRATCH" "$UBLK_FLASH_RUN_DIR"
	run setpriv --reuid=nobody --regid=nogroup --clear-groups "$UBLK_FLASH" list
	[ "$status" -eq 0 ]
	[ "$output" = "ublk-flash: list: 1 entry of $UBLK_FLASH_RUN_DIR not readable by this user (run as root)" ]
}
