#!/usr/bin/env bats
# The README's five-minute walkthrough, run line for line as the README
# has it (extracted between its <!-- walkthrough --> markers), so the
# README cannot drift from what the tools do: create -> serve -> list ->
# alignpart -> mkfs -> stats -> stop.  Then the data is checked.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	requires mkfs.ext4 mount umount diff
	[ -x "$ALIGNPART" ] || skip "alignpart not built ($ALIGNPART)"
	[ -d /usr/share/common-licenses ] || skip "requires /usr/share/common-licenses (Debian base-files)"
}

teardown() {
	fuse_teardown
}

# The walkthrough's command lines: the indented lines between the markers.
readme_lines() {
	sed -n '/^<!-- walkthrough/,/^<!-- \/walkthrough -->/p' "$OCTANT_TOP/README.md" |
		sed -n 's/^    //p'
}

@test "README walkthrough: create, serve, list, alignpart, mkfs, stats, stop run as written" {
	script=$(readme_lines)
	echo "$script"
	# the steps the README promises, in this order
	order=$(grep -o '^ublk-flash create\|ublk-flash serve\|^ublk-flash list\|^alignpart create\|^alignpart check\|^mkfs\|^ublk-flash stats\|^ublk-flash stop' <<<"$script" | tr '\n' ,)
	[ "$order" = "ublk-flash create,ublk-flash serve,ublk-flash list,alignpart create,alignpart check,mkfs,ublk-flash stats,ublk-flash stop," ]
	cd "$SCRATCH"
	run bash -euo pipefail -c "$script"
	echo "$output"
	[ "$status" -eq 0 ]
	# what the README says it shows
	[[ "$output" == *"DEVICE "*"IMAGE "*"MODE"* ]]
	[[ "$output" == *"$SCRATCH/disk.img"*" odd "* ]]
	[[ "$output" == *" 2047 "* ]]                     # the partition start
	[[ "$output" == *"write amplification"* ]]
	# stopped: nothing served, the image clean, the files in it
	[ -z "$("$UBLK_FLASH" list)" ]
	"$UBLK_FLASH" fsck disk.img
	fuse_serve disk.img
	partx -u "$DEV" 2>/dev/null || true
	mount -o ro "${DEV}p1" mnt
	diff -r /usr/share/common-licenses mnt/common-licenses
	umount mnt
	"$UBLK_FLASH" stop "$DEV"
}
