#!/usr/bin/env bats
# The medium on a network block store: an octant image whose bytes live on
# an NBD export (nbdkit's memory and file plugins here; qemu-nbd, rbd-nbd
# or any NBD server alike), served over FUSE + loop with real ext4.
load ../helpers
load fuse-lib
load ../nbd-lib

setup() {
	fuse_setup
	requires nbdkit
	SOCK=$SCRATCH/medium.sock
	URI="nbd+unix:///?socket=$SOCK"
}

teardown() {
	# servers first (they flush to the medium), then the medium's nbdkit
	local d img
	for d in "${UBLK_FLASH_RUN_DIR:-/nonexistent}"/img-*; do
		[ -f "$d/image" ] || continue
		img=$(cat "$d/image")
		timeout 60 "$UBLK_FLASH" stop --force "$img" >/dev/null 2>&1 || true
	done
	medium_down -9
	fuse_teardown
}

# medium_up PLUGIN ARGS...: an nbdkit export on $SOCK.  medium_down [SIGNAL].
medium_up() { nbd_start "$SOCK" "$SCRATCH/mpid" "$@"; }
medium_down() { [ -n "${SCRATCH:-}" ] && nbd_stop "$SCRATCH/mpid" "${1:--TERM}"; }

# delayed_reads [VAR=VALUE...]: an image with 8 MiB written on nbdkit's file
# plugin whose reads take 20 ms each, nbdkit's log (outside the delay) marking
# each one's start and end in $SCRATCH/delay.log; served (with VAR=VALUE in
# the server's environment) and read by fio, 4K random at QD16 for 2 s.  The
# log, not IOPS, says how many reads the backing keeps in flight: on a loaded
# machine the wake-ups, not the 20 ms, set the rate (a 250 IOPS threshold
# failed at load 23 on main and here alike).
delayed_reads() {
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 32M --align 1m >/dev/null
	medium_up file "$SCRATCH/medium.img"
	fuse_serve "$URI"
	dd if=/dev/urandom of="$DEV" bs=1M count=8 oflag=direct conv=fsync status=none
	"$UBLK_FLASH" stop "$URI"
	medium_down
	medium_up --filter=log --filter=delay file "$SCRATCH/medium.img" rdelay=20ms \
		logfile="$SCRATCH/delay.log"
	DEV=$(env "$@" "$UBLK_FLASH" serve "$URI" --frontend fuse)
	[ -b "$DEV" ] || { echo "serve gave '$DEV'"; return 1; }
	fio --name=r --filename="$DEV" --ioengine=io_uring --direct=1 --iodepth=16 \
		--bs=4k --rw=randread --size=8M --time_based --runtime=2 --randrepeat=0 >/dev/null 2>&1
}

# most_open CONN: the most reads open at once in $SCRATCH/delay.log on the
# connections whose "connection=N" matches the awk regex CONN.
most_open() {
	awk -v c="$1" '$3 ~ c && $4 == "Read" { n++; if (n > m) m = n }
		$3 ~ c && $4 == "...Read" { n-- } END { print m + 0 }' "$SCRATCH/delay.log"
}

check_files() { fuse_check_files "$URI"; }
files_make() { fuse_files_make "$1" 40; }

@test "nbd backing: create on an NBD export, serve, ext4, stop, serve again: data intact" {
	fuse_requires_fs ext4
	medium_up memory 96M
	run "$UBLK_FLASH" create "$URI" --size 64M --align odd
	echo "$output"
	[ "$status" -eq 0 ]
	# a second create refuses: the export holds an image now
	run "$UBLK_FLASH" create "$URI" --size 64M --align odd
	echo "$output"
	[ "$status" -ne 0 ]
	fuse_serve "$URI"
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	files_make "$SCRATCH/m"
	umount "$SCRATCH/m"
	run "$UBLK_FLASH" stats "$URI"
	echo "$output"
	[ "$status" -eq 0 ]
	# list names the server by its URI, and its device
	run "$UBLK_FLASH" list -n -r -o IMAGE,DEVICE,STATE
	echo "$output"
	[ "$output" = "$URI $DEV running" ]
	run "$UBLK_FLASH" stop "$URI"
	[ "$status" -eq 0 ]
	check_files
}

@test "nbd backing: kill -9 of ublk-flash: every fsynced file survives (medium on nbdkit file)" {
	fuse_requires_fs ext4
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 64M --align 1m >/dev/null
	medium_up file "$SCRATCH/medium.img"
	fuse_serve "$URI"
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	files_make "$SCRATCH/m"
	sync -f "$SCRATCH/m"
	local pid
	pid=$(cat "$UBLK_FLASH_RUN_DIR"/img-nbd-*/pid)
	kill -9 "$pid"
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	umount -l "$SCRATCH/m" 2>/dev/null || true
	"$UBLK_FLASH" stop "$URI" >/dev/null 2>&1 || true   # a dead server's leftovers
	check_files                                       # rolls forward over NBD
	medium_down
	run "$UBLK_FLASH" fsck "$SCRATCH/medium.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbd backing: a network error surfaces as EIO, not as lost or stale data" {
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 64M --align 1m >/dev/null
	medium_up --filter=error file "$SCRATCH/medium.img" error=EIO \
		error-pwrite-rate=100% error-file="$SCRATCH/fail"
	fuse_serve "$URI"
	head -c 4M /dev/urandom > "$SCRATCH/A"
	head -c 4M /dev/urandom > "$SCRATCH/B"
	dd if="$SCRATCH/A" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	touch "$SCRATCH/fail"                   # the store now fails every write
	run dd if="$SCRATCH/B" of="$DEV" bs=1M seek=8 oflag=direct conv=fsync status=none
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	run dd if="$SCRATCH/B" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	[ "$status" -ne 0 ]
	rm "$SCRATCH/fail"                      # the network is back
	# the failed overwrite did not replace A; new writes work again
	dd if="$DEV" bs=1M count=4 iflag=direct status=none | cmp - "$SCRATCH/A"
	dd if="$SCRATCH/B" of="$DEV" bs=1M seek=8 oflag=direct conv=fsync status=none
	"$UBLK_FLASH" stop "$URI"
	fuse_serve "$URI"
	dd if="$DEV" bs=1M count=4 iflag=direct status=none | cmp - "$SCRATCH/A"
	dd if="$DEV" bs=1M skip=8 count=4 iflag=direct status=none | cmp - "$SCRATCH/B"
	"$UBLK_FLASH" stop "$URI"
	medium_down
	run "$UBLK_FLASH" fsck "$SCRATCH/medium.img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nbd backing: bad exports get one clear line (no server, too small, read-only)" {
	run "$UBLK_FLASH" serve "nbd+unix:///?socket=$SCRATCH/none.sock" --frontend fuse
	echo "$output"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	medium_up memory 8M
	run "$UBLK_FLASH" create "$URI" --size 64M --align 1m
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space"* || "$output" == *"too small"* || "$output" == *"smaller"* ]]
	medium_down
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 16M --align 1m >/dev/null
	medium_up -r file "$SCRATCH/medium.img"
	run "$UBLK_FLASH" serve "$URI" --frontend fuse
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only"* || "$output" == *"read-only"* ]]
}

@test "nbd backing: one connection, so nbdkit's limit=1 is an image lock: a second server on the export exits 5" {
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 32M --align 1m >/dev/null
	medium_up --filter=limit file "$SCRATCH/medium.img" limit=1
	fuse_serve "$URI"
	# another host: its own run registry; only the export's limit refuses it
	run env UBLK_FLASH_RUN_DIR="$SCRATCH/host2" "$UBLK_FLASH" serve "$URI" --frontend fuse
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"in use"* ]]
	run env UBLK_FLASH_RUN_DIR="$SCRATCH/host2" "$UBLK_FLASH" create "$URI" --size 32M --align 1m --force
	echo "$output"
	[ "$status" -eq 5 ]
	# the first server is unharmed
	head -c 1M /dev/urandom > "$SCRATCH/A"
	dd if="$SCRATCH/A" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	dd if="$DEV" bs=1M count=1 iflag=direct status=none | cmp - "$SCRATCH/A"
	"$UBLK_FLASH" stop "$URI"
	medium_down
	run "$UBLK_FLASH" fsck "$SCRATCH/medium.img"
	[ "$status" -eq 0 ]
}

@test "nbd backing: TLS (nbds://, a throwaway certificate): served and checked with the CA; a plain client and another CA are refused" {
	requires openssl ss
	nbd_certs "$SCRATCH/pki"
	local port
	port=$(nbd_free_port)
	rm -f "$SCRATCH/mpid"
	nbdkit -i 127.0.0.1 -p "$port" -P "$SCRATCH/mpid" --tls=require \
		--tls-certificates="$SCRATCH/pki" memory 64M
	for _ in $(seq 50); do [ -s "$SCRATCH/mpid" ] && break; sleep 0.1; done
	local tls="nbds://localhost:$port/?tls-certificates=$SCRATCH/pki"
	run "$UBLK_FLASH" create "$tls" --size 32M --align odd
	echo "$output"
	[ "$status" -eq 0 ]
	fuse_serve "$tls"
	head -c 2M /dev/urandom > "$SCRATCH/A"
	dd if="$SCRATCH/A" of="$DEV" bs=1M oflag=direct conv=fsync status=none
	"$UBLK_FLASH" stop "$tls"
	run "$UBLK_FLASH" fsck "$tls"
	echo "$output"
	[ "$status" -eq 0 ]
	fuse_serve "$tls"
	dd if="$DEV" bs=1M count=2 iflag=direct status=none | cmp - "$SCRATCH/A"
	"$UBLK_FLASH" stop "$tls"
	run "$UBLK_FLASH" info "nbd://localhost:$port/"            # no TLS
	echo "$output"
	[ "$status" -ne 0 ]
	run "$UBLK_FLASH" info "nbds://localhost:$port/?tls-certificates=$SCRATCH/pki/other"
	echo "$output"
	[ "$status" -ne 0 ]
}

@test "nbd backing: requests are concurrent (8 in flight); a server killed under I/O fails it with EIO, no hang" {
	requires fio
	delayed_reads
	local most
	most=$(most_open '^connection=')
	echo "4K randread QD16, 20 ms per request: at most $most reads open at once"
	[ "$most" -ge 4 ]
	# the server dies: reads in flight and after fail, promptly
	medium_down -9
	run timeout 30 dd if="$DEV" of=/dev/null bs=4k count=64 skip=100 iflag=direct status=none
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[[ "$output" == *"Input/output error"* ]]
}

@test "nbd backing: on a multi-conn export reads go on private connections, every write and flush on the first" {
	requires fio
	"$UBLK_FLASH" create "$SCRATCH/medium.img" --size 32M --align 1m >/dev/null
	medium_up --filter=log file "$SCRATCH/medium.img" logfile="$SCRATCH/nbd.log"
	fuse_serve "$URI"
	dd if=/dev/urandom of="$DEV" bs=1M count=8 oflag=direct conv=fsync status=none
	fio --name=r --filename="$DEV" --ioengine=io_uring --direct=1 --iodepth=16 --bs=4k \
		--rw=randread --size=8M --time_based --runtime=1 --randrepeat=0 >/dev/null 2>&1
	dd if=/dev/urandom of="$DEV" bs=64k count=4 oflag=direct conv=fsync status=none
	"$UBLK_FLASH" stop "$URI"
	medium_down
	# nbdkit's log: "connection=N Read|Write|Flush ..." per request
	local rd wr
	rd=$(awk '$3 ~ /^connection=/ && $4 == "Read" { print $3 }' "$SCRATCH/nbd.log" | sort -u)
	wr=$(awk '$3 ~ /^connection=/ && ($4 == "Write" || $4 == "Flush" || $4 == "Zero") { print $3 }' \
		"$SCRATCH/nbd.log" | sort -u)
	echo "reads on: $(echo $rd); writes, zeroes and flushes on: $(echo $wr)"
	[ "$(wc -l <<<"$wr")" -eq 1 ] && [ "$wr" = connection=1 ]
	[ "$(grep -c . <<<"$rd")" -ge 2 ]
	grep -q '^connection=1 Flush' <(awk '{ print $3, $4 }' "$SCRATCH/nbd.log")
	# OCTANT_NBD_CONNECTIONS=1: the shared connection alone
	medium_up --filter=log file "$SCRATCH/medium.img" logfile="$SCRATCH/nbd1.log"
	OCTANT_NBD_CONNECTIONS=1 fuse_serve "$URI"
	dd if="$DEV" of=/dev/null bs=4k count=64 iflag=direct status=none
	"$UBLK_FLASH" stop "$URI"
	medium_down
	[ "$(awk '$3 ~ /^connection=/ { print $3 }' "$SCRATCH/nbd1.log" | sort -u)" = connection=1 ]
	run "$UBLK_FLASH" fsck "$SCRATCH/medium.img"
	[ "$status" -eq 0 ]
}

@test "nbd backing: several reads in flight on one connection; the server killed with a queue: EIO for each, no hang" {
	requires fio
	# two connections: the first (writes, flushes) and one for reads.  One
	# request at a time on the read connection (the synchronous nbd_pread per
	# private connection of before) gives 1; pipelined, the 8 FUSE threads' reads
	delayed_reads OCTANT_NBD_CONNECTIONS=2
	local most
	most=$(most_open '^connection=2$')
	echo "on the read connection at most $most reads open at once"
	[ "$most" -ge 4 ]
	"$UBLK_FLASH" stop "$URI"
	medium_down
	# reads queued on that connection (the server paused: nbdkit's pause
	# filter) when it dies: every one fails with EIO, promptly
	medium_up --filter=pause file "$SCRATCH/medium.img" pause-control="$SCRATCH/pause.sock"
	OCTANT_NBD_CONNECTIONS=2 fuse_serve "$URI"
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"p")
assert s.recv(1) == b"P"' "$SCRATCH/pause.sock"
	local i st pids=()
	for i in $(seq 6); do
		timeout 30 dd if="$DEV" of=/dev/null bs=4k count=1 skip=$((i * 37)) iflag=direct \
			status=none 2>"$SCRATCH/dd$i.err" &
		pids+=($!)
	done
	sleep 1
	medium_down -9
	for i in $(seq 6); do
		st=0
		wait "${pids[$((i - 1))]}" || st=$?
		echo "reader $i: status $st: $(cat "$SCRATCH/dd$i.err")"
		[ "$st" -ne 0 ] && [ "$st" -ne 124 ]
		grep -q "Input/output error" "$SCRATCH/dd$i.err"
	done
}
