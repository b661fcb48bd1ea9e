#!/usr/bin/env bash
# Prepare the qemu guest for one kernel: fetch the Debian kernel packages, build ublk_drv.ko
# out of tree (6.1; 6.12 ships it) and pack the static part of the initramfs.  Every step is
# skipped when its output is cached in $OCTANT_VM_CACHE (default /var/cache/octant/vm), so a
# second run takes about a second.
# usage: tests/vm/prepare.sh [-q] [KERNEL]     KERNEL: 6.1 (default, or $OCTANT_VM_KERNEL),
#                                              6.12, or an ABI name (see vm-lib.sh)
# Exit: 0 ready (prints the kernel ABI on stdout), 77 kernel packages cannot be fetched
# (reason on stderr), 1 anything else failed.
set -euo pipefail
. "$(dirname "$0")/vm-lib.sh"
[ "${1:-}" = -q ] && { vm_log() { :; }; shift; }
kernel=${1:-${OCTANT_VM_KERNEL:-6.1}}

skip() { echo "SKIP: kernel $kernel: $*" >&2; exit 77; }

mkdir -p "$OCTANT_VM_CACHE" 2>/dev/null || skip "cannot create the cache folder $OCTANT_VM_CACHE (set OCTANT_VM_CACHE)"
{ exec 9>>"$OCTANT_VM_CACHE/.lock"; } 2>/dev/null ||
	skip "the cache folder $OCTANT_VM_CACHE is not writable (set OCTANT_VM_CACHE)"
flock 9                       # parallel runs (other engineers, CI jobs) wait for one another

# choose ABI: sets abi, the cache paths, series and the package names: five for 6.1 (image,
# headers, kbuild and source to build ublk_drv), one for a kernel with an in-tree ublk_drv.
choose() {
	abi=$(vm_kernel_abi "$kernel") || true
	[ -n "$abi" ] || skip "no Debian kernel found: apt-cache knows no linux-image-amd64 and nothing is cached"
	vm_set_paths "$abi"
	series=$VM_KSERIES
	if [ "$VM_UBLK_INTREE" -eq 1 ]; then
		pkgs=("linux-image-$VM_KVER-unsigned")
	else
		pkgs=("linux-image-$VM_KVER" "linux-headers-$VM_KVER" "linux-headers-$abi-common"
		      "linux-kbuild-$series" "linux-source-$series")
	fi
	need=()
	for p in "${pkgs[@]}"; do
		ls "$VM_DEBS/${p}_"*.deb >/dev/null 2>&1 || need+=("$p")
	done
}
fetch() { (cd "$VM_DEBS" && apt-get download -q "${need[@]}" >/dev/null 2>"$VM_DEBS/.apt.err"); }

# 1. The packages, downloaded once.  Old apt lists may name a kernel the mirror no
# longer has: then refresh them (as root), choose again and retry.
mkdir -p "$VM_DEBS"
choose
if [ ${#need[@]} -gt 0 ]; then
	t0=$(vm_now)
	vm_log "downloading ${need[*]}"
	if ! fetch; then
		[ "$(id -u)" -eq 0 ] && apt-get update -qq >/dev/null 2>&1 && choose
		[ ${#need[@]} -eq 0 ] || fetch ||
			skip "cannot fetch the kernel packages (${need[*]}): $(grep -m1 '^E:' "$VM_DEBS/.apt.err" || echo 'apt-get download failed')"
	fi
	vm_log "downloaded in $(vm_since "$t0")s"
fi
mkdir -p "$VM_KDIR"

# 2. dpkg -x image, headers and kbuild into one root (the headers' links are relative).
if [ ! -e "$VM_KDIR/.extracted" ]; then
	t0=$(vm_now)
	rm -rf "$VM_KROOT"
	for p in "${pkgs[@]:0:4}"; do
		dpkg -x "$(ls "$VM_DEBS/${p}_"*.deb | head -n1)" "$VM_KROOT"
	done
	# The headers' Makefile includes the common headers by absolute path.
	[ "$VM_UBLK_INTREE" -eq 1 ] ||
		sed -i "s|^include /usr/src/|include $VM_KROOT/usr/src/|" "$VM_HEADERS/Makefile"
	touch "$VM_KDIR/.extracted"
	vm_log "extracted the kernel packages in $(vm_since "$t0")s"
fi
[ -f "$VM_VMLINUZ" ] || vm_die "no kernel image at $VM_VMLINUZ"

# 3. 6.1: ublk_drv.c from the source tarball (Debian's 6.1 does not build ublk), built out of
# tree.  6.12 ships it as kernel/drivers/block/ublk_drv.ko.xz.
if [ "$VM_UBLK_INTREE" -eq 1 ]; then
	ls "$VM_KROOT/lib/modules/$VM_KVER/kernel/drivers/block/ublk_drv.ko"* >/dev/null 2>&1 ||
		vm_die "kernel $kernel: the image has no in-tree ublk_drv module"
elif [ ! -f "$VM_UBLK_DIR/ublk_drv.c" ]; then
	t0=$(vm_now)
	mkdir -p "$VM_UBLK_DIR"
	dpkg-deb --fsys-tarfile "$(ls "$VM_DEBS/${pkgs[4]}_"*.deb | head -n1)" |
		tar -xO "./usr/src/linux-source-$series.tar.xz" |
		tar -xJO "linux-source-$series/drivers/block/ublk_drv.c" >"$VM_UBLK_DIR/ublk_drv.c.tmp"
	mv "$VM_UBLK_DIR/ublk_drv.c.tmp" "$VM_UBLK_DIR/ublk_drv.c"
	vm_log "extracted ublk_drv.c in $(vm_since "$t0")s"
fi
if [ "$VM_UBLK_INTREE" -eq 0 ] &&
   { [ ! -f "$VM_UBLK_KO" ] || [ "$VM_UBLK_DIR/ublk_drv.c" -nt "$VM_UBLK_KO" ]; }; then
	t0=$(vm_now)
	echo 'obj-m := ublk_drv.o' >"$VM_UBLK_DIR/Kbuild"
	# ublk_drv.c includes <uapi/linux/ublk_cmd.h>, which the common headers carry.
	make -s -C "$VM_HEADERS" M="$VM_UBLK_DIR" modules >"$VM_UBLK_DIR/build.log" 2>&1 || {
		tail -n 20 "$VM_UBLK_DIR/build.log" >&2; vm_die "building ublk_drv.ko failed"; }
	vm_log "built ublk_drv.ko in $(vm_since "$t0")s"
fi

# 4. The static part of the initramfs (busybox, host programs + libraries, modules, init).
"$VM_DIR/mkinitrd.sh" static "$abi"

echo "$abi"
