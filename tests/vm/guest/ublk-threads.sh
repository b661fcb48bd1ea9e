#!/usr/bin/env bash
# Guest test: which thread of a ublk queue does the backing I/O, counted per thread from
# /proc/PID/task/TID/io (syscr, syscw), with 1 and 2 queues; the data written and read back
# through the device must match.
#   Per-I/O daemons (kernels whose driver grants UBLK_F_PER_IO_DAEMON: 7.3; ublk-daemon.c):
#     each queue has one daemon (ublk-qNd0) by default, two (ublk-qNd0, ublk-qNd1) with
#     OCTANT_UBLK_DAEMONS=2, each fetching, serving and committing its own tags: every daemon
#     makes backing reads AND writes for the requests it gets, no request is handed to
#     another thread, and there is no engine worker.
#   Ring thread + workers (6.1, 6.12, and OCTANT_UBLK_DAEMONS=queue on 7.3; ublk-queue.c):
#     reads are served by the queue's ring thread (ublk-qN): ftl_read is lock-free and a
#     hand-off costs more than it saves, so the queue's engine workers (ublk-wN) issue no
#     backing read for them; a write the ring thread serves itself when the engine can without
#     waiting (ftl_write_try: dd's 4 KiB writes one at a time into an open block, all but the
#     one that opens a block), else a worker does, so a slow write never stops the ring: the
#     ring thread makes most of the backing writes, and the stats count them
#     (write_try_served >= N/2; 0 with daemons, which serve every write themselves).
# The image is on tmpfs, which the server maps (nand_backing_fd): reads copy from the mapping
# and make no syscall at all, so the thread of each read is proven with the mapping off
# (OCTANT_BACKING_MAP=0), and with it on (2 queues) that no thread made a backing read syscall
# for them.
#   Zero copy with short requests by user copy (7.3: the device carries AUTO_BUF_REG and
#     USER_COPY; ublk-daemon.c): a 4 KiB write's data is read from /dev/ublkcN by the daemon
#     (pread: syscr) and a 4 KiB read's written to it (pwrite: syscw) instead of an io_uring
#     copy punted to an io-wq worker; with the mapping on no backing read makes a syscall, so
#     the daemons' syscr over the N writes counts those preads (>= N; 0 with io_uring copies),
#     and their syscw over the N reads the pwrites (>= N).  Then fio --verify=crc32c 4 KiB
#     random writes through the device.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
[ -r /proc/self/task/$$/io ] ||
	{ echo "SKIP: no /proc/PID/task/TID/io (kernel without CONFIG_TASK_IO_ACCOUNTING)"; exit 77; }

# th_tids PID NAME: the tids of PID's threads called NAME
th_tids() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && echo "${t##*/}"
	done
}
# th_io PID FIELD NAMES...: the sum of FIELD (syscr|syscw) over PID's threads called NAMES
th_io() {
	local pid=$1 field=$2 name tid sum=0 v
	shift 2
	for name in "$@"; do
		for tid in $(th_tids "$pid" "$name"); do
			v=$(awk -v f="$field:" '$1 == f { print $2 }' "/proc/$pid/task/$tid/io")
			sum=$((sum + v))
		done
	done
	echo "$sum"
}
# th_count PID NAMES...: how many of PID's threads are called one of NAMES
th_count() { local pid=$1 n; shift; for n in "$@"; do th_tids "$pid" "$n"; done | wc -l; }

case "$(uname -r)" in 7.3.*) has_daemons=1 ;; *) has_daemons=0 ;; esac
N=64  # 4 KiB requests per direction
img=/tmp/ublk-threads.img data=/tmp/ublk-threads.dat
t_cleanup "rm -f $img $data"
dd if=/dev/urandom of="$data" bs=4k count=$N status=none
# QUEUES:MAP:LAYOUT, LAYOUT auto (the default), queue (OCTANT_UBLK_DAEMONS=queue) or a
# count of daemons per queue (OCTANT_UBLK_DAEMONS=N)
runs="1:0:auto 2:0:auto 2:1:auto"
[ $has_daemons = 1 ] && runs+=" 1:0:queue 2:0:2 2:1:2"
for run in $runs; do
	IFS=: read -r queues map layout <<<"$run"
	label="$queues queue(s), mapping $([ "$map" = 1 ] && echo on || echo off)"
	dmode=; [ "$layout" = auto ] || { dmode=$layout; label+=", OCTANT_UBLK_DAEMONS=$layout"; }
	# daemons per queue where they run: UBLK_Q_DAEMONS (ublk-daemon.c) by default, one
	nd=1; [ "$layout" = 2 ] && nd=2
	if ! out=$(ublk_mkimg "$img" 64M 1m 2>&1); then t_fail "$label: create image" "$out"; continue; fi
	if ! dev=$(OCTANT_BACKING_MAP=$map OCTANT_UBLK_DAEMONS=$dmode ublk_serve "$img" --queues "$queues"); then
		t_fail "$label: serve --frontend ublk --queues $queues" "$dev"; continue
	fi
	t_cleanup "$UBLK_FLASH stop $img"
	pid=$(ublk_server_pid "$img")
	flags=$("$BUILD/ublk-probe" info "${dev#/dev/ublkb}" | sed -n 's/^flags //p')
	per_io=$(( (flags >> 13) & 1 ))    # UBLK_F_PER_IO_DAEMON on the live device
	t_eq "$label: the device has per-I/O daemons (UBLK_F_PER_IO_DAEMON) on this kernel" \
		"$per_io" "$has_daemons"
	# what this server runs: daemons where granted, unless turned off
	daemons=$has_daemons; [ "$layout" = queue ] && daemons=0
	# zero copy where the daemons run (7.3), its short requests by user copy: AUTO_BUF_REG
	# and USER_COPY on the live device
	zc=$daemons
	t_eq "$label: the device has zero copy with user copy (AUTO_BUF_REG, USER_COPY) on this kernel" \
		"$(( (flags >> 11) & (flags >> 7) & 1 ))" "$zc"
	if [ $daemons = 1 ]; then
		serving=() others=()
		for q in $(seq 0 $((queues - 1))); do
			for i in $(seq 0 $((nd - 1))); do serving+=("ublk-q${q}d$i"); done
			others+=("ublk-q$q" "ublk-w$q")
		done
		t_eq "$label: server $pid has $nd daemon(s) per queue" \
			"$(th_count "$pid" ublk-q{0,1}d{0,1,2,3})" "$((nd * queues))"
		t_eq "$label: server $pid has no ring thread nor engine worker" "$(th_count "$pid" "${others[@]}")" 0
	else
		rings=() workers=()
		for q in $(seq 0 $((queues - 1))); do rings+=("ublk-q$q"); workers+=("ublk-w$q"); done
		t_eq "$label: server $pid has a ring thread per queue" "$(th_count "$pid" "${rings[@]}")" "$queues"
		# UBLK_Q_WORKERS (ublk-int.h): two engine workers per queue
		t_eq "$label: server $pid has two engine workers per queue" \
			"$(th_count "$pid" "${workers[@]}")" "$((2 * queues))"
	fi

	declare -A w0 w1 r0 r1 c0 c1
	snap() { local -n a=$1; local n; for n in ublk-q0d0 ublk-q0d1 ublk-q1d0 ublk-q1d1 ublk-q0 ublk-q1 ublk-w0 ublk-w1; do a[$n]=$(th_io "$pid" "$2" "$n"); done; }
	snap w0 syscw
	snap c0 syscr
	dd if="$data" of="$dev" bs=4k count=$N oflag=direct status=none
	snap w1 syscw
	snap r0 syscr
	sum=$(dd if="$dev" bs=4k count=$N iflag=direct status=none | sha256sum)
	snap r1 syscr
	snap c1 syscw
	d() { local -n a=$1 b=$2; echo $(( b[$3] - a[$3] )); }
	if [ $daemons = 1 ]; then
		line="$label: $N writes / $N reads, backing syscw / syscr by daemon:"
		tw=0 tr=0
		for n in "${serving[@]}"; do
			line+=" $n +$(d w0 w1 "$n") / +$(d r0 r1 "$n")"
			tw=$((tw + $(d w0 w1 "$n"))) tr=$((tr + $(d r0 r1 "$n")))
		done
		echo "# $line"
		# dd's requests go to the queue of the CPU it runs on, which the scheduler picks
		# (with 2 queues either one, or both in turn), and that queue's tags go round (the
		# block layer's tag allocation): both daemons of the queue that served most get some
		# of dd's one-at-a-time requests
		both() {
			local q s best=-1 bq=0
			for q in $(seq 0 $((queues - 1))); do
				s=$(( $(d "$1" "$2" "ublk-q${q}d0") + $(d "$1" "$2" "ublk-q${q}d1") ))
				if [ "$s" -gt "$best" ]; then best=$s bq=$q; fi
			done
			[ "$(d "$1" "$2" "ublk-q${bq}d0")" -ge 1 ] && [ "$(d "$1" "$2" "ublk-q${bq}d1")" -ge 1 ]
		}
		t_check "$label: writes: the daemons wrote the backing" [ $tw -ge $N ]
		if [ $nd = 2 ]; then
			t_check "$label: writes: each daemon of the busiest queue wrote for its own tags" both w0 w1
		fi
		if [ "$map" = 1 ] && [ "$zc" = 1 ]; then
			ur=0 uw=0
			for n in "${serving[@]}"; do
				ur=$((ur + $(d c0 r0 "$n"))) uw=$((uw + $(d w1 c1 "$n")))
			done
			echo "# $label: user copy: syscr over the $N writes +$ur, syscw over the $N reads +$uw"
			t_check "$label: writes: each 4 KiB write's data read from /dev/ublkcN by user copy (syscr +$ur >= $N)" \
				[ "$ur" -ge $N ]
			t_check "$label: reads: each 4 KiB read's data written to /dev/ublkcN by user copy (syscw +$uw >= $N)" \
				[ "$uw" -ge $N ]
		fi
		if [ "$map" = 1 ]; then
			t_eq "$label: reads: no backing read syscall (copied from the mapping)" "$tr" 0
		else
			t_check "$label: reads: the daemons read the backing" [ $tr -ge $N ]
			if [ $nd = 2 ]; then
				t_check "$label: reads: each daemon of the busiest queue read for its own tags" both r0 r1
			fi
		fi
	else
		rw=$(( $(d w0 w1 ublk-q0) + $(d w0 w1 ublk-q1) )) ww=$(( $(d w0 w1 ublk-w0) + $(d w0 w1 ublk-w1) ))
		rr=$(( $(d r0 r1 ublk-q0) + $(d r0 r1 ublk-q1) )) wr=$(( $(d r0 r1 ublk-w0) + $(d r0 r1 ublk-w1) ))
		echo "# $label: $N writes: ring threads syscw +$rw, workers +$ww; $N reads: ring threads syscr +$rr, workers +$wr"
		t_check "$label: writes: the ring thread served most of them itself (syscw >= $((N / 2)))" \
			[ "$rw" -ge $((N / 2)) ]
		t_check "$label: writes: ring thread and workers wrote the backing" [ $((rw + ww)) -ge $N ]
		t_eq "$label: reads: no backing read in the worker" "$wr" 0
		if [ "$map" = 1 ]; then
			t_eq "$label: reads: no backing read syscall (copied from the mapping)" "$rr" 0
		else
			t_check "$label: reads: the ring thread read the backing" [ $rr -ge $N ]
		fi
	fi
	t_eq "$label: data read back" "$sum" "$(sha256sum <"$data")"
	if [ "$zc" = 1 ] && [ "$map" = 1 ]; then
		d="$label: fio --verify=crc32c, 4 KiB random writes through $dev"
		if out=$(fio --name=ucopy --filename="$dev" --ioengine=io_uring --direct=1 --iodepth=16 \
			--rw=randwrite --bs=4k --size=8M --verify=crc32c --do_verify=1 --randrepeat=0 2>&1); then
			t_ok "$d"
		else
			t_fail "$d" "$(tail -n 5 <<<"$out")"
		fi
	fi
	served=$("$UBLK_FLASH" stats "$dev" --json | sed -n 's/.*"write_try_served":\([0-9]*\).*/\1/p')
	echo "# $label: write_try_served ${served:-missing}"
	if [ $daemons = 1 ]; then
		t_eq "$label: stats: no write tried inline (the daemons serve every one)" "${served:-missing}" 0
	else
		t_check "$label: stats: writes served inline by the ring thread (write_try_served ${served:-missing} >= $((N / 2)))" \
			[ "${served:-0}" -ge $((N / 2)) ]
	fi

	if out=$("$UBLK_FLASH" stop "$img" 2>&1); then t_ok "$label: stop"; else t_fail "$label: stop" "$out"; fi
	ublk_wait_gone "$dev" || t_fail "$label: $dev gone after stop" "still there"
	rm -f "$img"
done
t_done
