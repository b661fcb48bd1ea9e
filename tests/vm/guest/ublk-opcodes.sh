#!/usr/bin/env bash
# Guest test: the ublk frontend speaks the opcode set of the running kernel (issue 15).
#   6.1  (out-of-tree ublk_drv): GET_FEATURES does not answer, so legacy opcodes and 6.1's
#        flag set; the device's flags lack UBLK_F_CMD_IOCTL_ENCODE.
#   6.12, 7.3 (in-tree ublk_drv): GET_FEATURES answers with a mask that has every flag the server
#        asks for (CMD_IOCTL_ENCODE, USER_RECOVERY, USER_RECOVERY_REISSUE), the server sends
#        ioctl-encoded opcodes and the live device carries UBLK_F_CMD_IOCTL_ENCODE, so FETCH and
#        COMMIT are ioctl-encoded too.  (6.12 and 7.3 also still accept the legacy numbers with
#        CONFIG_BLKDEV_UBLK_LEGACY_OPCODES=y, so I/O working proves nothing: the flags do.)
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
PROBE=$BUILD/ublk-probe
[ -x "$PROBE" ] || { echo "SKIP: no $PROBE (make builds it)"; exit 77; }
F_RECOVERY=$((1 << 3)) F_REISSUE=$((1 << 4)) F_IOCTL=$((1 << 6))
kver=$(uname -r)
case "$kver" in 6.1.*) legacy=1 ;; *) legacy=0 ;; esac

if ! out=$("$PROBE" features 2>&1); then t_fail "ublk-probe features" "$out"; t_done; fi
enc=$(sed -n 's/^encoding //p' <<<"$out")
gf=$(sed -n 's/^get_features //p' <<<"$out")
feat=$(sed -n 's/^features //p' <<<"$out")
echo "# $kver: $(tr '\n' ' ' <<<"$out")"
if [ $legacy -eq 1 ]; then
	t_eq "$kver: GET_FEATURES answers" "$gf" no
	t_eq "$kver: control opcodes" "$enc" legacy
	t_eq "$kver: feature mask lacks CMD_IOCTL_ENCODE" "$((feat & F_IOCTL))" 0
else
	t_eq "$kver: GET_FEATURES answers" "$gf" yes
	t_eq "$kver: control opcodes" "$enc" ioctl
	for f in F_IOCTL F_RECOVERY F_REISSUE; do
		t_eq "$kver: GET_FEATURES reports ${f#F_}" "$((feat & ${!f}))" "${!f}"
	done
fi

ublk_serve_probed ublk-opcodes
echo "# $dev: device flags $flags"
want=$F_IOCTL; [ $legacy -eq 1 ] && want=0
t_eq "$kver: $dev flags: CMD_IOCTL_ENCODE" "$((flags & F_IOCTL))" "$want"
t_eq "$kver: $dev flags: USER_RECOVERY|REISSUE" "$((flags & (F_RECOVERY | F_REISSUE)))" "$((F_RECOVERY | F_REISSUE))"
# I/O through the queues with that encoding
ublk_check_io "$dev"
t_done
