# shellcheck shell=bash
# Helpers for the ublk guest tests (ublk-*.sh); sourced after guest-lib.sh.  Named .bash so
# guest-all.sh (which runs guest/*.sh) does not run it as a test.

# ublk_require_driver: SKIP (exit 77) unless /dev/ublk-control is there.
ublk_require_driver() {
	modprobe ublk_drv 2>/dev/null
	if ! wait_for /dev/ublk-control 20; then
		echo "SKIP: no /dev/ublk-control in the guest (ublk_drv did not load)"
		exit 77
	fi
	[ -x "$UBLK_FLASH" ] || { echo "SKIP: no ublk-flash at $UBLK_FLASH"; exit 77; }
}

# ublk_mkimg IMG SIZE MODE [CREATE-OPTIONS...]
ublk_mkimg() { "$UBLK_FLASH" create "$1" --size "$2" --align "$3" --force "${@:4}"; }

# ublk_serve IMG [OPTIONS...]: prints the device; its error output instead on failure.
ublk_serve() {
	local img=$1 out rc
	shift
	out=$("$UBLK_FLASH" serve "$img" --frontend ublk "$@" 2>&1); rc=$?
	printf '%s\n' "$out"
	return $rc
}

# ublk_serve_probed NAME: a 64 MiB 1m image /tmp/NAME.img served over ublk (both undone by
# t_cleanup); sets dev (/dev/ublkbN) and flags (the live device's, GET_DEV_INFO through
# $BUILD/ublk-probe).  A step that fails is a t_fail and the end of the script.
ublk_serve_probed() {
	local img=/tmp/$1.img out
	out=$(ublk_mkimg "$img" 64M 1m 2>&1) || { t_fail "create image" "$out"; t_done; }
	t_cleanup "rm -f $img"
	dev=$(ublk_serve "$img") || { t_fail "$(uname -r): serve --frontend ublk" "$dev"; t_done; }
	t_cleanup "$UBLK_FLASH stop $img"
	out=$("$BUILD/ublk-probe" info "${dev#/dev/ublkb}" 2>&1) ||
		{ t_fail "ublk-probe info ${dev#/dev/ublkb}" "$out"; t_done; }
	# shellcheck disable=SC2034 # for the caller
	flags=$(sed -n 's/^flags //p' <<<"$out")
}

# ublk_check_io DEV: a case: 1 MiB of random data written to DEV with O_DIRECT, flushed, and
# read back the same.
ublk_check_io() {
	local d out
	d="$(uname -r): 1 MiB written, flushed and read back through $1"
	if out=$(dd if=/dev/urandom of=/tmp/ublk-io.dat bs=64k count=16 status=none &&
	         dd if=/tmp/ublk-io.dat of="$1" bs=64k oflag=direct conv=fsync status=none &&
	         cmp -n $((1 << 20)) /tmp/ublk-io.dat "$1" 2>&1); then
		t_ok "$d"
	else
		t_fail "$d" "$out"
	fi
	rm -f /tmp/ublk-io.dat
}

# ublk_wait_gone PATH [TENTHS]: wait until PATH no longer exists (default 10 s).
ublk_wait_gone() {
	local i=0 max=${2:-100}
	while [ -e "$1" ]; do
		i=$((i + 1)); [ $i -ge "$max" ] && return 1
		sleep 0.1
	done
}

# ublk_server_pid IMG: the pid the run registry records for IMG's server.
ublk_server_pid() {
	local img d
	img=$(realpath "$1")
	for d in "${UBLK_FLASH_RUN_DIR:-/run/octant}"/*/; do
		[ "$(cat "$d/image" 2>/dev/null)" = "$img" ] && cat "$d/pid" 2>/dev/null && return 0
	done
	return 1
}

# ublk_wait_dead PID [TENTHS]: wait until PID has exited (gone, or a zombie whose every
# thread has ended: a zombie leader's queue threads may still be in their exit, holding the
# process's files -- its registry lock -- as 7.3's guest showed; default 20 s).
ublk_wait_dead() {
	local i=0 max=${2:-200} st
	while [ -e "/proc/$1" ]; do
		st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
		[ "$st" = Z ] && [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -le 1 ] && return 0
		i=$((i + 1)); [ $i -ge "$max" ] && return 1
		sleep 0.1
	done
}

# ublk_kill_server IMG LABEL: SIGKILL the server of IMG and wait until it has exited; a t_fail
# naming LABEL and status 1 when the registry records no pid or the server does not exit.
ublk_kill_server() {
	local pid
	pid=$(ublk_server_pid "$1")
	if [ -z "$pid" ]; then t_fail "$2: server pid in the run registry"; return 1; fi
	kill -9 "$pid"
	ublk_wait_dead "$pid" 300 || { t_fail "$2: killed server exits"; return 1; }
}
