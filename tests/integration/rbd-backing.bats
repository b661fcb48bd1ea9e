#!/usr/bin/env bats
# The medium on Ceph: an octant image whose bytes live in an RBD image of a
# real one-node cluster (tests/ceph-lib.bash: a monitor, a manager and a
# bluestore OSD on 127.0.0.1, started here and stopped by pid), served over
# FUSE + loop with real ext4.  ublk serving is the same engine and backing
# under another frontend; it runs in the qemu guest, which has no Ceph.
load ../helpers
load fuse-lib
load ../ceph-lib

setup_file() {
	[ "$(id -u)" -eq 0 ] || skip "requires root"
	ceph_have || skip "requires ceph-mon ceph-mgr ceph-osd ceph-common (mk/deps.sh check)"
	local d=$BATS_FILE_TMPDIR/ceph t0=$SECONDS
	mkdir -p "$d/osd"
	# the OSD's 4 GiB sparse bluestore file in memory: fast, and it keeps
	# its data over an OSD kill -9 (memstore would not)
	mount -t tmpfs -o size=4500m tmpfs "$d/osd" || return 1
	echo "# load $(cut -d' ' -f1-3 /proc/loadavg)" >&3
	ceph_up "$d" "$d/osd" || { cat "$d/log/setup.log" >&3; return 1; }
	echo "# ceph: up in $((SECONDS - t0)) s" >&3
	export CEPH_DIR CEPH_CONF
}

teardown_file() {
	local t0=$SECONDS
	[ -n "${CEPH_DIR:-}" ] && ceph_down
	mountpoint -q "$BATS_FILE_TMPDIR/ceph/osd" && umount "$BATS_FILE_TMPDIR/ceph/osd"
	echo "# ceph: down in $((SECONDS - t0)) s" >&3
}

setup() {
	fuse_setup
	requires mkfs.ext4 e2fsck
	IMG=rbd://rbd/t$BATS_TEST_NUMBER
	# a lone OSD's death is noticed by nobody: a test that killed it and
	# failed leaves it down; start it for the next
	[ -n "$(ceph_pid osd.0)" ] && kill -0 "$(ceph_pid osd.0)" 2>/dev/null || ceph_osd_start
}

teardown() {
	fuse_teardown
	rbd rm -q "rbd/t$BATS_TEST_NUMBER" >/dev/null 2>&1 || true
}

files_make() { fuse_files_make "$@"; }
check_files() { fuse_check_files "$IMG"; }

# serve_pid: the pid of $IMG's server (the registry names it by the URI).
serve_pid() {
	local d
	for d in "$UBLK_FLASH_RUN_DIR"/img-*; do
		[ "$(cat "$d/image" 2>/dev/null)" = "$IMG" ] && cat "$d/pid" && return 0
	done
	return 1
}

kill9_server() {
	local pid
	pid=$(serve_pid)
	kill -9 "$pid"
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	umount -l "$SCRATCH/m" 2>/dev/null || true
	"$UBLK_FLASH" stop "$IMG" >/dev/null 2>&1 || true   # a dead server's leftovers
}

# make_fs: create $IMG (it makes the RBD image), serve, ext4, 30 files synced.
make_fs() {
	run "$UBLK_FLASH" create "$IMG" --size 64M --align odd
	echo "$output"
	[ "$status" -eq 0 ] || return 1
	fuse_serve "$IMG"
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	files_make "$SCRATCH/m" 30
	sync -f "$SCRATCH/m"
}

@test "rbd backing: create makes the RBD image; info, serve, ext4, stats, list, stop, fsck; serve again: intact" {
	make_fs
	rbd info "rbd/t$BATS_TEST_NUMBER" >/dev/null           # made by create
	umount "$SCRATCH/m"
	run "$UBLK_FLASH" stats "$IMG"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$UBLK_FLASH" list -n -r -o IMAGE,DEVICE,STATE
	echo "$output"
	[ "$output" = "$IMG $DEV running" ]
	"$UBLK_FLASH" stop "$IMG"
	run "$UBLK_FLASH" info "$IMG"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"odd"* ]]
	run "$UBLK_FLASH" fsck "$IMG"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "clean: "* ]]
	# an image that holds an octant image is not overwritten without --force
	run "$UBLK_FLASH" create "$IMG" --size 64M --align odd
	[ "$status" -eq 5 ]
	check_files
}

@test "rbd backing: the RBD exclusive lock is the image lock: a second server anywhere exits 5 naming the holder" {
	run "$UBLK_FLASH" create "$IMG" --size 64M --align 1m
	[ "$status" -eq 0 ]
	fuse_serve "$IMG"
	local pid
	pid=$(serve_pid)
	# another host: its own run registry, so only the cluster's lock can tell
	run env UBLK_FLASH_RUN_DIR="$SCRATCH/host2" "$UBLK_FLASH" serve "$IMG" --frontend fuse
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"locked by client."*"pid $pid on $(hostname)"* ]]
	run env UBLK_FLASH_RUN_DIR="$SCRATCH/host2" "$UBLK_FLASH" create "$IMG" --size 64M --align 1m --force
	echo "$output"
	[ "$status" -eq 5 ]
	run env UBLK_FLASH_RUN_DIR="$SCRATCH/host2" "$UBLK_FLASH" fsck --repair "$IMG"
	echo "$output"
	[ "$status" -eq 5 ]
	# the writer is unharmed: its lock was never handed over
	dd if=/dev/urandom of="$SCRATCH/A" bs=1M count=2 status=none
	dd if="$SCRATCH/A" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	"$UBLK_FLASH" stop "$IMG"
	# stopped: the other host serves it
	DEV=$(env UBLK_FLASH_RUN_DIR="$SCRATCH/host2" "$UBLK_FLASH" serve "$IMG" --frontend fuse)
	dd if="$DEV" bs=1M count=2 iflag=direct status=none | cmp - "$SCRATCH/A"
	env UBLK_FLASH_RUN_DIR="$SCRATCH/host2" "$UBLK_FLASH" stop "$IMG"
}

@test "rbd backing: kill -9 of ublk-flash: the next server breaks the dead one's lock; every fsynced file survives" {
	make_fs
	kill9_server
	local t0=$SECONDS
	check_files               # rolls forward; the lock is broken first
	echo "# restart with the lock broken: $((SECONDS - t0)) s" >&3
	run "$UBLK_FLASH" fsck "$IMG"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "rbd backing: kill -9 of the OSD under a mounted ext4: I/O resumes when it is back; every fsynced file survives" {
	make_fs
	ceph_osd_kill -9
	ceph_osd_start
	# the same server and mount go on
	files_make "$SCRATCH/m/more" 10
	sync -f "$SCRATCH/m"
	(cd "$SCRATCH/m" && sha256sum d/* more/d/*) >"$SCRATCH/sums"
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$IMG"
	check_files
}

@test "rbd backing: kill -9 of ublk-flash and of the OSD: every fsynced file survives" {
	make_fs
	ceph_stop_pid osd.0 -9
	kill9_server
	ceph osd down 0 >/dev/null 2>&1 || true
	ceph_osd_start
	check_files
}

@test "rbd backing: a dead cluster fails I/O with EIO after timeout=, never hangs; a missing monitor is one line" {
	run "$UBLK_FLASH" create "$IMG" --size 64M --align 1m
	[ "$status" -eq 0 ]
	fuse_serve "$IMG?timeout=5"
	dd if=/dev/urandom of="$SCRATCH/A" bs=1M count=2 status=none
	dd if="$SCRATCH/A" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	ceph_osd_kill -9
	local t0=$SECONDS
	run timeout 90 dd if="$DEV" of=/dev/null bs=1M count=2 iflag=direct status=none
	echo "$output ($((SECONDS - t0)) s)"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]   # failed, not hung
	[[ "$output" == *"Input/output error"* ]]
	[ $((SECONDS - t0)) -lt 60 ]
	ceph_osd_start
	# back: it serves again; what was written is there
	dd if="$DEV" bs=1M count=2 iflag=direct status=none | cmp - "$SCRATCH/A"
	"$UBLK_FLASH" stop "$IMG?timeout=5"
	# no monitor at all: one clear line after timeout= seconds
	t0=$SECONDS
	run "$UBLK_FLASH" serve "$IMG?mon_host=127.0.0.1:9&timeout=3" --frontend fuse
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"cannot connect to the Ceph cluster"* ]]
	[ $((SECONDS - t0)) -lt 30 ]
}

@test "rbd backing: a medium snapshot (rbd snap) pins a state: read-only serve of IMG@SNAP, rollback" {
	make_fs
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$IMG"
	rbd snap create --no-progress "rbd/t$BATS_TEST_NUMBER@pinned"
	cp "$SCRATCH/sums" "$SCRATCH/sums.pinned"
	fuse_serve "$IMG"
	mount "$DEV" "$SCRATCH/m"
	rm -rf "$SCRATCH/m/d"
	files_make "$SCRATCH/m" 5
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$IMG"
	# the snapshot, read-only, while the image has moved on
	run "$UBLK_FLASH" serve "$IMG@pinned" --frontend fuse
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"a snapshot is read-only"* ]]
	DEV=$("$UBLK_FLASH" serve "$IMG@pinned" --frontend fuse --read-only)
	mount -o ro,noload "$DEV" "$SCRATCH/m"
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums.pinned")
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$IMG@pinned"
	run "$UBLK_FLASH" fsck "$IMG@pinned"
	[ "$status" -eq 0 ]
	rbd snap rollback --no-progress "rbd/t$BATS_TEST_NUMBER@pinned"
	cp "$SCRATCH/sums.pinned" "$SCRATCH/sums"
	check_files
	rbd snap purge --no-progress "rbd/t$BATS_TEST_NUMBER" >/dev/null 2>&1 || true
}

@test "rbd backing: make compare --aged --medium rbd:// pins the aged state; the next run starts from it without re-aging" {
	requires jq fio fstrim
	[ -x "$ALIGNPART" ] || skip "requires $ALIGNPART (not built)"
	local args=(--aged --cells ext4:1m:2048:none:off --size 128M --max-windows 3 --min-windows 1
		    --fill 10 --no-plot --medium rbd://rbd)
	run "$OCTANT_TOP/tests/compare/run" "${args[@]}" --out "$SCRATCH/aged1"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$OCTANT_TOP/tests/compare/run" "${args[@]}" --out "$SCRATCH/aged2"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"from the state pinned"* ]]
	local r1=$SCRATCH/aged1/aged.json r2=$SCRATCH/aged2/aged.json s1 s2
	[ "$(jq -r '.results[0].pinned_state' "$r1")" = made ]
	[ "$(jq -r '.results[0].pinned_state' "$r2")" = used ]
	s1=$(jq '.results[0].cell_s' "$r1") s2=$(jq '.results[0].cell_s' "$r2")
	echo "# compare --aged cell: $s1 s aging, $s2 s from the pinned state" >&3
	[ "$s2" -lt "$s1" ]
	# the same aged state and the same measured window: the same device WA
	jq -e -n --slurpfile a "$r1" --slurpfile b "$r2" \
		'($a[0].results[0].device_wa - $b[0].results[0].device_wa) | fabs < 0.05' >/dev/null
	run "$OCTANT_TOP/tests/compare/run" --aged --re-age --cells ext4:1m:2048:none:off
	[ "$status" -eq 2 ]                    # --re-age needs --medium
	local img
	for img in $(rbd ls rbd | grep '^aged-'); do
		rbd snap purge --no-progress "rbd/$img" >/dev/null 2>&1
		rbd rm --no-progress "rbd/$img" >/dev/null 2>&1
		rados -p rbd rm "$img.state" >/dev/null 2>&1 || true
	done
}
