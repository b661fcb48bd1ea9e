#!/usr/bin/env bash
# Guest test: `stop /dev/ublkbN` acts on the server that owns the device now, never on a dead
# server's registry entry that recorded the same number (its device gone, the number reused).
# Such entries stay on purpose (a dead ublk server's device waits for `serve --recover`), so two
# entries may name /dev/ublkb0: the live server holds /dev/ublkc0 open, the dead one holds
# nothing.  Two forged dead entries, one made before and one after the real one, so the real
# entry is neither first nor last in the folder.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
run=${UBLK_FLASH_RUN_DIR:-/run/octant}
img=/tmp/ublk-identity.img
if ! out=$(ublk_mkimg "$img" 64M 1m 2>&1); then t_fail "create image" "$out"; t_done; fi
t_cleanup "rm -f $img; rm -rf $run/img-0-forged $run/img-9-forged"
sh -c 'exit 0' & wait $!
dead=$!                                 # a pid that has exited

# forge NAME DEV: a dead ublk server's entry recording DEV.
forge() {
	mkdir -p "$run/$1"
	: > "$run/$1/lock"
	echo "$dead" > "$run/$1/pid"
	echo "/tmp/forged-$1.img" > "$run/$1/image"
	echo "$2" > "$run/$1/dev"
	echo ublk > "$run/$1/frontend"
}

mkdir -p "$run"
forge img-0-forged /dev/ublkb0
if ! dev=$(ublk_serve "$img" --dev-id 0); then t_fail "serve --frontend ublk --dev-id 0" "$dev"; t_done; fi
t_cleanup "$UBLK_FLASH stop --force $img"
forge img-9-forged "$dev"
pid=$(ublk_server_pid "$img")

out=$("$UBLK_FLASH" stop "$dev" 2>&1)
rc=$?
if [ $rc -eq 0 ] && ! grep -q "had died" <<<"$out"; then
	t_ok "stop $dev stops the live server, not a dead entry of the same number"
else
	t_fail "stop $dev stops the live server, not a dead entry of the same number" "exit $rc: $out"
fi
if ublk_wait_dead "$pid" 300; then t_ok "the server exited"; else t_fail "the server exited" "pid $pid"; fi
ublk_wait_gone "$dev"
t_eq "its device is gone" "$([ -e "$dev" ] && echo present || echo gone)" gone
t_eq "the dead entries are left alone" \
	"$(cat "$run/img-0-forged/dev" "$run/img-9-forged/dev" 2>&1 | tr '\n' ' ')" \
	"/dev/ublkb0 $dev "
t_done
