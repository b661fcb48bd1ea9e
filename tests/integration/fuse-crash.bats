#!/usr/bin/env bats
# Crash: kill -9 the FUSE server while a writer fsyncs files in a loop;
# clean up the dead loop/FUSE; serve again (the engine rolls forward); the
# filesystem mounts, fsck is clean, and every file whose fsync returned is
# intact.  OCTANT_LONG=1 runs five times as many iterations.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() {
	[ -n "${WPID:-}" ] && kill -9 "$WPID" 2>/dev/null
	fuse_teardown
}

# writer DIR LOG TAG: write+fsync files (and their directory) until an
# error; log "name sha256" only after both fsyncs returned.
writer() {
	local dir=$1 log=$2 tag=$3 i=0 n s tmp=$SCRATCH/w.tmp
	while :; do
		i=$((i + 1))
		n=$(( (RANDOM % 64 + 1) * 1024 + RANDOM % 1000 ))
		head -c "$n" /dev/urandom > "$tmp"
		s=$(sha256sum < "$tmp")
		dd if="$tmp" of="$dir/$tag-$i" bs=64k conv=fsync status=none 2>/dev/null || return 0
		sync "$dir" 2>/dev/null || return 0
		echo "$tag-$i ${s%% *}" >> "$log"
	done
}

verify_all() { # DIR LOG
	local name sum bad=0
	while read -r name sum; do
		if [ "$(sha256sum < "$1/$name" 2>/dev/null)" != "$sum  -" ]; then
			echo "LOST or CHANGED after fsync: $name"
			bad=$((bad + 1))
		fi
	done < "$2"
	echo "verified $(wc -l < "$2") fsynced files, $bad bad"
	[ "$bad" -eq 0 ]
}

crash_loop() { # FS MODE ITERATIONS
	local fs=$1 mode=$2 iters=$3 it img pid log=$SCRATCH/log
	[ "${OCTANT_LONG:-0}" = 1 ] && iters=$((iters * 5))
	fuse_requires_fs "$fs"
	fuse_create crash 256M "$mode"
	img=$SCRATCH/crash.img
	fuse_serve "$img"
	fuse_mkfs "$fs" "$DEV"
	: > "$log"
	for it in $(seq 1 "$iters"); do
		mount "$DEV" "$SCRATCH/m"
		verify_all "$SCRATCH/m" "$log"
		writer "$SCRATCH/m" "$log" "it$it" &
		WPID=$!
		sleep "$(( RANDOM % 10 + 3 ))e-1"
		pid=$(fuse_pid "$img")
		kill -9 "$pid"
		for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		refute kill -0 "$pid" 2>/dev/null
		# The writer sees I/O errors (the FUSE connection is gone) and stops.
		for i in $(seq 100); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$WPID" 2>/dev/null || true
		wait "$WPID" 2>/dev/null || true
		WPID=
		timeout 60 umount "$SCRATCH/m" 2>/dev/null || umount -l "$SCRATCH/m"
		fuse_serve "$img"            # cleans the dead loop + mount, rolls forward
		echo "iteration $it: $(wc -l < "$log") files, mount $(fuse_stat_field "$DEV" last_mount)"
		mount "$DEV" "$SCRATCH/m"    # replays the journal / log tree
		verify_all "$SCRATCH/m" "$log"
		umount "$SCRATCH/m"
		fuse_fsck "$fs" "$DEV"
	done
	"$UBLK_FLASH" stop "$img"
	[ "$(fuse_stat_field "$img" nand_violations)" = 0 ]
}

@test "crash: ext4, odd mode, kill -9 during fsyncs, roll-forward keeps every fsynced file" {
	crash_loop ext4 odd 10
}

@test "crash: ext4, 1m mode, kill -9 during fsyncs, roll-forward keeps every fsynced file" {
	crash_loop ext4 1m 10
}

@test "crash: btrfs, 1m mode, kill -9 during fsyncs, roll-forward keeps every fsynced file" {
	crash_loop btrfs 1m 4
}
