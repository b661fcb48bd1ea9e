#!/usr/bin/env bash
# Build the guest initramfs in two parts (the kernel accepts concatenated cpio archives):
#   mkinitrd.sh static ABI
#       the cached part: busybox, host programs with their libraries, kernel modules with
#       modules.dep, /init.  Rebuilt only when its inputs change (key in static.key).
#   mkinitrd.sh run ABI OUT.cpio BUILD SCRIPT [ARGS...]
#       the per-run part: BUILD's programs and libraries (+ the libraries they need that the
#       static part lacks) at /octant/build, tests/vm and tests/compare at /octant/tests/, the
#       script to run.
set -euo pipefail
. "$(dirname "$0")/vm-lib.sh"

mode=${1:?usage: mkinitrd.sh static|run ABI ...}
vm_set_paths "${2:?ABI}"
shift 2
STAGE=$VM_KDIR/static.stage

# host_prog NAME: absolute path of a host program, or nothing.
host_prog() { PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v "$1" || true; }

static_key() {
	local p f
	{
		cat "$VM_DIR/vm-lib.sh" "$VM_DIR/mkinitrd.sh" "$VM_DIR/init"
		[ "$VM_UBLK_INTREE" -eq 1 ] || sha256sum "$VM_UBLK_KO"
		[ ! -x "$VM_KUBLK" ] || sha256sum "$VM_KUBLK"
		sha256sum /bin/busybox
		for p in "${VM_PROGS[@]}"; do
			f=$(host_prog "$p"); [ -n "$f" ] && stat -L -c '%n %s %Y' "$f"
		done
		echo "${VM_MODULES[*]}"
	} 2>/dev/null | sha256sum | cut -d' ' -f1
}

# mod_index: "name path" for every module of the image (names with '-' and '_' folded to '_';
# 6.12's are xz-compressed, .ko.xz), and the out-of-tree ublk_drv on 6.1.
mod_index() {
	(cd "$VM_KROOT/lib/modules/$VM_KVER" && find kernel -name '*.ko' -o -name '*.ko.xz' |
	 awk '{ n = $0; sub(/.*\//, "", n); sub(/\.ko(\.xz)?$/, "", n); gsub(/-/, "_", n); print n, $0 }')
	[ "$VM_UBLK_INTREE" -eq 1 ] || echo "ublk_drv @ublk"
}

build_static() {
	local key t0 p f applet name rel deps
	key=$(static_key)
	if [ -f "$VM_STATIC_CPIO" ] && [ "$(cat "$VM_KDIR/static.key" 2>/dev/null)" = "$key" ]; then
		return 0
	fi
	t0=$(vm_now)
	rm -rf "$STAGE"
	mkdir -p "$STAGE"
	vm_merged_usr "$STAGE"
	mkdir -p "$STAGE"/{proc,sys,dev,tmp,run,mnt,root,etc,octant,var}
	ln -s ../run "$STAGE/var/run"
	ln -s ../tmp "$STAGE/var/tmp"

	# busybox: every applet, unless a host program of that name is copied below.
	cp /bin/busybox "$STAGE/usr/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[ -e "$STAGE/usr/bin/$applet" ] || ln -s busybox "$STAGE/usr/bin/$applet"
	done
	for p in "${VM_PROGS[@]}" modprobe insmod rmmod lsmod modinfo depmod; do
		rm -f "$STAGE/usr/bin/$p"
	done
	for p in "${VM_PROGS[@]}" modprobe insmod rmmod lsmod modinfo depmod; do
		f=$(host_prog "$p")
		if [ -z "$f" ]; then vm_log "host has no $p; the guest will lack it"; continue; fi
		vm_copy_elf "$STAGE" "$f"
	done
	# 7.3: the kernel selftests' ublk server (static; prepare.sh builds it)
	[ ! -x "$VM_KUBLK" ] || install -m 0755 "$VM_KUBLK" "$STAGE/usr/bin/kublk"
	# bash scripts use #!/usr/bin/env bash; busybox provides env.
	ln -sf /proc/self/mounts "$STAGE/etc/mtab"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$STAGE/etc/passwd"
	printf 'root:x:0:\ndisk:x:6:\n' >"$STAGE/etc/group"
	: >"$STAGE/etc/fstab"

	# Kernel modules: the wanted ones and the closure of their depends=.
	local moddir=$STAGE/usr/lib/modules/$VM_KVER index want=() seen=" "
	mkdir -p "$moddir/extra"
	index=$(mod_index)
	for p in "${VM_MODULES[@]}"; do want+=("${p//-/_}"); done
	while [ ${#want[@]} -gt 0 ]; do
		name=${want[0]}; want=("${want[@]:1}")
		case "$seen" in *" $name "*) continue ;; esac
		seen+="$name "
		rel=$(awk -v n="$name" '$1 == n { print $2; exit }' <<<"$index")
		if [ -z "$rel" ]; then
			grep -q "/${name}.ko$" "$VM_KROOT/lib/modules/$VM_KVER/modules.builtin" 2>/dev/null ||
			grep -q "/$(tr _ - <<<"$name").ko$" "$VM_KROOT/lib/modules/$VM_KVER/modules.builtin" 2>/dev/null ||
				vm_log "module $name not in the image (skipped)"
			continue
		fi
		if [ "$rel" = @ublk ]; then
			cp "$VM_UBLK_KO" "$moddir/extra/ublk_drv.ko"; f=$VM_UBLK_KO
		else
			mkdir -p "$moddir/$(dirname "$rel")"
			f=$VM_KROOT/lib/modules/$VM_KVER/$rel
			# decompressed once here: loading is faster than xz under TCG
			case "$rel" in
			*.xz) xz -dc "$f" >"$moddir/${rel%.xz}" ;;
			*)    cp "$f" "$moddir/$rel" ;;
			esac
		fi
		deps=$(modinfo -F depends "$f" 2>/dev/null || true)
		for p in ${deps//,/ }; do want+=("${p//-/_}"); done
	done
	for f in modules.order modules.builtin; do
		sed 's/\.ko\.xz$/.ko/' "$VM_KROOT/lib/modules/$VM_KVER/$f" >"$moddir/$f"
	done
	cp "$VM_KROOT/lib/modules/$VM_KVER/modules.builtin.modinfo" "$moddir/"
	depmod -b "$STAGE" "$VM_KVER"

	install -m 0755 "$VM_DIR/init" "$STAGE/init"
	vm_cpio "$STAGE" "$VM_STATIC_CPIO"
	echo "$key" >"$VM_KDIR/static.key"
	vm_log "packed the static initramfs ($(du -m "$VM_STATIC_CPIO" | cut -f1) MB," \
	       "$(find "$moddir" -name '*.ko' | wc -l) modules) in $(vm_since "$t0")s"
}

# sh_quote WORD: WORD in single quotes for /bin/sh.
sh_quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

build_run() {
	local out=$1 build=$2 script=$3 f lib run a
	shift 3
	run=$(mktemp -d "${TMPDIR:-/tmp}/octant-vm-run.XXXXXX")
	trap 'rm -rf "$run"' RETURN
	mkdir -p "$run/octant/build" "$run/octant/tests" "$run/octant/run"
	# The project's build outputs: executables and shared libraries at the top of BUILD, and
	# test helpers built into BUILD/tests/vm (at /octant/build/tests/vm in the guest).
	if [ -d "$build" ]; then
		for f in "$build"/* "$build"/tests/vm/*; do
			[ -f "$f" ] || continue
			case "$f" in *.so|*.so.*) ;; *.o|*.d|*.a) continue ;; *) [ -x "$f" ] || continue ;; esac
			a=$run/octant/build/${f#"$build"/}
			mkdir -p "$(dirname "$a")" && cp "$f" "$a"
			# libraries the static part lacks (libfuse3, liburing, ...), at their host paths
			for lib in $(ldd "$f" 2>/dev/null | awk '/=> \// { print $3 }'); do
				case "$lib" in "$build"/*) continue ;; esac
				[ -e "$STAGE$(readlink -f "$(dirname "$lib")")/$(basename "$lib")" ] && continue
				vm_copy_path "$run" "$lib"
			done
		done
	fi
	# The lib links must not replace the static part's /lib -> usr/lib: move them under usr.
	for a in lib lib64 bin sbin; do
		if [ -d "$run/$a" ] && [ ! -L "$run/$a" ]; then
			mkdir -p "$run/usr/$a" && cp -a "$run/$a/." "$run/usr/$a/" && rm -rf "${run:?}/$a"
		fi
	done
	cp -a "$VM_DIR" "$run/octant/tests/vm"
	cp -a "$VM_TOP/tests/compare" "$run/octant/tests/compare"    # guest/compare-ublk.sh
	cp "$script" "$run/octant/run/script"
	chmod 0755 "$run/octant/run/script"
	{
		printf 'set --'
		for a in "$@"; do printf ' %s' "$(sh_quote "$a")"; done
		printf '\n'
	} >"$run/octant/run/args"
	printf 'OCTANT_VM_BOOT_MODULES=%s\n' "$(sh_quote "$VM_BOOT_MODULES")" >"$run/octant/run/env"
	printf 'OCTANT_VM_SCRIPT_NAME=%s\n' "$(sh_quote "$(basename "$script")")" >>"$run/octant/run/env"
	printf 'OCTANT_VM_SCRATCH_FS=%s\n' "${OCTANT_VM_SCRATCH_FS:-}" >>"$run/octant/run/env"
	printf 'OCTANT_VM_OUT_TAG=%s\n' "${OCTANT_VM_OUT_TAG:-}" >>"$run/octant/run/env"
	printf 'export OCTANT_VM_ALL_KERNELS=%s\n' "$(sh_quote "${OCTANT_VM_ALL_KERNELS:-0}")" >>"$run/octant/run/env"
	vm_cpio "$run" "$out"
}

case "$mode" in
static) build_static ;;
run)    build_run "$@" ;;
*) vm_die "mkinitrd.sh: unknown mode $mode" ;;
esac
