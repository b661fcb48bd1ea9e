#!/bin/bash
# The system guest's cases (boot.sh runs them; docs/vm.md, docs/install.md): octant's .debs
# used as an administrator would on Debian 12 with systemd as PID 1 and udev.
#   cases.sh install        boot 1: apt install, the unit and the rule verified, the service
#                           enabled and started, /dev/disk/by-octant/data, an fstab mount,
#                           files written; then boot.sh reboots the guest
#   cases.sh after-reboot   boot 2: the shutdown was clean, everything came back with the
#                           files; kill -9 and the restart (ublk USER_RECOVERY), the journal,
#                           systemctl stop, apt remove (refused while mounted), apt purge,
#                           and the image kept whole
# TAP on stdout (guest-lib.sh's t_*); the count and the failures carry over the reboot.
# Exit 0 all ok, 1 a case failed, 3 a failure the next cases cannot follow.
. /octant/system/guest-lib.sh
phase=$1
state=/var/lib/octant-test
T_N=$(cat "$state/n" 2>/dev/null || echo 0)
T_FAILED=$(cat "$state/failed" 2>/dev/null || echo 0)
save() { echo "$T_N" >"$state/n"; echo "$T_FAILED" >"$state/failed"; }
trap 'save; t_run_cleanup' EXIT
# fatal DESC [DETAIL...]: a failed case the rest depends on: the run ends here
fatal() { t_fail "$@"; save; exit 3; }
end() { save; exit "$T_FAILED"; }

U=ublk-flash@data.service
IMG=/var/lib/octant/data.img
LINK=/dev/disk/by-octant/data
MNT=/mnt/data
FSTAB="$LINK $MNT ext4 nofail,x-systemd.after=$U 0 2"

# wait_until SECS CMD...: poll CMD every 0.2 s
wait_until() {
	local end=$((SECONDS + $1)); shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
prop() { systemctl show -p "$1" --value "$U"; }
# health_count LABEL: a count of `ublk-flash health IMG` (offline or live)
health_count() { ublk-flash health "$IMG" | sed -n "s/^$1: *\([0-9]*\).*/\1/p"; }
files_sum() { (cd "$MNT" && sha256sum f-1 f-2 f-3 f-big) ; }
journal_unit() { journalctl -q --no-pager "$@" -u "$U"; }

phase_install() {
	local v out dev pid

	# --- the system
	v=$(systemctl --version | head -n1)
	out=$(systemctl is-system-running --wait 2>&1)
	if [ "$(cat /proc/1/comm)" = systemd ] && [ "$out" = running ]; then
		t_ok "systemd is PID 1 ($v), the system is up (is-system-running: running)"
	else
		fatal "systemd is PID 1 and the system is up" "PID 1: $(cat /proc/1/comm)" \
			"is-system-running: $out" "$(systemctl --failed --no-legend 2>&1)"
	fi
	echo "# system: $(systemd-analyze time 2>/dev/null | head -n1)"

	# --- the packages, with apt, from the .debs
	local debs=(/octant/debs/*.deb) pkgs=() p
	for p in "${debs[@]}"; do pkgs+=("$(dpkg-deb -f "$p" Package)"); done
	if out=$(apt-get install -y --no-install-recommends "${debs[@]}" 2>&1); then
		t_ok "apt install ${pkgs[*]} (from their .debs)"
	else
		fatal "apt install ${pkgs[*]}" "$out"
	fi
	out=
	for p in "${pkgs[@]}"; do
		[ "$(dpkg-query -W -f '${Status}' "$p" 2>&1)" = "install ok installed" ] || out+=" $p"
	done
	t_eq "dpkg: every package installed${out:+ (not:$out)}" "$out" ""
	t_check "the unit, the rule and the helpers are where systemd and udev read them" \
		test -f /lib/systemd/system/ublk-flash@.service -a -f /lib/udev/rules.d/60-octant.rules \
		-a -x /usr/libexec/octant/ublk-flash-service -a -x /usr/libexec/octant/octant-udev-name
	t_check "libalign0: the loader finds libalign.so.0" sh -c 'ldconfig -p | grep -q "libalign.so.0 "'
	out=$(pkg-config --libs libalign 2>&1)
	t_eq "libalign-dev: pkg-config --libs libalign" "${out% }" "-lalign"
	out=$(pkg-config --cflags libalign 2>&1)
	[[ " $out " == *" -I/usr/include/octant "* ]] && [ -f /usr/include/octant/align.h ] &&
		t_ok "libalign-dev: pkg-config --cflags libalign names octant/align.h's folder ($out)" ||
		t_fail "libalign-dev: pkg-config --cflags libalign" "$out"
	t_check "nbdkit-plugin-octant: nbdkit finds the plugin by its name (nbdkit octant --dump-plugin)" \
		sh -c 'nbdkit octant --dump-plugin | grep -qx "name=octant"'
	t_check "ublk-flash --version, alignpart --version (installed)" \
		sh -c 'ublk-flash --version && alignpart --version'

	# --- the installed unit and rule, verified by this systemd
	out=$(systemd-analyze verify "$U" 2>&1)
	t_eq "systemd-analyze verify $U: no output" "$out" ""
	local rules=/lib/udev/rules.d/60-octant.rules
	if udevadm verify --help >/dev/null 2>&1; then
		out=$(udevadm verify --resolve-names=never "$rules" 2>&1) &&
			t_ok "udev rule: udevadm verify $rules (systemd $(udevadm --version))" ||
			t_fail "udev rule: udevadm verify $rules" "$out"
		# and it can fail: a copy with a misspelt key is reported
		sed 's/IMPORT{program}/IMPORT{programm}/' "$rules" >/tmp/61-broken.rules
		if udevadm verify --resolve-names=never /tmp/61-broken.rules >/tmp/verify.out 2>&1; then
			t_fail "udev rule: udevadm verify reports a broken copy" "$(cat /tmp/verify.out)"
		else
			t_ok "udev rule: udevadm verify reports a broken copy"
		fi
	else
		t_skip "udev rule: udevadm verify" "systemd $(udevadm --version) has no udevadm verify (254 has)"
	fi

	# --- as docs/install.md says: the image, then the service
	if out=$(ublk-flash create "$IMG" --size 256M --align odd 2>&1); then
		t_ok "ublk-flash create $IMG --size 256M --align odd"
	else
		fatal "ublk-flash create $IMG --size 256M --align odd" "$out"
	fi
	if out=$(systemctl enable --now ublk-flash@data 2>&1) && [ "$(prop ActiveState)" = active ]; then
		t_ok "systemctl enable --now ublk-flash@data: active"
	else
		fatal "systemctl enable --now ublk-flash@data" "$out" "$(journal_unit -b 2>&1 | tail -n 20)"
	fi
	pid=$(prop MainPID)
	out=$(ublk-flash list -n -r -o DEVICE,IMAGE,FRONTEND,PID,STATE)
	dev=${out%% *}
	t_eq "ublk-flash list: the device over ublk, the image, the service's main pid, running" \
		"$out" "$dev $IMG ublk $pid running"
	echo "$dev" >"$state/dev"
	if wait_until 20 test -L "$LINK"; then
		t_eq "udev: $LINK -> $dev (60-octant.rules, run by udevd)" "$(readlink -f "$LINK")" "$dev"
	else
		t_fail "udev: $LINK appears" "$(udevadm info "$dev" 2>&1)"
	fi
	out=$(udevadm info -q property "$dev" | grep '^OCTANT_' | sort | tr '\n' ' ')
	t_eq "udevadm info $dev: OCTANT_IMAGE, OCTANT_NAME" "$out" "OCTANT_IMAGE=$IMG OCTANT_NAME=data "
	t_eq "the device: 512-byte sectors on 4 KiB pages" \
		"$(blockdev --getss --getpbsz "$dev" | tr '\n' ' ')" "512 4096 "

	# --- a filesystem on it, mounted through fstab (ordered after the unit, docs/install.md)
	mkfs.ext4 -q -F "$LINK" || fatal "mkfs.ext4 $LINK"
	mkdir -p "$MNT"
	echo "$FSTAB" >>/etc/fstab
	systemctl daemon-reload
	if out=$(mount "$MNT" 2>&1) && findmnt -n -o SOURCE "$MNT" >/dev/null; then
		t_ok "fstab: $FSTAB; mount $MNT"
	else
		fatal "fstab: $FSTAB; mount $MNT" "$out"
	fi
	out="After=$(systemctl show -p After --value mnt-data.mount) Requires=$(systemctl show -p Requires,BindsTo,PartOf --value mnt-data.mount)"
	[[ $out == "After="*"$U"*"Requires="* && $out != *"Requires="*"$U"* ]] &&
		t_ok "mnt-data.mount is ordered after $U and does not require it" ||
		t_fail "mnt-data.mount is ordered after $U and does not require it" "$out"
	out=$(systemd-analyze verify /run/systemd/generator/mnt-data.mount 2>&1)
	t_eq "systemd-analyze verify mnt-data.mount: no output (no ordering cycle)" "$out" ""
	head -c 8M /dev/urandom >"$MNT/f-big"
	for p in 1 2 3; do echo "octant file $p $RANDOM" >"$MNT/f-$p"; done
	sync
	files_sum >"$state/sums"
	t_check "files written and synced on $MNT" test -s "$state/sums"
	health_count "Unsafe Shutdowns" >"$state/unsafe"
	end
}

phase_after_reboot() {
	local out dev pid pid2 before n

	dev=$(cat "$state/dev")
	out=$(systemctl is-system-running --wait 2>&1)
	[ "$out" = running ] && t_ok "boot 2: the system is up again (is-system-running: running)" ||
		t_fail "boot 2: the system is up again" "$out" "$(systemctl --failed --no-legend 2>&1)"
	echo "# system: $(systemd-analyze time 2>/dev/null | head -n1)"

	# --- the reboot's shutdown: the mount went first, then the service stopped cleanly
	out=$(journalctl -q --no-pager -b -1 -o cat -u mnt-data.mount -u "$U" 2>&1)
	if grep -q "Unmounted.*$MNT\|Unmounted mnt-data.mount" <<<"$out" &&
	   grep -q "Deactivated successfully\|Stopped.*ublk-flash" <<<"$out" &&
	   [ "$(grep -n "Unmounted" <<<"$out" | head -n1 | cut -d: -f1)" -lt \
	     "$(grep -n "Stopping.*ublk-flash\|Stopping.*data" <<<"$out" | tail -n1 | cut -d: -f1)" ]; then
		t_ok "the reboot: $MNT unmounted, then $U stopped"
	else
		t_fail "the reboot: $MNT unmounted, then $U stopped" "$out"
	fi
	out=$(journal_unit -b -1 -o cat | grep -i "failed\|status=" || true)
	t_eq "the reboot: $U stopped without a failure (journal -b -1)" "$out" ""

	# --- everything came back
	[ "$(prop ActiveState)" = active ] && t_ok "boot 2: $U active again (enabled)" ||
		t_fail "boot 2: $U active again" "$(journal_unit -b 2>&1 | tail -n 20)"
	wait_until 20 test -L "$LINK"
	t_eq "boot 2: $LINK -> $dev, the same name" "$(readlink -f "$LINK")" "$dev"
	wait_until 20 mountpoint -q "$MNT"
	t_eq "boot 2: $MNT mounted from it by fstab" "$(findmnt -n -o SOURCE "$MNT")" "$dev"
	out=$(files_sum 2>&1)
	t_eq "boot 2: the files survived the reboot (sha256)" "$out" "$(cat "$state/sums")"
	before=$(cat "$state/unsafe")
	n=$(ublk-flash health "$IMG" | sed -n 's/^Unsafe Shutdowns: *\([0-9]*\).*/\1/p')
	t_eq "health: no unsafe shutdown across the reboot (the unit's ExecStop checkpointed)" "$n" "$before"

	# --- kill -9: systemd restarts the server, which re-attaches the same device
	pid=$(prop MainPID)
	n=$(prop NRestarts)
	local mt
	mt=$(systemctl show -p ActiveState,ActiveEnterTimestampMonotonic --value mnt-data.mount | tr '\n' ' ')
	kill -9 "$pid"
	if wait_until 60 sh -c "[ \"\$(systemctl show -p NRestarts --value $U)\" -gt $n ] &&
	                        [ \"\$(systemctl show -p SubState --value $U)\" = running ]"; then
		pid2=$(prop MainPID)
		t_ok "kill -9 of the server (pid $pid): systemd restarted it (pid $pid2)"
	else
		t_fail "kill -9 of the server: systemd restarts it" "$(journalctl -b -q --no-pager -u "$U" -u mnt-data.mount | tail -n 20)"
		pid2=$(prop MainPID)
	fi
	t_eq "the restart left the mount alone (mnt-data.mount active, not restarted)" \
		"$(systemctl show -p ActiveState,ActiveEnterTimestampMonotonic --value mnt-data.mount | tr '\n' ' ')" "$mt"
	out=$(journal_unit -b -p notice..notice -o cat | grep -c "$dev was left by a dead server.*re-attaching it (serve --recover)")
	[ "$out" -ge 1 ] && t_ok "journal, PRIORITY 5: the restart re-attached $dev (serve --recover: USER_RECOVERY)" ||
		t_fail "journal: the restart ran serve --recover" "$(journal_unit -b -o cat | tail -n 20)"
	t_eq "ublk-flash list: the same $dev, running, the new main pid" \
		"$(ublk-flash list -n -r -o DEVICE,PID,STATE)" "$dev $pid2 running"
	t_eq "$LINK -> $dev still" "$(readlink -f "$LINK")" "$dev"
	echo "octant after kill $RANDOM" >"$MNT/f-after-kill"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	if grep -q "octant after kill" "$MNT/f-after-kill" 2>/dev/null &&
	   [ "$(files_sum)" = "$(cat "$state/sums")" ]; then
		t_ok "the mounted filesystem kept working: a new file written, synced, read back; the old ones intact"
	else
		t_fail "the mounted filesystem kept working after the restart" "$(dmesg | tail -n 10)"
	fi

	# --- the journal: the server's lines, with their priorities (-p P..P: exactly P)
	local prio
	for prio in 0 1 2 3 4 5 6 7; do
		journal_unit -b -p $prio..$prio -o cat | grep -v '^Started \|^Starting \|^Stopp\|: Consumed \|: Scheduled restart\|: Deactivated' |
			sed "s/^/# journal PRIORITY=$prio: /"
	done
	out=$(journal_unit -b -p info..info -o cat SYSLOG_IDENTIFIER=ublk-flash | grep -c " served on $dev" || true)
	t_eq "journalctl -u $U: the server's start lines (boot 2, the restart), PRIORITY 6" "$out" 2

	# --- systemctl stop with the filesystem mounted: unmounted first, then a clean checkpoint
	before=$(health_count "Unsafe Shutdowns")
	if out=$(systemctl stop "$U" 2>&1) && [ "$(prop Result)" = success ] &&
	   ! mountpoint -q "$MNT"; then
		t_ok "systemctl stop $U: $MNT unmounted first (ExecStop), Result=success"
	else
		t_fail "systemctl stop $U" "$out" "$(journal_unit -b -o cat | tail -n 10)"
	fi
	t_check "ublk-flash fsck $IMG: clean after the stop" ublk-flash fsck "$IMG"
	t_eq "health: the kill -9 counted as one unsafe shutdown, the stop as none (clean checkpoint)" \
		"$(health_count "Unsafe Shutdowns")" "$(( $(cat "$state/unsafe") + 1 ))"
	t_eq "no server, no device left ($dev gone, /run/octant empty)" \
		"$(ls /run/octant 2>/dev/null; [ -e "$dev" ] && echo "$dev")" ""

	# --- ublk-flash stop by hand: the unit ends with success and is not restarted
	systemctl start "$U"
	n=$(prop NRestarts)
	if out=$(ublk-flash stop "$IMG" 2>&1) && wait_until 30 sh -c "systemctl show -p ActiveState --value $U | grep -qx inactive"; then
		sleep 3    # RestartSec=2: a restart would be under way now
		t_eq "ublk-flash stop $IMG by hand: $U inactive, Result=success, not restarted" \
			"$(prop ActiveState) $(prop Result) $(prop NRestarts)" "inactive success $n"
	else
		t_fail "ublk-flash stop $IMG by hand: $U ends" "$out" "$(journal_unit -b -o cat | tail -n 10)"
	fi

	# --- apt remove: refused while the device is mounted, nothing lost
	systemctl start "$U"
	wait_until 20 test -L "$LINK"
	mount "$MNT"
	local arc=0 got
	out=$(apt-get remove -y ublk-flash 2>&1) || arc=$?
	got="apt $arc, dpkg $(dpkg-query -W -f '${db:Status-Status}' ublk-flash), $(prop ActiveState)"
	if [ $arc -ne 0 ] && [ "$got" = "apt $arc, dpkg installed, active" ] &&
	   [ "$(files_sum)" = "$(cat "$state/sums")" ]; then
		t_ok "apt remove ublk-flash while $MNT is mounted on it: refused, still served, files intact"
		grep "in use" <<<"$out" | sed 's/^/# apt: /'
	else
		t_fail "apt remove ublk-flash while mounted: refused, still served, files intact" "$got" "$out"
	fi

	# --- apt remove after umount: the instance stopped cleanly, nothing of the packages left
	umount "$MNT"
	sed -i "\|^$LINK |d" /etc/fstab
	systemctl daemon-reload
	before=$(health_count "Unsafe Shutdowns")
	if out=$(apt-get remove -y ublk-flash alignpart nbdkit-plugin-octant libalign-dev libalign0 2>&1); then
		t_ok "apt remove of every package"
	else
		t_fail "apt remove of every package" "$out"
	fi
	t_eq "the instance is stopped: no server, no device" \
		"$(pgrep -x ublk-flash; [ -e "$dev" ] && echo "$dev")" ""
	out=$(ls -d /lib/systemd/system/ublk-flash@.service /lib/udev/rules.d/60-octant.rules \
	      /usr/libexec/octant /usr/bin/ublk-flash /usr/bin/alignpart /usr/include/octant \
	      /usr/lib/*/libalign* /usr/lib/*/nbdkit/plugins/nbdkit-octant-plugin.so 2>/dev/null)
	t_eq "apt remove: no unit, rule, helper, program or library left" "$out" ""
	# enablement is configuration: kept on remove (Debian's way: a reinstall serves again),
	# gone at purge; systemd knows the unit no more
	t_eq "apt remove: $U not-found, inactive (enabled again by a reinstall)" \
		"$(prop LoadState) $(prop ActiveState) $(readlink /etc/systemd/system/multi-user.target.wants/$U)" \
		"not-found inactive /lib/systemd/system/ublk-flash@.service"
	t_eq "apt remove: the image kept" "$(ls "$IMG")" "$IMG"
	sha256sum "$IMG" >"$state/imgsum"

	# --- apt purge: no link, no file
	# (a package without configuration is purged by its removal already)
	local rc
	rc=$(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 2>/dev/null | awk '$1 == "rc" { print $2 }' |
	     grep -x 'ublk-flash\|alignpart\|nbdkit-plugin-octant\|libalign-dev\|libalign0' | tr '\n' ' ')
	if out=$(apt-get purge -y $rc 2>&1); then
		t_ok "apt purge ${rc:-(nothing left to purge)}"
	else
		t_fail "apt purge $rc" "$out"
	fi
	out=$(systemctl list-units --all --plain --no-legend 'ublk-flash@*' 2>&1)
	t_eq "apt purge: systemd knows no ublk-flash@ unit" "$out" ""
	out=$(find / -xdev \( -path /proc -o -path /sys -o -path "$state" -o -path /octant \) -prune -o \
	      \( -name '*octant*' -o -name '*ublk-flash*' -o -name '*libalign*' -o -name alignpart \) \
	      -print 2>/dev/null | grep -v "^/var/lib/octant$\|^$IMG$\|^/var/lib/octant-test\|^/usr/local/sbin/octant-system-test$\|^/etc/systemd/system/octant-system-test.service$\|/multi-user.target.wants/octant-system-test.service$\|^/var/log/journal\|^/var/cache/man/" || true)
	# (/var/cache/man: man-db's cache of pages shown, its own to prune)
	t_eq "apt purge: nothing named octant, ublk-flash or libalign left but the image" "$out" ""
	t_eq "apt purge: the image kept, unchanged" "$(sha256sum "$IMG")" "$(cat "$state/imgsum")"
	out=$(dpkg -l ublk-flash alignpart nbdkit-plugin-octant libalign-dev libalign0 2>/dev/null | grep '^[a-z][a-z] ' | grep -v '^un' || true)
	t_eq "dpkg: no trace of the packages" "$out" ""

	# --- the image purge kept is whole: install again, fsck, serve, read the files
	apt-get install -y /octant/debs/ublk-flash_*.deb >/dev/null 2>&1
	t_check "reinstalled ublk-flash: fsck of the kept image is clean" ublk-flash fsck "$IMG"
	systemctl start ublk-flash@data
	wait_until 20 test -L "$LINK"
	mount -o ro "$LINK" "$MNT" 2>/dev/null
	t_eq "the kept image served again: the files read back" \
		"$(files_sum 2>&1; grep -c "octant after kill" "$MNT/f-after-kill" 2>&1)" "$(cat "$state/sums"; echo 1)"
	umount "$MNT" 2>/dev/null
	systemctl stop ublk-flash@data
	end
}

case "$phase" in
install)      phase_install ;;
after-reboot) phase_after_reboot ;;
*) echo "cases.sh: unknown phase $phase" >&2; exit 3 ;;
esac
