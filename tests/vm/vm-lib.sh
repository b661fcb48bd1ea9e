# shellcheck shell=bash disable=SC2034
# Shared helpers for the qemu (TCG) guest harness; sourced by prepare.sh, vm-run.sh and
# guest-tap.sh.  See docs/vm.md.  Everything cached lives in $OCTANT_VM_CACHE, outside the
# git clone, so CI machines reuse it between checkouts.

VM_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_DIR=$VM_TOP/tests/vm
OCTANT_VM_CACHE=${OCTANT_VM_CACHE:-/var/cache/octant/vm}
VM_DEBS=$OCTANT_VM_CACHE/debs

# Kernel modules put into the guest (their dependencies are added from each module's depends=).
# crc32c is requested through the crypto API at run time, so it is listed explicitly.
VM_MODULES=(ublk_drv dm-mod dm-flakey dm-delay loop ext4 btrfs scsi_debug sd_mod null_blk brd
            virtio_pci virtio_blk crc32c_generic crc32c-intel fuse 9p 9pnet_virtio)
# Modules the guest init loads before running a script (others: `modprobe NAME` in the script).
VM_BOOT_MODULES=${OCTANT_VM_BOOT_MODULES:-"crc32c_generic crc32c-intel loop dm-mod ublk_drv ext4 btrfs sd_mod fuse virtio_pci virtio_blk"}

# Host programs copied into the guest with every library ldd lists.  Missing ones are skipped
# with a warning (the guest script then SKIPs what needs them).
VM_PROGS=(bash kmod mke2fs mkfs.ext4 e2fsck fsck.ext4 tune2fs dumpe2fs debugfs resize2fs
          mkfs.btrfs btrfs btrfstune dmsetup blkid lsblk fdisk sfdisk parted partprobe losetup
          mount umount findmnt wipefs blockdev partx blkdiscard fallocate fio sgdisk gdisk
          dd stat sync pkill pgrep timeout jq cmp sha256sum truncate flock fusermount3 strace)

vm_log() { echo "vm: $*" >&2; }
vm_die() { echo "vm: $*" >&2; exit 1; }

# vm_now: seconds since the epoch with a tenth, for phase timings.
vm_now() { date +%s.%1N; }
# vm_since T0: elapsed seconds since T0, one decimal.
vm_since() { awk -v a="$1" -v b="$(vm_now)" 'BEGIN { printf "%.1f", b - a }'; }

# vm_kernel_abi: prints the ABI name (e.g. 6.1.0-57) of the kernel to use.  It follows
# linux-image-amd64 in the apt lists (refreshing them when missing), and falls back to the
# newest kernel already in the cache when apt cannot say.
vm_kernel_abi() {
	local abi
	abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
	      sed -n 's/.*Depends: linux-image-\([0-9.]*-[0-9]*\)-amd64.*/\1/p' | head -n1)
	if [ -z "$abi" ] && [ "$(id -u)" -eq 0 ]; then
		apt-get update -qq >/dev/null 2>&1 || true
		abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
		      sed -n 's/.*Depends: linux-image-\([0-9.]*-[0-9]*\)-amd64.*/\1/p' | head -n1)
	fi
	if [ -z "$abi" ]; then
		abi=$(ls -1d "$OCTANT_VM_CACHE"/k-*/ 2>/dev/null | sed 's|.*/k-\(.*\)/$|\1|' |
		      sort -V | tail -n1)
	fi
	[ -n "$abi" ] && echo "$abi"
}

# vm_set_paths ABI: sets the per-kernel cache paths.
vm_set_paths() {
	VM_KVER=$1-amd64
	VM_KDIR=$OCTANT_VM_CACHE/k-$1
	VM_KROOT=$VM_KDIR/root
	VM_VMLINUZ=$VM_KROOT/boot/vmlinuz-$VM_KVER
	VM_HEADERS=$VM_KROOT/usr/src/linux-headers-$VM_KVER
	VM_UBLK_DIR=$VM_KDIR/ublk
	VM_UBLK_KO=$VM_UBLK_DIR/ublk_drv.ko
	VM_STATIC_CPIO=$VM_KDIR/static.cpio
}

# vm_copy_path STAGE PATH: copies PATH (file or symlink, following symlink chains) into STAGE
# at the same place, with the directory part resolved so that the merged-/usr links
# (/lib -> usr/lib ...) created in the stage stay links.
vm_copy_path() {
	local stage=$1 p=$2 dir name real tgt
	dir=$(readlink -f "$(dirname "$p")") || return 1
	name=$(basename "$p")
	real=$dir/$name
	[ -e "$stage$real" ] || [ -L "$stage$real" ] && return 0
	mkdir -p "$stage$dir"
	cp -a "$real" "$stage$real" || return 1
	if [ -L "$real" ]; then
		tgt=$(readlink "$real")
		case "$tgt" in /*) ;; *) tgt=$dir/$tgt ;; esac
		vm_copy_path "$stage" "$tgt"
	fi
}

# vm_copy_elf STAGE FILE: copies an ELF file and every library ldd lists for it.
vm_copy_elf() {
	local stage=$1 f=$2 lib
	vm_copy_path "$stage" "$f" || return 1
	for lib in $(ldd "$f" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/.*\(0x/ { print $1 }'); do
		vm_copy_path "$stage" "$lib" || return 1
	done
}

# vm_merged_usr STAGE: the Debian 12 layout: /bin /sbin /lib /lib64 are links into /usr.
vm_merged_usr() {
	local stage=$1 d
	mkdir -p "$stage"/usr/{bin,sbin,lib,lib64}
	for d in bin sbin lib lib64; do
		[ -e "$stage/$d" ] || ln -s "usr/$d" "$stage/$d"
	done
}

# vm_cpio STAGE OUT: packs STAGE as an uncompressed newc cpio owned by root (the kernel
# unpacks it; uncompressed boots fastest under TCG, see docs/vm.md).
vm_cpio() {
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort |
	 cpio --quiet -o -H newc -R 0:0 >"$2.tmp") && mv "$2.tmp" "$2"
}
