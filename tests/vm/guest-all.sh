#!/usr/bin/env bash
# Runs in the guest (started by guest-tap.sh through vm-run.sh): every
# /octant/tests/vm/guest/*.sh in turn (or only those named as arguments, e.g. "smoke ublk-*"),
# each under a timeout, and turns what each prints or returns into one TAP stream:
#   its own "ok N desc" / "not ok N desc" lines  ->  "ok M NAME: desc" (renumbered)
#   no TAP lines: exit 0 -> "ok M NAME", 77 -> "ok M NAME # skip REASON" (from "SKIP: REASON"),
#   anything else -> "not ok M NAME (exit N)"; other output becomes "# " comments.
# A script may ask for a longer timeout with a line "# vm-timeout: SECS" (never shorter), and
# keep to some kernels with a line "# vm-kernels: 6.12 7.3" (series, as uname -r starts): on
# the others it is one "ok M NAME # skip" naming the line, unless OCTANT_VM_ALL_KERNELS=1.
# That is for the vm tier's time budget (docs/vm.md says which runs where); ublk-*.sh scripts
# have no such line: every ublk test runs on every kernel.
# Exit status: 1 if any case failed.
shopt -s lastpipe nullglob
T=${OCTANT_VM_TEST_TIMEOUT:-450}
echo "# vm: guest up at $(cut -d' ' -f1 /proc/uptime)s uptime, kernel $(uname -r)"

scripts=()
if [ $# -gt 0 ]; then
	for pat in "$@"; do
		for s in /octant/tests/vm/guest/${pat%.sh}.sh; do scripts+=("$s"); done
	done
else
	scripts=(/octant/tests/vm/guest/*.sh)
fi

# user_pids: every user-space process (kernel threads have no exe), but this shell.
user_pids() {
	local d
	for d in /proc/[0-9]*; do
		case "${d#/proc/}" in "$$"|"$BASHPID") continue ;; esac
		readlink "$d/exe" >/dev/null 2>&1 && echo "${d#/proc/}"
	done
}

n=0 failed=0
series=$(uname -r | cut -d. -f1,2)
for s in "${scripts[@]}"; do
	name=$(basename "$s" .sh)
	kernels=$(sed -n 's/^# vm-kernels: *//p' "$s" | head -n 1)
	if [ -n "$kernels" ] && [[ " $kernels " != *" $series "* ]] && [ "${OCTANT_VM_ALL_KERNELS:-0}" != 1 ]; then
		n=$((n + 1))
		echo "ok $n $name # skip runs on kernel(s) $kernels only (its vm-kernels line: the vm tier's time budget; OCTANT_VM_ALL_KERNELS=1 runs it here too)"
		continue
	fi
	own=0 ownfail=0 reason='' rc=''
	start=$(cut -d' ' -f1 /proc/uptime)
	before=$(user_pids | tr '\n' ' ')
	if [ -x "$s" ]; then cmd=("$s"); else cmd=(bash "$s"); fi
	t=$(sed -n 's/^# vm-timeout: \([0-9][0-9]*\)$/\1/p' "$s" | head -n 1)
	[ -n "$t" ] && [ "$t" -gt "$T" ] || t=$T
	{ cd /tmp && timeout -k 10 "$t" "${cmd[@]}" </dev/null 2>&1; echo "@@octant-rc $?"; } |
	while IFS= read -r line; do
		case "$line" in
		# stop at the status line: a process the script left behind may hold the pipe open
		"@@octant-rc "*) rc=${line#@@octant-rc }; break ;;
		"not ok "*)
			d=${line#not ok }; d=${d#"${d%%[!0-9]*}"}; d=${d# }; d=${d#- }
			n=$((n + 1)); own=$((own + 1)); ownfail=1; failed=1
			echo "not ok $n $name: $d" ;;
		"ok "*)
			d=${line#ok }; d=${d#"${d%%[!0-9]*}"}; d=${d# }; d=${d#- }
			n=$((n + 1)); own=$((own + 1))
			echo "ok $n $name: $d" ;;
		1..*) ;;
		"#"*) echo "$line" ;;
		SKIP*) reason=${line#SKIP}; reason=${reason#:}; reason=${reason# }; echo "# $line" ;;
		*) echo "# $line" ;;
		esac
	done
	secs=$(awk -v a="$start" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }')
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		n=$((n + 1)); failed=1; echo "not ok $n $name: timed out after ${t}s"
	elif [ $own -eq 0 ]; then
		n=$((n + 1))
		case "$rc" in
		0)  echo "ok $n $name" ;;
		77) echo "ok $n $name # skip ${reason:-no reason given}" ;;
		*)  failed=1; echo "not ok $n $name (exit $rc)" ;;
		esac
	elif [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ $ownfail -eq 0 ]; then
		n=$((n + 1)); failed=1; echo "not ok $n $name: exited $rc after passing its cases"
	fi
	echo "# vm: $name took ${secs}s"
	# A test that left processes, mounts or devices behind must not break the next one.
	for p in $(user_pids); do
		case " $before " in *" $p "*) continue ;; esac
		c=$(cat "/proc/$p/comm" 2>/dev/null) || continue
		echo "# vm: $name left process $p ($c) running: killed"
		kill -9 "$p" 2>/dev/null
	done
	sleep 0.2
	tac /proc/mounts | while read -r _ mnt _; do
		case "$mnt" in
		/|/proc|/sys|/dev|/dev/pts|/dev/shm|/tmp|/run|/scratch|/octant/out|/sys/kernel/debug|/sys/kernel/config) ;;
		*) umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null ;;
		esac
	done
	dmsetup remove_all 2>/dev/null
	losetup -D 2>/dev/null
done
[ ${#scripts[@]} -eq 0 ] && echo "# vm: no guest tests matched"
echo "# vm: guest tests done at $(cut -d' ' -f1 /proc/uptime)s uptime"
exit $failed
