#!/usr/bin/env bash
# Guest test: `ublk-flash stop IMG` on a dead ublk server's registry entry (the server killed
# with kill -9, its /dev/ublkbN waiting for `serve --recover`) removes that device too
# (STOP_DEV + DEL_DEV), as `ublk del` would, then the entry: nothing is left orphaned.  (Before,
# the entry went and the waiting device stayed, listed by nothing.)  And it removes only the
# entry's own device: with the number recycled (the entry's device removed, another image's
# server given the same number, that server killed too) `stop` of the old entry is refused
# (exit 3, one line), the other image's device and entry are untouched and it still recovers;
# `list` shows the old entry stale (not dead: its number's device is not its own), and
# `stop /dev/ublkbN` with both entries dead acts on the one the device proves to be.
# Mounted: refused (exit 5) without --force; --force cuts it off and it goes at the umount.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/ublk-lib.bash

ublk_require_driver
a=/tmp/ublk-stop-dead-a.img b=/tmp/ublk-stop-dead-b.img
for i in "$a" "$b"; do
	if ! out=$(ublk_mkimg "$i" 64M odd 2>&1); then t_fail "create $i" "$out"; t_done; fi
done
t_cleanup "rm -f $a $b"
t_cleanup "$UBLK_FLASH stop --force $a >/dev/null 2>&1; $UBLK_FLASH stop --force $b >/dev/null 2>&1"

# 1. stop of a dead entry removes the waiting device.
if ! dev=$(ublk_serve "$a"); then t_fail "serve $a" "$dev"; t_done; fi
id=${dev#/dev/ublkb}
dd if=/dev/urandom of="$dev" bs=4k count=16 oflag=direct status=none
ublk_kill_server "$a" "dead entry" || t_done
t_eq "dead entry: listed dead" "$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" "$dev dead"
entry=$(dirname "$(grep -lx "$(realpath "$a")" "${UBLK_FLASH_RUN_DIR:-/run/octant}"/img-*/image)")
saved=$(mktemp -d)
cp -a "$entry" "$saved/"          # for the recycled-number case below
out=$(timeout 120 "$UBLK_FLASH" stop "$a" 2>&1); rc=$?
t_eq "dead entry: stop exits 0" "$rc" 0
echo "# stop said: $out"
ublk_wait_gone "$dev" 100
t_eq "dead entry: stop removes the waiting $dev" "$([ -e "$dev" ] && echo present || echo gone)" gone
t_eq "dead entry: and its /dev/ublkc$id" \
	"$([ -e "/dev/ublkc$id" ] && echo present || echo gone)" gone
t_eq "dead entry: the registry entry is gone" "$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" ""
t_check "dead entry: the image passes fsck" "$UBLK_FLASH" fsck "$a"
out=$("$UBLK_FLASH" serve "$a" --frontend ublk --recover 2>&1); rc=$?
t_eq "dead entry: nothing is left to recover (exit 3)" "$rc" 3

# 2. the number recycled: another image's device has it now (its server dead as well).
if [ -e "$dev" ]; then
	t_skip "recycled number" "$dev is still there (case 1 failed)"
elif ! devb=$(ublk_serve "$b" --dev-id "$id"); then
	t_fail "recycled number: serve $b --dev-id $id" "$devb"
else
	t_eq "recycled number: $b got $dev" "$devb" "$dev"
	if ublk_kill_server "$b" "recycled number"; then
		cp -a "$saved/$(basename "$entry")" "$(dirname "$entry")/"   # a's old entry back
		out=$(timeout 120 "$UBLK_FLASH" stop "$a" 2>&1); rc=$?
		t_eq "recycled number: stop of the old entry refused (exit 3)" "$rc" 3
		t_eq "recycled number: one line" "$(printf '%s' "$out" | grep -c '')" 1
		echo "# stop said: $out"
		t_eq "recycled number: $b's device is untouched" \
			"$([ -b "$dev" ] && echo present)" present
		t_eq "recycled number: both entries kept" \
			"$("$UBLK_FLASH" list -n -r -o DEVICE | grep -c "^$dev\$")" 2
		# list asks for the proof stop asks for: the old entry's number holds a device
		# that is not its own (another image's tag and pid), so stale, not dead.
		states=$(printf '%s stale\n%s dead' "$(realpath "$a")" "$(realpath "$b")")
		t_eq "recycled number: list: the old entry stale, $b's dead" \
			"$("$UBLK_FLASH" list -n -r -o IMAGE,STATE | sort)" "$states"
		if out=$(ublk_serve "$b" --recover); then
			t_eq "recycled number: $b still recovers on $dev" "$out" "$dev"
		else
			t_fail "recycled number: $b still recovers" "$out"
		fi
		# stop DEV with two dead entries on its number acts on the one its device
		# proves, b's, whichever the registry lists first (on the 6.1 guest's tmpfs
		# readdir lists the newest first: a's restored entry, refused before).
		if [ -b "$dev" ] && ublk_kill_server "$b" "two dead entries"; then
			t_eq "two dead entries: list again: the old stale, $b's dead" \
				"$("$UBLK_FLASH" list -n -r -o IMAGE,STATE | sort)" "$states"
			out=$(timeout 120 "$UBLK_FLASH" stop "$dev" 2>&1); rc=$?
			echo "# stop $dev said: $out"
			t_eq "two dead entries: stop $dev acts on $b's entry (exit 0)" "$rc" 0
			ublk_wait_gone "$dev" 100
			t_eq "two dead entries: stop $dev removes it" \
				"$([ -e "$dev" ] && echo present || echo gone)" gone
			t_eq "two dead entries: the old entry kept, stale" \
				"$("$UBLK_FLASH" list -n -r -o IMAGE,STATE)" "$(realpath "$a") stale"
		fi
		rm -rf "$entry"              # a's restored entry: ours, not the test's subject
	fi
fi
rm -rf "$saved"

# 3. a dead entry whose device is mounted: refused (exit 5) without --force, entry and device
# kept; with --force cut off at once (its I/O fails), removed at its last close (the umount).
if ! dev=$(ublk_serve "$a"); then t_fail "in use: serve $a" "$dev"; t_done; fi
mnt=$(mktemp -d)
t_cleanup "umount $mnt 2>/dev/null; rmdir $mnt"
if mkfs.ext4 -q -F "$dev" && mount "$dev" "$mnt"; then
	ublk_kill_server "$a" "in use" || t_done
	out=$(timeout 120 "$UBLK_FLASH" stop "$a" 2>&1); rc=$?
	echo "# stop said: $out"
	t_eq "in use: stop refused (exit 5)" "$rc" 5
	t_eq "in use: entry and device kept" \
		"$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)/$([ -b "$dev" ] && echo present)" \
		"$dev dead/present"
	out=$(timeout 120 "$UBLK_FLASH" stop --force "$a" 2>&1); rc=$?
	echo "# stop --force said: $out"
	t_eq "in use: stop --force exits 0" "$rc" 0
	t_eq "in use: the entry is gone" "$("$UBLK_FLASH" list -n -r -o DEVICE,STATE)" ""
	if timeout 60 dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null; then
		t_fail "in use: a read of the cut-off device fails"
	else
		t_ok "in use: a read of the cut-off device fails (exit $?)"
	fi
	timeout 60 umount "$mnt"
	ublk_wait_gone "$dev" 200
	t_eq "in use: the device goes at its last close" \
		"$([ -e "$dev" ] && echo present || echo gone)" gone
else
	t_fail "in use: mkfs.ext4 + mount $dev"
fi
t_done
