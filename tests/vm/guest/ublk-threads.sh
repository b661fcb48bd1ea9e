#!/usr/bin/env bash
# Guest test: which thread of a ublk queue does the backing I/O (ublk-queue.c).  Reads are
# served by the queue's ring thread (ublk-qN): ftl_read is lock-free and a hand-off costs more
# than it saves, so the queue's engine worker (ublk-wN) issues no backing read for them.
# Writes go to the worker, so the ring thread issues no backing write and a slow write never
# stops the ring.  Counted per thread from /proc/PID/task/TID/io (syscr, syscw), 1 and 2
# queues; data written and read back through the device must match.  The image is on tmpfs,
# which the server maps (nand_backing_fd): reads copy from the mapping and make no syscall at
# all, so the thread of each read is proven with the mapping off (OCTANT_BACKING_MAP=0), and
# with it on (2 queues) that no thread made a backing read syscall for them.
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

N=64  # 4 KiB requests per direction
img=/tmp/ublk-threads.img data=/tmp/ublk-threads.dat
t_cleanup "rm -f $img $data"
dd if=/dev/urandom of="$data" bs=4k count=$N status=none
for run in 1:0 2:0 2:1; do
	queues=${run%:*} map=${run#*:}
	label="$queues queue(s), mapping $([ "$map" = 1 ] && echo on || echo off)"
	if ! out=$(ublk_mkimg "$img" 64M 1m 2>&1); then t_fail "$label: create image" "$out"; continue; fi
	if ! dev=$(OCTANT_BACKING_MAP=$map ublk_serve "$img" --queues "$queues"); then
		t_fail "$label: serve --frontend ublk --queues $queues" "$dev"; continue
	fi
	t_cleanup "$UBLK_FLASH stop $img"
	pid=$(ublk_server_pid "$img")
	rings=() workers=()
	for q in $(seq 0 $((queues - 1))); do rings+=("ublk-q$q"); workers+=("ublk-w$q"); done
	nr=$(for n in "${rings[@]}"; do th_tids "$pid" "$n"; done | wc -l)
	nw=$(for n in "${workers[@]}"; do th_tids "$pid" "$n"; done | wc -l)
	t_eq "$label: server $pid has a ring thread per queue" "$nr" "$queues"
	# UBLK_Q_WORKERS (ublk-int.h): two engine workers per queue
	t_eq "$label: server $pid has two engine workers per queue" "$nw" "$((2 * queues))"

	ring_w0=$(th_io "$pid" syscw "${rings[@]}") work_w0=$(th_io "$pid" syscw "${workers[@]}")
	dd if="$data" of="$dev" bs=4k count=$N oflag=direct status=none
	ring_w1=$(th_io "$pid" syscw "${rings[@]}") work_w1=$(th_io "$pid" syscw "${workers[@]}")
	echo "# $label: $N writes: ring threads syscw +$((ring_w1 - ring_w0)), workers +$((work_w1 - work_w0))"
	t_eq "$label: writes: no backing write in the ring thread" "$((ring_w1 - ring_w0))" 0
	t_check "$label: writes: the worker wrote the backing" [ $((work_w1 - work_w0)) -ge $N ]

	ring_r0=$(th_io "$pid" syscr "${rings[@]}") work_r0=$(th_io "$pid" syscr "${workers[@]}")
	sum=$(dd if="$dev" bs=4k count=$N iflag=direct status=none | sha256sum)
	ring_r1=$(th_io "$pid" syscr "${rings[@]}") work_r1=$(th_io "$pid" syscr "${workers[@]}")
	echo "# $label: $N reads: ring threads syscr +$((ring_r1 - ring_r0)), workers +$((work_r1 - work_r0))"
	t_eq "$label: reads: no backing read in the worker" "$((work_r1 - work_r0))" 0
	if [ "$map" = 1 ]; then
		t_eq "$label: reads: no backing read syscall (copied from the mapping)" \
			"$((ring_r1 - ring_r0))" 0
	else
		t_check "$label: reads: the ring thread read the backing" [ $((ring_r1 - ring_r0)) -ge $N ]
	fi
	t_eq "$label: data read back" "$sum" "$(sha256sum <"$data")"

	if out=$("$UBLK_FLASH" stop "$img" 2>&1); then t_ok "$label: stop"; else t_fail "$label: stop" "$out"; fi
	ublk_wait_gone "$dev" || t_fail "$label: $dev gone after stop" "still there"
	rm -f "$img"
done
t_done
