#!/usr/bin/env bash
# The third initramfs part of a guest booted with vm-run.sh --rbd (guest/rbd-ublk.sh): what a
# ublk-flash serve on rbd:// needs in the guest and the other guests go without (~45 MiB):
#   librbd (dlopen'ed by the server, so mkinitrd.sh's ldd walk never meets it) and its ldd
#   closure, Ceph's compressor and crypto plugins, socat (the guest's 127.0.0.1 ports to the
#   host's cluster), all at their host paths; the kernel's virtio_net and its dependencies
#   (failover, net_failover), decompressed, at /octant/rbd/modules/ for insmod in that order.
#   Libraries the static part already has are left out.
# usage: mkinitrd-rbd.sh ABI OUT.cpio        (exit 77 + SKIP: when the host lacks librbd/socat)
set -euo pipefail
. "$(dirname "$0")/vm-lib.sh"

vm_set_paths "${1:?usage: mkinitrd-rbd.sh ABI OUT.cpio}"
out=${2:?usage: mkinitrd-rbd.sh ABI OUT.cpio}
static=$VM_KDIR/static.stage
multi=/usr/lib/x86_64-linux-gnu
librbd=$multi/librbd.so.1
socat=$(command -v socat || true)
[ -e "$librbd" ] || { echo "SKIP: no $librbd on the host (librbd1; mk/deps.sh check)" >&2; exit 77; }
[ -n "$socat" ] || { echo "SKIP: no socat on the host (mk/deps.sh vm)" >&2; exit 77; }

stage=$(mktemp -d "${TMPDIR:-/tmp}/octant-vm-rbd.XXXXXX")
trap 'rm -rf "$stage"' EXIT
# copy_elf FILE: FILE and the libraries of its ldd closure the static part lacks.
copy_elf() {
	local lib
	vm_copy_path "$stage" "$1"
	for lib in $(ldd "$1" 2>/dev/null | awk '/=> \// { print $3 }'); do
		[ -e "$static$(readlink -f "$(dirname "$lib")")/$(basename "$lib")" ] && continue
		vm_copy_path "$stage" "$lib"
	done
}
copy_elf "$librbd"
copy_elf "$socat"
for f in "$multi"/ceph/compressor/*.so* "$multi"/ceph/crypto/*.so*; do
	[ -e "$f" ] && copy_elf "$f"
done
# merged /usr: the static part's /lib -> usr/lib links must stay links
for a in lib lib64 bin sbin; do
	if [ -d "$stage/$a" ] && [ ! -L "$stage/$a" ]; then
		mkdir -p "$stage/usr/$a" && cp -a "$stage/$a/." "$stage/usr/$a/" && rm -rf "${stage:?}/$a"
	fi
done
mkdir -p "$stage/octant/rbd/modules"
mods=$VM_KROOT/lib/modules/$VM_KVER/kernel
[ -d "$mods" ] || mods=$VM_KROOT/usr/lib/modules/$VM_KVER/kernel
for m in net/core/failover drivers/net/net_failover drivers/net/virtio_net; do
	if [ -e "$mods/$m.ko.xz" ]; then xz -dc "$mods/$m.ko.xz" >"$stage/octant/rbd/modules/${m##*/}.ko"
	elif [ -e "$mods/$m.ko" ]; then cp "$mods/$m.ko" "$stage/octant/rbd/modules/"
	fi   # else built in
done
vm_cpio "$stage" "$out"
