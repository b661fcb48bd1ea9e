#!/usr/bin/env bash
# The check logreplay runs at each FLUSH/FUA point of a crash-consistency replay
# (tests/vm/guest/crash-replay.sh in the guest, tests/vm/crash-replay-host.sh on the host):
# a throw-away copy of the replay target is mounted (the filesystem's journal/log recovery
# runs), every file made durable before the last mark must read back exactly
# (fsync-workload verify), then after umount the checker must be clean (e2fsck -fn,
# btrfs check --readonly).  The replay target itself is never written but by the replay.
# Env: CR_FS (ext4|btrfs), CR_DEV (the replay target), CR_SNAP (dm: a dm-snapshot of CR_DEV
# on the block device CR_COW, in the guest; copy: a sparse copy of the file CR_DEV to
# CR_COPY on a loop device, on the host), CR_MNT, CR_WL (fsync-workload), CR_OPS, CR_SEED,
# CR_TRACE (non-empty: one timing line per point); from logreplay: LR_INDEX, LR_MARK, LR_POINT.
# Exit 0 clean, 1 with one "# at entry ..." line saying what failed.
# before mkfs-done the filesystem is not made yet; from there on fsck must pass (and the files
# verify: none before "setup")
case "$LR_MARK" in mkfs-done|setup|op-*|dm-log-writes-end) ;; *) exit 0 ;; esac
up() { cut -d' ' -f1 /proc/uptime; }
t0=$(up) dev='' loop=''
release() {
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	[ "$CR_SNAP" = dm ] && dmsetup remove cr-snap >/dev/null 2>&1
	[ "$CR_SNAP" = copy ] && rm -f "$CR_COPY"
}
fail() { echo "# at entry $LR_INDEX (mark $LR_MARK): $*"; umount "$CR_MNT" 2>/dev/null; release; exit 1; }
if [ "$CR_SNAP" = dm ]; then
	sz=${CR_SECTORS:-$(blockdev --getsz "$CR_DEV")}
	dmsetup create cr-snap --table "0 $sz snapshot $CR_DEV $CR_COW N 8" >/dev/null 2>&1 ||
		fail "dmsetup create snapshot failed"
	dev=/dev/mapper/cr-snap
else
	cp --sparse=always "$CR_DEV" "$CR_COPY" || fail "copy of the replay target"
	loop=$(losetup -f --show "$CR_COPY") || fail "losetup"
	dev=$loop
fi
t1=$(up)
out=$(mount -t "$CR_FS" "$dev" "$CR_MNT" 2>&1) || fail "mount: $out"
out=$("$CR_WL" verify "$CR_MNT" --ops "$CR_OPS" --seed "$CR_SEED" --at "$LR_MARK" 2>&1)
vrc=$?
umount "$CR_MNT" || fail "umount"
[ $vrc -eq 0 ] || fail "files: $(head -n 5 <<<"$out")"
t2=$(up)
if [ "$CR_FS" = ext4 ]; then
	out=$(e2fsck -fn "$dev" 2>&1) || fail "e2fsck: $(tail -n 5 <<<"$out")"
else
	# --force: skip the mount check (the copy is unmounted; a stale FUSE mount elsewhere on the
	# machine otherwise fails it with ENOTCONN)
	out=$(btrfs check --readonly --force "$dev" 2>&1) || fail "btrfs check: $(tail -n 5 <<<"$out")"
fi
release
[ -n "${CR_TRACE:-}" ] && awk -v p="$LR_POINT" -v e="$LR_INDEX" -v m="$LR_MARK" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$(up)" \
	'BEGIN { printf "# point %s entry %s mark %s: mount+verify %.2fs, fsck %.2fs, all %.2fs\n", p, e, m, c - b, d - c, d - a }'
exit 0
