#!/usr/bin/env bash
# The `vm` test tier: for each guest kernel (OCTANT_VM_KERNELS, default "6.1 6.12 7.3"; see
# vm-lib.sh) prepare the guest and boot ONE qemu (TCG) guest that runs every
# tests/vm/guest/*.sh (guest-all.sh); print the TAP of all guests as one stream, every case
# named with its kernel ("6.12 ublk-basic: odd: ..."), then per kernel
#   ok N 6.12: guest 6.12.107+deb12-amd64: 61 ok, 0 failed, 2 skipped (boot Ys, tests Zs)
#   # phase times 6.12: prepare Xs, boot Ys, tests Zs
# usage: tests/vm/guest-tap.sh [NAME-PATTERN...]     (e.g. smoke 'ublk-*'; default all)
# Env: OCTANT_VM_KERNELS (kernels to boot), OCTANT_VM_LANES (guests at once, default 2: see
# "Lanes" below), OCTANT_VM_TIMEOUT (one guest, default 1800 s: a hang guard, the guests share
# the cores), OCTANT_VM_TEST_TIMEOUT (per guest script, default 450 s), OCTANT_VM_MEM (MB, default
# 2048), OCTANT_VM_DISK_SIZE (the sparse virtio disk behind the guest's ext4 /scratch, default
# 8G), OCTANT_VM_TESTS (name patterns when none are given), BUILD (default build),
# OCTANT_VM_RBD (1: guest/rbd-ublk.sh gets its one-node Ceph cluster, started here on the
# host's 127.0.0.1 and stopped by pid at the end, and the 7.3 guest a NIC and librbd
# (vm-run.sh --rbd); the default; 0: it SKIPs, see docs/vm.md "ublk on an RBD medium").
# Before the boots it makes the host FUSE reference for guest/compare-ublk.sh (seed drawn per
# run, OCTANT_SEED replays) in $BUILD/vm-out, shared with the guests at /octant/out.
# SKIPs loudly per kernel ("ok N 6.12: vm tier # skip kernel 6.12: cannot fetch ...") without
# qemu or when a kernel's packages cannot be fetched; "not ok" when a guest crashes, times out
# or a guest test fails.
set -uo pipefail
shopt -s lastpipe
. "$(dirname "$0")/vm-lib.sh"

[ $# -eq 0 ] && [ -n "${OCTANT_VM_TESTS:-}" ] && set -- $OCTANT_VM_TESTS
n=0 nfail=0
tap() { # ok|not-ok DESC
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n $2"; else nfail=$((nfail + 1)); echo "not ok $n $2"; fi
}
err=$(mktemp) kdir=''
. "$VM_DIR/ceph-guest.bash"
tap_cleanup() { rm -rf ${kdir:+"$kdir"} "$err" "$err".*; vm_ceph_down; }
trap tap_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The host half of guest/compare-ublk.sh: make compare's reduced deterministic matrix over
# FUSE + loop here, once for every kernel; the guests read it from the shared --out folder
# (/octant/out/compare-host) and write their own runs beside it (compare-<kernel>/).
build=${BUILD:-build}
case "$build" in /*) ;; *) build=$VM_TOP/$build ;; esac
vmout=$build/vm-out
! mountpoint -q "$vmout/ceph/osd" || umount "$vmout/ceph/osd"
rm -rf "$vmout"; mkdir -p "$vmout"
. "$VM_DIR/guest/compare-args.bash"
cmp_wanted=0
for k in $OCTANT_VM_KERNELS; do [[ " $CMP_VM_KERNELS " == *" $k "* ]] && cmp_wanted=1; done
[ $# -eq 0 ] || [[ " $* " == *" compare"* ]] || cmp_wanted=0
if [ $cmp_wanted -eq 0 ]; then
	:
elif [ "$(id -u)" -eq 0 ] && [ -e /dev/fuse ] && [ -x "$build/ublk-flash" ]; then
	seed=${OCTANT_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 + 1 ))}
	echo "# vm: host FUSE reference for compare-ublk: seed $seed (replay: OCTANT_SEED=$seed)"
	t0=$(vm_now)
	if BUILD=$build "$VM_TOP/tests/compare/run" "${CMP_VM_ARGS[@]}" --frontend fuse --seed "$seed" \
		--out "$vmout/compare-host" >"$vmout/compare-host.log" 2>&1; then
		echo "# vm: host FUSE reference made in $(vm_since "$t0")s"
	else
		echo "# vm: the host FUSE reference failed (the guests make their own over FUSE):"
		tail -n 5 "$vmout/compare-host.log" | sed 's/^/#   /'
		rm -rf "$vmout/compare-host"
	fi
else
	echo "# vm: no host FUSE reference for compare-ublk (needs root, /dev/fuse, $build/ublk-flash): the guests make their own"
fi

# guest/rbd-ublk.sh's cluster (OCTANT_VM_RBD=1): the guest of kernel $rbd_kernel reaches it
# (vm-run.sh --rbd, guest/rbd-ublk.sh's vm-kernels line); without it that script SKIPs.
rbd_kernel=7.3 rbd_wanted=0 rbd_up=0
[ "${OCTANT_VM_RBD:-1}" = 1 ] && [[ " $OCTANT_VM_KERNELS " == *" $rbd_kernel "* ]] && rbd_wanted=1
[ $# -eq 0 ] || [[ " $* " == *" rbd"* ]] || rbd_wanted=0
if [ $rbd_wanted -eq 1 ]; then
	t0=$(vm_now)
	if [ "$(id -u)" -ne 0 ]; then
		echo "# vm: no Ceph cluster for rbd-ublk (needs root): it SKIPs"
	# not in $(...): the cluster's folder must be known here, for tap_cleanup
	elif vm_ceph_up "$vmout/ceph" >"$err.ceph" 2>&1; then
		rbd_up=1
		echo "# vm: Ceph cluster for rbd-ublk up in $(vm_since "$t0")s (ports $(tr '\n' ' ' <"$vmout/ceph/guest.env"))"
	else
		echo "# vm: no Ceph cluster for rbd-ublk: $(tr '\n' ';' <"$err.ceph") (it SKIPs)"
		vm_ceph_down
	fi
fi

# run_kernel K ARGS...: prepare and boot the guest of kernel K and print its TAP, every case
# numbered "-" (renumber numbers the stream).
run_kernel() {
	local k=$1 kerr=$err.$1; shift
	if ! command -v qemu-system-x86_64 >/dev/null; then
		ktap ok "$k: vm tier # skip qemu-system-x86_64 not installed (mk/deps.sh vm)"; return
	fi
	local rbd_opt=()
	[ $rbd_up -eq 1 ] && [ "$k" = "$rbd_kernel" ] && rbd_opt=(--rbd)
	local t0 rc=0 abi t_prep t1 t_up kn kfail kskip kver timeout line d boot tests t_end what
	t0=$(vm_now)
	abi=$("$VM_DIR/prepare.sh" "$k" 2>"$kerr") || rc=$?
	if [ $rc -eq 77 ]; then
		ktap ok "$k: vm tier # skip $(sed -n 's/^SKIP: //p' "$kerr" | head -n1)"; return
	elif [ $rc -ne 0 ]; then
		ktap not-ok "$k: vm tier: preparing the guest failed"; sed 's/^/#   /' "$kerr"; return
	fi
	sed 's/^/# /' "$kerr"
	t_prep=$(vm_since "$t0")

	timeout=${OCTANT_VM_TIMEOUT:-1800}
	# A guest that dies before its harness starts (no "guest up": a TCG kernel panic at
	# boot, e.g. 7.3's "Oops: int3" in sched_clock_tick while a static key is patched,
	# once in dozens of boots) ran no test: it boots once more, said so; a second death,
	# or one after the harness started, fails as before.
	for attempt in 1 2; do
		t1=$(vm_now) t_up='' kn=0 kfail=0 kskip=0 kver=''
		"$VM_DIR/vm-run.sh" --kernel "$k" ${rbd_opt[@]+"${rbd_opt[@]}"} --timeout "$timeout" --mem "${OCTANT_VM_MEM:-2048}" --out "$vmout" \
			--scratch "${OCTANT_VM_DISK_SIZE:-8G}" "$VM_DIR/guest-all.sh" "$@" 2>&1 |
		while IFS= read -r line; do
			case "$line" in
			"# vm: guest up"*)
				t_up=$(vm_now); kver=${line##* }; printf '%s\n' "$line" ;;
			"not ok "*)
				d=${line#not ok }; d=${d#* }; kn=$((kn + 1)); kfail=$((kfail + 1))
				ktap not-ok "$k $d" ;;
			"ok "*)
				d=${line#ok }; d=${d#* }; kn=$((kn + 1))
				case "$d" in *"# skip"*|*"# SKIP"*) kskip=$((kskip + 1)) ;; esac
				ktap ok "$k $d" ;;
			*) printf '%s\n' "$line" ;;
			esac
		done
		rc=${PIPESTATUS[0]}
		[ "$rc" -eq 125 ] && [ -z "$t_up" ] && [ "$kn" -eq 0 ] && [ "$attempt" -eq 1 ] || break
		echo "# vm: $k: the guest died while booting, before any test ran (console above): booting it again, once"
	done
	t_end=$(vm_now)
	[ -n "$t_up" ] || t_up=$t_end
	boot=$(awk -v a="$t1" -v b="$t_up" 'BEGIN { printf "%.1f", b - a }')
	tests=$(awk -v a="$t_up" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
	what="guest ${kver:-$abi-amd64}: $((kn - kfail - kskip)) ok, $kfail failed, $kskip skipped (boot ${boot}s, tests ${tests}s)"
	case $rc in
	0)   if [ $kn -eq 0 ]; then ktap ok "$k: $what # skip no guest tests matched"
	     else ktap ok "$k: $what"; fi ;;
	124) ktap not-ok "$k: $what: timed out after ${timeout}s (qemu killed)" ;;
	125) ktap not-ok "$k: $what: died without an exit status (kernel panic or qemu error)" ;;
	77)  ktap ok "$k: vm tier # skip kernel $k: the guest could not be prepared" ;;
	*)   ktap not-ok "$k: $what: guest exited $rc" ;;
	esac
	echo "# phase times $k: prepare ${t_prep}s, boot ${boot}s, tests ${tests}s"
}
ktap() { # ok|not-ok DESC
	if [ "$1" = ok ]; then echo "ok - $2"; else echo "not ok - $2"; fi
}
# renumber: the TAP of run_kernel, numbered in turn (and counted in n, nfail)
renumber() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"ok - "*)     tap ok "${line#ok - }" ;;
		"not ok - "*) tap not-ok "${line#not ok - }" ;;
		*)            printf '%s\n' "$line" ;;
		esac
	done
}

# Lanes: OCTANT_VM_LANES guests boot at once (default 2; kernels dealt to the lanes in turn,
# each lane boots its kernels one after the other).  A TCG guest keeps about one host core
# busy, and its tests wait on timers and its virtio disk; two lanes on the two cores take the
# tier from the sum of the guests' times towards the longest lane's.  Each kernel's report is
# kept apart and printed whole, in the order of OCTANT_VM_KERNELS, once every lane is done;
# OCTANT_VM_LANES=1 streams them as they come, as before.
read -r -a kernels <<<"$OCTANT_VM_KERNELS"
lanes=${OCTANT_VM_LANES:-2}
[[ $lanes =~ ^[1-9][0-9]*$ ]] || { echo "guest-tap.sh: OCTANT_VM_LANES must be a positive number" >&2; exit 2; }
[ "$lanes" -le "${#kernels[@]}" ] || lanes=${#kernels[@]}
if [ "$lanes" -le 1 ]; then
	for k in "${kernels[@]}"; do run_kernel "$k" "$@" | renumber; done
else
	kdir=$(mktemp -d)
	pids=()
	for ((l = 0; l < lanes; l++)); do
		( for ((i = l; i < ${#kernels[@]}; i += lanes)); do
			run_kernel "${kernels[i]}" "$@" >"$kdir/$i.tap" 2>&1
		  done ) &
		pids+=($!)
	done
	echo "# vm: ${#kernels[@]} guests in $lanes lanes at once (OCTANT_VM_LANES); their reports follow when all are done"
	wait "${pids[@]}"
	for i in "${!kernels[@]}"; do renumber <"$kdir/$i.tap"; done
fi
[ $n -eq 0 ] && tap ok "vm tier # skip OCTANT_VM_KERNELS names no kernel"
echo "1..$n"
[ $nfail -eq 0 ]
