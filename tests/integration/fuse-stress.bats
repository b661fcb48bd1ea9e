#!/usr/bin/env bats
# Stress (issue 11): three images are served, stopped (by device) and
# served again concurrently; one server is killed now and then, leaving a
# dead entry (and its loop device) that the next serve of any image, or
# `stop IMG`, cleans, or whose loop device is detached by hand, freeing a
# number someone else gets next while the entry still names it; meanwhile
# a plain loop device is attached and detached over and over.  `stop DEV` must only ever stop the server on DEV: every
# worker's stop stops its own server (exit 0, its pid gone), `stop` of the
# plain loop is refused (exit 3) and leaves it attached and intact.
# Random sleeps and crash rounds: seed printed, OCTANT_SEED replays.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() {
	local p
	for p in ${pids:-} ${RPID:-}; do kill "$p" 2>/dev/null || true; done
	for p in ${pids:-} ${RPID:-}; do wait "$p" 2>/dev/null || true; done
	local d
	for d in "${UBLK_FLASH_RUN_DIR:-/nonexistent}"/img-*; do
		[ -f "$d/pid" ] && kill -9 "$(cat "$d/pid")" 2>/dev/null || true
	done
	fuse_teardown
}

fail() { echo "$*" >> "$SCRATCH/fail"; }

# entry_dir IMG: the image's registry folder.
entry_dir() {
	local d
	for d in "$UBLK_FLASH_RUN_DIR"/img-*/; do
		[ "$(cat "$d/image" 2>/dev/null)" = "$(realpath "$1")" ] &&
			echo "${d%/}" && return 0
	done
	return 1
}

# recycler: attach the plain file, check it, try to stop it, detach; again.
recycler() {
	local d n=0 out rc
	while [ ! -e "$SCRATCH/done" ]; do
		d=$(losetup -f --show "$SCRATCH/plain.raw" 2>/dev/null) || continue
		n=$((n + 1))
		rc=0
		out=$("$UBLK_FLASH" stop "$d" 2>&1) || rc=$?
		[ "$rc" -eq 3 ] || fail "recycler: stop $d (plain loop): exit $rc, not 3: $out"
		[ "$(losetup -n -O BACK-FILE "$d")" = "$SCRATCH/plain.raw" ] ||
			fail "recycler: $d lost its backing file after stop"
		cmp -s "$SCRATCH/plain.raw" "$d" || fail "recycler: $d data changed"
		losetup -d "$d" || fail "recycler: cannot detach $d"
		sleep "0.0$((RANDOM % 5))"
	done
	echo "$n" > "$SCRATCH/recycled"
}

# worker W ROUNDS: serve, check, stop by device; W=0 crashes on some rounds.
worker() {
	local w=$1 rounds=$2 img=$SCRATCH/i$1.img r dev pid out tag rc dir
	RANDOM=$(( ${SEED} + w ))
	tag=$(printf 'octant-stress-image-%d' "$w")
	for r in $(seq "$rounds"); do
		dev=$("$UBLK_FLASH" serve "$img" --frontend fuse 2>>"$SCRATCH/w$w.err") ||
			{ fail "w$w r$r: serve failed"; return; }
		pid=$(fuse_pid "$img") || { fail "w$w r$r: no pid"; return; }
		printf '%-4096s' "$tag" | dd of="$dev" bs=4k count=1 oflag=direct \
			conv=fsync status=none 2>/dev/null || fail "w$w r$r: write $dev"
		sleep "0.$((RANDOM % 4))"
		# Still mine: my server runs and my device holds my tag.
		kill -0 "$pid" 2>/dev/null || { fail "w$w r$r: my server $pid died"; return; }
		[ "$(dd if="$dev" bs=4k count=1 iflag=direct status=none | tr -d ' ')" = "$tag" ] ||
			fail "w$w r$r: $dev does not hold my data"
		if [ "$w" = 0 ] && [ $((RANDOM % 2)) = 0 ]; then
			# Its dead entry names $dev until a serve sweeps it or
			# `stop IMG` cleans it; the number is reused after that.
			kill -9 "$pid"
			while fuse_running "$pid"; do sleep 0.05; done
			dir=$(entry_dir "$img") || dir=
			if [ -n "$dir" ] && [ $((RANDOM % 2)) = 0 ]; then
				# Someone detaches the dead loop device by hand (under
				# the entry's lock, so no sweep races us): the entry
				# now names a free number, soon someone else's.
				flock -n "$dir/lock" sh -c '
					[ "$(losetup -n -O BACK-FILE "$1")" = "$2/mnt/$3" ] &&
					losetup -d "$1"' sh "$dev" "$dir" "$(basename "$img")" 2>/dev/null &&
					echo "w$w r$r: detached $dev by hand" >> "$SCRATCH/log" || true
				sleep 1     # (our own next serve would clean the entry)
			elif [ $((RANDOM % 2)) = 0 ]; then
				rc=0
				out=$("$UBLK_FLASH" stop "$img" 2>&1) || rc=$?
				# (exit 3 "not served": a serve swept it first)
				[ "$rc" -eq 0 ] || { [ "$rc" -eq 3 ] && [[ "$out" == *"not served"* ]]; } ||
					fail "w$w r$r: stop $img (dead): exit $rc: $out"
			fi
			echo "w$w r$r: crashed on $dev" >> "$SCRATCH/log"
			continue
		fi
		rc=0
		out=$("$UBLK_FLASH" stop "$dev" 2>&1) || rc=$?
		[ "$rc" -eq 0 ] || { fail "w$w r$r: stop $dev: exit $rc: $out"; return; }
		fuse_running "$pid" && { fail "w$w r$r: stop $dev exited 0 but my server $pid runs: $out"; return; }
		echo "w$w r$r: served and stopped $dev" >> "$SCRATCH/log"
	done
}

@test "stress: concurrent serve/stop/re-serve and crashes while a loop device is recycled: stop never touches the wrong device" {
	SEED=${OCTANT_SEED:-$RANDOM}
	echo "seed $SEED (replay: OCTANT_SEED=$SEED)"
	RANDOM=$SEED
	local rounds=6 w
	[ "${OCTANT_LONG:-0}" = 1 ] && rounds=30
	for w in 0 1 2; do fuse_create "i$w" 32M 1m; done
	head -c 8M /dev/urandom > "$SCRATCH/plain.raw"
	: > "$SCRATCH/fail"
	: > "$SCRATCH/log"
	recycler &
	RPID=$!
	pids=
	for w in 0 1 2; do worker "$w" "$rounds" & pids="$pids $!"; done
	for p in $pids; do wait "$p"; done
	touch "$SCRATCH/done"
	wait "$RPID"
	RPID=
	cat "$SCRATCH/log"
	echo "plain loop attached $(cat "$SCRATCH/recycled") times"
	cat "$SCRATCH"/w*.err
	if [ -s "$SCRATCH/fail" ]; then cat "$SCRATCH/fail"; false; fi
	[ "$(grep -c "stopped" "$SCRATCH/log")" -ge 10 ]
	[ "$(cat "$SCRATCH/recycled")" -ge 5 ]
	# Every image is whole: no stop ever cut another server's image.
	for w in 0 1 2; do
		[ -z "$(fuse_pid "$SCRATCH/i$w.img")" ] || "$UBLK_FLASH" stop "$SCRATCH/i$w.img" || true
		run "$UBLK_FLASH" fsck "$SCRATCH/i$w.img"
		echo "i$w: $output"
		[ "$status" -eq 0 ]
	done
}

@test "stop IMG of a dead server while another process holds its entry's lock (a serve sweeping it): waits, then cleans, exit 0" {
	# The stress run above found it (seed 13339): w0's `stop IMG` of its
	# killed server met the lock of another worker's serve sweeping that
	# entry, took it for a live server that would not answer and gave up
	# with exit 3, "nothing signalled".
	local img=$SCRATCH/s.img dir pid hold
	fuse_create s 32M 1m
	"$UBLK_FLASH" serve "$img" --frontend fuse >/dev/null
	pid=$(fuse_pid "$img")
	kill -9 "$pid"
	while fuse_running "$pid"; do sleep 0.05; done
	dir=$(entry_dir "$img")
	flock "$dir/lock" sleep 1.5 &
	hold=$!
	sleep 0.3
	run "$UBLK_FLASH" stop "$img"
	echo "$output"
	wait "$hold"
	[ "$status" -eq 0 ]
	[ -z "$(fuse_pid "$img")" ]
	run "$UBLK_FLASH" fsck "$img"
	[ "$status" -eq 0 ]
}
