#!/usr/bin/env bash
# Guest test: which ublk features each kernel gives the server, read from the live device
# (issue 29).  The server asks ADD_DEV for the features it wants (ublk-features.h) that
# GET_FEATURES offers, and nothing else, so the same binary serves on every kernel:
#   6.1   no GET_FEATURES: the server assumes 6.1's flags and asks USER_RECOVERY |
#         USER_RECOVERY_REISSUE only; the device carries nothing newer.
#   6.12  GET_FEATURES offers 6.12's flags (ioctl encoding, recovery, user copy, zoned), not
#         UPDATE_SIZE, QUIESCE, AUTO_BUF_REG, PER_IO_DAEMON, BATCH_IO, INTEGRITY,
#         SAFE_STOP_DEV: the server does not ask for those and the device lacks them.
#   7.3   GET_FEATURES offers all of them, and the device carries UPDATE_SIZE, QUIESCE and
#         SAFE_STOP_DEV (for online resize, live upgrade and a safe stop), PER_IO_DAEMON (the
#         queues' daemons) and AUTO_BUF_REG (zero copy: ublk-daemon.c, section 5 below) with
#         USER_COPY (zero copy's short requests move by user copy; asked for only with
#         AUTO_BUF_REG, and not with OCTANT_UBLK_ZC_UCOPY=0).
# On every kernel: the server asks only for offered flags; the driver grants everything it
# asked; none of the other flags that change the I/O protocol (explicit zero copy, user copy
# without AUTO_BUF_REG, zoned, batch I/O, integrity, get-data) is on the live device, whose I/O
# works.
# The expectations are written out here, bit by bit, not taken from the server's table.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
PROBE=$BUILD/ublk-probe
[ -x "$PROBE" ] || { echo "SKIP: no $PROBE (make builds it)"; exit 77; }

# uapi bit numbers (<linux/ublk_cmd.h>)
NAMES=(ZERO_COPY COMP_IN_TASK NEED_GET_DATA USER_RECOVERY USER_RECOVERY_REISSUE
       UNPRIVILEGED_DEV CMD_IOCTL_ENCODE USER_COPY ZONED USER_RECOVERY_FAIL_IO UPDATE_SIZE
       AUTO_BUF_REG QUIESCE PER_IO_DAEMON BUF_REG_OFF_DAEMON BATCH_IO INTEGRITY SAFE_STOP_DEV
       NO_AUTO_PART_SCAN SHMEM_ZC IO_DESC_SIZE)
for i in "${!NAMES[@]}"; do declare "F_${NAMES[$i]}=$((1 << i))"; done
# mask NAME...: the OR of those flags
mask() { local m=0 n v; for n in "$@"; do v=F_$n; m=$((m | ${!v})); done; echo $m; }
# names MASK: the flags of MASK by name
names() {
	local i out=
	for i in "${!NAMES[@]}"; do (( $1 & (1 << i) )) && out+="${NAMES[$i]} "; done
	for ((i = ${#NAMES[@]}; i < 64; i++)); do (( $1 & (1 << i) )) && out+="bit$i "; done
	echo "${out% }"
}
hex() { printf '0x%x' "$1"; }
# has DESC MASK NAME...: every NAME is in MASK / lacks DESC MASK NAME...: none is
has() {
	local d=$1 m=$2 want; shift 2; want=$(mask "$@")
	t_eq "$d has $*" "$(names $((m & want)))" "$(names "$want")"
}
lacks() {
	local d=$1 m=$2 bad; shift 2; bad=$(mask "$@")
	t_eq "$d lacks $*" "$(names $((m & bad)))" ""
}

kver=$(uname -r)
case "$kver" in 6.1.*) series=6.1 ;; 6.12.*) series=6.12 ;; 7.3.*) series=7.3 ;; *) series=other ;; esac
# what the server is meant to ask for wherever it is offered (docs/ublk.md)
WANTED=$(mask USER_RECOVERY USER_RECOVERY_REISSUE CMD_IOCTL_ENCODE UPDATE_SIZE AUTO_BUF_REG QUIESCE \
              PER_IO_DAEMON SAFE_STOP_DEV)
# flags that would change the I/O protocol the server speaks (besides zero copy and its user
# copy): never on its device (yet)
PROTOCOL=(ZERO_COPY NEED_GET_DATA UNPRIVILEGED_DEV ZONED USER_RECOVERY_FAIL_IO
          BATCH_IO INTEGRITY SHMEM_ZC IO_DESC_SIZE NO_AUTO_PART_SCAN)
NEW612=(UPDATE_SIZE AUTO_BUF_REG QUIESCE PER_IO_DAEMON BUF_REG_OFF_DAEMON BATCH_IO INTEGRITY
        SAFE_STOP_DEV)

if ! out=$("$PROBE" features 2>&1); then t_fail "ublk-probe features" "$out"; t_done; fi
gf=$(sed -n 's/^get_features //p' <<<"$out")
feat=$(sed -n 's/^features //p' <<<"$out")
asks=$(sed -n 's/^asks //p' <<<"$out")
uapi=$(sed -n 's/^uapi //p' <<<"$out")
if [ -z "$feat" ] || [ -z "$asks" ]; then t_fail "ublk-probe features prints features and asks" "$out"; t_done; fi
# ... and USER_COPY with AUTO_BUF_REG, where both are offered (zero copy's short requests)
(( (F_AUTO_BUF_REG | F_USER_COPY) & ~feat )) || WANTED=$((WANTED | F_USER_COPY))
echo "# $kver: GET_FEATURES $gf, offered $(hex "$feat") ($(names "$feat"))"
echo "# $kver: the server asks $(hex "$asks") ($(names "$asks")); built with the uapi header of $uapi"

# 1. what the kernel offers
case $series in
6.1)
	t_eq "$kver: GET_FEATURES answers" "$gf" no
	lacks "$kver: assumed mask (6.1's flags)" "$feat" CMD_IOCTL_ENCODE USER_COPY ZONED "${NEW612[@]}" ;;
6.12)
	t_eq "$kver: GET_FEATURES answers" "$gf" yes
	has "$kver: offered mask" "$feat" USER_RECOVERY USER_RECOVERY_REISSUE CMD_IOCTL_ENCODE USER_COPY ZONED
	lacks "$kver: offered mask" "$feat" "${NEW612[@]}" ;;
7.3)
	t_eq "$kver: GET_FEATURES answers" "$gf" yes
	has "$kver: offered mask" "$feat" ZERO_COPY USER_RECOVERY ZONED UPDATE_SIZE AUTO_BUF_REG \
		QUIESCE PER_IO_DAEMON BATCH_IO INTEGRITY SAFE_STOP_DEV ;;
*)	t_skip "$kver: the offered mask of this kernel" "only 6.1, 6.12 and 7.3 have written expectations" ;;
esac

# 2. what the server asks for: the wanted flags the kernel offers, nothing else
t_eq "$kver: the server asks only for offered flags" "$(names $((asks & ~feat)))" ""
t_eq "$kver: the server asks for every wanted flag offered" "$(names "$asks")" "$(names $((WANTED & feat)))"

# 3. what the live device carries
ublk_serve_probed ublk-features
echo "# $kver: $dev carries $(hex "$flags") ($(names "$flags"))"
t_eq "$kver: $dev carries every flag the server asked for" "$(names $((asks & ~flags)))" ""
lacks "$kver: $dev" "$flags" "${PROTOCOL[@]}"
case $series in
6.1)  has "$kver: $dev" "$flags" USER_RECOVERY USER_RECOVERY_REISSUE
      lacks "$kver: $dev" "$flags" CMD_IOCTL_ENCODE USER_COPY "${NEW612[@]}" ;;
6.12) has "$kver: $dev" "$flags" USER_RECOVERY USER_RECOVERY_REISSUE CMD_IOCTL_ENCODE
      lacks "$kver: $dev" "$flags" USER_COPY "${NEW612[@]}" ;;
7.3)  has "$kver: $dev" "$flags" USER_RECOVERY USER_RECOVERY_REISSUE CMD_IOCTL_ENCODE \
          UPDATE_SIZE AUTO_BUF_REG USER_COPY QUIESCE PER_IO_DAEMON SAFE_STOP_DEV ;;
esac

# 4. and it serves with them
ublk_check_io "$dev"

# 5. zero copy (issue 29; ublk-daemon.c): where the device carries AUTO_BUF_REG (7.3) the
# driver no longer copies between a request's pages and the server's buffer; it registers the
# pages in the daemon's io_uring and the daemon moves the data between them and the tag's part
# of a memfd per queue ("memfd:ublk-flash-zc-qN" in /proc/PID/fd) with READ_FIXED /
# WRITE_FIXED.  Only a write(2)-path write of the memfd moves its mtime and only a
# read(2)-path read its atime (the server's own stores and loads, CRCs included, go through
# its mapping, which moves neither), so after fio I/O both moved.  The data: fio
# --verify=crc32c random writes of 512 B..128 KiB (every kernel: copy mode on 6.1 and 6.12),
# then `ublk-flash fsck` of the image.  On 7.3, OCTANT_UBLK_ZC=0 (the A/B switch): the device
# lacks AUTO_BUF_REG (and USER_COPY), keeps PER_IO_DAEMON, and the server has no memfd; and
# OCTANT_UBLK_ZC_UCOPY=0: zero copy without user copy (every copy by io_uring).
img=/tmp/ublk-features.img
zc=$(( (flags >> 11) & 1 ))
# memfds PID: the server's zero-copy memfds, one fd number per line
memfds() { local f; for f in /proc/"$1"/fd/*; do [[ $(readlink "$f") == /memfd:ublk-flash-zc-q* ]] && echo "${f##*/}"; done; }
# times PID FDS...: "atime mtime" of each, nanoseconds
times() { local pid=$1 fd; shift; for fd in "$@"; do stat -L -c '%.9X %.9Y' "/proc/$pid/fd/$fd"; done; }
# stop_fsck LABEL: stop the server of $img, wait for $dev to go, fsck the image
stop_fsck() {
	local out
	out=$("$UBLK_FLASH" stop "$img" 2>&1) || t_fail "$1: stop" "$out"
	ublk_wait_gone "$dev" || t_fail "$1: $dev gone after stop" "still there"
	t_check "$1: ublk-flash fsck" "$UBLK_FLASH" fsck "$img"
}
pid=$(ublk_server_pid "$img")
nq=$(find "/sys/block/${dev#/dev/}/mq" -mindepth 1 -maxdepth 1 | wc -l)
mapfile -t fds < <(memfds "$pid")
t_eq "$kver: zero-copy memfds of server $pid (one per queue of $nq with AUTO_BUF_REG)" \
	"${#fds[@]}" "$((nq * zc))"
t0=$(times "$pid" "${fds[@]}")
d="$kver: fio --verify=crc32c, 512 B..128 KiB through $dev"
if out=$(fio --name=zc --filename="$dev" --ioengine=io_uring --direct=1 --iodepth=16 \
	--rw=randwrite --bsrange=512-128k --size=16M --verify=crc32c --do_verify=1 \
	--randrepeat=0 2>&1); then
	t_ok "$d"
else
	t_fail "$d" "$(tail -n 5 <<<"$out")"
fi
if [ "$zc" = 1 ]; then
	t1=$(times "$pid" "${fds[@]}")
	echo "# $kver: memfd atime mtime before: $(tr '\n' ' ' <<<"$t0")after: $(tr '\n' ' ' <<<"$t1")"
	moved=$(paste <(echo "$t0") <(echo "$t1") |
		awk '$3 != $1 { a = 1 } $4 != $2 { m = 1 } END { print (m ? "written" : "") (a ? " read" : "") }')
	t_eq "$kver: the memfds were written and read by io_uring copies" "$moved" "written read"
fi
stop_fsck "$kver"
if [ "$series" = 7.3 ]; then
	l="$kver: OCTANT_UBLK_ZC=0"
	if dev=$(OCTANT_UBLK_ZC=0 ublk_serve "$img"); then
		pid=$(ublk_server_pid "$img")
		flags=$("$BUILD/ublk-probe" info "${dev#/dev/ublkb}" | sed -n 's/^flags //p')
		lacks "$l: $dev" "$flags" AUTO_BUF_REG USER_COPY
		has "$l: $dev" "$flags" PER_IO_DAEMON
		mapfile -t fds < <(memfds "$pid")
		t_eq "$l: zero-copy memfds of server $pid" "${#fds[@]}" 0
		ublk_check_io "$dev"
		stop_fsck "$l"
	else
		t_fail "$l: serve" "$dev"
	fi
	l="$kver: OCTANT_UBLK_ZC_UCOPY=0"
	if dev=$(OCTANT_UBLK_ZC_UCOPY=0 ublk_serve "$img"); then
		flags=$("$BUILD/ublk-probe" info "${dev#/dev/ublkb}" | sed -n 's/^flags //p')
		has "$l: $dev" "$flags" AUTO_BUF_REG
		lacks "$l: $dev" "$flags" USER_COPY
		ublk_check_io "$dev"
		stop_fsck "$l"
	else
		t_fail "$l: serve" "$dev"
	fi
fi
t_done
