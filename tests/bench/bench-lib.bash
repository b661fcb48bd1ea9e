# bench-lib.bash: the jobs, the /proc and /sys accounting and the table of bench-fuse, shared
# with bench-vm's guest script (which carries a copy of this file into the guest).  Sourced;
# not a benchmark itself (no bench- prefix, no x bit).
#
# The caller sets: UBLK_FLASH; SIZE (bytes), RUNTIME, RAMP (s); per peer, before measuring:
# PEER, ROUND, BDEV (/dev/X), SPID (the server's pid, empty for kernel loop), FLASH_IMG (the
# ublk-flash image, empty otherwise), OFFSET (fio offset, 3584 for odd mode) and, if it likes,
# bench_key (where a row's figure of a peer is stored, see below); SPAN (bytes: fio keeps to
# the first SPAN bytes of a larger device, e.g. a null one) and COPIES (payload copies per
# byte made outside the engine, by construction: the ublk driver's, the backing file's; set,
# it adds the "copies" figure, with ublk-flash's own page copies measured from its stats).

# USER_HZ, the unit of utime/stime (getconf is missing in the guest; Linux fixes it at 100)
BENCH_HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
BENCH_NCPU=$(grep -c '^cpu[0-9]' /proc/stat)

# bench_snap: "syscalls cpu_ticks bytes_moved ios flash_programs host_write_pages busy_ticks
# all_ticks ctxt server_ctxt page_copy_bytes" now; busy/all are every CPU's, every process's
# (/proc/stat: busy = user + nice + system + irq + softirq + steal, all = busy + idle +
# iowait), ctxt the context switches of every CPU (/proc/stat), server_ctxt those of every
# thread of the server (voluntary + involuntary), page_copy_bytes the engine's page reads and
# programs times the page size
bench_snap() {
	local sys=0 cpu=0 prog=0 hw=0 sctx=0 pcb=0 st b
	if [ -n "$SPID" ]; then
		sys=$(awk '/^sysc[rw]:/ { s += $2 } END { print s + 0 }' "/proc/$SPID/io")
		cpu=$(sed 's/.*) //' "/proc/$SPID/stat" | awk '{ print $12 + $13 }')
		sctx=$(cat /proc/"$SPID"/task/*/status 2>/dev/null |
		       awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }')
	fi
	if [ -n "$FLASH_IMG" ]; then
		st=$("$UBLK_FLASH" stats "$FLASH_IMG" --json)
		prog=$(jq -r .page_programs <<<"$st")
		hw=$(jq -r '.host_write_sectors * 512 / .page_size | floor' <<<"$st")
		pcb=$(jq -r '(.page_reads + .page_programs) * .page_size' <<<"$st")
	fi
	read -r -a b <"/sys/block/${BDEV#/dev/}/stat"
	echo "$sys $cpu $(((b[2] + b[6]) * 512)) $((b[0] + b[4])) $prog $hw" \
		"$(awk '$1 == "cpu" { b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6 }' /proc/stat)" \
		"$(awk '$1 == "ctxt" { print $2 }' /proc/stat) $sctx $pcb"
}
bench_rss_kib() { if [ -n "$SPID" ]; then awk '/^VmHWM:/ { print $2 }' "/proc/$SPID/status"; fi; }

# bench_fio RW BS [fio options]: "IOPS MiB/s" of one fio job on $BDEV (from $OFFSET on)
bench_fio() {
	local rw=$1 bs=$2 off=()
	shift 2
	[ "${OFFSET:-0}" -gt 0 ] && off=(--offset="$OFFSET" --size=$((SIZE - 4096)))
	[ -n "${SPAN:-}" ] && off=(--size="$SPAN")
	fio --name=b --filename="$BDEV" --ioengine=io_uring --direct=1 --iodepth=32 --numjobs=1 \
	    --rw="$rw" --bs="$bs" "${off[@]}" --randrepeat=0 --norandommap "$@" \
	    --output-format=json 2>/dev/null | sed -n '/^{/,$p' |
		jq -r '.jobs[0] | "\(.read.iops + .write.iops) \((.read.bw + .write.bw) / 1024)"'
}
bench_timed() { echo --time_based --runtime="$RUNTIME" --ramp_time="$RAMP"; }
bench_precondition() { bench_fio write 1M >/dev/null; }

declare -A BENCH_RES
bench_add() { BENCH_RES[$1]+="$2 "; }
# bench_want ROW: is ROW one of BENCH_ROWS (unset or empty: every row)?
bench_want() { [ -z "${BENCH_ROWS:-}" ] || printf '%s\n' $BENCH_ROWS | grep -qx "$1"; }
# bench_measure ROW RW BS [fio options]: run one job, record its figures under PEER.ROW.*
# (a row BENCH_ROWS leaves out is not run)
bench_measure() {
	local row=$1 rw=$2 bs=$3 s0 s1 out iops mibs a z
	shift 3
	bench_want "$row" || return 0
	s0=$(bench_snap)
	out=$(bench_fio "$rw" "$bs" "$@")
	s1=$(bench_snap)
	read -r iops mibs <<<"$out"
	[ -n "$iops" ] || { echo "bench: fio failed: $PEER $row"; return 1; }
	read -r -a a <<<"$s0"; read -r -a z <<<"$s1"
	local dsys=$((z[0] - a[0])) dcpu=$((z[1] - a[1])) dbytes=$((z[2] - a[2]))
	local dprog=$((z[4] - a[4])) dhw=$((z[5] - a[5])) dbusy=$((z[6] - a[6])) dall=$((z[7] - a[7])) perf io
	local dctx=$((z[8] - a[8])) dsctx=$((z[9] - a[9])) dpcb=$((z[10] - a[10]))
	if [ "$bs" = 4k ]; then perf=${iops%.*} io=4096; else perf=$(printf '%.0f' "$mibs") io=1048576; fi
	bench_add "$PEER.$row.perf" "$perf"
	# per fio I/O: every CPU's context switches, the server's, the payload's copies
	if [ "$dbytes" -gt 0 ]; then
		bench_add "$PEER.$row.ctx" "$(awk -v s=$dctx -v b=$dbytes -v io=$io 'BEGIN { printf "%.2f", s * io / b }')"
		[ -n "$SPID" ] && bench_add "$PEER.$row.sctx" \
			"$(awk -v s=$dsctx -v b=$dbytes -v io=$io 'BEGIN { printf "%.2f", s * io / b }')"
		[ -n "${COPIES:-}" ] && bench_add "$PEER.$row.copies" \
			"$(awk -v c="$COPIES" -v p=$dpcb -v b=$dbytes 'BEGIN { printf "%.2f", c + p / b }')"
	fi
	if [ -n "$SPID" ] && [ "$dbytes" -gt 0 ]; then
		bench_add "$PEER.$row.sysgib" "$(awk -v s=$dsys -v b=$dbytes 'BEGIN { printf "%.0f", s * 1073741824 / b }')"
		bench_add "$PEER.$row.sysio" "$(awk -v s=$dsys -v b=$dbytes -v io=$io 'BEGIN { printf "%.2f", s * io / b }')"
		bench_add "$PEER.$row.cpugib" "$(awk -v c=$dcpu -v t="$BENCH_HZ" -v b=$dbytes \
			'BEGIN { printf "%.2f", c / t * 1073741824 / b }')"
	fi
	[ "$dall" -gt 0 ] && bench_add "$PEER.$row.busy" "$(awk -v b=$dbusy -v t=$dall -v n="$BENCH_NCPU" \
		'BEGIN { printf "%.2f", b / t * n }')"
	[ "$dhw" -gt 0 ] && bench_add "$PEER.$row.wa" "$(awk -v p=$dprog -v h=$dhw 'BEGIN { printf "%.2f", p / h }')"
	printf '  round %d %-5s %-9s %9s %s\n' "$ROUND" "$PEER" "$row" "$perf" \
		"$([ "$bs" = 4k ] && echo IOPS || echo MiB/s)"
}
# bench_sequence: the rows on the device that is up: randwrite on the fresh device (SIZE/2,
# no GC), a full 1M write (precondition), then seq read, randread, seq write and randwrite on
# the full device (time-based).  bench_sequence_full12: precondition + full randwrite only.
bench_sequence() {
	bench_measure rwfresh randwrite 4k --io_size=$((SIZE / 2)) || return 1
	bench_precondition
	bench_measure seqread read 1M $(bench_timed) || return 1
	bench_measure randread randread 4k $(bench_timed) || return 1
	bench_measure seqwrite write 1M $(bench_timed) || return 1
	bench_measure rwfull randwrite 4k $(bench_timed) || return 1
	bench_add "$PEER.rss" "$(bench_rss_kib)"
}
bench_sequence_full12() {
	bench_precondition
	bench_measure rwfull12 randwrite 4k $(bench_timed)
}

# ---- the table ----
bench_median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
bench_med() { if [ -n "${BENCH_RES[$1]:-}" ]; then bench_median ${BENCH_RES[$1]}; else echo -; fi; }
bench_div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "-" && b != "-" && b > 0) printf "%.2fx", a / b; else print "-" }'; }
# bench_key PEER ROW: where PEER's figure on ROW is stored; callers may redefine it
bench_key() { echo "$1.$2"; }
declare -A BENCH_TITLE=([randread]="4K randread (IOPS)" [rwfresh]="4K randwrite, fresh (IOPS)"
	[rwfull]="4K randwrite, full, 7% OP (IOPS)" [rwfull12]="4K randwrite, full, 12.5% OP (IOPS)"
	[seqwrite]="1M seq write, full (MiB/s)" [seqread]="1M seq read (MiB/s)")

# bench_report ROUNDS "ROWS" "PEERS" "RATIOS (a/b ...)" "SERVERS" "FLASH PEERS"
# (the sections after the table: BENCH_METRICS, default "sysio sysgib cpugib busy wa"; also
# ctx, sctx and copies)
bench_report() {
	local rounds=$1 rows=$2 peers=$3 ratios=$4 servers=$5 flash=$6 r p x m who
	echo
	printf '%-36s' "medians of $rounds rounds"
	for p in $peers; do printf ' %9s' "$p"; done
	for x in $ratios; do printf ' %9s' "$x"; done
	echo
	local want=
	for r in $rows; do bench_want "$r" && want+=" $r"; done
	rows=$want
	for r in $rows; do
		printf '%-36s' "${BENCH_TITLE[$r]}"
		for p in $peers; do printf ' %9s' "$(bench_med "$(bench_key "$p" "$r").perf")"; done
		for x in $ratios; do
			printf ' %9s' "$(bench_div "$(bench_med "$(bench_key "${x%/*}" "$r").perf")" \
				"$(bench_med "$(bench_key "${x#*/}" "$r").perf")")"
		done
		echo
	done
	for m in ${BENCH_METRICS:-sysio sysgib cpugib busy wa}; do
		case $m in
		sysio)  echo; echo "server read+write syscalls per fio I/O (/proc/PID/io syscr+syscw)" ;;
		sysgib) echo "server read+write syscalls per GiB the device moved (/sys/block/DEV/stat)" ;;
		cpugib) echo "server CPU seconds per GiB the device moved (/proc/PID/stat utime+stime)" ;;
		busy)   echo "CPUs busy during the run, every process (/proc/stat; of $BENCH_NCPU: near it, no CPU was left)" ;;
		wa)     echo "ublk-flash flash page programs per host page written (stats deltas)" ;;
		ctx)    echo "context switches per fio I/O, every CPU (/proc/stat ctxt)" ;;
		sctx)   echo "server context switches per fio I/O, every thread (/proc/PID/task/*/status)" ;;
		copies) echo "payload copies per byte moved (${BENCH_COPIES_NOTE:-driver and backing by construction; ublk-flash page reads and programs from its stats})" ;;
		esac
		for r in $rows; do
			[ "$m" = wa ] && case $r in randread|seqread) continue ;; esac
			printf '  %-34s' "${BENCH_TITLE[$r]% (*}"
			case $m in wa) who=$flash ;; busy|ctx|copies) who=$peers ;; *) who=$servers ;; esac
			for p in $who; do
				printf ' %5s %-8s' "$p" "$(bench_med "$(bench_key "$p" "$r").$m")"
			done
			echo
		done
	done
	printf 'server peak RSS (VmHWM, MiB, median of rounds):'
	for p in $servers; do
		printf ' %s %s' "$p" "$(awk -v k="$(bench_med "$p.rss")" 'BEGIN { if (k == "-") print k; else printf "%.1f", k / 1024 }')"
	done
	echo
}
