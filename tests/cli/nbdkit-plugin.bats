#!/usr/bin/env bats
# nbdkit-octant-plugin: the engine served over NBD by nbdkit, driven by a
# real NBD client (libnbd's nbdinfo, and tests/nbd/nbd-exercise, which
# keeps a shadow copy).  Randomised: OCTANT_SEED replays a run.
load ../helpers
load ../nbd-lib

PLUGIN=$BUILD/nbdkit-octant-plugin.so
EXERCISE=$BUILD/tests/nbd-exercise

setup() {
	requires nbdkit nbdinfo python3
	[ -f "$PLUGIN" ] || skip "plugin not built ($PLUGIN)"
	[ -x "$EXERCISE" ] || skip "nbd-exercise not built"
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	SOCK=$SCRATCH/nbd.sock
	URI="nbd+unix:///?socket=$SOCK"
	: "${OCTANT_SEED:=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
	export OCTANT_SEED
	echo "seed $OCTANT_SEED (replay: OCTANT_SEED=$OCTANT_SEED)"
}

teardown() {
	nbd_down -9
	# any other nbdkit a test started (-P SCRATCH/NAME.pid): a daemon left
	# running would keep bats waiting on the descriptors it inherited
	local p
	for p in "${SCRATCH:-/nonexistent}"/*.pid; do
		[ -f "$p" ] && nbd_stop "$p" -9
	done
	teardown_scratch
}

# nbd_up ARGS...: nbdkit with the plugin on $SOCK.  nbd_down [SIGNAL].
nbd_up() { nbd_start "$SOCK" "$SCRATCH/pid" "$PLUGIN" "$@"; }
nbd_down() { [ -n "${SCRATCH:-}" ] && nbd_stop "$SCRATCH/pid" "${1:--TERM}"; }

mkimg() { # MODE
	"$UBLK_FLASH" create "$SCRATCH/f.img" --size 48M --align "$1" >/dev/null
}

@test "nbdkit octant: block size constraints and capabilities (odd, 1m)" {
	local m
	for m in odd 1m; do
		mkimg $m
		nbd_up "$SCRATCH/f.img" align=$m
		nbdinfo --json "$URI" > "$SCRATCH/info.json"
		python3 - "$SCRATCH/info.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["exports"][0]
want = {"block_size_minimum": 512, "block_size_preferred": 4096,
        "export-size": 48 << 20, "can_flush": True, "can_fua": True,
        "can_trim": True, "can_zero": True, "can_fast_zero": True,
        "can_multi_conn": True, "is_read_only": False}
bad = {k: (e.get(k), v) for k, v in want.items() if e.get(k) != v}
assert not bad, bad
PY
		nbd_down
		rm -f "$SCRATCH/f.img"
	done
}

@test "nbdkit octant: every write, zero and trim reads back, after a clean restart too" {
	mkimg odd
	nbd_up "$SCRATCH/f.img"
	exercise_round "$URI" 600 "$SCRATCH/shadow"
	nbd_down
	run "$UBLK_FLASH" fsck "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -eq 0 ]
	nbd_up "$SCRATCH/f.img"
	run "$EXERCISE" "$URI" verify "$SCRATCH/shadow"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbdkit octant: a set of 2 parts (64K stripes): every write, zero and trim reads back, after a restart too" {
	"$UBLK_FLASH" create "$SCRATCH/f.img" --size 48M --align odd --parts 2 \
		--stripe 64K >/dev/null
	nbd_up "$SCRATCH/f.img"
	exercise_round "$URI" 600 "$SCRATCH/shadow"
	nbd_down
	run "$UBLK_FLASH" fsck "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"part 1:"* ]]
	nbd_up "$SCRATCH/f.img"
	run "$EXERCISE" "$URI" verify "$SCRATCH/shadow"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbdkit octant: kill -9 of nbdkit loses no flushed data (3 rounds)" {
	mkimg 1m
	for round in 1 2 3; do
		nbd_up "$SCRATCH/f.img"
		# each round continues the shadow and ends with a FLUSH
		OCTANT_SEED=$((OCTANT_SEED + round)) \
			run "$EXERCISE" "$URI" write 300 "$SCRATCH/shadow"
		echo "round $round: $output"
		[ "$status" -eq 0 ]
		nbd_down -9
		nbd_up "$SCRATCH/f.img"      # rolls forward
		run "$EXERCISE" "$URI" verify "$SCRATCH/shadow"
		echo "round $round after kill -9: $output"
		[ "$status" -eq 0 ]
		nbd_down -9
	done
	run "$UBLK_FLASH" fsck "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

# A kill -9 keeps the page cache, so it cannot tell a FLUSH that reached
# the engine from one that did not; the engine's own counters can (the
# power-cut semantics behind them are the engine's tests: ftl-powercut).
@test "nbdkit octant: NBD FLUSH and FUA reach the engine as flush and FUA" {
	mkimg 1m
	nbd_up "$SCRATCH/f.img"
	run "$EXERCISE" "$URI" fua-flush 25
	[ "$status" -eq 0 ]
	nbd_down
	run "$UBLK_FLASH" stats "$SCRATCH/f.img" --json
	python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["host_fua"] >= 25 and s["host_flushes"] >= 25, (s["host_fua"], s["host_flushes"])' "$output"
}

@test "nbdkit octant: an image is served by nbdkit or ublk-flash, never both" {
	mkimg 1m
	nbd_up "$SCRATCH/f.img"
	run "$UBLK_FLASH" serve "$SCRATCH/f.img" --frontend fuse
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"nbdkit"* ]]
	run "$UBLK_FLASH" create "$SCRATCH/f.img" --size 48M --align 1m --force
	echo "$output"
	[ "$status" -eq 5 ]
	# a second nbdkit on the same image fails at start, before forking
	run nbdkit -U "$SCRATCH/two.sock" "$PLUGIN" "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"in use"* ]]
	[ ! -S "$SCRATCH/two.sock" ]
}

@test "nbdkit octant: readonly=true holds the shared image lock (no create --force, fsck --repair, read-write nbdkit meanwhile)" {
	mkimg 1m
	local before
	before=$(sha256sum < "$SCRATCH/f.img")
	nbd_up "$SCRATCH/f.img" readonly=true
	run "$UBLK_FLASH" create "$SCRATCH/f.img" --size 48M --align odd --force
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"(nbdkit)"* ]]
	run "$UBLK_FLASH" fsck --repair "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"(nbdkit)"* ]]
	# a read-write nbdkit fails at start; another reader shares the lock
	run nbdkit -U "$SCRATCH/rw.sock" -P "$SCRATCH/rw.pid" "$PLUGIN" "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"in use"* ]]
	[ ! -S "$SCRATCH/rw.sock" ]
	nbd_start "$SCRATCH/ro2.sock" "$SCRATCH/ro2.pid" "$PLUGIN" "$SCRATCH/f.img" readonly=true
	nbd_stop "$SCRATCH/ro2.pid"
	run "$EXERCISE" "$URI" expect-error
	[ "$status" -eq 0 ]
	nbd_down
	[ "$(sha256sum < "$SCRATCH/f.img")" = "$before" ]
	# once it is gone the image is free again
	run "$UBLK_FLASH" fsck --repair "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbdkit octant: of two nbdkit started together on one image exactly one exits 0 (20 pairs)" {
	mkimg 1m
	local r ra rb a b w p pid i
	for r in $(seq 20); do
		nbdkit -U "$SCRATCH/a.sock" -P "$SCRATCH/a.pid" "$PLUGIN" "$SCRATCH/f.img" 2>"$SCRATCH/a.err" & a=$!
		nbdkit -U "$SCRATCH/b.sock" -P "$SCRATCH/b.pid" "$PLUGIN" "$SCRATCH/f.img" 2>"$SCRATCH/b.err" & b=$!
		ra=0; wait $a || ra=$?
		rb=0; wait $b || rb=$?
		echo "round $r: exit $ra $rb"
		# kill -9 whichever started (its pid file comes after the fork)
		for w in "a $ra" "b $rb"; do
			set -- $w
			[ "$2" -eq 0 ] || continue
			p=$SCRATCH/$1.pid
			for i in $(seq 100); do [ -s "$p" ] && break; sleep 0.02; done
			pid=$(cat "$p")
			kill -9 "$pid"
			# gone or a zombie (holding no lock): init may reap it late
			for i in $(seq 250); do
				[ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || echo Z)" = Z ] && break
				sleep 0.02
			done
			rm -f "$p"
		done
		rm -f "$SCRATCH"/?.sock
		# exactly one started; the loser failed before it daemonized,
		# on its own stderr
		[ $((ra == 0)) -ne $((rb == 0)) ] || { cat "$SCRATCH"/?.err; false; }
		grep -q "in use" "$SCRATCH/$([ "$ra" -eq 0 ] && echo b || echo a).err"
	done
	run "$UBLK_FLASH" fsck "$SCRATCH/f.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbdkit octant: bad parameters get one clear line and touch nothing" {
	mkimg odd
	local before
	before=$(sha256sum < "$SCRATCH/f.img")
	run nbdkit -U "$SOCK" "$PLUGIN" "$SCRATCH/f.img" align=1m
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"odd mode, not 1m"* ]]
	run nbdkit -U "$SOCK" "$PLUGIN" "$SCRATCH/f.img" align=2m
	[ "$status" -ne 0 ]
	[[ "$output" == *"expected odd or 1m"* ]]
	run nbdkit -U "$SOCK" "$PLUGIN" "$SCRATCH/f.img" colour=red
	[ "$status" -ne 0 ]
	[[ "$output" == *"unknown parameter 'colour'"* ]]
	run nbdkit -U "$SOCK" "$PLUGIN" "$SCRATCH/f.img" faults=program=2
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"faults:"* ]]
	head -c 1M /dev/urandom > "$SCRATCH/junk"
	run nbdkit -U "$SOCK" "$PLUGIN" "$SCRATCH/junk"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not a valid octant flash image"* ]]
	run nbdkit -U "$SOCK" "$PLUGIN" "$SCRATCH/missing.img"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file"* ]]
	[ "$(sha256sum < "$SCRATCH/f.img")" = "$before" ]
	[ ! -S "$SOCK" ]
}

@test "nbdkit octant: size= creates the image; readonly=true never writes it" {
	nbd_up "$SCRATCH/new.img" size=32M align=odd
	run "$UBLK_FLASH" info "$SCRATCH/new.img"
	[[ "$output" == *"odd"* ]]
	run "$EXERCISE" "$URI" write 100 "$SCRATCH/shadow"
	[ "$status" -eq 0 ]
	nbd_down
	local before
	before=$(sha256sum < "$SCRATCH/new.img")
	nbd_up "$SCRATCH/new.img" readonly=true
	run "$EXERCISE" "$URI" verify "$SCRATCH/shadow"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$EXERCISE" "$URI" expect-error
	echo "$output"
	[ "$status" -eq 0 ]
	nbd_down
	[ "$(sha256sum < "$SCRATCH/new.img")" = "$before" ]
}

@test "nbdkit octant: on a failing medium (faults=) flushed data still reads back" {
	# ~3600 programs at 0.3 %: ~11 grown bad blocks expected (none with
	# p < 1e-4), well under the 29 the spare area of 128M absorbs
	"$UBLK_FLASH" create "$SCRATCH/f.img" --size 128M --align 1m >/dev/null
	nbd_up "$SCRATCH/f.img" "faults=program=0.003,seed=$OCTANT_SEED"
	exercise_round "$URI" 300 "$SCRATCH/shadow"
	nbd_down
	run "$UBLK_FLASH" stats "$SCRATCH/f.img" --json
	echo "$output"
	python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["bad_blocks_grown"] > 0, s["bad_blocks_grown"]' "$output"
}

@test "nbdkit octant: the plugin names itself and documents its parameters" {
	run nbdkit "$PLUGIN" --dump-plugin
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"name=octant"* ]]
	[[ "$output" == *"thread_model=parallel"* ]]
	run nbdkit "$PLUGIN" --help
	for p in align= size= faults= shift= scan= readonly=; do
		[[ "$output" == *"$p"* ]] || { echo "no $p in --help"; false; }
		grep -q "\`${p}" "$OCTANT_TOP/docs/network.md" || { echo "no $p in docs/network.md"; false; }
	done
}

@test "nbdkit octant: shift=off serves an odd image unshifted (natural alignment over NBD)" {
	mkimg odd
	nbd_up "$SCRATCH/f.img" shift=off
	exercise_round "$URI" 100 "$SCRATCH/shadow"
	requires nbdcopy
	nbdcopy "$URI" "$SCRATCH/unshifted.raw"
	nbd_down
	# the same medium in the shifted (odd) view: its sector 0 is the
	# unshifted view's byte 512
	nbd_up "$SCRATCH/f.img"
	nbdcopy "$URI" "$SCRATCH/shifted.raw"
	[ "$(stat -c %s "$SCRATCH/shifted.raw")" -eq $((48 << 20)) ]
	[ "$(stat -c %s "$SCRATCH/unshifted.raw")" -ge $(((48 << 20) + 512)) ]
	cmp -n $((48 << 20)) -i 512:0 "$SCRATCH/unshifted.raw" "$SCRATCH/shifted.raw"
	run cmp -s -n $((48 << 20)) "$SCRATCH/unshifted.raw" "$SCRATCH/shifted.raw"
	[ "$status" -ne 0 ]
}
