#!/bin/bash
# The system guest's test, run at every boot by octant-system-test.service (its output is
# the serial console, read by tests/vm/system-run.sh).  Boot 1 runs cases.sh's phase
# "install" and reboots the guest; boot 2 runs phase "after-reboot", prints "OCTANT-EXIT N"
# (N: 0 all ok, 1 a case failed) and powers the guest off.  The case count and the failures
# carry over the reboot in /var/lib/octant-test.  cases.sh exits 0 (all ok), 1 (a case
# failed) or 3 (a failure the next cases cannot follow: the run ends there).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive TERM=dumb
state=/var/lib/octant-test
mkdir -p "$state"
boot=$(( $(cat "$state/boots" 2>/dev/null || echo 0) + 1 ))
echo "$boot" >"$state/boots"
. /octant/args
finish() { # CODE: the guest's status to the host, then off
	echo "OCTANT-EXIT $1"
	systemctl poweroff --no-block
	exit 0
}
# --exec SCRIPT [ARGS]: run that script of the payload's system/ instead (by hand: trying
# something in the guest; its status is the guest's)
if [ "${1:-}" = --exec ]; then
	rc=0
	bash "/octant/system/$2" "$boot" "${@:3}" || rc=$?
	[ $rc -eq 100 ] && { echo OCTANT-REBOOT; systemctl reboot --no-block; exit 0; }
	finish $rc
fi
case $boot in
1) phase=install ;;
2) phase=after-reboot ;;
*) echo "# system: boot $boot: a boot more than the test makes"; finish 125 ;;
esac
echo "# system: boot $boot ($(uname -r)), phase $phase"
rc=0
bash /octant/system/cases.sh "$phase" "$@" || rc=$?
case "$phase:$rc" in
install:[01]) echo "# system: rebooting the guest (systemctl reboot)"; echo OCTANT-REBOOT
	      systemctl reboot --no-block; exit 0 ;;
*:[01])       finish "$rc" ;;
*)            finish 1 ;;
esac
