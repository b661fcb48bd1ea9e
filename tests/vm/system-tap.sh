#!/usr/bin/env bash
# The system guest in the `vm` tier (tests/runner vm picks up tests/vm/*-tap.sh): octant as a
# Debian 12 administrator meets it.  `make deb` (mk/deb.sh: dpkg-buildpackage -us -uc -b of
# the tree as from a clean clone, then lintian) and, per kernel of OCTANT_VM_SYSTEM_KERNELS
# (default 6.12; "6.12 7.3" adds 7.3), one system guest (system-run.sh): a Debian 12
# root with systemd as PID 1 where the .debs are installed with apt, the service, the udev
# rule, an fstab mount, a reboot, kill -9, stop, remove and purge are tried
# (system/cases.sh).  TAP, every case named with its kernel:
#   ok 1 make deb: 5 packages built, lintian: no error, no warning
#   ok 2 6.12 system: systemd is PID 1 (systemd 254 ...), the system is up ...
#   ok N 6.12: system guest 6.12.107+deb12-amd64: N ok, 0 failed, 0 skipped (boots and cases Xs)
#   # phase times 6.12 system: debs Xs, prepare Ys, boots and cases Zs
# Env: OCTANT_VM_SYSTEM_KERNELS, OCTANT_VM_SYSTEM_TIMEOUT (one guest, both boots, default 1200 s:
# 5-6 min at load 2-8, twice that at 13),
# OCTANT_VM_SYSTEM_SYSTEMD (backports: systemd 254 from bookworm-backports, the default;
# stable: Debian 12's 252), BUILD (default build; the .debs go to $BUILD/deb).
# SKIPs loudly (qemu, mmdebstrap or the kernel cannot be had); "not ok" when the package
# build or lintian fails, a guest case fails, the guest crashes or times out.
set -uo pipefail
shopt -s lastpipe
. "$(dirname "$0")/vm-lib.sh"

n=0 nfail=0
tap() { # ok|not-ok DESC
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n $2"; else nfail=$((nfail + 1)); echo "not ok $n $2"; fi
}
build=${BUILD:-build}
case "$build" in /*) ;; *) build=$VM_TOP/$build ;; esac
debdir=$build/deb
err=$(mktemp); trap 'rm -f "$err"' EXIT

# 1. the packages, as `make deb` makes them
t0=$(vm_now)
if BUILD=$build "$VM_TOP/mk/deb.sh" "$debdir" >/dev/null 2>"$err"; then
	pkgs=0
	for f in "$debdir"/*.deb; do case "$f" in *-dbgsym_*) ;; *) pkgs=$((pkgs + 1)) ;; esac; done
	tap ok "make deb: $pkgs packages built (and their -dbgsym), lintian: no error, no warning"
	sed 's/^/# /' "$err"
else
	tap not-ok "make deb: dpkg-buildpackage -us -uc -b and lintian"
	sed 's/^/#   /' "$err"
	echo "1..$n"; exit 1
fi
t_debs=$(vm_since "$t0")

# 2. one system guest per kernel
for k in ${OCTANT_VM_SYSTEM_KERNELS:-6.12}; do
	timeout=${OCTANT_VM_SYSTEM_TIMEOUT:-1200}
	# A guest that dies in its first boot before the harness starts (no "# system:
	# boot 1": a TCG kernel panic in early boot, e.g. 6.12's "Fatal exception in
	# interrupt" in enqueue_timer while arp_init ran, once in dozens of boots, as
	# guest-tap.sh sees on 7.3) ran no case: it runs once more on a fresh overlay,
	# said so; a second death, or one after the harness started, fails as before.
	for attempt in 1 2; do
		t1=$(vm_now) t_up='' kn=0 kfail=0 kskip=0 kver='' why=''
		"$VM_DIR/system-run.sh" --kernel "$k" --timeout "$timeout" "$debdir" 2>&1 |
		while IFS= read -r line; do
			case "$line" in
			"octant-system: qemu boot "*)
				[ -n "$t_up" ] || t_up=$(vm_now)
				printf '# %s\n' "$line" ;;
			"# system: boot 1 ("*)
				kver=${line#*(}; kver=${kver%%)*}; printf '%s\n' "$line" ;;
			"not ok "*)
				d=${line#not ok }; d=${d#* }; kn=$((kn + 1)); kfail=$((kfail + 1))
				tap not-ok "$k system: $d" ;;
			"ok "*)
				d=${line#ok }; d=${d#* }; kn=$((kn + 1))
				case "$d" in *"# skip"*|*"# SKIP"*) kskip=$((kskip + 1)) ;; esac
				tap ok "$k system: $d" ;;
			"SKIP: "*) why=${line#SKIP: }; printf '# %s\n' "$line" ;;
			"#"*) printf '%s\n' "$line" ;;
			*) printf '# %s\n' "$line" ;;
			esac
		done
		rc=${PIPESTATUS[0]}
		[ "$rc" -eq 125 ] && [ -z "$kver" ] && [ "$kn" -eq 0 ] && [ "$attempt" -eq 1 ] || break
		echo "# system: $k: the guest died in its first boot, before any case ran (console above): running it again, once"
	done
	t_end=$(vm_now)
	[ -n "$t_up" ] || t_up=$t_end
	prep=$(awk -v a="$t1" -v b="$t_up" 'BEGIN { printf "%.1f", b - a }')
	run=$(awk -v a="$t_up" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
	what="system guest ${kver:-$k}: $((kn - kfail - kskip)) ok, $kfail failed, $kskip skipped (boots and cases ${run}s)"
	case $rc in
	0)   tap ok "$k: $what" ;;
	77)  tap ok "$k: system guest # skip ${why:-the guest could not be prepared}" ;;
	124) tap not-ok "$k: $what: timed out after ${timeout}s (qemu killed)" ;;
	125) tap not-ok "$k: $what: stopped without an exit status (panic, reboot loop or qemu error)" ;;
	*)   tap not-ok "$k: $what: guest exited $rc" ;;
	esac
	echo "# phase times $k system: debs ${t_debs}s, prepare ${prep}s, boots and cases ${run}s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "1..$n"
[ $nfail -eq 0 ]
