#!/usr/bin/env bash
# Prepare the qemu guest for one kernel: fetch the Debian kernel packages, build ublk_drv.ko
# out of tree (6.1; 6.12 and 7.3 ship it), build kublk (7.3: the kernel selftests' ublk
# server, a peer for bench-vm) and pack the static part of the initramfs.  Every step is
# skipped when its output is cached in $OCTANT_VM_CACHE (default /var/cache/octant/vm), so a
# second run takes about a second.
# usage: tests/vm/prepare.sh [-q] [KERNEL]     KERNEL: 6.1 (default, or $OCTANT_VM_KERNEL),
#                                              6.12, 7.3, or an ABI name (see vm-lib.sh)
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

# choose ABI: sets abi, the cache paths, series and the package names (pkgs; the first
# nroot of them are extracted into one root): five for 6.1 (image, headers, kbuild and source
# to build ublk_drv), one for bookworm's 6.12; for 7.3 (trixie-backports) the image's three
# split packages, then the source, the uapi headers and liburing (trixie) kublk is built from.
choose() {
	abi=$(vm_kernel_abi "$kernel") || true
	[ -n "$abi" ] || skip "no Debian kernel found: apt-cache knows no linux-image-amd64 and nothing is cached"
	vm_set_paths "$abi"
	series=$VM_KSERIES
	if [ "$VM_KSPLIT" -eq 1 ]; then
		pkgs=("linux-binary-$VM_KVER" "linux-modules-$VM_KVER" "linux-base-$VM_KVER"
		      "linux-source-$series" linux-libc-dev liburing-dev)
		nroot=3
	elif [ "$VM_UBLK_INTREE" -eq 1 ]; then
		pkgs=("linux-image-$VM_KVER-unsigned"); nroot=1
	else
		pkgs=("linux-image-$VM_KVER" "linux-headers-$VM_KVER" "linux-headers-$abi-common"
		      "linux-kbuild-$series" "linux-source-$series")
		nroot=4
	fi
	need=()
	for p in "${pkgs[@]}"; do
		ls "$VM_DEBS/${p}_"*.deb >/dev/null 2>&1 || need+=("$p")
	done
}
# deb PKG: the cached .deb of PKG (the newest, if several).
deb() { ls "$VM_DEBS/${1}_"*.deb | sort -V | tail -n1; }
fetch() { (cd "$VM_DEBS" && apt-get download -q "${need[@]}" >/dev/null 2>"$VM_DEBS/.apt.err"); }
# fetch_private: 7.3's packages through mk/apt-private.sh (trixie-backports + trixie, never
# the host's apt sources); the kernel's own linux-libc-dev, not the newest.
fetch_private() {
	local p v want=() rc=0
	for p in "${need[@]}"; do
		case "$p" in
		linux-libc-dev)
			v=$("$VM_TOP/mk/apt-private.sh" version linux-libc-dev "${abi%%+*}-" 2>"$VM_DEBS/.apt.err") ||
				skip "$(sed -n 's/^SKIP: //p' "$VM_DEBS/.apt.err")"
			want+=("$p=$v") ;;
		*) want+=("$p") ;;
		esac
	done
	"$VM_TOP/mk/apt-private.sh" download "$VM_DEBS" "${want[@]}" 2>"$VM_DEBS/.apt.err" || rc=$?
	[ $rc -eq 0 ] || skip "cannot fetch the kernel packages (${need[*]}): $(sed -n 's/^SKIP: //p' "$VM_DEBS/.apt.err" | head -n1)"
}

# 1. The packages, downloaded once.  Old apt lists may name a kernel the mirror no
# longer has: then refresh them (as root), choose again and retry.
mkdir -p "$VM_DEBS"
choose
if [ ${#need[@]} -gt 0 ] && [ "$VM_KSPLIT" -eq 1 ]; then
	t0=$(vm_now)
	vm_log "downloading ${need[*]} (trixie-backports, trixie)"
	fetch_private
	vm_log "downloaded in $(vm_since "$t0")s"
elif [ ${#need[@]} -gt 0 ]; then
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
	for p in "${pkgs[@]:0:$nroot}"; do
		dpkg -x "$(deb "$p")" "$VM_KROOT"
	done
	# The headers' Makefile includes the common headers by absolute path.
	[ "$VM_UBLK_INTREE" -eq 1 ] ||
		sed -i "s|^include /usr/src/|include $VM_KROOT/usr/src/|" "$VM_HEADERS/Makefile"
	# merged-/usr packages: the module paths below (and mkinitrd.sh's) go through lib/
	[ "$VM_KSPLIT" -eq 0 ] || [ -e "$VM_KROOT/lib" ] || ln -s usr/lib "$VM_KROOT/lib"
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
	dpkg-deb --fsys-tarfile "$(deb "${pkgs[4]}")" |
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

# 3b. 7.3: kublk, the kernel selftests' ublk server (tools/testing/selftests/ublk of the
# kernel's source), a peer in bench-vm.  Built against the kernel's own uapi headers
# (its linux-libc-dev) and trixie's liburing (newer than the host's 2.3), both extracted
# here, never installed; linked statically, so the guest needs nothing more.
if [ "$VM_KSPLIT" -eq 1 ] && [ ! -x "$VM_KUBLK" ]; then
	t0=$(vm_now)
	kd=$VM_KDIR/kublk
	rm -rf "$kd"; mkdir -p "$kd/sysroot"
	dpkg-deb --fsys-tarfile "$(deb "linux-source-$series")" |
		tar -xO "./usr/src/linux-source-$series.tar.xz" |
		tar -xJ -C "$kd" --strip-components=4 "linux-source-$series/tools/testing/selftests/ublk" ||
		vm_die "kernel $kernel: no tools/testing/selftests/ublk in linux-source-$series"
	for p in linux-libc-dev liburing-dev; do dpkg -x "$(deb "$p")" "$kd/sysroot"; done
	inc=$kd/sysroot/usr/include
	srcs=()     # kublk: every .c but the standalone metadata_size utility
	for f in "$kd"/ublk/*.c; do [ "${f##*/}" = metadata_size.c ] || srcs+=("$f"); done
	(cd "$kd/ublk" && gcc -O2 -Wall -D_GNU_SOURCE -isystem "$inc" \
		-isystem "$inc/x86_64-linux-gnu" -o ../kublk.tmp "${srcs[@]}" -static \
		"$kd/sysroot/usr/lib/x86_64-linux-gnu/liburing.a" -lpthread -lm) >"$kd/build.log" 2>&1 || {
		tail -n 20 "$kd/build.log" >&2; vm_die "building kublk failed ($kd/build.log)"; }
	mv "$kd/kublk.tmp" "$VM_KUBLK"
	vm_log "built kublk (linux-source-$series, liburing $(basename "$(deb liburing-dev)" | cut -d_ -f2)) in $(vm_since "$t0")s"
fi

# 4. The static part of the initramfs (busybox, host programs + libraries, modules, init).
"$VM_DIR/mkinitrd.sh" static "$abi"

echo "$abi"
