#!/usr/bin/env bats
# alignpart map / unmap on a host: usage errors, and where the kernel has no device-mapper
# (this project's build host) the one-line "device-mapper not available (modprobe dm_mod)"
# error with exit 3.  The mappings themselves are tested in the qemu guest
# (tests/vm/guest/dm-map.sh).
load ../helpers

setup() {
	setup_scratch
	[ -x "$ALIGNPART" ] || skip "alignpart not built"
	truncate -s 16M "$SCRATCH/disk.img"
	requires sfdisk
	printf 'label: dos\nstart=2048,size=4096\n' | sfdisk -q "$SCRATCH/disk.img"
}

teardown() {
	teardown_scratch
}

no_dm_here() {
	[ ! -e /dev/mapper/control ] && ! grep -qw device-mapper /proc/misc
}

@test "map --help: usage on stdout, exit 0" {
	run "$ALIGNPART" map --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: alignpart map"* ]]
	[[ "$output" == *"--verify"* ]]
}

@test "unmap --help: exit 0" {
	run "$ALIGNPART" unmap --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: alignpart unmap"* ]]
}

@test "map without a target: exit 2, one line" {
	run "$ALIGNPART" map
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
}

@test "map with an unknown option: exit 2" {
	run "$ALIGNPART" map --bogus "$SCRATCH/disk.img"
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown option"* ]]
}

@test "unmap has no --verify: exit 2" {
	run "$ALIGNPART" unmap --verify "$SCRATCH/disk.img"
	[ "$status" -eq 2 ]
}

@test "map a missing target: exit 3, one line naming it" {
	run "$ALIGNPART" map "$SCRATCH/nope.img"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"nope.img"* ]]
}

@test "map without device-mapper: exit 3, one line 'modprobe dm_mod', image untouched" {
	no_dm_here || skip "this kernel has device-mapper (the guest tests cover it)"
	before=$(sha256sum <"$SCRATCH/disk.img")
	run "$ALIGNPART" map "$SCRATCH/disk.img"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "alignpart map: device-mapper not available (modprobe dm_mod)" ]
	[ "$(sha256sum <"$SCRATCH/disk.img")" = "$before" ]
}

@test "unmap without device-mapper: exit 3, same message" {
	no_dm_here || skip "this kernel has device-mapper (the guest tests cover it)"
	run "$ALIGNPART" unmap "$SCRATCH/disk.img"
	[ "$status" -eq 3 ]
	[ "$output" = "alignpart unmap: device-mapper not available (modprobe dm_mod)" ]
}

# Every map / unmap error goes through alignpart's one printer: a path with a newline (or a
# backslash) is shown as \xHH and the error stays one line (exit codes' contract).
@test "map / unmap: a missing target named with a newline and a backslash: one line, \\xHH" {
	t="$SCRATCH/no"$'\n'"such\\.img"
	run "$ALIGNPART" map "$t"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "alignpart map: $SCRATCH/no\\x0asuch\\x5c.img: No such file or directory" ]
	run "$ALIGNPART" unmap "$t"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "alignpart unmap: $SCRATCH/no\\x0asuch\\x5c.img: No such file or directory" ]
}

@test "map: a target with a newline that is neither a device nor an image file: one line, \\xHH" {
	mkdir "$SCRATCH/a"$'\n'"dir"
	run "$ALIGNPART" map "$SCRATCH/a"$'\n'"dir"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "alignpart map: $SCRATCH/a\\x0adir is neither a block device nor an image file" ]
}

@test "map / unmap: an unknown option with a newline: exit 2, one line, \\xHH" {
	run "$ALIGNPART" map $'--bo\ngus' "$SCRATCH/disk.img"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "alignpart map: unknown option '--bo\\x0agus'" ]
	run "$ALIGNPART" unmap $'--bo\ngus' "$SCRATCH/disk.img"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "alignpart unmap: unknown option '--bo\\x0agus'" ]
}
