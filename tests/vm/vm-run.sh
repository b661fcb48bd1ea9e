#!/usr/bin/env bash
# Boot the octant qemu guest (TCG) and run one script in it as root.
# usage: tests/vm/vm-run.sh [--kernel K] [--timeout SECS] [--mem MB] [--smp N]
#                           [--disk SIZE | --scratch SIZE] [--out DIR] [--build DIR]
#                           [--kernel-log] [--rbd] SCRIPT [ARGS...]
#   --kernel K      guest kernel: 6.1 (default, or $OCTANT_VM_KERNEL; out-of-tree ublk_drv),
#                   6.12 (bookworm-security's 6.12.107, in-tree ublk_drv), or an ABI name
#   --timeout SECS  kill qemu after SECS (default 600) and exit 124
#   --mem MB        guest memory (default 2048); /tmp in the guest is a tmpfs in it
#   --disk SIZE     a sparse scratch file of SIZE (e.g. 4G) as virtio disk /dev/vda
#                   ($OCTANT_VM_DISK in the guest); deleted afterwards
#   --scratch SIZE  the same disk, but formatted ext4 and mounted at /scratch in the guest
#                   ($OCTANT_VM_SCRATCH; a real filesystem with O_DIRECT, unlike tmpfs /tmp)
#   --out DIR       share host folder DIR (created if needed) read-write over 9p at
#                   /octant/out in the guest ($OCTANT_VM_OUT): results, fio JSON, logs
#   --build DIR     project build folder shipped as /octant/build (default $BUILD or build)
#   --kernel-log    show kernel messages on the console too (default: quiet)
#   --rbd           a NIC (slirp: the host's 127.0.0.1 is 10.0.2.2) and, in a third initramfs
#                   part (mkinitrd-rbd.sh), librbd's closure, Ceph's plugins, socat and
#                   virtio_net, for guest/rbd-ublk.sh (the cluster: ceph-guest.bash)
# The script's output streams to stdout; the exit status is the script's, 124 on timeout,
# 125 when the guest died without reporting one (panic, qemu error), 77 when the guest
# cannot be prepared (no qemu, kernel packages not fetchable).  See docs/vm.md.
set -euo pipefail
. "$(dirname "$0")/vm-lib.sh"

timeout=600 mem=2048 smp=2 disk='' scratch=0 klog=0 out='' rbd=0 kernel=${OCTANT_VM_KERNEL:-6.1}
build=${BUILD:-build}
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)  kernel=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--mem)     mem=$2; shift 2 ;;
	--smp)     smp=$2; shift 2 ;;
	--disk)    disk=$2; shift 2 ;;
	--scratch) disk=$2; scratch=1; shift 2 ;;
	--build)   build=$2; shift 2 ;;
	--out)     out=$2; shift 2 ;;
	--kernel-log) klog=1; shift ;;
	--rbd)     rbd=1; shift ;;
	--) shift; break ;;
	-*) echo "vm-run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { sed -n '2,/^set /p' "$0" | sed -n 's/^# \{0,1\}//p' >&2; exit 2; }
script=$1; shift
[ -f "$script" ] || { echo "vm-run.sh: no script $script" >&2; exit 2; }
case "$build" in /*) ;; *) build=$VM_TOP/$build ;; esac

command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 not installed (mk/deps.sh vm)" >&2; exit 77; }
rc=0
abi=$("$VM_DIR/prepare.sh" -q "$kernel") || rc=$?
[ $rc -eq 0 ] || exit $rc
vm_set_paths "$abi"

work=$(mktemp -d "${TMPDIR:-/tmp}/octant-vm.XXXXXX")
cleanup() {
	[ -s "$work/qpid" ] && [ ! -e "$work/qrc" ] && kill "$(cat "$work/qpid")" 2>/dev/null && sleep 1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

drive=()
if [ -n "$out" ]; then
	mkdir -p "$out" || { echo "vm-run.sh: cannot create $out" >&2; exit 2; }
	drive+=(-virtfs "local,path=$(cd "$out" && pwd),mount_tag=octant-out,security_model=none,id=out")
fi
OCTANT_VM_OUT_TAG=${out:+octant-out} OCTANT_VM_SCRATCH_FS=$([ $scratch -eq 1 ] && echo ext4) \
	"$VM_DIR/mkinitrd.sh" run "$abi" "$work/run.cpio" "$build" "$script" "$@"
parts=("$VM_STATIC_CPIO" "$work/run.cpio")
if [ $rbd -eq 1 ]; then
	"$VM_DIR/mkinitrd-rbd.sh" "$abi" "$work/rbd.cpio"
	parts+=("$work/rbd.cpio")
	drive+=(-netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=)
fi
cat "${parts[@]}" >"$work/initrd.cpio"

append="console=ttyS0 panic=-1 rdinit=/init mitigations=off nokaslr tsc=reliable no_timer_check"
[ $klog -eq 1 ] && append+=" loglevel=7" || append+=" quiet loglevel=1"
if [ -n "$disk" ]; then
	truncate -s "$disk" "$work/disk.img"
	drive+=(-drive "file=$work/disk.img,if=virtio,format=raw,cache=unsafe,discard=unmap")
fi

# Output: serial console on stdout; the guest's "OCTANT-EXIT N" marker carries the status.
# The pipeline runs in the background so that a signal to this script is handled at once
# (cleanup then stops qemu through its timeout process, whose pid is in $work/qpid).
set +e
(
	timeout -k 5 "$timeout" qemu-system-x86_64 -accel tcg -cpu max -m "$mem" -smp "$smp" \
		-nodefaults -no-user-config -display none -serial stdio -no-reboot \
		-kernel "$VM_VMLINUZ" -initrd "$work/initrd.cpio" -append "$append" \
		"${drive[@]}" </dev/null 2>&1 &
	echo $! >"$work/qpid"
	wait $!
	echo $? >"$work/qrc"
) |
{
	# (a shell loop, not mawk: mawk buffers its input and would delay the stream)
	seen=0
	while IFS= read -r line || [ -n "$line" ]; do
		[ $seen -eq 1 ] && continue        # after the marker: only the power-down message
		line=${line//$'\r'/}
		if [[ $line =~ ^(.*)OCTANT-EXIT\ (-?[0-9]+)$ ]]; then
			[ -n "${BASH_REMATCH[1]}" ] && printf '%s\n' "${BASH_REMATCH[1]}"
			echo "${BASH_REMATCH[2]}" >"$work/exit"; seen=1; continue
		fi
		printf '%s\n' "$line"
	done
} &
wait $!
set -e
qrc=$(cat "$work/qrc" 2>/dev/null || echo 1)
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	echo "vm-run.sh: guest timed out after ${timeout}s (qemu killed)" >&2
	exit 124
fi
if [ ! -s "$work/exit" ]; then
	echo "vm-run.sh: the guest stopped without reporting an exit status (qemu exit $qrc)" >&2
	exit 125
fi
exit "$(cat "$work/exit")"
