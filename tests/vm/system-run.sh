#!/usr/bin/env bash
# Boot the system guest: a Debian 12 root (mmdebstrap, cached) with systemd as PID 1, under
# qemu (TCG) with a vm-lib.sh kernel, and run tests/vm/system/boot.sh in it at every boot
# (from octant-system-test.service) with the .debs of DEBDIR at /octant/debs.  The guest may
# reboot itself (boot.sh prints "OCTANT-REBOOT", then systemctl reboot): its reboot ends
# qemu (-no-reboot) and a new qemu boots the same disks.  It ends with "OCTANT-EXIT N" and a
# poweroff.
# usage: tests/vm/system-run.sh [--kernel K] [--timeout SECS] [--mem MB] [--boots N] DEBDIR [ARGS...]
#   --kernel K     6.12 (default, or $OCTANT_VM_SYSTEM_KERNEL), or another vm-lib.sh kernel
#                  whose package has ublk_drv in tree (7.3)
#   --timeout SECS kill qemu after SECS, all boots together (default 600) and exit 124
#   --boots N      at most N boots (default 2): a guest asking for one more is stopped, exit
#                  125 (as is a guest that stops without "OCTANT-EXIT" or "OCTANT-REBOOT": a
#                  panic, a qemu error)
#   ARGS           passed to boot.sh (in /octant/args): --exec SCRIPT [ARGS] runs
#                  tests/vm/system/SCRIPT BOOT [ARGS] at each boot instead of the cases
#                  (exit 100: reboot; else its status ends the run)
# Every run's root is a fresh qcow2 overlay over the cached image (deleted afterwards), so the
# cache never holds an octant.  Output: the guest's console on stdout.  Exit: boot.sh's
# status; 124 timeout (all boots together); 125 no status (panic, qemu error, too many
# boots); 77 the guest cannot be prepared ("SKIP: reason"); 2 usage.
set -euo pipefail
. "$(dirname "$0")/vm-lib.sh"
. "$(dirname "$0")/system-lib.sh"

kernel=${OCTANT_VM_SYSTEM_KERNEL:-6.12} timeout=600 mem=2048 boots=2
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)  kernel=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--mem)     mem=$2; shift 2 ;;
	--boots)   boots=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "system-run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] && [ -d "$1" ] || { sed -n '2,/^set /p' "$0" | sed -n 's/^# \{0,1\}//p' >&2; exit 2; }
debdir=$(cd "$1" && pwd); shift

for p in qemu-system-x86_64 qemu-img mkfs.ext4; do
	command -v $p >/dev/null || { echo "SKIP: $p not installed (mk/deps.sh vm)" >&2; exit 77; }
done
# the kernel: prepare.sh fetches and extracts it once (its initramfs is not used here)
abi=$(vm_kernel_abi "$kernel") && vm_set_paths "$abi" || abi=
if [ -z "$abi" ] || [ ! -e "$VM_KDIR/.extracted" ] || [ ! -f "$VM_VMLINUZ" ]; then
	rc=0
	abi=$("$VM_DIR/prepare.sh" -q "$kernel") || rc=$?
	[ $rc -eq 0 ] || exit $rc
	vm_set_paths "$abi"
fi
[ -d "$VM_KROOT/lib/modules/$VM_KVER" ] || vm_die "kernel $abi: no modules at $VM_KROOT/lib/modules/$VM_KVER"

# The cached root and initramfs, under the system cache's own lock (parallel runs wait; the
# kernels' lock is not held through a mmdebstrap).
mkdir -p "$SYS_CACHE" 2>/dev/null || { echo "SKIP: cannot create $SYS_CACHE (set OCTANT_VM_CACHE)" >&2; exit 77; }
{ exec 8>>"$SYS_CACHE/.lock"; } 2>/dev/null || { echo "SKIP: $SYS_CACHE is not writable" >&2; exit 77; }
flock 8
sys_rootfs || exit $?
sys_image "$abi"
sys_initrd "$abi"
flock -u 8

work=$(mktemp -d "${TMPDIR:-/tmp}/octant-sys.XXXXXX")
cleanup() {
	[ -s "$work/qpid" ] && [ ! -e "$work/qrc" ] && kill "$(cat "$work/qpid")" 2>/dev/null && sleep 1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The run's disks: the root as a copy-on-write overlay, the payload (the .debs without their
# -dbgsym, this folder's system/ and guest-lib.sh, ARGS) as a small read-only ext4.
qemu-img create -q -f qcow2 -F raw -b "$SYS_IMAGE" "$work/root.qcow2"
mkdir -p "$work/payload/debs" "$work/payload/system"
for f in "$debdir"/*.deb; do
	case "$f" in *-dbgsym_*) ;; *) cp "$f" "$work/payload/debs/" ;; esac
done
cp -a "$SYS_DIR/." "$work/payload/system/"
cp "$VM_DIR/guest-lib.sh" "$work/payload/system/"
{
	printf 'set --'
	for a in "$@"; do printf " '%s'" "${a//\'/\'\\\'\'}"; done
	printf '\n'
} >"$work/payload/args"
mkfs.ext4 -q -F -L octant-payload -d "$work/payload" "$work/payload.img" 64M >/dev/null

append="console=ttyS0 panic=-1 mitigations=off nokaslr tsc=reliable no_timer_check quiet loglevel=1"
append+=" systemd.show_status=error"

# boot_once: one qemu process until the guest powers off or reboots (-no-reboot: its
# reboot(2) ends qemu).  The console goes to stdout; "OCTANT-EXIT N" leaves N in
# $work/exit, "OCTANT-REBOOT" (boot.sh, before systemctl reboot) leaves $work/reboot.
boot_once() {
	rm -f "$work/exit" "$work/reboot" "$work/qrc" "$work/qpid"
	set +e
	(
		timeout -k 5 "$left" qemu-system-x86_64 -accel tcg -cpu max -m "$mem" -smp 2 \
			-nodefaults -no-user-config -display none -serial stdio -no-reboot \
			-kernel "$VM_VMLINUZ" -initrd "$SYS_INITRD" -append "$append" \
			-drive "file=$work/root.qcow2,if=virtio,format=qcow2,cache=unsafe,discard=unmap" \
			-drive "file=$work/payload.img,if=virtio,format=raw,readonly=on" \
			</dev/null 2>&1 &
		echo $! >"$work/qpid"
		wait $!
		echo $? >"$work/qrc"
	) |
	{
		seen=0
		while IFS= read -r line || [ -n "$line" ]; do
			[ $seen -eq 1 ] && continue
			line=${line//$'\r'/}
			if [[ $line =~ ^(.*)OCTANT-EXIT\ (-?[0-9]+)$ ]]; then
				[ -n "${BASH_REMATCH[1]}" ] && printf '%s\n' "${BASH_REMATCH[1]}"
				echo "${BASH_REMATCH[2]}" >"$work/exit"; seen=1; continue
			fi
			[[ $line == *OCTANT-REBOOT* ]] && : >"$work/reboot"
			printf '%s\n' "$line"
		done
	} &
	wait $!
	set -e
}

# A reboot of the guest is its own `systemctl reboot` (systemd's shutdown, every unit
# stopped in order, the kernel's reboot) followed by a new qemu on the same disks: qemu's own
# reset under TCG took 2-4 minutes to reach the kernel again on this host (docs/vm.md).
deadline=$((SECONDS + timeout)) boot=0
while :; do
	boot=$((boot + 1))
	left=$((deadline - SECONDS))
	[ $left -gt 0 ] || { echo "system-run.sh: guest timed out after ${timeout}s" >&2; exit 124; }
	echo "octant-system: qemu boot $boot"
	boot_once
	qrc=$(cat "$work/qrc" 2>/dev/null || echo 1)
	if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
		echo "system-run.sh: guest timed out after ${timeout}s (qemu killed)" >&2
		exit 124
	fi
	[ -s "$work/exit" ] && exit "$(cat "$work/exit")"
	if [ ! -e "$work/reboot" ]; then
		echo "system-run.sh: the guest stopped without reporting an exit status (qemu exit $qrc)" >&2
		exit 125
	fi
	if [ $boot -ge "$boots" ]; then
		echo "system-run.sh: the guest asked for boot $((boot + 1)), at most $boots are allowed" >&2
		exit 125
	fi
done
