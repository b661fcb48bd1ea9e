# Shared helpers for the FUSE + loop integration tests (fuse-*.bats).
# load with:  load fuse-lib   (after load ../helpers)

# fuse_setup: root, /dev/fuse, loop, tools; a private scratch + run registry.
fuse_setup() {
	requires_root
	requires_dev /dev/fuse
	requires_dev /dev/loop-control
	requires losetup mount umount
	[ -x "$UBLK_FLASH" ] || skip "ublk-flash not built ($UBLK_FLASH)"
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	# a daemon logs to syslog by default: not the host's from tests (a
	# daemon without one logs to RUNDIR.log; serve-options.bats binds one)
	export UBLK_FLASH_SYSLOG_SOCKET=$SCRATCH/no-syslog
	mkdir -p "$SCRATCH/m"
}

# fuse_teardown: always leaves no mount, loop device, server or cgroup.
fuse_teardown() {
	[ -n "${SCRATCH:-}" ] || return 0
	local m img pid d i
	for m in $(awk -v s="$SCRATCH" 'index($5, s) == 1 { print $5 }' \
			/proc/self/mountinfo | sort -r); do
		case "$m" in */run/*/mnt) continue ;; esac
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	for d in "$UBLK_FLASH_RUN_DIR"/img-*; do
		[ -f "$d/pid" ] || continue
		pid=$(cat "$d/pid")
		img=$(cat "$d/image" 2>/dev/null)
		timeout 60 "$UBLK_FLASH" stop --force "$img" >/dev/null 2>&1 || true
		if kill -0 "$pid" 2>/dev/null; then
			kill -9 "$pid" 2>/dev/null || true
			for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		fi
		# A dead server's leftovers: stop cleans them.
		[ -f "$d/pid" ] && timeout 60 "$UBLK_FLASH" stop "$img" >/dev/null 2>&1
	done
	# Belt and braces: loops backed by anything in the scratch folder.
	losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v s="$SCRATCH" \
		'index($2, s) == 1 { print $1 }' | while read -r d; do
		losetup -d "$d" 2>/dev/null || true
	done
	for m in $(awk -v s="$SCRATCH" 'index($5, s) == 1 { print $5 }' \
			/proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	fuse_cgroup_remove
	teardown_scratch
}

# fuse_create NAME SIZE MODE: a fresh image $SCRATCH/NAME.
fuse_create() {
	"$UBLK_FLASH" create "$SCRATCH/$1.img" --size "$2" --align "$3" --force >/dev/null
}

# fuse_serve IMG: serve it over FUSE; the device path in $DEV.
fuse_serve() {
	DEV=$("$UBLK_FLASH" serve "$1" --frontend fuse)
	[ -b "$DEV" ] || { echo "serve gave '$DEV'"; return 1; }
}

# fuse_files_make DIR [N]: N (40) files of random sizes (1-256 KiB) in
# DIR/d, their sums in $SCRATCH/sums.
fuse_files_make() {
	local i
	mkdir -p "$1/d"
	for i in $(seq "${2:-40}"); do
		head -c $(( (RANDOM % 256 + 1) * 1024 + RANDOM % 999 )) /dev/urandom > "$1/d/f$i"
	done
	(cd "$1" && sha256sum d/*) > "$SCRATCH/sums"
}

# fuse_check_files IMG: serve IMG again; ext4 clean and every file in
# $SCRATCH/sums matches; stop it.
fuse_check_files() {
	fuse_serve "$1"
	run fuse_fsck ext4 "$DEV"
	echo "$output"
	[ "$status" -eq 0 ] || return 1
	mount -o ro "$DEV" "$SCRATCH/m"
	(cd "$SCRATCH/m" && sha256sum -c --quiet "$SCRATCH/sums") || return 1
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$1"
}

# fuse_pid IMG: the server's pid.
fuse_pid() {
	local d
	for d in "$UBLK_FLASH_RUN_DIR"/img-*; do
		[ "$(cat "$d/image" 2>/dev/null)" = "$(realpath "$1")" ] && cat "$d/pid" && return 0
	done
	return 1
}

# fuse_mkfs FS DEV / fuse_fsck FS DEV: real mkfs and a read-only check.
fuse_mkfs() {
	case "$1" in
	ext4)  mkfs.ext4 -q -F "$2" ;;
	btrfs) mkfs.btrfs -q -f "$2" >/dev/null ;;
	esac
}
fuse_fsck() {
	case "$1" in
	ext4)  e2fsck -fn "$2" ;;
	btrfs) btrfs check --readonly "$2" ;;
	esac
}

# fuse_requires_fs FS: skip unless its tools are installed.
fuse_requires_fs() {
	case "$1" in
	ext4)  requires mkfs.ext4 e2fsck ;;
	btrfs) requires mkfs.btrfs btrfs
	       grep -qw btrfs /proc/filesystems || skip "kernel has no btrfs" ;;
	esac
}

# fuse_stat_field DEV|IMG FIELD: one number from `stats --json`.
fuse_stat_field() {
	"$UBLK_FLASH" stats "$1" --json | tr ',{}' '\n\n\n' | \
		awk -F: -v k="\"$2\"" '$1 == k { print $2 }'
}

# fuse_cgroup_make LIMIT: a memory cgroup (v2 or v1); its procs file in $CG_PROCS.
fuse_cgroup_make() {
	CG_DIR=
	if [ -f /sys/fs/cgroup/cgroup.controllers ] &&
	   grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
		CG_DIR=/sys/fs/cgroup/octant-fuse-$$
		echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
		mkdir "$CG_DIR" && echo "$1" > "$CG_DIR/memory.max" || return 1
		echo 0 > "$CG_DIR/memory.swap.max" 2>/dev/null || true
	elif [ -d /sys/fs/cgroup/memory ]; then
		CG_DIR=/sys/fs/cgroup/memory/octant-fuse-$$
		mkdir "$CG_DIR" && echo "$1" > "$CG_DIR/memory.limit_in_bytes" || return 1
	else
		return 2
	fi
	CG_PROCS=$CG_DIR/cgroup.procs
}

fuse_cgroup_remove() {
	[ -n "${CG_DIR:-}" ] && [ -d "$CG_DIR" ] || return 0
	local p root=/sys/fs/cgroup/cgroup.procs
	[ -f "$root" ] || root=/sys/fs/cgroup/memory/cgroup.procs
	for p in $(cat "$CG_DIR/cgroup.procs" 2>/dev/null); do
		echo "$p" > "$root" 2>/dev/null || true
	done
	rmdir "$CG_DIR" 2>/dev/null || true
	CG_DIR=
}

# fuse_running PID: the process runs (a zombie waiting to be reaped by
# init does not count: a stopped server has exited).
fuse_running() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[ -n "$s" ] && [ "${s#Z}" = "$s" ]
}
