# shellcheck shell=bash
# TAP helpers for guest test scripts (tests/vm/guest/*.sh).  In the guest:
#   . /octant/tests/vm/guest-lib.sh
#   t_ok DESC / t_fail DESC [DETAIL...] / t_skip DESC REASON / t_check DESC CMD [ARGS...]
#   t_done            prints the plan and exits 1 if any case failed, else 0
# Cleanup: t_cleanup CMD... registers a command run (in reverse order) at exit, pass or fail.

T_N=0
T_FAILED=0
T_CLEANUP=()

t_ok()   { T_N=$((T_N + 1)); echo "ok $T_N $*"; }
t_skip() { T_N=$((T_N + 1)); echo "ok $T_N $1 # skip $2"; }
t_fail() {
	local desc=$1; shift
	T_N=$((T_N + 1)); T_FAILED=1
	echo "not ok $T_N $desc"
	local l; for l in "$@"; do printf '%s\n' "$l" | sed 's/^/#   /'; done
}
# t_check DESC CMD...: ok when CMD succeeds; its output is shown (as comments) when it fails.
t_check() {
	local desc=$1 out; shift
	if out=$("$@" 2>&1); then t_ok "$desc"; else t_fail "$desc" "command: $*" "$out"; fi
}
# t_eq DESC GOT WANT
t_eq() {
	local d=$1; [ ${#3} -le 16 ] && d="$1 = $3"
	if [ "$2" = "$3" ]; then t_ok "$d"; else t_fail "$d" "got '$2', want '$3'"; fi
}
t_cleanup() { T_CLEANUP+=("$*"); }
t_run_cleanup() {
	local i
	for ((i = ${#T_CLEANUP[@]} - 1; i >= 0; i--)); do eval "${T_CLEANUP[$i]}" >/dev/null 2>&1 || true; done
	T_CLEANUP=()
}
trap t_run_cleanup EXIT
t_done() { t_run_cleanup; echo "1..$T_N"; exit "$T_FAILED"; }

# sysq DEV ATTR: queue/<ATTR> (or <ATTR>) of a block device's sysfs folder, found by its
# major:minor (nodes made without udev, e.g. /dev/mapper/NAME, are not links to /dev/dm-N).
sysq() {
	local maj min d
	read -r maj min < <(stat -L -c '%t %T' "$1") || return 1
	d=/sys/dev/block/$((16#$maj)):$((16#$min))
	if [ -e "$d/queue/$2" ]; then cat "$d/queue/$2"; else cat "$d/$2"; fi
}
# wait_for PATH [TENTHS]: wait until PATH exists (default 10 s); no udev in the guest.
wait_for() {
	local i=0 max=${2:-100}
	while [ ! -e "$1" ]; do
		i=$((i + 1)); [ $i -ge "$max" ] && return 1
		sleep 0.1
	done
}
# scsi_debug_dev: the /dev path of the (first) scsi_debug disk, waiting for the scan.
scsi_debug_dev() {
	local i d
	modprobe sd_mod 2>/dev/null      # no udev: nothing else loads the disk driver
	for i in $(seq 100); do
		for d in /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/*; do
			[ -e "$d" ] && wait_for "/dev/$(basename "$d")" && { echo "/dev/$(basename "$d")"; return 0; }
		done
		sleep 0.1
	done
	return 1
}

# odd_dm_on_scsi_debug NAME: a 64 MiB 512/4096 scsi_debug disk (offset 0)
# with a dm-linear NAME starting at its sector 1 (the odd layout: the kernel
# reports alignment_offset 3584), made with $DMT; both undone by t_cleanup.
# Sets $sd (the disk), $size (its 512-byte sectors) and $odd (the dm
# device); ends the script on failure.
odd_dm_on_scsi_debug() {
	rmmod scsi_debug 2>/dev/null
	modprobe sd_mod 2>/dev/null
	modprobe scsi_debug dev_size_mb=64 physblk_exp=3 lowest_aligned=0 && sd=$(scsi_debug_dev) ||
		{ t_fail "scsi_debug 512/4096 disk appears"; t_done; }
	t_cleanup "rmmod scsi_debug"
	size=$(blockdev --getsz "$sd")
	odd=$("$DMT" create "$1" "$sd" 1 $((size - 8)) 2>&1) ||
		{ t_fail "dm-linear at sector 1" "$odd"; t_done; }
	t_cleanup "$DMT remove $1"
}
