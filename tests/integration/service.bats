#!/usr/bin/env bats
# ublk-flash@.service as systemd runs it, without systemd: the installed
# ExecStart helper with the unit's environment (IMAGE, OPTIONS, NOTIFY_SOCKET
# bound by a listener as systemd's, the syslog socket of --log syslog),
# READY=1 only once the device is live, the udev helper naming the device
# from the live registry, ExecStop (the helper's --stop: what is mounted on
# the device unmounted, then ublk-flash stop) ending the main process with
# status 0 and nothing left, nothing done without a main process, and a
# restart after kill -9 serving again (FUSE + loop: this machine has no ublk;
# the ublk --recover restart is in tests/cli/install.bats' helper case).
# The unit under systemd as PID 1 with udev (systemctl enable --now, an fstab
# mount, a reboot, kill -9 with ublk recovery, stop, apt remove and purge):
# the system guest, tests/vm/system-tap.sh (docs/vm.md).
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	requires python3 make
	# installed for real (no DESTDIR) under the scratch folder, so the unit's
	# paths are the real ones; the udev rule stays out of /etc
	make -s -C "$OCTANT_TOP" BUILD="$BUILD" install PREFIX="$SCRATCH/usr" \
		UDEVRULESDIR="$SCRATCH/udev" >"$SCRATCH/install.log" 2>&1 ||
		{ cat "$SCRATCH/install.log"; return 1; }
	HELPER=$SCRATCH/usr/libexec/octant/ublk-flash-service
	UDEVNAME=$SCRATCH/usr/libexec/octant/octant-udev-name
	UNIT=$SCRATCH/usr/lib/systemd/system/ublk-flash@.service
	NOTIFY_OUT=$SCRATCH/notify.out LOG_OUT=$SCRATCH/log.out
	# journald's /dev/log for --log syslog, and systemd's side of
	# NOTIFY_SOCKET: one line per datagram
	dgram_listen "$SCRATCH/log.sock" "$LOG_OUT"
	LOG_LISTENER=$LISTENER
	dgram_listen "$SCRATCH/notify.sock" "$NOTIFY_OUT"
}

teardown() {
	mountpoint -q "$SCRATCH/mnt" 2>/dev/null && umount "$SCRATCH/mnt"
	[ -n "${MAIN:-}" ] && kill "$MAIN" 2>/dev/null
	[ -n "${LISTENER:-}" ] && kill "$LISTENER" 2>/dev/null
	[ -n "${LOG_LISTENER:-}" ] && kill "$LOG_LISTENER" 2>/dev/null
	wait 2>/dev/null || true
	fuse_teardown
}

# start_unit NAME: ExecStart as systemd would (environment from the unit's
# Environment= with IMAGE and OPTIONS set as /etc/octant/NAME.conf would);
# waits for READY=1 like Type=notify.  The main pid in $MAIN.
start_unit() {
	local n=$(grep -c '^READY=1$' "$NOTIFY_OUT") args
	# the unit's own arguments after the instance (%t is $SCRATCH/rt here)
	args=$(sed -n 's/^ExecStart=[^ ]* %I//p' "$UNIT")
	args=${args//%t/$SCRATCH/rt}
	args=${args//%i/$1}
	mkdir -p "$SCRATCH/rt"
	# shellcheck disable=SC2086  # a list of words, as systemd splits it
	NOTIFY_SOCKET=$SCRATCH/notify.sock IMAGE=$SCRATCH/$1.img \
		UBLK_FLASH_SYSLOG_SOCKET=$SCRATCH/log.sock \
		OPTIONS="--frontend fuse" "$HELPER" "$1" $args >"$SCRATCH/main.out" 2>"$SCRATCH/main.err" &
	MAIN=$!
	for _ in $(seq 300); do
		[ "$(grep -c '^READY=1$' "$NOTIFY_OUT")" -gt "$n" ] && break
		kill -0 "$MAIN" 2>/dev/null || break
		sleep 0.1
	done
	cat "$SCRATCH/main.err"
	[ "$(grep -c '^READY=1$' "$NOTIFY_OUT")" -gt "$n" ]
	DEV=$(head -n1 "$SCRATCH/main.out")
}

# exec_stop NAME [MAINPID]: the unit's ExecStop as systemd runs it (MAINPID
# the main process's, default $MAIN; "" unset: it has exited already)
exec_stop() {
	local stop
	stop=$(sed -n 's/^ExecStop=//p' "$UNIT")
	[ "$stop" = "$HELPER --stop %I" ]
	if [ -n "${2-$MAIN}" ]; then
		MAINPID=${2-$MAIN} IMAGE=$SCRATCH/$1.img "$HELPER" --stop "$1"
	else
		env -u MAINPID IMAGE="$SCRATCH/$1.img" "$HELPER" --stop "$1"
	fi
}

@test "service: ExecStart serves in the foreground, READY=1 once live, ExecStop ends it cleanly" {
	grep -q '^Type=notify$' "$UNIT"
	fuse_create data 64M odd
	start_unit data
	# READY=1 came when the device was live: it is a block device now, the
	# registry names it, live stats answer; the main process is the server
	[ -b "$DEV" ]
	[ "$(fuse_pid "$SCRATCH/data.img")" = "$MAIN" ]
	# the unit's --pidfile (its PIDFile=) names the main process
	grep -q '^PIDFile=%t/ublk-flash@%i.pid$' "$UNIT"
	[ "$(cat "$SCRATCH/rt/ublk-flash@data.pid")" = "$MAIN" ]
	"$UBLK_FLASH" stats "$DEV" >/dev/null
	# ublk-flash list shows it, running, with the service's main pid
	run "$UBLK_FLASH" list -n -r -o DEVICE,IMAGE,PID,STATE
	[ "$output" = "$DEV $SCRATCH/data.img $MAIN running" ]
	[ "$(blockdev --getss "$DEV")" = 512 ]
	# the udev rule's helper names it from the live registry
	run "$UDEVNAME" "${DEV#/dev/}"
	[ "${lines[0]}" = OCTANT_NAME=data ]
	[ "${lines[1]}" = "OCTANT_IMAGE=$SCRATCH/data.img" ]
	# --log syslog: the start line went to the syslog socket, facility
	# daemon, priority info (<30>), under the main process's pid
	grep -qx "<30>ublk-flash\[$MAIN\]: $SCRATCH/data.img served on $DEV (pid $MAIN)" "$LOG_OUT"
	# ExecStop=ublk-flash-service --stop %I (systemd sets MAINPID); the main
	# process then exits 0
	exec_stop data
	local rc=0
	wait "$MAIN" || rc=$?
	MAIN=
	[ "$rc" -eq 0 ]
	[ ! -e "$DEV" ] || ! losetup "$DEV" 2>/dev/null | grep -q "$SCRATCH"
	[ -z "$(ls "$UBLK_FLASH_RUN_DIR"/img-*/pid 2>/dev/null)" ]
	[ ! -e "$SCRATCH/rt/ublk-flash@data.pid" ]
	[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR")" ]   # no folder, no log
	run "$UDEVNAME" "${DEV#/dev/}"
	[ -z "$output" ]
	"$UBLK_FLASH" fsck "$SCRATCH/data.img" >/dev/null
}

@test "service: after kill -9 the restart (the same ExecStart) serves again, the data intact" {
	fuse_create data 64M odd
	start_unit data
	printf 'octant-service-%s' "$$" | dd of="$DEV" bs=512 seek=100 conv=fsync status=none
	kill -9 "$MAIN"
	wait "$MAIN" 2>/dev/null || true
	MAIN=
	# Restart=on-failure runs ExecStart again: a plain serve (FUSE has
	# nothing to re-attach) that cleans what the dead server left
	start_unit data
	refute grep -q -- --recover "$SCRATCH/main.err"
	[ -b "$DEV" ]
	run dd if="$DEV" bs=512 skip=100 count=1 status=none
	[[ $output == "octant-service-$$"* ]]
	"$UBLK_FLASH" stop "$SCRATCH/data.img"
	wait "$MAIN"
	MAIN=
}

@test "service: ExecStop unmounts what is mounted on the device first, then stops cleanly" {
	fuse_create data 64M odd
	start_unit data
	mkfs.ext4 -q "$DEV"
	mkdir -p "$SCRATCH/mnt"
	mount "$DEV" "$SCRATCH/mnt"
	echo "octant-service-$$" >"$SCRATCH/mnt/f"
	# (no systemd as PID 1 here: the helper unmounts with umount itself)
	run exec_stop data
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"unmounting $SCRATCH/mnt (on $DEV) first"* ]]
	! mountpoint -q "$SCRATCH/mnt"
	local rc=0
	wait "$MAIN" || rc=$?
	MAIN=
	[ "$rc" -eq 0 ]
	"$UBLK_FLASH" fsck "$SCRATCH/data.img" >/dev/null
	# what was written before the stop is there
	start_unit data
	mount -o ro "$DEV" "$SCRATCH/mnt"
	[ "$(cat "$SCRATCH/mnt/f")" = "octant-service-$$" ]
	umount "$SCRATCH/mnt"
	exec_stop data
	wait "$MAIN"
	MAIN=
}

@test "service: ExecStop without a main process (it exited already) touches nothing" {
	fuse_create data 64M odd
	start_unit data
	# e.g. after `ublk-flash stop IMAGE` by hand systemd still runs ExecStop,
	# with MAINPID unset: nothing to stop, exit 0 (so no restart follows)
	run exec_stop data ""
	[ "$status" -eq 0 ]
	[[ $output == *"has exited already: nothing to stop"* ]]
	kill -0 "$MAIN"
	[ -b "$DEV" ]
	"$UBLK_FLASH" stats "$DEV" >/dev/null
	exec_stop data
	wait "$MAIN"
	MAIN=
}
