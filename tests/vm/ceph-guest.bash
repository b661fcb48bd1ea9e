# shellcheck shell=bash
# The host half of guest/rbd-ublk.sh: a one-node Ceph cluster (tests/ceph-lib.bash) on the
# host's 127.0.0.1 for a guest booted with vm-run.sh --rbd, which reaches it through slirp
# (the guest's 10.0.2.2 is the host's 127.0.0.1) and socat (the guest's 127.0.0.1:PORT to
# 10.0.2.2:PORT, so the addresses the monitor and the OSD advertise work unchanged).
#   vm_ceph_up DIR     the cluster in DIR (OSD data on a tmpfs at DIR/osd), and for the guest
#                      DIR/guest.conf (its ceph.conf) and DIR/guest.env (CEPH_MON_PORT,
#                      CEPH_OSD_PORT: the ports socat forwards); DIR is under the folder
#                      shared with the guest (/octant/out)
#   vm_ceph_down       every daemon stopped by pid, the tmpfs unmounted
. "$(dirname "${BASH_SOURCE[0]}")/../ceph-lib.bash"

VM_CEPH_DIR=

vm_ceph_up() {
	local d=$1 mon osd
	ceph_have || { echo "ceph-mon ceph-mgr ceph-osd ceph-common not installed (mk/deps.sh check)"; return 1; }
	mkdir -p "$d/osd" || return 1
	VM_CEPH_DIR=$d
	# the 4 GiB sparse bluestore file in memory: only what is written is used
	mount -t tmpfs -o size=4500m tmpfs "$d/osd" || { echo "cannot mount a tmpfs on $d/osd"; return 1; }
	ceph_up "$d" "$d/osd" || { tail -n 5 "$d/log/setup.log"; return 1; }
	mon=$(sed -n 's/^mon host = \[v2:127\.0\.0\.1:\([0-9]*\)\]$/\1/p' "$CEPH_CONF")
	osd=$(ceph osd dump --format json 2>/dev/null | python3 -c '
import json, sys
o = json.load(sys.stdin)["osds"][0]
print(o["public_addrs"]["addrvec"][0]["addr"].rsplit(":", 1)[1])')
	[ -n "$mon" ] && [ -n "$osd" ] || { echo "cannot read the monitor's and the OSD's ports"; return 1; }
	cat >"$d/guest.conf" <<-CONF
	[global]
	mon host = [v2:127.0.0.1:$mon]
	auth cluster required = none
	auth service required = none
	auth client required = none
	keyring = /dev/null
	log file = /dev/null
	admin socket =
	CONF
	printf 'CEPH_MON_PORT=%s\nCEPH_OSD_PORT=%s\n' "$mon" "$osd" >"$d/guest.env"
}

vm_ceph_down() {
	[ -n "$VM_CEPH_DIR" ] || return 0
	ceph_down
	mountpoint -q "$VM_CEPH_DIR/osd" && umount "$VM_CEPH_DIR/osd"
	VM_CEPH_DIR=
}
