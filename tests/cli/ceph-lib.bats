#!/usr/bin/env bats
# tests/ceph-lib.bash's teardown, ceph_down, on stand-in daemons (sleeping
# processes whose pids sit where the Ceph daemons' pid files do; no Ceph
# needed): the OSD and the manager get TERM together, the monitor once they
# are gone (a real OSD stops in 0.3 s while the monitor answers, and takes
# more than 5 s without it), one that ignores TERM gets KILL, and all are
# gone inside the 10 s an interrupted runner's timeout(1) leaves its test
# before its own KILL.  The real cluster's up and down run in
# tests/integration/rbd-backing.bats and the vm tier.
load ../helpers

setup() {
	setup_scratch
	. "$OCTANT_TOP/tests/ceph-lib.bash"
	CEPH_DIR=$SCRATCH/ceph
	mkdir -p "$CEPH_DIR/run"
	PIDS=()
}

teardown() {
	[ ${#PIDS[@]} -eq 0 ] || kill -9 "${PIDS[@]}" 2>/dev/null || true
	teardown_scratch
}

# daemon NAME [ignore|slow]: a stand-in for daemon NAME (osd.0, mgr.x,
# mon.a), in a session of its own as a daemonized Ceph daemon is; "ignore":
# it ignores SIGTERM; "slow": on SIGTERM it takes 1 s to stop.  Each one
# that stops on TERM writes its name to $SCRATCH/order as it goes.
daemon() {
	local t="trap 'echo $1 >>$SCRATCH/order; exit 0' TERM;"
	[ "${2:-}" = ignore ] && t="trap '' TERM;"
	[ "${2:-}" = slow ] && t="trap 'sleep 1; echo $1 >>$SCRATCH/order; exit 0' TERM;"
	setsid bash -c "$t"' echo $$ >"$1"; while :; do sleep 0.2; done' sh "$CEPH_DIR/run/$1.pid" &
	for _ in $(seq 50); do [ -s "$CEPH_DIR/run/$1.pid" ] && break; sleep 0.1; done
	PIDS+=("$(cat "$CEPH_DIR/run/$1.pid")")
}

@test "ceph_down: three daemons that stop on TERM: all gone, pid files removed" {
	daemon osd.0; daemon mgr.x; daemon mon.a
	for p in "${PIDS[@]}"; do ceph_alive "$p"; done
	ceph_down
	for p in "${PIDS[@]}"; do ! ceph_alive "$p"; done
	# each stopped on its TERM, none was killed
	[ "$(sort "$SCRATCH/order" | tr '\n' ' ')" = "mgr.x mon.a osd.0 " ]
	[ -z "$(ls "$CEPH_DIR/run")" ]
}

@test "ceph_down: the monitor gets TERM only once the OSD and the manager are gone" {
	daemon osd.0 slow; daemon mgr.x; daemon mon.a
	ceph_down
	cat "$SCRATCH/order"
	[ "$(sed -n 3p "$SCRATCH/order")" = mon.a ]
	[ "$(sort "$SCRATCH/order" | tr '\n' ' ')" = "mgr.x mon.a osd.0 " ]
	for p in "${PIDS[@]}"; do ! ceph_alive "$p"; done
}

# Wall time, by the contract: ceph_down's own deadlines add up to 6 s (3 s
# for TERM to work, then the monitor, KILL), so 10 s holds on a loaded host
# (in CI-equivalent ci72 the first version, bounded by a count of polls,
# took 10 s beside the sanitizer tier).
@test "ceph_down: an OSD and a manager that ignore TERM are killed after their 3 s: all gone inside the 10 s an interrupted runner leaves" {
	daemon osd.0 ignore; daemon mgr.x ignore; daemon mon.a
	t0=${EPOCHREALTIME//[!0-9]/}
	ceph_down
	ms=$(( (${EPOCHREALTIME//[!0-9]/} - t0) / 1000 ))
	echo "took $ms ms"
	[ "$ms" -ge 3000 ] && [ "$ms" -lt 10000 ]
	for p in "${PIDS[@]}"; do ! ceph_alive "$p"; done
}

@test "ceph_down: no cluster, a stale pid file, a dead pid: returns 0 at once" {
	CEPH_DIR='' run ceph_down
	[ "$status" -eq 0 ]
	echo 999999999 >"$CEPH_DIR/run/osd.0.pid"
	: >"$CEPH_DIR/run/mgr.x.pid"
	run ceph_down
	[ "$status" -eq 0 ]
	[ ! -e "$CEPH_DIR/run/osd.0.pid" ]
}
