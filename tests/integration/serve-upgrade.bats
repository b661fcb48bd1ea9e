#!/usr/bin/env bats
# ublk-flash upgrade (live upgrade, docs/ublk.md) where this machine can test it: it has no
# ublk, so these are the refusals and the running server's side of the handover, on a FUSE
# server.  Every refusal is one line, a documented exit code, and the server serving on (same
# pid, its device working); the server's "options" (what its successor is started with) are
# its own, paths absolute; "upgrade PID" is refused unless PID is the requester's, and a
# server whose device cannot be quiesced (FUSE) refuses it and serves on.  The handover itself
# runs in the qemu guest (tests/vm/guest/ublk-upgrade*.sh).
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	fuse_create a 64M odd
	IMG=$SCRATCH/a.img
}

teardown() {
	fuse_teardown
}

# serving_on PID: the server PID still serves $DEV: listed running, its device reads.
serving_on() {
	[ "$(fuse_pid "$IMG")" = "$1" ] || { echo "registry pid $(fuse_pid "$IMG"), not $1"; return 1; }
	kill -0 "$1"
	"$UBLK_FLASH" list -n -r -o STATE | grep -qx running
	dd if="$DEV" of=/dev/null bs=4k count=1 iflag=direct status=none
}

# ctl REQUEST: send REQUEST on the server's control socket, print the answer (NULs as '|')
ctl() {
	requires python3
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].replace("SELF", str(__import__("os").getpid())).encode() + b"\n")
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
print(out.replace(b"\0", b"|").decode(), end="")
' "$(dirname "$(ls "$UBLK_FLASH_RUN_DIR"/img-*/ctl.sock)")/ctl.sock" "$1"
}

@test "upgrade of a FUSE server: exit 6, one line, the server serves on" {
	fuse_serve "$IMG"
	pid=$(fuse_pid "$IMG")
	run "$UBLK_FLASH" upgrade "$IMG"
	echo "$output"
	[ "$status" -eq 6 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"served over FUSE + loop on $DEV: a live upgrade needs the ublk frontend"*"nothing changed" ]]
	serving_on "$pid"
	# by its device too
	run "$UBLK_FLASH" upgrade "$DEV"
	[ "$status" -eq 6 ]
	serving_on "$pid"
	# serve --upgrade directly: the same refusal where there is ublk; here, a ublk option
	# without ublk (exit 2)
	run "$UBLK_FLASH" serve "$IMG" --upgrade
	echo "$output"
	if [ -e /dev/ublk-control ]; then
		[ "$status" -eq 6 ]
		[[ "$output" == *"serve --upgrade: "*"a live upgrade needs the ublk frontend"* ]]
	else
		[ "$status" -eq 2 ]
		[[ "$output" == *"--upgrade applies to the ublk frontend only"* ]]
	fi
	serving_on "$pid"
}

@test "upgrade of an image not served: exit 3; --binary not executable: exit 2; usage: exit 2" {
	run "$UBLK_FLASH" upgrade "$IMG"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "ublk-flash: upgrade: $IMG is not served" ]
	run "$UBLK_FLASH" serve "$IMG" --frontend ublk --upgrade
	echo "$output"
	[ "$status" -ne 0 ]
	fuse_serve "$IMG"
	pid=$(fuse_pid "$IMG")
	run "$UBLK_FLASH" upgrade "$IMG" --binary "$SCRATCH/nothing-here"
	echo "$output"
	[ "$status" -eq 2 ]
	[ "$output" = "ublk-flash: upgrade: --binary $SCRATCH/nothing-here: not an executable file" ]
	echo data >"$SCRATCH/not-exec"
	chmod 644 "$SCRATCH/not-exec"
	run "$UBLK_FLASH" upgrade "$IMG" --binary "$SCRATCH/not-exec"
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" upgrade
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" upgrade "$IMG" --bogus
	[ "$status" -eq 2 ]
	run "$UBLK_FLASH" serve "$IMG" --upgrade --queues 2
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--upgrade takes the device as it is"* ]]
	serving_on "$pid"
}

@test "options: the server's own, for its successor, paths absolute" {
	cd "$SCRATCH"
	DEV=$("$UBLK_FLASH" serve a.img --frontend fuse --pidfile s.pid --log ./s.log \
		--gc cost-benefit --gc-thread off --streams on --wl-threshold 500)
	run ctl options
	echo "$output"
	[ "$output" = "--frontend|fuse|--pidfile|$SCRATCH/s.pid|--log|$SCRATCH/s.log|--gc|cost-benefit|--gc-thread|off|--streams|on|--wl-threshold|500|" ]
	"$UBLK_FLASH" stop "$DEV"
	DEV=$("$UBLK_FLASH" serve a.img --frontend fuse --read-only)
	run ctl options
	echo "$output"
	[ "$output" = "--frontend|fuse|--read-only|--gc|greedy|--gc-thread|on|" ]
}

@test "upgrade PID: refused unless PID is the requester; a device that cannot be quiesced: refused, serving on" {
	fuse_serve "$IMG"
	pid=$(fuse_pid "$IMG")
	run ctl "upgrade 1"
	echo "$output"
	[ "$output" = "error: upgrade: the pid is not the requester's" ]
	run ctl "upgrade x"
	[ "$output" = "error: upgrade: not a pid" ]
	run ctl "upgrade SELF"
	echo "$output"
	[ "$output" = "error: upgrade: this device cannot be quiesced" ]
	serving_on "$pid"
	# and it still stops cleanly
	run "$UBLK_FLASH" stop "$IMG"
	[ "$status" -eq 0 ]
}
