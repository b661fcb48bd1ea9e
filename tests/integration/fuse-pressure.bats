#!/usr/bin/env bats
# Deadlock safety under memory pressure.  A big buffered writer in a small
# memory cgroup makes reclaim wait on writeback of the loop device, which
# only the FUSE server can complete.  It must finish in bounded time with
# the data intact.  Putting the server itself in that cgroup is only safe
# when its threads can be IO flushers (PR_SET_IO_FLUSHER needs
# CAP_SYS_RESOURCE); that case is tested when the capability is there.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
teardown() { fuse_teardown; }

# abort_fuse: never leave a wedged FUSE connection behind a failed test.
abort_fuse() {
	local min
	min=$(awk -v s="$SCRATCH/run" 'index($5, s) == 1 { split($3, a, ":"); print a[2] }' \
		/proc/self/mountinfo)
	[ -n "$min" ] && echo 1 > "/sys/fs/fuse/connections/$min/abort" 2>/dev/null
	return 0
}

has_sys_resource() {
	local eff
	eff=$(awk '/^CapEff/ { print $2 }' /proc/self/status)
	(( (16#$eff >> 24) & 1 ))
}

pressure() { # SERVER_IN_CGROUP
	requires mkfs.ext4
	[ -d /sys/fs/fuse/connections ] || mount -t fusectl none /sys/fs/fuse/connections || true
	fuse_create mem 768M 1m
	fuse_serve "$SCRATCH/mem.img"
	mkfs.ext4 -q -F "$DEV"
	mount "$DEV" "$SCRATCH/m"
	fuse_cgroup_make 96M || skip "no memory cgroup controller"
	[ "$1" = 1 ] && echo "$(fuse_pid "$SCRATCH/mem.img")" > "$CG_PROCS"
	dd if=/dev/urandom of="$SCRATCH/src" bs=1M count=64 status=none
	sum=$(sha256sum < "$SCRATCH/src")
	# 6 buffered copies of 64 MiB (4x the cgroup limit), then sync.
	run timeout 240 sh -c 'echo $$ > "$0"; for i in 1 2 3 4 5 6; do
		cat "$1" > "$2/copy$i" || exit 1; done; sync' \
		"$CG_PROCS" "$SCRATCH/src" "$SCRATCH/m"
	echo "writer: status $status $output"
	[ "$status" -eq 124 ] && abort_fuse
	[ "$status" -eq 0 ]      # 124: deadlock (or a crawl)
	fuse_cgroup_remove
	umount "$SCRATCH/m"      # drops the filesystem's page cache
	mount "$DEV" "$SCRATCH/m"
	for i in 1 2 3 4 5 6; do
		[ "$(sha256sum < "$SCRATCH/m/copy$i")" = "$sum" ]
	done
	umount "$SCRATCH/m"
	e2fsck -fn "$DEV"
	"$UBLK_FLASH" stop "$DEV"
}

@test "memory pressure: 384 MiB buffered write from a 96 MiB cgroup completes, data intact" {
	pressure 0
}

@test "memory pressure: server inside the 96 MiB cgroup too (needs PR_SET_IO_FLUSHER)" {
	has_sys_resource || skip "no CAP_SYS_RESOURCE here: PR_SET_IO_FLUSHER unavailable, a server inside a small memcg can deadlock on legacy memcg reclaim"
	pressure 1
}
