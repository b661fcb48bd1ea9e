#!/usr/bin/env bats
# serve --pidfile FILE and --log syslog|stderr|FILE (issue 14): the pidfile
# appears once the device is live and goes at stop, a stale one is
# replaced, a live one refused; log targets; every bad value is one line, a
# documented exit code, and no server, mount, loop device or registry entry
# left; N serve/stop cycles leave nothing in the run folder.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	fuse_create a 64M odd
	IMG=$SCRATCH/a.img
}

teardown() {
	[ -n "${LISTENER:-}" ] && kill "$LISTENER" 2>/dev/null
	wait 2>/dev/null || true
	fuse_teardown
}

# nothing_started: no registry entry, FUSE mount, loop device or server of
# the scratch folder.
# ('! cmd' cannot fail a bats test but on its last line: every check here
# returns 1 itself.)
nothing_started() {
	[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR" 2>/dev/null)" ] || return 1
	grep -q "$SCRATCH/run" /proc/self/mountinfo && return 1
	losetup -l -n -O BACK-FILE | grep -q "$SCRATCH" && return 1
	pgrep -f "ublk-flash serve $IMG" >/dev/null && return 1
	return 0
}

# syslog_listen: a datagram socket standing in for /dev/log, one line per
# datagram in $SYSLOG_OUT; UBLK_FLASH_SYSLOG_SOCKET names it.
syslog_listen() {
	requires python3
	SYSLOG_OUT=$SCRATCH/syslog.out
	dgram_listen "$SCRATCH/log.sock" "$SYSLOG_OUT"
	export UBLK_FLASH_SYSLOG_SOCKET=$SCRATCH/log.sock
}

# wait_line FILE PATTERN: up to 5 s for a line matching PATTERN.
wait_line() {
	for _ in $(seq 50); do grep -q -- "$2" "$1" && return 0; sleep 0.1; done
	cat "$1"
	return 1
}

@test "--streams on: the live engine places hot and cold data apart (stats says so); off and the default: not" {
	fuse_create b 256M 1m          # a 64M device has too few spare blocks
	for o in "" "--streams off" "--streams on"; do
		# shellcheck disable=SC2086 # the option and its value
		DEV=$("$UBLK_FLASH" serve "$SCRATCH/b.img" --frontend fuse $o)
		run "$UBLK_FLASH" stats "$DEV" --json
		[ "$status" -eq 0 ]
		want=false; [ "$o" = "--streams on" ] && want=true
		[[ "$output" == *"\"streams\":$want"* ]] || { echo "$o: $output"; false; }
		"$UBLK_FLASH" stop "$DEV"
	done
	nothing_started
}

@test "--pidfile: written once the device is live (the server's pid), removed at stop" {
	DEV=$("$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile "$SCRATCH/s.pid")
	[ -b "$DEV" ]
	[ -f "$SCRATCH/s.pid" ]
	[ "$(cat "$SCRATCH/s.pid")" = "$(fuse_pid "$IMG")" ]
	kill -0 "$(cat "$SCRATCH/s.pid")"
	# no temporary file left beside it
	[ "$(ls "$SCRATCH" | grep -c '^s\.pid')" -eq 1 ]
	"$UBLK_FLASH" stop "$DEV"
	[ ! -e "$SCRATCH/s.pid" ]
	nothing_started
}

@test "--pidfile: a relative path is the caller's folder's (the daemon changes folder)" {
	cd "$SCRATCH"
	DEV=$("$UBLK_FLASH" serve a.img --frontend fuse --pidfile rel.pid)
	[ "$(cat "$SCRATCH/rel.pid")" = "$(fuse_pid "$IMG")" ]
	"$UBLK_FLASH" stop "$DEV"
	[ ! -e "$SCRATCH/rel.pid" ]
}

@test "--pidfile: a stale one (dead pid, garbage) is replaced; a running pid is refused (exit 5)" {
	# a pid that is surely dead: a child that exited
	sh -c 'exit 0' & dead=$!
	wait "$dead"
	echo "$dead" >"$SCRATCH/s.pid"
	DEV=$("$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile "$SCRATCH/s.pid")
	[ "$(cat "$SCRATCH/s.pid")" = "$(fuse_pid "$IMG")" ]
	"$UBLK_FLASH" stop "$DEV"
	echo "not a pid" >"$SCRATCH/s.pid"
	DEV=$("$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile "$SCRATCH/s.pid")
	[ "$(cat "$SCRATCH/s.pid")" = "$(fuse_pid "$IMG")" ]
	"$UBLK_FLASH" stop "$DEV"
	# a running process's pid: refused before anything starts, file kept
	sleep 300 & live=$!
	# (until the forked shell has become sleep: the message names its comm)
	for _ in $(seq 50); do [ "$(cat /proc/$live/comm)" = sleep ] && break; sleep 0.1; done
	echo "$live" >"$SCRATCH/s.pid"
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile "$SCRATCH/s.pid"
	kill "$live"
	echo "$output"
	[ "$status" -eq 5 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"--pidfile $SCRATCH/s.pid: it names pid $live (sleep), which is running"* ]]
	[ "$(cat "$SCRATCH/s.pid")" = "$live" ]
	nothing_started
}

@test "--pidfile errors: missing folder, a folder, no value: one line, exit 2, nothing started" {
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile "$SCRATCH/nodir/s.pid"
	echo "$output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "ublk-flash: serve: --pidfile $SCRATCH/nodir/s.pid: its folder does not exist" ]
	nothing_started
	[ ! -e "$SCRATCH/nodir" ]
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile "$SCRATCH"
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"is a folder, not a file"* ]]
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile "$SCRATCH/a.img/x.pid"
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"its folder is not a folder"* ]]
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --pidfile
	[ "$status" -eq 2 ]
	[ "$output" = "ublk-flash: serve: option '--pidfile' needs a value (try --help)" ]
	# a serve that fails later (not an image) leaves no pidfile either
	head -c 1M /dev/zero >"$SCRATCH/zero"
	run "$UBLK_FLASH" serve "$SCRATCH/zero" --frontend fuse --pidfile "$SCRATCH/z.pid"
	[ "$status" -eq 4 ]
	[ ! -e "$SCRATCH/z.pid" ]
	nothing_started
}

@test "--log FILE: start and stop lines and the server's messages, appended; made 0600" {
	echo "an earlier line" >"$SCRATCH/old.log"
	DEV=$("$UBLK_FLASH" serve "$IMG" --frontend fuse --log "$SCRATCH/old.log")
	pid=$(fuse_pid "$IMG")
	"$UBLK_FLASH" stop "$DEV"
	cat "$SCRATCH/old.log"
	[ "$(head -n1 "$SCRATCH/old.log")" = "an earlier line" ]
	grep -qx "$IMG served on $DEV (pid $pid)" "$SCRATCH/old.log"
	grep -qx "$IMG stopped" "$SCRATCH/old.log"
	# a new file, relative to the caller's folder
	cd "$SCRATCH"
	DEV=$("$UBLK_FLASH" serve a.img --frontend fuse --log ./new.log)
	"$UBLK_FLASH" stop "$DEV"
	[ "$(stat -c %a "$SCRATCH/new.log")" = 600 ]
	grep -q "served on $DEV" "$SCRATCH/new.log"
	nothing_started
}

@test "--log errors: not a target, missing folder, a folder, no syslog: one line, exit 2/3, nothing started" {
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --log sylog
	echo "$output"
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ]
	[ "$output" = "ublk-flash: serve: --log: 'sylog' is not syslog, stderr or a file path (./sylog for a file here)" ]
	[ ! -e sylog ]
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --log "$SCRATCH/nodir/x.log"
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ]
	[ "$output" = "ublk-flash: serve: --log $SCRATCH/nodir/x.log: No such file or directory" ]
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --log "$SCRATCH/"
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ]
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --log "$SCRATCH/."
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"Is a directory"* ]]
	# syslog asked for where there is none: a system error
	run "$UBLK_FLASH" serve "$IMG" --frontend fuse --log syslog
	echo "$output"
	[ "$status" -eq 3 ] && [ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"--log syslog: no syslog socket $SCRATCH/no-syslog"* ]]
	# a serve that fails later removes the log file it made
	head -c 1M /dev/zero >"$SCRATCH/zero"
	run "$UBLK_FLASH" serve "$SCRATCH/zero" --frontend fuse --log "$SCRATCH/z.log"
	[ "$status" -eq 4 ]
	[ ! -e "$SCRATCH/z.log" ]
	nothing_started
}

@test "--log syslog, and the default for a daemon: datagrams to the syslog socket, no log file" {
	syslog_listen
	DEV=$("$UBLK_FLASH" serve "$IMG" --frontend fuse --log syslog)
	pid=$(fuse_pid "$IMG")
	wait_line "$SYSLOG_OUT" "^<30>ublk-flash\[$pid\]: $IMG served on $DEV (pid $pid)\$"
	"$UBLK_FLASH" stop "$DEV"
	wait_line "$SYSLOG_OUT" "^<30>ublk-flash\[$pid\]: $IMG stopped\$"
	# the daemon's warnings (without CAP_SYS_RESOURCE: PR_SET_IO_FLUSHER)
	# arrive as LOG_WARNING (daemon.warning = 28), the "ublk-flash: " prefix
	# dropped (the tag says it)
	[ -z "$(grep "warning:" "$SYSLOG_OUT" | grep -v "^<28>ublk-flash\[$pid\]: warning: ")" ]
	# the default in the background is syslog too: nothing in the run folder
	: >"$SYSLOG_OUT"
	DEV=$("$UBLK_FLASH" serve "$IMG" --frontend fuse)
	pid=$(fuse_pid "$IMG")
	wait_line "$SYSLOG_OUT" "ublk-flash\[$pid\]: $IMG served on $DEV"
	[ -z "$(ls "$UBLK_FLASH_RUN_DIR" | grep '\.log$')" ]
	"$UBLK_FLASH" stop "$DEV"
	wait_line "$SYSLOG_OUT" "ublk-flash\[$pid\]: $IMG stopped"
	nothing_started
}

@test "--foreground: stderr by default; --log FILE takes the messages after the device is live" {
	"$UBLK_FLASH" serve "$IMG" --frontend fuse --foreground --pidfile "$SCRATCH/f.pid" \
		>"$SCRATCH/out" 2>"$SCRATCH/err" &
	main=$!
	for _ in $(seq 100); do [ -s "$SCRATCH/out" ] && break; sleep 0.1; done
	DEV=$(head -n1 "$SCRATCH/out")
	[ -b "$DEV" ]
	[ "$(cat "$SCRATCH/f.pid")" = "$main" ]
	"$UBLK_FLASH" stop "$DEV"
	wait "$main"
	[ ! -e "$SCRATCH/f.pid" ]
	# nothing of the log target's start/stop lines on stderr
	[ -z "$(grep "served on" "$SCRATCH/err")" ]
	"$UBLK_FLASH" serve "$IMG" --frontend fuse --foreground --log "$SCRATCH/f.log" \
		>"$SCRATCH/out" 2>"$SCRATCH/err" &
	main=$!
	for _ in $(seq 100); do [ -s "$SCRATCH/out" ] && break; sleep 0.1; done
	DEV=$(head -n1 "$SCRATCH/out")
	"$UBLK_FLASH" stop "$DEV"
	wait "$main"
	grep -q "$IMG served on $DEV (pid $main)" "$SCRATCH/f.log"
	grep -q "$IMG stopped" "$SCRATCH/f.log"
	[ ! -s "$SCRATCH/err" ]
	nothing_started
}

@test "20 serve/stop cycles (default log, --pidfile, --read-only, syslog) leave nothing behind" {
	n=${OCTANT_CYCLES:-20}
	syslog_listen
	for i in $(seq "$n"); do
		case $((i % 4)) in
		0) opts=() ;;
		1) opts=(--pidfile "$SCRATCH/c.pid") ;;
		2) opts=(--read-only --log "$SCRATCH/c.log") ;;
		3) opts=(--log stderr) ;;
		esac
		DEV=$("$UBLK_FLASH" serve "$IMG" --frontend fuse "${opts[@]}")
		[ -b "$DEV" ]
		"$UBLK_FLASH" stop "$DEV" || { echo "cycle $i: stop failed"; return 1; }
		[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR")" ] ||
			{ echo "cycle $i (${opts[*]}):"; ls -la "$UBLK_FLASH_RUN_DIR"; return 1; }
		[ ! -e "$SCRATCH/c.pid" ]
	done
	nothing_started
	[ "$(ls "$SCRATCH" | grep -c 'c\.pid')" -eq 0 ]
	"$UBLK_FLASH" fsck "$IMG"
}
