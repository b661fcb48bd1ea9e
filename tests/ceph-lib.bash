# A one-node Ceph cluster for the tests and benchmarks (tests/integration/
# rbd-*.bats, tests/bench/bench-network): one monitor, one manager, one
# bluestore OSD on a sparse file, bound to 127.0.0.1 only, auth none, pool
# "rbd" of size 1, everything (data, sockets, logs, pid files) in one folder.
# No systemd: every daemon is started here and stopped by its recorded pid.
# Facts: /work/shared/reference.md, "One-node Ceph on this machine".
#
#   ceph_up DIR [OSD_DIR]   start it (OSD_DIR: where the OSD's data lives,
#                           default DIR/osd; a tmpfs or a disk folder); sets
#                           CEPH_DIR and exports CEPH_CONF (the ceph/rbd
#                           tools and librbd in ublk-flash read it)
#   ceph_down               stop every daemon by pid (TERM: OSD and
#                           manager, then monitor; KILL: 6 s at most)
#   ceph_osd_kill [SIG]     kill the OSD (default -9) and mark it down
#   ceph_osd_start          start it again; returns once it is up and the
#                           pool's placement groups are active
#   ceph_stop_pid NAME SIG  signal one daemon (mon, mgr, osd) by its pid file
#
# The mon's port and the range the others bind in are chosen free on
# 127.0.0.1 at start.  Needs ceph-mon ceph-mgr ceph-osd ceph-common
# (mk/deps.sh check).

CEPH_DIR=${CEPH_DIR:-}
CEPH_T=${CEPH_T:-120}   # seconds any one wait may take

ceph_have() {
	local c
	for c in ceph ceph-mon ceph-mgr ceph-osd monmaptool rbd; do
		command -v "$c" >/dev/null 2>&1 || return 1
	done
}

# ceph_free_port: a TCP port on 127.0.0.1 nobody listens on, with the 32
# after it free too (the mgr and OSD bind in that range).
ceph_free_port() {
	local used p i ok
	used=$(ss -Htanl 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }' | sort -un)
	for _ in $(seq 200); do
		p=$(( 20000 + RANDOM % 30000 ))
		ok=1
		for i in $(seq 0 32); do
			grep -qx "$((p + i))" <<<"$used" && { ok=0; break; }
		done
		[ $ok = 1 ] && { echo "$p"; return 0; }
	done
	return 1
}

ceph_conf_write() { # DIR OSD_DIR PORT
	local d=$1 o=$2 p=$3
	cat >"$d/ceph.conf" <<EOF
[global]
fsid = $(cat "$d/fsid")
mon host = [v2:127.0.0.1:$p]
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind port min = $((p + 1))
ms bind port max = $((p + 32))
auth cluster required = none
auth service required = none
auth client required = none
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
mon osd down out interval = 0
mon warn on osd down out interval zero = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
osd objectstore = bluestore
bluestore block create = true
bluestore block size = 4G
osd memory target = 896M
osd client watch timeout = 5
mon osd report timeout = 30
run dir = $d/run
admin socket = $d/run/\$name.\$pid.\$cctid.asok
log file = $d/log/\$name.log
pid file = $d/run/\$name.pid
crash dir = $d/crash
mon data = $d/mon-\$id
mgr data = $d/mgr-\$id
osd data = $o/osd-\$id
keyring = /dev/null
mgr initial modules =
EOF
}

# ceph_wait WHAT CMD...: retry CMD (quietly) until it succeeds or CEPH_T.
ceph_wait() {
	local what=$1 t0=$SECONDS
	shift
	until "$@" >/dev/null 2>&1; do
		if [ $((SECONDS - t0)) -ge "$CEPH_T" ]; then
			echo "ceph: $what: not after ${CEPH_T}s" >&2
			return 1
		fi
		sleep 0.5
	done
}

ceph_pid() { cat "$CEPH_DIR/run/$1.pid" 2>/dev/null; }

# ceph_alive PID: the process runs (a zombie that init has not reaped yet
# does not: kill -0 would still find it)
ceph_alive() {
	local st
	{ read -r _ _ st _ <"/proc/$1/stat"; } 2>/dev/null && [ -n "$st" ] && [ "$st" != Z ]
}

# ceph_stop_pid NAME SIGNAL: signal daemon NAME (mon.a, mgr.x, osd.0) and
# wait until it is gone (KILL after 20 s; ceph_gone, below).
ceph_stop_pid() {
	local pid
	pid=$(ceph_pid "$1")
	[ -n "$pid" ] || return 0
	kill "$2" "$pid" 2>/dev/null || { rm -f "$CEPH_DIR/run/$1.pid"; return 0; }
	ceph_gone 20000 "$pid"
	if [ ${#CEPH_LEFT[@]} -gt 0 ]; then
		kill -9 "$pid" 2>/dev/null
		ceph_gone 5000 "$pid"
	fi
	rm -f "$CEPH_DIR/run/$1.pid"
}

# ceph_pgs_active: every placement group of the cluster is active.
ceph_pgs_active() {
	ceph pg stat 2>/dev/null | grep -Eq '^[0-9]+ pgs: [0-9]+ active\+clean;'
}

ceph_up() {
	local d=$1 o=${2:-$1/osd} port uuid t0=$SECONDS
	ceph_have || { echo "ceph: ceph-mon ceph-mgr ceph-osd ceph-common missing" >&2; return 1; }
	mkdir -p "$d/run" "$d/log" "$d/crash" "$o" || return 1
	CEPH_DIR=$(cd "$d" && pwd)
	o=$(cd "$o" && pwd)
	export CEPH_CONF=$CEPH_DIR/ceph.conf
	port=$(ceph_free_port) || { echo "ceph: no free port" >&2; return 1; }
	cat /proc/sys/kernel/random/uuid >"$CEPH_DIR/fsid"
	ceph_conf_write "$CEPH_DIR" "$o" "$port"
	monmaptool --create --fsid "$(cat "$CEPH_DIR/fsid")" \
		--addv a "[v2:127.0.0.1:$port]" "$CEPH_DIR/monmap" >/dev/null || return 1
	ceph-mon -i a --mkfs --monmap "$CEPH_DIR/monmap" >>"$CEPH_DIR/log/setup.log" 2>&1 ||
		{ echo "ceph: ceph-mon --mkfs failed" >&2; return 1; }
	ceph-mon -i a >>"$CEPH_DIR/log/setup.log" 2>&1 3>&- || { echo "ceph: ceph-mon failed" >&2; return 1; }
	mkdir -p "$CEPH_DIR/mgr-x"
	ceph-mgr -i x >>"$CEPH_DIR/log/setup.log" 2>&1 3>&- || { echo "ceph: ceph-mgr failed" >&2; return 1; }
	uuid=$(cat /proc/sys/kernel/random/uuid)
	ceph_wait "monitor" ceph osd new "$uuid" || return 1
	mkdir -p "$o/osd-0"
	ceph-osd -i 0 --mkfs --osd-uuid "$uuid" >>"$CEPH_DIR/log/setup.log" 2>&1 ||
		{ echo "ceph: ceph-osd --mkfs failed" >&2; return 1; }
	ceph-osd -i 0 >>"$CEPH_DIR/log/setup.log" 2>&1 3>&- || { echo "ceph: ceph-osd failed" >&2; return 1; }
	ceph osd pool create rbd 8 8 replicated --size 1 >>"$CEPH_DIR/log/setup.log" 2>&1 ||
		{ echo "ceph: pool create failed" >&2; return 1; }
	ceph osd pool set rbd size 1 --yes-i-really-mean-it >>"$CEPH_DIR/log/setup.log" 2>&1
	rbd pool init rbd >>"$CEPH_DIR/log/setup.log" 2>&1 || { echo "ceph: rbd pool init failed" >&2; return 1; }
	ceph_wait "placement groups active" ceph_pgs_active || return 1
	echo "ceph: up in $((SECONDS - t0)) s (mon on 127.0.0.1:$port, $CEPH_DIR)" >>"$CEPH_DIR/log/setup.log"
}

# ceph_gone MS PID...: wait until no PID runs, at most MS milliseconds of
# wall time (not a count of polls: each poll forks, slow on a loaded
# host); the ones still running in $CEPH_LEFT (returns 0 either way:
# callers run under errexit).
ceph_gone() {
	local end p q
	end=$(( ${EPOCHREALTIME//[!0-9]/} / 1000 + $1 )); shift
	CEPH_LEFT=("$@")
	while :; do
		q=("${CEPH_LEFT[@]}") CEPH_LEFT=()
		for p in "${q[@]}"; do ceph_alive "$p" && CEPH_LEFT+=("$p"); done
		[ ${#CEPH_LEFT[@]} -eq 0 ] && return 0
		[ $(( ${EPOCHREALTIME//[!0-9]/} / 1000 )) -lt "$end" ] || return 0
		sleep 0.1
	done
}

# ceph_down: TERM to the OSD and the manager together, then to the monitor
# once they are gone (an OSD stops in a third of a second while the monitor
# answers, and takes more than 5 s without it) or after 3 s, KILL for
# whatever is left 2 s later, waited for 1 s: 6 s at most.  Bounded, so
# that a teardown itself interrupted (make check stopped: the runner's
# timeout(1) sends KILL 10 s after the TERM it passed on) still leaves no
# daemon running -- one by one, each waited for up to 20 s, left the
# manager and the OSD behind.
ceph_down() {
	[ -n "$CEPH_DIR" ] && [ -d "$CEPH_DIR/run" ] || return 0
	local n p osd=() mon=()
	for n in osd.0 mgr.x mon.a; do
		p=$(ceph_pid "$n")
		rm -f "$CEPH_DIR/run/$n.pid"
		[ -n "$p" ] && ceph_alive "$p" || continue
		if [ "$n" = mon.a ]; then mon=("$p"); else osd+=("$p"); fi
	done
	CEPH_LEFT=()
	[ ${#osd[@]} -eq 0 ] || { kill -TERM "${osd[@]}" 2>/dev/null; ceph_gone 3000 "${osd[@]}"; }
	osd=("${CEPH_LEFT[@]}") CEPH_LEFT=()
	[ ${#mon[@]} -eq 0 ] || { kill -TERM "${mon[@]}" 2>/dev/null; ceph_gone 2000 "${mon[@]}"; }
	p=("${osd[@]}" "${CEPH_LEFT[@]}")
	[ ${#p[@]} -eq 0 ] && return 0
	kill -9 "${p[@]}" 2>/dev/null
	ceph_gone 1000 "${p[@]}"
	return 0
}

# ceph_osd_kill [SIGNAL]: kill the OSD; the monitor is told it is down (a
# lone OSD's death is noticed by no peer: 900 s otherwise).
ceph_osd_kill() {
	ceph_stop_pid osd.0 "${1:--9}"
	ceph osd down 0 >/dev/null 2>&1 || true
}

ceph_osd_up_from() {
	ceph osd dump --format json 2>/dev/null |
		python3 -c 'import json,sys; o=json.load(sys.stdin)["osds"][0]; print(o["up_from"] if o["up"] else -1)'
}

# ceph_osd_start: the OSD again; returns once it is up in a newer epoch than
# before and the placement groups are active.
ceph_osd_start() {
	local e
	e=$(ceph osd dump --format json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"])')
	ceph-osd -i 0 >>"$CEPH_DIR/log/setup.log" 2>&1 3>&- || return 1
	ceph_wait "osd.0 up" eval '[ "$(ceph_osd_up_from)" -gt "'"${e:-0}"'" ]' || return 1
	ceph_wait "placement groups active" ceph_pgs_active
}
