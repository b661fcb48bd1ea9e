#!/usr/bin/env bash
# Install the Debian packages octant needs, skipping those already present.
# Only Debian's archive is used (apt-get); nothing else is ever downloaded.
# usage: mk/deps.sh [build|check|vm|deb|bench|compare|fuzz]...   (default: build)
set -euo pipefail

build_pkgs=(gcc make pkg-config libblkid-dev libfdisk-dev libsmartcols-dev
            liburing-dev libfuse3-dev libdevmapper-dev
            libnbd-dev nbdkit-plugin-dev librbd-dev)
# check runs compare-physics.bats, so it needs the compare set too (gnuplot-nox).
# mandoc lints the man pages, systemd's systemd-analyze verifies the unit,
# python3-minimal listens as systemd would for the service test's READY=1
# (tests/cli/install.bats, tests/integration/service.bats).  The ceph
# daemons make the one-node cluster of tests/ceph-lib.bash (rbd-backing.bats,
# bench-network; ~53 MB, their postinst only links systemd units).
check_pkgs=(bats fuse3 util-linux e2fsprogs btrfs-progs fio parted gdisk fdisk
            procps psmisc kmod mandoc systemd python3-minimal
            nbdkit libnbd-bin ceph-mon ceph-mgr ceph-osd ceph-common)
# vm: qemu + the guest's userland (copied from the host: busybox-static, kmod, e2fsprogs...)
# + what building ublk_drv.ko out of tree needs (gcc, make; kbuild's tools link libelf1).
vm_pkgs=(qemu-system-x86 busybox-static cpio xz-utils dmsetup kmod gcc make libelf1 libssl3
         e2fsprogs btrfs-progs fio parted fdisk gdisk util-linux procps jq mtd-utils
         nbdkit nbd-client f2fs-tools socat)   # socat: guest/rbd-ublk.sh
# deb: make deb (mk/deb.sh: dpkg-buildpackage of debian/, then lintian) and what the source
# package's Build-Depends name (build_pkgs)
deb_pkgs=(dpkg-dev debhelper lintian)
# the vm tier's system guest (tests/vm/system-tap.sh): make deb, its Debian 12 root made with
# mmdebstrap, the root image (mkfs.ext4 -d) and its copy-on-write overlay per run (qemu-img)
system_pkgs=(mmdebstrap qemu-utils e2fsprogs "${deb_pkgs[@]}")
bench_pkgs=(fio jq qemu-system-common nbdkit ceph-mon ceph-mgr ceph-osd ceph-common)
compare_pkgs=(fio gnuplot-nox e2fsprogs btrfs-progs xfsprogs fuse3 jq util-linux mount procps)
# fuzz: make fuzz (clang's libFuzzer + ASan/UBSan runtimes); make check does not need it
fuzz_pkgs=(clang libclang-rt-dev)

want=()
[ $# -eq 0 ] && set -- build
for set in "$@"; do
	case "$set" in
	build)   want+=("${build_pkgs[@]}") ;;
	check)   want+=("${build_pkgs[@]}" "${check_pkgs[@]}" "${vm_pkgs[@]}" "${system_pkgs[@]}"
	                "${compare_pkgs[@]}") ;;
	vm)      want+=("${vm_pkgs[@]}" "${system_pkgs[@]}") ;;
	deb)     want+=("${build_pkgs[@]}" "${deb_pkgs[@]}") ;;
	bench)   want+=("${build_pkgs[@]}" "${bench_pkgs[@]}") ;;
	compare) want+=("${build_pkgs[@]}" "${compare_pkgs[@]}") ;;
	fuzz)    want+=("${build_pkgs[@]}" "${fuzz_pkgs[@]}") ;;
	*) echo "deps.sh: unknown package set '$set'" >&2; exit 2 ;;
	esac
done

missing=()
for p in $(printf '%s\n' "${want[@]}" | sort -u); do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing from Debian: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages and not root; run: apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/octant-update-stamp
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +360 2>/dev/null)" ]; then
	apt-get update -qq
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
