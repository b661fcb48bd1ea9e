#!/usr/bin/env bash
# The `vm` test tier: for each guest kernel (OCTANT_VM_KERNELS, default "6.1 6.12"; see
# vm-lib.sh) prepare the guest and boot ONE qemu (TCG) guest that runs every
# tests/vm/guest/*.sh (guest-all.sh); print the TAP of all guests as one stream, every case
# named with its kernel ("6.12 ublk-basic: odd: ..."), then per kernel
#   ok N 6.12: guest 6.12.107+deb12-amd64: 61 ok, 0 failed, 2 skipped (boot Ys, tests Zs)
#   # phase times 6.12: prepare Xs, boot Ys, tests Zs
# usage: tests/vm/guest-tap.sh [NAME-PATTERN...]     (e.g. smoke 'ublk-*'; default all)
# Env: OCTANT_VM_KERNELS (kernels to boot, in turn), OCTANT_VM_TIMEOUT (one guest, default
# 780 s), OCTANT_VM_TEST_TIMEOUT (per guest script, default 300 s), OCTANT_VM_MEM (MB, default
# 2048), OCTANT_VM_DISK_SIZE (the sparse virtio disk behind the guest's ext4 /scratch, default
# 8G), OCTANT_VM_TESTS (name patterns when none are given), BUILD (default build).
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
err=$(mktemp); trap 'rm -f "$err"' EXIT

for k in $OCTANT_VM_KERNELS; do
	if ! command -v qemu-system-x86_64 >/dev/null; then
		tap ok "$k: vm tier # skip qemu-system-x86_64 not installed (mk/deps.sh vm)"; continue
	fi
	t0=$(vm_now) rc=0
	abi=$("$VM_DIR/prepare.sh" "$k" 2>"$err") || rc=$?
	if [ $rc -eq 77 ]; then
		tap ok "$k: vm tier # skip $(sed -n 's/^SKIP: //p' "$err" | head -n1)"; continue
	elif [ $rc -ne 0 ]; then
		tap not-ok "$k: vm tier: preparing the guest failed"; sed 's/^/#   /' "$err"; continue
	fi
	sed 's/^/# /' "$err"
	t_prep=$(vm_since "$t0")

	t1=$(vm_now) t_up='' kn=0 kfail=0 kskip=0 kver=''
	timeout=${OCTANT_VM_TIMEOUT:-780}
	"$VM_DIR/vm-run.sh" --kernel "$k" --timeout "$timeout" --mem "${OCTANT_VM_MEM:-2048}" \
		--scratch "${OCTANT_VM_DISK_SIZE:-8G}" "$VM_DIR/guest-all.sh" "$@" 2>&1 |
	while IFS= read -r line; do
		case "$line" in
		"# vm: guest up"*)
			t_up=$(vm_now); kver=${line##* }; printf '%s\n' "$line" ;;
		"not ok "*)
			d=${line#not ok }; d=${d#* }; kn=$((kn + 1)); kfail=$((kfail + 1))
			tap not-ok "$k $d" ;;
		"ok "*)
			d=${line#ok }; d=${d#* }; kn=$((kn + 1))
			case "$d" in *"# skip"*|*"# SKIP"*) kskip=$((kskip + 1)) ;; esac
			tap ok "$k $d" ;;
		*) printf '%s\n' "$line" ;;
		esac
	done
	rc=${PIPESTATUS[0]}
	t_end=$(vm_now)
	[ -n "$t_up" ] || t_up=$t_end
	boot=$(awk -v a="$t1" -v b="$t_up" 'BEGIN { printf "%.1f", b - a }')
	tests=$(awk -v a="$t_up" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
	what="guest ${kver:-$abi-amd64}: $((kn - kfail - kskip)) ok, $kfail failed, $kskip skipped (boot ${boot}s, tests ${tests}s)"
	case $rc in
	0)   if [ $kn -eq 0 ]; then tap ok "$k: $what # skip no guest tests matched"
	     else tap ok "$k: $what"; fi ;;
	124) tap not-ok "$k: $what: timed out after ${timeout}s (qemu killed)" ;;
	125) tap not-ok "$k: $what: died without an exit status (kernel panic or qemu error)" ;;
	77)  tap ok "$k: vm tier # skip kernel $k: the guest could not be prepared" ;;
	*)   tap not-ok "$k: $what: guest exited $rc" ;;
	esac
	echo "# phase times $k: prepare ${t_prep}s, boot ${boot}s, tests ${tests}s"
done
[ $n -eq 0 ] && tap ok "vm tier # skip OCTANT_VM_KERNELS names no kernel"
echo "1..$n"
[ $nfail -eq 0 ]
