#!/usr/bin/env bash
# The `vm` test tier: prepare the guest, boot ONE qemu (TCG) guest that runs every
# tests/vm/guest/*.sh (guest-all.sh), and print its TAP, then
#   # phase times: prepare Xs, boot Ys, tests Zs
# usage: tests/vm/guest-tap.sh [NAME-PATTERN...]     (e.g. smoke 'ublk-*'; default all)
# Env: OCTANT_VM_TIMEOUT (whole guest, default 780 s), OCTANT_VM_TEST_TIMEOUT (per guest
# script, default 300 s), OCTANT_VM_MEM (MB, default 2048), OCTANT_VM_DISK_SIZE (the sparse
# virtio disk behind the guest's ext4 /scratch, default 8G), OCTANT_VM_TESTS (name patterns
# when none are given), BUILD (default build).
# SKIPs (one "ok 1 vm tier # skip ...") without qemu or when the kernel packages cannot be
# fetched; "not ok" when the guest crashes, times out or a guest test fails.
set -uo pipefail
shopt -s lastpipe
. "$(dirname "$0")/vm-lib.sh"

if ! command -v qemu-system-x86_64 >/dev/null; then
	echo "ok 1 vm tier # skip qemu-system-x86_64 not installed (mk/deps.sh vm)"; exit 0
fi
[ $# -eq 0 ] && [ -n "${OCTANT_VM_TESTS:-}" ] && set -- $OCTANT_VM_TESTS
t0=$(vm_now)
err=$(mktemp); trap 'rm -f "$err"' EXIT
rc=0
"$VM_DIR/prepare.sh" >/dev/null 2>"$err" || rc=$?
if [ $rc -eq 77 ]; then
	echo "ok 1 vm tier # skip $(sed -n 's/^SKIP: //p' "$err" | head -n1)"; exit 0
elif [ $rc -ne 0 ]; then
	echo "not ok 1 vm tier: preparing the guest failed"; sed 's/^/#   /' "$err"; exit 1
fi
sed 's/^/# /' "$err"
t_prep=$(vm_since "$t0")

t1=$(vm_now) t_up='' n=0 nfail=0
timeout=${OCTANT_VM_TIMEOUT:-780}
"$VM_DIR/vm-run.sh" --timeout "$timeout" --mem "${OCTANT_VM_MEM:-2048}" \
	--scratch "${OCTANT_VM_DISK_SIZE:-8G}" "$VM_DIR/guest-all.sh" "$@" 2>&1 |
while IFS= read -r line; do
	case "$line" in
	"# vm: guest up"*) t_up=$(vm_now) ;;
	"not ok "*) n=$((n + 1)); nfail=$((nfail + 1)) ;;
	"ok "*) n=$((n + 1)) ;;
	esac
	printf '%s\n' "$line"
done
rc=${PIPESTATUS[0]}
t_end=$(vm_now)
[ -n "$t_up" ] || t_up=$t_end

case $rc in
0)   ;;
124) n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n vm guest: timed out after ${timeout}s (qemu killed)" ;;
125) n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n vm guest: died without an exit status (kernel panic or qemu error)" ;;
77)  echo "ok 1 vm tier # skip the guest could not be prepared"; exit 0 ;;
*)   if [ $nfail -eq 0 ]; then
	     n=$((n + 1)); nfail=1; echo "not ok $n vm guest: exited $rc"
     fi ;;
esac
[ $n -eq 0 ] && { n=1; echo "ok 1 vm tier # skip no guest tests in tests/vm/guest"; }
echo "# phase times: prepare ${t_prep}s, boot $(awk -v a="$t1" -v b="$t_up" 'BEGIN { printf "%.1f", b - a }')s, tests $(awk -v a="$t_up" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')s"
echo "1..$n"
[ $nfail -eq 0 ]
