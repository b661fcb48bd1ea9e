# Shared helpers for the NBD tests (tests/cli/nbdkit-plugin.bats,
# tests/integration/nbd-backing.bats).  load with:  load ../nbd-lib

# nbd_start SOCK PIDFILE ARGS...: nbdkit ARGS on unix socket SOCK, daemonized
# with its pid in PIDFILE; returns once the socket is there.
nbd_start() {
	local sock=$1 pidf=$2
	shift 2
	rm -f "$sock"
	nbdkit -U "$sock" -P "$pidf" "$@" || return 1
	for _ in $(seq 50); do [ -S "$sock" ] && return 0; sleep 0.1; done
	return 1
}

# nbd_stop PIDFILE [SIGNAL]: signal that nbdkit (default TERM: a clean
# exit) and wait until it is gone.
nbd_stop() {
	local pid
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	kill "${2:--TERM}" "$pid" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	rm -f "$1"
}

# exercise_round URI NOPS SHADOW: nbd-exercise writes NOPS random ops (ends
# with a FLUSH), then the export must equal SHADOW.
exercise_round() {
	run "$EXERCISE" "$1" write "$2" "$3"
	echo "$output"
	[ "$status" -eq 0 ] || return 1
	run "$EXERCISE" "$1" verify "$3"
	echo "$output"
	[ "$status" -eq 0 ]
}
