# shellcheck shell=bash disable=SC2034
# The system guest (tests/vm/system-tap.sh, system-run.sh; docs/vm.md): a Debian 12 root made
# with mmdebstrap from the Debian archive, booted under qemu (TCG) with a vm-lib.sh kernel and
# systemd as PID 1, where octant's .debs are installed with apt and used as an administrator
# would.  Sourced after vm-lib.sh.  Cached in $OCTANT_VM_CACHE/system (flock'ed):
#   root-KEY/          the rootfs, KEY from the suite, mirror, packages and hook files
#   root-KEY/k-ABI.img that rootfs plus kernel ABI's modules, a raw ext4 image (sparse), the
#                      backing file of every run's qcow2 overlay (so it never holds an octant)
#   initrd-ABI-KEY.cpio the initramfs: busybox, virtio + ext4 modules, system/init
SYS_DIR=$VM_DIR/system
SYS_CACHE=$OCTANT_VM_CACHE/system
SYS_SUITE=bookworm
# systemd and udev 254 from bookworm-backports (Debian's archive), pinned: Debian 12's own
# 252 has no `udevadm verify`; trixie's 257 would have it, but octant's .debs built on
# Debian 12 need libfuse3-3, which trixie replaced with libfuse3-4 (docs/vm.md).
# OCTANT_VM_SYSTEM_SYSTEMD=stable: Debian 12's own 252 instead (a rootfs of its own).
SYS_BACKPORTS=(systemd systemd-sysv udev libsystemd0 libsystemd-shared libudev1 libnss-systemd
               libpam-systemd)
[ "${OCTANT_VM_SYSTEM_SYSTEMD:-backports}" = stable ] && SYS_BACKPORTS=()
# what the guest has besides apt's essential set: systemd as init, udev, the filesystems' tools,
# the runtime libraries octant's packages depend on (the guest has no network: apt installs
# the .debs from what is there) and what the test uses
SYS_PACKAGES=(systemd systemd-sysv udev dbus kmod e2fsprogs btrfs-progs util-linux mount procps man-db
              mawk fuse3 libfuse3-3 liburing2 libdevmapper1.02.1 libfdisk1 libsmartcols1
              libmount1 libblkid1 nbdkit libblkid-dev pkgconf)
# modules the initramfs loads to reach the root disk (missing ones are built in)
SYS_ROOT_MODULES=(crc32c_generic crc32c-intel crc32c-cryptoapi virtio_pci virtio_blk ext4)

# sys_mirror: the Debian archive the host's apt uses (its lists, else its source files), or
# $OCTANT_DEBIAN_MIRROR.
sys_mirror() {
	local m=${OCTANT_DEBIAN_MIRROR:-}
	[ -n "$m" ] || m=$(apt-cache policy 2>/dev/null |
		awk '$3 ~ /^bookworm(-updates)?\/main$/ && $2 ~ /^https?:/ { print $2; exit }')
	[ -n "$m" ] || m=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		tr ' ' '\n' | grep -v security | grep -m1 '^https\?:' || true)
	[ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' |
		grep -v security | head -n1 || true)
	[ -n "$m" ] || m=http://deb.debian.org/debian
	echo "${m%/}"
}

# sys_key: what the rootfs is made of, hashed (SYS_ROOT_FORMAT: bump it when sys_rootfs's
# mmdebstrap command changes).
SYS_ROOT_FORMAT=1
SYS_IMAGE_FORMAT=1     # bump when sys_image changes
sys_key() {
	{
		echo "$SYS_ROOT_FORMAT $SYS_SUITE ${SYS_BACKPORTS[*]} ${SYS_PACKAGES[*]} $(sys_mirror)"
		cat "$SYS_DIR/customize.sh" "$SYS_DIR/octant-system-test" \
		    "$SYS_DIR/octant-system-test.service"
	} | sha256sum | cut -c1-16
}

# sys_rootfs: the rootfs folder (made once with mmdebstrap); sets SYS_ROOT.
sys_rootfs() {
	local m t0 pin
	SYS_ROOT=$SYS_CACHE/root-$(sys_key)
	if [ -e "$SYS_ROOT/.done" ]; then
		touch "$SYS_ROOT/.used"
		return 0
	fi
	# roots of other package lists, unused for two days, go (about 800 MB each)
	find "$SYS_CACHE" -maxdepth 2 -path "$SYS_CACHE/root-*/.used" -mtime +1 -printf '%h\n' |
		while IFS= read -r d; do rm -rf "$d"; done
	command -v mmdebstrap >/dev/null || { echo "SKIP: mmdebstrap not installed (mk/deps.sh vm)" >&2; return 77; }
	m=$(sys_mirror) t0=$(vm_now)
	rm -rf "$SYS_ROOT"
	mkdir -p "$SYS_ROOT"
	pin=$SYS_ROOT/backports.pref
	if [ ${#SYS_BACKPORTS[@]} -gt 0 ]; then
		printf 'Package: %s\nPin: release n=%s-backports\nPin-Priority: 900\n' \
			"${SYS_BACKPORTS[*]}" "$SYS_SUITE" >"$pin"
	else
		printf '# Debian 12 stable systemd\n' >"$pin"
	fi
	vm_log "system guest: mmdebstrap $SYS_SUITE from $m (once per package list)"
	if ! mmdebstrap --mode=root --format=directory --variant=apt --components=main \
		--include="$(IFS=,; echo "${SYS_PACKAGES[*]}")" \
		--aptopt='Acquire::Languages "none"' \
		--setup-hook="mkdir -p \"\$1/etc/apt/preferences.d\" && cp '$pin' \"\$1/etc/apt/preferences.d/guest-systemd-backports.pref\"" \
		--customize-hook="'$SYS_DIR/customize.sh' \"\$1\"" \
		"$SYS_SUITE" "$SYS_ROOT/root" \
		"deb $m $SYS_SUITE main" "deb $m $SYS_SUITE-updates main" \
		"deb $m $SYS_SUITE-backports main" >"$SYS_ROOT/mmdebstrap.log" 2>&1; then
		tail -n 20 "$SYS_ROOT/mmdebstrap.log" >&2
		echo "SKIP: mmdebstrap of $SYS_SUITE from $m failed ($SYS_ROOT/mmdebstrap.log)" >&2
		return 77
	fi
	touch "$SYS_ROOT/.done" "$SYS_ROOT/.used"
	vm_log "system guest: rootfs made in $(vm_since "$t0")s ($(du -sm "$SYS_ROOT/root" | cut -f1) MB)"
}

# sys_image ABI: SYS_IMAGE, the rootfs with kernel ABI's modules (vm_set_paths ABI first) as
# a sparse raw ext4 image, made once (mkfs.ext4 -d: no mount) from a hard-linked copy.
sys_image() {
	local stage t0
	SYS_IMAGE=$SYS_ROOT/k-$1-f$SYS_IMAGE_FORMAT.img
	[ -f "$SYS_IMAGE" ] && return 0
	t0=$(vm_now)
	stage=$SYS_ROOT/stage
	rm -rf "$stage"
	cp -al "$SYS_ROOT/root" "$stage"
	mkdir -p "$stage/usr/lib/modules"
	cp -a "$VM_KROOT/lib/modules/$VM_KVER/." "$stage/usr/lib/modules/$VM_KVER/"
	depmod -b "$stage" "$VM_KVER"
	rm -f "$SYS_IMAGE.tmp"
	mkfs.ext4 -q -F -L octant-root -d "$stage" -E nodiscard "$SYS_IMAGE.tmp" 3G >/dev/null ||
		{ rm -rf "$stage"; vm_die "mkfs.ext4 -d of the system guest's root failed"; }
	rm -rf "$stage"
	mv "$SYS_IMAGE.tmp" "$SYS_IMAGE"
	vm_log "system guest: root image for $1 made in $(vm_since "$t0")s"
}

# sys_initrd ABI: SYS_INITRD, busybox + the root disk's modules (decompressed, in load order)
# + system/init, uncompressed (boots fastest under TCG, docs/vm.md).
sys_initrd() {
	local key stage name rel f want=() order=() seen=" " moddir
	key=$(cat "$SYS_DIR/init" /bin/busybox | sha256sum | cut -c1-12)
	SYS_INITRD=$SYS_CACHE/initrd-$1-$key.cpio
	[ -f "$SYS_INITRD" ] && return 0
	stage=$(mktemp -d "${TMPDIR:-/tmp}/octant-sys-initrd.XXXXXX")
	mkdir -p "$stage"/{bin,proc,sys,dev,root,modules}
	cp /bin/busybox "$stage/bin/busybox"
	for name in sh mount umount insmod switch_root sleep cat cut echo mkdir; do
		ln -s busybox "$stage/bin/$name"
	done
	install -m 0755 "$SYS_DIR/init" "$stage/init"
	moddir=$VM_KROOT/lib/modules/$VM_KVER
	# depth-first: a module after the modules it depends on
	sys_mod_add() {
		local n=${1//-/_} r d
		case "$seen" in *" $n "*) return 0 ;; esac
		seen+="$n "
		r=$(cd "$moddir" && find kernel \( -name "$n.ko*" -o -name "${n//_/-}.ko*" \) | head -n1)
		[ -n "$r" ] || return 0
		for d in $(modinfo -F depends "$moddir/$r" | tr , ' '); do sys_mod_add "$d"; done
		case "$r" in
		*.xz) xz -dc "$moddir/$r" >"$stage/modules/$n.ko" ;;
		*.zst) zstd -qdc "$moddir/$r" >"$stage/modules/$n.ko" ;;
		*) cp "$moddir/$r" "$stage/modules/$n.ko" ;;
		esac
		order+=("$n")
	}
	for name in "${SYS_ROOT_MODULES[@]}"; do sys_mod_add "$name"; done
	printf '%s\n' "${order[@]}" >"$stage/load"
	vm_cpio "$stage" "$SYS_INITRD"
	rm -rf "$stage"
}
