# shellcheck shell=bash disable=SC2034
# Shared helpers for the qemu (TCG) guest harness; sourced by prepare.sh, vm-run.sh and
# guest-tap.sh.  See docs/vm.md.  Everything cached lives in $OCTANT_VM_CACHE, outside the
# git clone, so CI machines reuse it between checkouts.

VM_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_DIR=$VM_TOP/tests/vm
OCTANT_VM_CACHE=${OCTANT_VM_CACHE:-/var/cache/octant/vm}
VM_DEBS=$OCTANT_VM_CACHE/debs

# The guest kernels the vm tier boots, one guest each (tests are named with the kernel):
#   6.1   Debian's linux-image-amd64 (6.1.0-NN), ublk_drv.ko built out of tree from
#         linux-source-6.1; the server speaks the legacy opcodes.
#   6.12  linux-image-$OCTANT_VM_612_ABI-amd64-unsigned from bookworm-security, with the
#         distribution's in-tree ublk_drv (CONFIG_BLK_DEV_UBLK=m); ioctl-encoded opcodes.
#   7.3   linux-binary/-modules/-base-$OCTANT_VM_73_ABI-amd64 from trixie-backports, fetched
#         through a private apt source list (mk/apt-private.sh); in-tree ublk_drv with every
#         recent feature; kublk (the kernel selftests' ublk server) built from linux-source-7.3.
# A full ABI name (6.1.0-57, 6.12.107+deb12, 7.3.4+deb13) is accepted too.
OCTANT_VM_KERNELS=${OCTANT_VM_KERNELS:-"6.1 6.12 7.3"}
OCTANT_VM_612_ABI=${OCTANT_VM_612_ABI:-6.12.107+deb12}
OCTANT_VM_73_ABI=${OCTANT_VM_73_ABI:-7.3.4+deb13}

# Kernel modules put into the guest (their dependencies are added from each module's depends=).
# crc32c is requested through the crypto API at run time, so it is listed explicitly (7.3's
# module is crc32c-cryptoapi, which crc32c_generic's alias names there).
# f2fs (tests/vm/guest/ublk-zoned.sh) asks 6.12's crypto API for "crc32" (crc32_generic).
# dm-log-writes, nandsim, ubi, jffs2, ubifs, nbd (and the compressors ubifs/jffs2 ask the
# crypto API for) are for the crash-replay and mount-time studies (issue 15).
VM_MODULES=(ublk_drv dm-mod dm-flakey dm-delay loop ext4 btrfs scsi_debug sd_mod null_blk brd
            virtio_pci virtio_blk crc32c_generic crc32c-intel crc32c-cryptoapi fuse 9p 9pnet_virtio
            dm-log-writes nandsim ubi jffs2 ubifs nbd lzo lzo-rle deflate zstd dm-snapshot f2fs
            crc32_generic crc32-pclmul)
# Modules the guest init loads before running a script (others: `modprobe NAME` in the script).
VM_BOOT_MODULES=${OCTANT_VM_BOOT_MODULES:-"crc32c_generic crc32c-intel loop dm-mod ublk_drv ext4 btrfs sd_mod fuse virtio_pci virtio_blk"}

# Host programs copied into the guest with every library ldd lists (mkfs.xfs: align-matrix.sh
# checks alignpart predict against it).  Missing ones are skipped
# with a warning (the guest script then SKIPs what needs them).
VM_PROGS=(bash kmod mke2fs mkfs.ext4 e2fsck fsck.ext4 tune2fs dumpe2fs debugfs resize2fs
          mkfs.btrfs btrfs btrfstune dmsetup blkid lsblk fdisk sfdisk parted partprobe losetup
          mount umount findmnt wipefs blockdev partx blkdiscard fallocate fio sgdisk gdisk
          dd stat sync pkill pgrep timeout jq cmp sha256sum truncate flock fusermount3 strace
          mountpoint find ubiattach ubidetach ubimkvol ubiformat flash_erase nandwrite mtdinfo
          nbdkit nbd-client mkfs.xfs blkzone mkfs.f2fs fsck.f2fs)

vm_log() { echo "vm: $*" >&2; }
vm_die() { echo "vm: $*" >&2; exit 1; }

# vm_now: seconds since the epoch with a tenth, for phase timings.
vm_now() { date +%s.%1N; }
# vm_since T0: elapsed seconds since T0, one decimal.
vm_since() { awk -v a="$1" -v b="$(vm_now)" 'BEGIN { printf "%.1f", b - a }'; }

# vm_kernel_abi [KERNEL]: prints the ABI name (6.1.0-57, 6.12.107+deb12) of KERNEL (a name
# of OCTANT_VM_KERNELS or an ABI; default 6.1).  For 6.1 it follows linux-image-amd64 in the
# apt lists (refreshing them when missing), and falls back to the newest 6.1 kernel already
# in the cache when apt cannot say.
vm_kernel_abi() {
	local k=${1:-6.1} abi
	case "$k" in
	6.12) echo "$OCTANT_VM_612_ABI"; return 0 ;;
	7.3) echo "$OCTANT_VM_73_ABI"; return 0 ;;
	6.1) ;;
	[0-9]*.*[0-9]-[0-9]*|[0-9]*+deb*) echo "$k"; return 0 ;;
	*) return 1 ;;
	esac
	abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
	      sed -n 's/.*Depends: linux-image-\(6\.1\.[0-9]*-[0-9]*\)-amd64.*/\1/p' | head -n1)
	if [ -z "$abi" ] && [ "$(id -u)" -eq 0 ]; then
		apt-get update -qq >/dev/null 2>&1 || true
		abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
		      sed -n 's/.*Depends: linux-image-\(6\.1\.[0-9]*-[0-9]*\)-amd64.*/\1/p' | head -n1)
	fi
	if [ -z "$abi" ]; then
		abi=$(ls -1d "$OCTANT_VM_CACHE"/k-6.1.*/ 2>/dev/null | sed 's|.*/k-\(.*\)/$|\1|' |
		      sort -V | tail -n1)
	fi
	[ -n "$abi" ] && echo "$abi"
}

# vm_set_paths ABI: sets the per-kernel cache paths, VM_KSERIES (6.1, 6.12, 7.3),
# VM_UBLK_INTREE (1: the image ships ublk_drv; 0: it is built out of tree, 6.1) and
# VM_KSPLIT (1: Debian 13's split packages linux-binary/-modules/-base from trixie-backports,
# with kublk built for the guest; 0: bookworm's linux-image).
vm_set_paths() {
	VM_KVER=$1-amd64
	VM_KSERIES=$(cut -d. -f1,2 <<<"$1")
	VM_KDIR=$OCTANT_VM_CACHE/k-$1
	VM_KROOT=$VM_KDIR/root
	VM_VMLINUZ=$VM_KROOT/boot/vmlinuz-$VM_KVER
	VM_HEADERS=$VM_KROOT/usr/src/linux-headers-$VM_KVER
	VM_UBLK_DIR=$VM_KDIR/ublk
	VM_UBLK_KO=$VM_UBLK_DIR/ublk_drv.ko
	VM_STATIC_CPIO=$VM_KDIR/static.cpio
	if [ "$VM_KSERIES" = 6.1 ]; then VM_UBLK_INTREE=0; else VM_UBLK_INTREE=1; fi
	case "$1" in *+deb1[3-9]*) VM_KSPLIT=1 ;; *) VM_KSPLIT=0 ;; esac
	# the split packages are merged-/usr: the image is usr/lib/modules/ABI/vmlinuz (the
	# extracted root gets a lib -> usr/lib link for the module paths)
	[ "$VM_KSPLIT" -eq 0 ] || VM_VMLINUZ=$VM_KROOT/usr/lib/modules/$VM_KVER/vmlinuz
	VM_KUBLK=$VM_KDIR/kublk/kublk
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
