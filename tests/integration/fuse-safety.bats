#!/usr/bin/env bats
# No command destroys a served image or acts on the wrong device (issue 11):
# create / fsck --repair refuse a served image (exit 5, device and pid named);
# stop --force with ext4 mounted ends in bounded time; stop DEV checks the
# loop's backing file against the registry; a stop whose clean checkpoint
# failed says so; a failed serve leaves nothing in the run folder.
load ../helpers
load fuse-lib

setup() { fuse_setup; }
# A server that failed to stop is killed before anything is unmounted: an
# unmount through a wedged server would wait in D state (and hold up every
# sync on the machine).
teardown() {
	local d
	for d in "${UBLK_FLASH_RUN_DIR:-/nonexistent}"/img-*; do
		[ -f "$d/pid" ] && kill -9 "$(cat "$d/pid")" 2>/dev/null || true
	done
	# a server whose registry entry a test removed
	[ -z "${UNLISTED_PID:-}" ] || kill -9 "$UNLISTED_PID" 2>/dev/null || true
	fuse_teardown
}

# files_sum DIR: one checksum over every file under DIR.
files_sum() {
	(cd "$1" && find . -type f ! -name lost+found -print0 | sort -z |
		xargs -0 sha256sum) | sha256sum
}

@test "create --force and fsck --repair refuse a served image: exit 5, device and pid named, data intact" {
	fuse_requires_fs ext4
	fuse_create a 256M odd
	img=$SCRATCH/a.img
	fuse_serve "$img"
	pid=$(fuse_pid "$img")
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	head -c 3M /dev/urandom > "$SCRATCH/m/f1"
	sync
	sum=$(files_sum "$SCRATCH/m")
	for args in "create $img --size 1G --align odd --force" \
		    "create $img --size 1G --align 1m" \
		    "fsck $img --repair"; do
		run "$UBLK_FLASH" $args
		echo "$args -> $status: $output"
		[ "$status" -eq 5 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *"$DEV"* ]]
		[[ "$output" == *"pid $pid"* ]]
	done
	# Nothing was changed: the filesystem and the image are whole.
	[ "$(files_sum "$SCRATCH/m")" = "$sum" ]
	umount "$SCRATCH/m"
	fuse_fsck ext4 "$DEV"
	"$UBLK_FLASH" stop "$DEV"
	"$UBLK_FLASH" fsck "$img"
	[ "$("$UBLK_FLASH" info "$img" --json | grep -o '"logical_size":[0-9]*')" = \
	  '"logical_size":268435456' ]
	fuse_serve "$img"
	mount "$DEV" "$SCRATCH/m"
	[ "$(files_sum "$SCRATCH/m")" = "$sum" ]
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
	# Another program holding the image lock is named too, and serve
	# refuses while it does (nothing left behind).
	requires flock
	flock -x "$img" sleep 30 &
	fpid=$!
	for i in $(seq 50); do grep -q "FLOCK.* $fpid " /proc/locks && break; sleep 0.1; done
	for args in "create $img --size 64M --align 1m --force" \
		    "fsck $img --repair" "serve $img --frontend fuse"; do
		run "$UBLK_FLASH" $args
		echo "$args -> $status: $output"
		[ "$status" -eq 5 ] && [[ "$output" == *"pid $fpid"* ]]
	done
	[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR")" ]
	kill $(ps -o pid= --ppid "$fpid") "$fpid"   # flock's sleep, then flock
	wait "$fpid" || true
	"$UBLK_FLASH" fsck "$img"
}

# stop_force_mounted WRITER: stop --force DEV with ext4 mounted (a writer
# busy or not): bounded, every request answered (I/O fails, nothing hangs),
# the image checkpointed cleanly, the synced file intact after a re-serve,
# and the one written just before the stop too (stop --force syncs first).
stop_force_mounted() {
	fuse_requires_fs ext4
	requires timeout
	fuse_create f 256M 1m
	img=$SCRATCH/f.img
	fuse_serve "$img"
	pid=$(fuse_pid "$img")
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	head -c 4M /dev/urandom > "$SCRATCH/m/kept"
	sync
	sum=$(sha256sum < "$SCRATCH/m/kept")
	# Not synced by us: stop --force syncs the filesystem before the cut.
	head -c 2M /dev/urandom > "$SCRATCH/m/unsynced"
	sum2=$(sha256sum < "$SCRATCH/m/unsynced")
	wpid=
	if [ "$1" = busy ]; then
		( while dd if=/dev/zero of="$SCRATCH/m/busy" bs=1M count=32 \
			conv=fsync status=none 2>/dev/null; do :; done ) &
		wpid=$!
		sleep 1
	fi
	t0=$(date +%s)
	run timeout 60 "$UBLK_FLASH" stop --force --timeout 40 "$DEV"
	t1=$(date +%s)
	echo "stop --force: exit $status after $((t1 - t0)) s: $output"
	[ "$status" -eq 0 ]
	[ $((t1 - t0)) -le 20 ]
	refute fuse_running "$pid"
	# The server left nothing: no FUSE mount, no registry folder.
	refute grep -q "$UBLK_FLASH_RUN_DIR" /proc/self/mountinfo
	[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR")" ]
	# Nothing waits in D state: I/O on the filesystem fails or finishes.
	if [ -n "$wpid" ]; then
		for i in $(seq 100); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
		! kill -0 "$wpid" 2>/dev/null || { kill -9 "$wpid"; false; }
		wait "$wpid" || true
	fi
	run timeout 20 dd if=/dev/urandom of="$SCRATCH/m/after" bs=64k count=4 \
		conv=fsync status=none
	echo "write after the stop: exit $status"
	[ "$status" -ne 124 ] && [ "$status" -ne 0 ]
	timeout 30 umount "$SCRATCH/m"
	# The image was checkpointed cleanly; the synced file is intact.
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	fuse_serve "$img"
	[ "$(fuse_stat_field "$DEV" last_mount | tr -d '"')" = clean ]
	mount "$DEV" "$SCRATCH/m"
	[ "$(sha256sum < "$SCRATCH/m/kept")" = "$sum" ]
	[ "$(sha256sum < "$SCRATCH/m/unsynced")" = "$sum2" ]
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$DEV"
}

@test "stop --force with ext4 mounted and idle: bounded, no hang, image checkpointed, synced data kept" {
	stop_force_mounted idle
}

@test "stop --force with ext4 mounted and a writer busy: bounded, every request answered" {
	stop_force_mounted busy
}

# serve_full: serve $img, an image on a 40M tmpfs ($SCRATCH/t), write 8M
# ($SCRATCH/data) and fill the tmpfs: the clean checkpoint cannot be written.
serve_full() {
	mkdir "$SCRATCH/t"
	mount -t tmpfs -o size=40M tmpfs "$SCRATCH/t"
	img=$SCRATCH/t/s.img
	"$UBLK_FLASH" create "$img" --size 64M --align 1m
	fuse_serve "$img"
	head -c 8M /dev/urandom > "$SCRATCH/data"
	dd if="$SCRATCH/data" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	dd if=/dev/zero of="$SCRATCH/t/fill" bs=1M status=none 2>/dev/null || true
}

# full_rolls_forward: after serve_full's server stopped without its clean
# checkpoint, with room again the next serve rolls forward, data intact.
full_rolls_forward() {
	rm "$SCRATCH/t/fill"
	fuse_serve "$img"
	[ "$(fuse_stat_field "$DEV" last_mount | tr -d '"')" = roll-forward ]
	cmp -n $((8 << 20)) "$SCRATCH/data" "$DEV"
}

@test "stop: a failed clean checkpoint (backing full) exits 3 with the reason; the next serve rolls forward" {
	serve_full
	run "$UBLK_FLASH" stop "$DEV"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"clean checkpoint: No space left on device"* ]]
	[[ "$output" == *"rolls forward"* ]]
	[ -z "$(ls "$UBLK_FLASH_RUN_DIR"/img-*/pid 2>/dev/null)" ]
	full_rolls_forward
	"$UBLK_FLASH" stop "$DEV"
	umount "$SCRATCH/t"
}

@test "a store without room under the image: writes fail with ENOSPC, the log says why once, stats count them; with room back nothing is lost" {
	mkdir "$SCRATCH/t"
	mount -t tmpfs -o size=40M tmpfs "$SCRATCH/t"
	img=$SCRATCH/t/s.img
	"$UBLK_FLASH" create "$img" --size 64M --align odd >/dev/null
	DEV=$("$UBLK_FLASH" serve "$img" --frontend fuse --log "$SCRATCH/log")
	head -c 4M /dev/urandom > "$SCRATCH/data"
	dd if="$SCRATCH/data" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	dd if=/dev/zero of="$SCRATCH/t/fill" bs=1M status=none 2>/dev/null || true
	# new room: three writes past what the store holds, each refused
	for at in 16 24 32; do
		run dd if=/dev/urandom of="$DEV" bs=1M seek=$at count=1 oflag=direct status=none
		echo "$output"
		[ "$status" -ne 0 ] && [[ "$output" == *"No space left on device"* ]]
	done
	cat "$SCRATCH/log"
	[ "$(grep -c "store has no room (No space left on device)" "$SCRATCH/log")" -eq 1 ]
	n=$(fuse_stat_field "$DEV" store_full)
	[ "$n" -ge 3 ]
	"$UBLK_FLASH" stats "$DEV" | grep -q "^store without room *$n writes to it refused"
	# room back: the writes succeed, the data written before reads back
	rm "$SCRATCH/t/fill"
	dd if="$SCRATCH/data" of="$DEV" bs=1M seek=16 oflag=direct conv=fsync status=none
	cmp -n $((4 << 20)) "$SCRATCH/data" "$DEV"
	cmp -n $((4 << 20)) "$SCRATCH/data" <(dd if="$DEV" bs=1M skip=16 count=4 iflag=direct status=none)
	"$UBLK_FLASH" stop "$DEV"
	[ "$(fuse_stat_field "$img" last_mount | tr -d '"')" = clean ]
	run "$UBLK_FLASH" fsck "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	umount "$SCRATCH/t"
}

# no_ctl IMG: the server of IMG can no longer be asked over its control
# socket (a file bind-mounted over ctl.sock: connect is refused, and the
# server cannot bind it again); undo with ctl_back.
no_ctl() {
	CTL=$(entry_dir "$1")/ctl.sock
	: > "$SCRATCH/notsock"
	mount --bind "$SCRATCH/notsock" "$CTL"
}
ctl_back() {
	umount "$CTL"
	rm -rf "${CTL%/ctl.sock}"
}

@test "stop: a server that does not answer on its control socket gets SIGTERM; exit 0 only if its clean checkpoint is on the image" {
	serve_full
	pid=$(fuse_pid "$img")
	no_ctl "$img"
	run "$UBLK_FLASH" stop "$img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"stopped with SIGTERM"* ]]
	[[ "$output" == *"clean checkpoint is not on the image"* ]]
	refute fuse_running "$pid"
	ctl_back
	full_rolls_forward
	# with room for it: exit 0, and the checkpoint is there
	pid=$(fuse_pid "$img")
	no_ctl "$img"
	run "$UBLK_FLASH" stop "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	refute fuse_running "$pid"
	ctl_back
	fuse_serve "$img"
	[ "$(fuse_stat_field "$DEV" last_mount | tr -d '"')" = clean ]
	"$UBLK_FLASH" stop "$DEV"
	umount "$SCRATCH/t"
}

# entry_dir IMG: the image's registry folder.
entry_dir() {
	local d
	for d in "$UBLK_FLASH_RUN_DIR"/img-*/; do
		[ "$(cat "$d/image" 2>/dev/null)" = "$(realpath "$1")" ] &&
			echo "${d%/}" && return 0
	done
	return 1
}

@test "stop: no SIGTERM to a pid the entry names unless that process holds the entry (a stale pid file, the socket not answering)" {
	fuse_create a 64M 1m
	img=$SCRATCH/a.img
	fuse_serve "$img"
	pid=$(fuse_pid "$img")
	d=$(entry_dir "$img")
	sleep 600 &
	other=$!
	echo "$other" > "$d/pid"
	no_ctl "$img"
	run "$UBLK_FLASH" stop --timeout 5 "$img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"nothing signalled"* ]]
	kill -0 "$other"
	fuse_running "$pid"
	umount "$CTL"
	echo "$pid" > "$d/pid"
	"$UBLK_FLASH" stop "$img"
	refute fuse_running "$pid"
	kill "$other"
}

@test "stop DEV: a reused loop number is refused, never acted on; the server now on it is the one stopped" {
	fuse_create a 64M 1m
	fuse_create b 64M 1m
	head -c 16M /dev/urandom > "$SCRATCH/plain.raw"
	fuse_serve "$SCRATCH/a.img"
	deva=$DEV
	pida=$(fuse_pid "$SCRATCH/a.img")
	dira=$(entry_dir "$SCRATCH/a.img")
	kill -9 "$pida"
	for i in $(seq 50); do kill -0 "$pida" 2>/dev/null || break; sleep 0.1; done
	# A died holding $deva; its loop is detached by hand and the number
	# goes to a plain loop device.
	losetup -d "$deva"
	for i in $(seq 20); do losetup "$deva" "$SCRATCH/plain.raw" 2>/dev/null && break; sleep 0.2; done
	[ "$(losetup -n -O BACK-FILE "$deva" 2>/dev/null)" = "$SCRATCH/plain.raw" ] ||
		skip "$deva was taken by another process before the test could reuse it"
	run "$UBLK_FLASH" stop "$deva"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"not served"* ]] && [[ "$output" == *"a.img"* ]]
	[ "$(losetup -n -O BACK-FILE "$deva")" = "$SCRATCH/plain.raw" ]
	[ -f "$dira/pid" ]
	cmp "$SCRATCH/plain.raw" "$deva"
	losetup -d "$deva"
	run "$UBLK_FLASH" stop "$SCRATCH/a.img"
	echo "$output"
	[ "$status" -eq 0 ] && [[ "$output" == *"had died"* ]]
	[ ! -e "$dira" ]
	# A dead server's entry names the number another server uses now
	# (a serve sweeps dead entries, so set it up: A dies after B is up,
	# and its entry is pointed at B's number).
	fuse_serve "$SCRATCH/b.img"
	devb=$DEV
	pidb=$(fuse_pid "$SCRATCH/b.img")
	fuse_serve "$SCRATCH/a.img"
	pida=$(fuse_pid "$SCRATCH/a.img")
	dira=$(entry_dir "$SCRATCH/a.img")
	kill -9 "$pida"
	for i in $(seq 50); do kill -0 "$pida" 2>/dev/null || break; sleep 0.1; done
	echo "$devb" > "$dira/dev"
	run "$UBLK_FLASH" stop "$devb"
	echo "$output"
	[ "$status" -eq 0 ]
	refute fuse_running "$pidb"
	[ -f "$dira/pid" ]            # A's leftovers are not B's
	run "$UBLK_FLASH" stop "$SCRATCH/a.img"
	[ "$status" -eq 0 ] && [[ "$output" == *"had died"* ]]
	[ ! -e "$dira" ]
}

@test "a failed serve leaves nothing in the run folder; a clean stop neither; serve sweeps dead servers' entries" {
	head -c 1M /dev/zero > "$SCRATCH/notimg"
	run "$UBLK_FLASH" serve "$SCRATCH/notimg" --frontend fuse
	echo "$output"
	[ "$status" -eq 4 ]
	run "$UBLK_FLASH" serve "$SCRATCH/notimg" --frontend fuse --foreground
	[ "$status" -eq 4 ]
	[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR")" ]
	fuse_create a 64M 1m
	fuse_create b 64M 1m
	fuse_serve "$SCRATCH/a.img"
	"$UBLK_FLASH" stop "$DEV"
	[ -z "$(ls -A "$UBLK_FLASH_RUN_DIR")" ]
	# A dead server's entry, loop and FUSE mount go with the next serve
	# of any image (its log stays: it tells why it died).
	fuse_serve "$SCRATCH/a.img"
	pida=$(fuse_pid "$SCRATCH/a.img")
	dira=$(entry_dir "$SCRATCH/a.img")
	kill -9 "$pida"
	for i in $(seq 50); do kill -0 "$pida" 2>/dev/null || break; sleep 0.1; done
	fuse_serve "$SCRATCH/b.img"
	[ ! -e "$dira" ]
	refute grep -q "$dira/mnt" /proc/self/mountinfo
	[ "$(losetup -l -n -O BACK-FILE | grep -c "$UBLK_FLASH_RUN_DIR")" -eq 1 ]
	"$UBLK_FLASH" stop "$DEV"
	[ "$(ls -A "$UBLK_FLASH_RUN_DIR")" = "$(basename "$dira").log" ]
}

# rm_run: remove the run folder as an admin would (rm -rf); the FUSE
# mountpoint of a live server cannot go (busy), the rest does.
rm_run() {
	rm -rf "$UBLK_FLASH_RUN_DIR" 2>/dev/null || true
	[ ! -e "$UBLK_FLASH_RUN_DIR" ] || [ -z "$(find "$UBLK_FLASH_RUN_DIR" -name pid -o -name lock)" ]
}

@test "rm -rf of the run folder under a live server: serve of its image exits 5 and touches nothing of it (ext4 mounted)" {
	fuse_requires_fs ext4
	fuse_create a 64M 1m
	img=$SCRATCH/a.img
	fuse_serve "$img"
	dev=$DEV
	pid=$(fuse_pid "$img")
	UNLISTED_PID=$pid
	back=$(losetup -n -O BACK-FILE "$dev")
	fuse_mkfs ext4 "$dev"
	mount "$dev" "$SCRATCH/m"
	head -c 1M /dev/urandom > "$SCRATCH/m/f1"
	sync
	rm_run
	run "$UBLK_FLASH" serve "$img" --frontend fuse
	echo "$output"
	[ "$status" -eq 5 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"already served on $dev (pid $pid)"* ]]
	# nothing of the live server was touched: its loop is bound to its
	# FUSE file, the FUSE mount is there, ext4 writes and syncs
	[ "$(losetup -n -O BACK-FILE "$dev")" = "$back" ]
	grep -q " ${back%/*} " /proc/self/mountinfo
	fuse_running "$pid"
	head -c 1M /dev/urandom > "$SCRATCH/m/f2"
	sync -f "$SCRATCH/m/f2"
	sums=$(sha256sum "$SCRATCH"/m/f?)
	# nor by the sweep of another image's serve
	fuse_create b 64M 1m
	fuse_serve "$SCRATCH/b.img"
	"$UBLK_FLASH" stop "$DEV"
	[ "$(losetup -n -O BACK-FILE "$dev")" = "$back" ]
	umount "$SCRATCH/m"
	run e2fsck -fn "$dev"
	echo "$output"
	[ "$status" -eq 0 ]
	"$UBLK_FLASH" stop "$img"
	refute fuse_running "$pid"
	UNLISTED_PID=
	fuse_serve "$img"
	mount "$DEV" "$SCRATCH/m"
	[ "$(sha256sum "$SCRATCH"/m/f?)" = "$sums" ]
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$img"
}

@test "rm -rf of the run folder under a live server: it writes its entry again; list, stats and stop find it at once" {
	fuse_create a 64M 1m
	img=$SCRATCH/a.img
	fuse_serve "$img"
	dev=$DEV
	pid=$(fuse_pid "$img")
	UNLISTED_PID=$pid
	sleep 2          # an uptime to keep
	rm_run
	run "$UBLK_FLASH" list -n -r -o DEVICE,PID,STATE,UPTIME
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "$dev $pid running "* ]]
	[ "$("$UBLK_FLASH" list -J -o UPTIME | tr -dc 0-9)" -ge 2 ]
	rm_run
	run "$UBLK_FLASH" stats "$dev" --json
	[ "$status" -eq 0 ]
	[[ "$output" == *'"host_write_sectors"'* ]]
	rm_run
	run "$UBLK_FLASH" stop "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	refute fuse_running "$pid"
	UNLISTED_PID=
	refute grep -q "$UBLK_FLASH_RUN_DIR" /proc/self/mountinfo
	# it wrote its clean checkpoint
	fuse_serve "$img"
	[ "$(fuse_stat_field "$DEV" last_mount | tr -d '"')" = clean ]
	"$UBLK_FLASH" stop "$img"
}
