# Shared helpers for the NBD tests (tests/cli/nbdkit-plugin.bats,
# tests/integration/nbd-backing.bats).  load with:  load ../nbd-lib

# nbd_start SOCK PIDFILE ARGS...: nbdkit ARGS on unix socket SOCK, daemonized
# with its pid in PIDFILE; returns once the socket and the pid file are there.
nbd_start() {
	local sock=$1 pidf=$2
	shift 2
	rm -f "$sock"
	nbdkit -U "$sock" -P "$pidf" "$@" || return 1
	# nbdkit binds its socket before it forks and writes the pid file:
	# wait for both, or a quick nbd_stop finds no pid file and leaves the
	# server running (a CI run under load: it still held the image lock)
	for _ in $(seq 50); do
		[ -S "$sock" ] && [ -s "$pidf" ] && return 0
		sleep 0.1
	done
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

# nbd_free_port: a TCP port nobody listens on (for nbdkit -i 127.0.0.1 -p).
nbd_free_port() {
	local p used
	used=$(ss -Htanl 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
	for _ in $(seq 100); do
		p=$(( 20000 + RANDOM % 30000 ))
		grep -qx "$p" <<<"$used" || { echo "$p"; return 0; }
	done
	return 1
}

# nbd_certs DIR: a throwaway CA and a server certificate for localhost /
# 127.0.0.1 signed by it, as nbdkit --tls-certificates=DIR and libnbd's
# tls-certificates=DIR want them (ca-cert.pem, server-cert.pem,
# server-key.pem); a second, unrelated CA in DIR/other.
nbd_certs() {
	local d=$1
	mkdir -p "$d/other"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=octant test CA" \
		-keyout "$d/ca-key.pem" -out "$d/ca-cert.pem" 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
		-keyout "$d/server-key.pem" -out "$d/server.csr" 2>/dev/null &&
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$d/ext.cnf" &&
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca-cert.pem" -CAkey "$d/ca-key.pem" \
		-CAcreateserial -days 2 -extfile "$d/ext.cnf" -out "$d/server-cert.pem" 2>/dev/null &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=another CA" \
		-keyout "$d/other/ca-key.pem" -out "$d/other/ca-cert.pem" 2>/dev/null
}
