#!/usr/bin/env bats
# The crash-replay tools (issue 15) on the host, on a log captured in the guest
# (tests/data/crash-replay): logreplay reads the dm-log-writes format; replaying to every
# FLUSH/FUA point with crash-check.bash finds ext4 clean and every fsynced file exact; a lost
# write (--drop) is caught; logreplay-engine cuts the power at every point through the engine
# and every flushed sector survives.
load ../helpers

DATA=$OCTANT_TOP/tests/data/crash-replay

setup() {
	requires_root
	requires xz losetup mount e2fsck
	LR=$BUILD/tests/vm/logreplay LRE=$BUILD/tests/vm/logreplay-engine
	[ -x "$LR" ] && [ -x "$LRE" ] && [ -x "$BUILD/tests/vm/fsync-workload" ] ||
		skip "logreplay tools not built"
	grep -qw ext4 /proc/filesystems || modprobe ext4 2>/dev/null || skip "no ext4 in this kernel"
	W=$(mktemp -d /dev/shm/crash-replay-bats.XXXXXX)
	xz -dc "$DATA/ext4-odd.log.xz" >"$W/ext4-odd.log"
	cp "$DATA/ext4-odd.meta" "$W/"
}

teardown() {
	umount "$W/mnt" 2>/dev/null || true
	rm -rf "$W"
}

# replay [ARGS...]: the fixture onto a fresh file, crash-check.bash at every point.
replay() {
	local ops seed sectors
	read -r ops seed sectors <"$W/ext4-odd.meta"
	mkdir -p "$W/mnt"
	rm -f "$W/R"; truncate -s $((sectors * 512)) "$W/R"
	CR_FS=ext4 CR_DEV=$W/R CR_SNAP=copy CR_COPY=$W/copy CR_MNT=$W/mnt \
	CR_WL=$BUILD/tests/vm/fsync-workload CR_OPS=$ops CR_SEED=$seed \
		"$LR" replay "$W/ext4-odd.log" "$W/R" --after-mark mkfs-done \
		--check "bash $OCTANT_TOP/tests/vm/crash-check.bash" "$@"
}

@test "logreplay info reads the dm-log-writes log" {
	run "$LR" info "$W/ext4-odd.log"
	[ "$status" -eq 0 ]
	[ "$output" = "entries 210 sectorsize 512 writes 190 discards 0 flush 14 fua 21 marks 6 points 25 bytes 9303552" ]
	run "$LR" list "$W/ext4-odd.log"
	[[ "$output" == *"142 0 0 MARK setup"* ]]
	[[ "$output" == *"166 279042 494 WRITE"* ]]
}

@test "logreplay refuses a file that is not a log" {
	head -c 4096 /dev/zero >"$W/zero"
	run "$LR" info "$W/zero"
	[ "$status" -eq 3 ]
	[[ "$output" == *"not a dm-log-writes log"* ]]
}

@test "replay to every FLUSH/FUA point: e2fsck clean, every fsynced file exact" {
	run replay
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"logreplay: entries 210 replayed 210 checkpoints 25 checked "*" failures 0"* ]]
	checked=$(sed -n 's/.* checked \([0-9]*\) .*/\1/p' <<<"$output")
	[ "$checked" -ge 20 ]
}

@test "a lost write (op-2's file data) is caught at the points after its mark" {
	run replay --drop 166
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"(mark op-2): files: at op-2: "*"content differs"* ]]
}

@test "logreplay-engine: a power cut at every point keeps every flushed sector" {
	run "$LRE" "$W/ext4-odd.log" --align odd --seed 7
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "logreplay-engine: entries 210 points 25 cut 25 failures 0" ]
}
