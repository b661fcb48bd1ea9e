# Shared helpers for octant's bats tests (cli and integration tiers).
# load with:  load ../helpers
OCTANT_TOP=${OCTANT_TOP:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
BUILD=${BUILD:-$OCTANT_TOP/build}
UBLK_FLASH=$BUILD/ublk-flash
ALIGNPART=$BUILD/alignpart
export PATH="$BUILD:$PATH"

# requires CMD...: skip (loudly, with the reason) unless every command exists.
requires() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "requires $c (not installed)"
	done
}

# requires_root: skip unless running as root.
requires_root() {
	[ "$(id -u)" -eq 0 ] || skip "requires root"
}

# requires_dev PATH: skip unless a device node exists.
requires_dev() {
	[ -e "$1" ] || skip "requires $1 (not present on this kernel)"
}

# refute CMD...: fail when CMD succeeds.  Write this, never "! CMD": bats
# (set -e) ignores the status of a negated command, so "! CMD" can only
# fail a test as its very last line.
refute() {
	if "$@"; then
		echo "refute: this succeeded: $*" >&2
		return 1
	fi
	return 0
}

# bad CODE TEXT CMD...: CMD exits CODE and prints exactly one line, which
# contains TEXT (a file may define its own bad after loading this one).
bad() {
	local code=$1 text=$2
	shift 2
	run "$@"
	echo "\$ $*"
	echo "exit $status (want $code): $output"
	[ "$status" -eq "$code" ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$text"* ]]
}

# A private scratch folder per test, removed by the cleanup trap.
setup_scratch() {
	SCRATCH=$(mktemp -d "${BATS_TMPDIR:-/tmp}/octant.XXXXXX")
}

teardown_scratch() {
	[ -z "${SCRATCH:-}" ] || rm -rf "$SCRATCH"
}

# Compare output with an expected-output file; show a diff when they differ.
# Set OCTANT_BLESS=1 to rewrite the expected file instead.
assert_matches_file() {
	local expected=$1 actual=$2
	if [ "${OCTANT_BLESS:-0}" = 1 ]; then
		printf '%s\n' "$actual" >"$expected"
		return 0
	fi
	diff -u "$expected" <(printf '%s\n' "$actual")
}

# dgram_listen SOCK OUT: a unix datagram listener on SOCK writing one line per
# datagram to OUT (what syslog or systemd's NOTIFY_SOCKET would receive);
# its pid in $LISTENER.  Returns once SOCK exists.
dgram_listen() {
	: >"$2"
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as f:
    while True:
        f.write(s.recv(4096).decode() + "\n")
        f.flush()
' "$1" "$2" &
	LISTENER=$!
	for _ in $(seq 50); do [ -S "$1" ] && break; sleep 0.1; done
	[ -S "$1" ]
}
