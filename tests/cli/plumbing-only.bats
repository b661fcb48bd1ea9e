#!/usr/bin/env bats
# Issue 32 item 4: loop devices, device-mapper stacking, the run registry's
# reader and every /sys path live in plumbing/, the one internal library
# below ublk-flash, alignpart and libalign.  These read the sources
# of the tools and libraries (tests excluded: they drive the kernel
# themselves) and name each file that does the library's work on its own.
# On 1ac7300 (before plumbing/) the first two failed: loop ioctls in
# ublk-server/frontend/loop.c, partition-tool/ap-map.c and
# libalign/topology-served.c, libdevmapper in ublk-server/dm/dm-stack.c,
# /sys paths in 14 files.
load ../helpers

setup() {
	cd "$OCTANT_TOP"
}

# every .c and .h of the tools and libraries outside plumbing/
sources() {
	find ublk-server libalign partition-tool common -name '*.[ch]' | sort
}

# the files of sources() with a line (not a comment) matching ERE $1
offenders() {
	local f
	sources | while read -r f; do
		grep -vE '^[[:space:]]*(/?\*|//)' "$f" | grep -qE "$1" && echo "$f"
	done
	return 0
}

@test "no loop ioctl outside plumbing/ (LOOP_*, <linux/loop.h>)" {
	run offenders '<linux/loop\.h>|\bLOOP_(CTL_|SET_|CLR_|GET_|CONFIGURE|CHANGE_)'
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "no device-mapper call outside plumbing/ (libdevmapper, DM_* ioctls)" {
	run offenders '<libdevmapper\.h>|<linux/dm-ioctl\.h>|\bdm_task_|\bDM_(DEV|TABLE|LIST|VERSION)[A-Z_]*'
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "no /sys path is spelled outside plumbing/" {
	run offenders '"/sys(/|")'
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "the checks find what they look for (a planted loop ioctl, dm call, /sys path)" {
	t=$(mktemp -d)
	mkdir -p "$t/ublk-server" "$t/libalign" "$t/partition-tool" "$t/common"
	printf '#include <linux/loop.h>\nint f(int fd) { return ioctl(fd, LOOP_CLR_FD, 0); }\n' \
		>"$t/ublk-server/a.c"
	printf '/* LOOP_CLR_FD in a comment is fine */\n' >"$t/libalign/b.c"
	printf 'void g(void) { dm_task_create(DM_DEVICE_INFO); }\n' >"$t/common/c.c"
	printf 'const char *p = "/sys/block";\n' >"$t/partition-tool/d.c"
	cd "$t"
	run offenders '<linux/loop\.h>|\bLOOP_(CTL_|SET_|CLR_|GET_|CONFIGURE|CHANGE_)'
	[ "$output" = "ublk-server/a.c" ]
	run offenders '<libdevmapper\.h>|<linux/dm-ioctl\.h>|\bdm_task_|\bDM_(DEV|TABLE|LIST|VERSION)[A-Z_]*'
	[ "$output" = "common/c.c" ]
	run offenders '"/sys(/|")'
	[ "$output" = "partition-tool/d.c" ]
	cd /
	rm -rf "$t"
}

# below the CLI: every .c and .h of ublk-server but cli/, and the libraries
below_cli() {
	find ublk-server libalign plumbing common -name '*.[ch]' \
		-not -path 'ublk-server/cli/*' -not -name oct-exit.h | sort
}

# the files of below_cli() with a line (not a comment) matching ERE $1
below_cli_offenders() {
	local f
	below_cli | while read -r f; do
		grep -vE '^[[:space:]]*(/?\*|//)' "$f" | grep -qE "$1" && echo "$f"
	done
	return 0
}

EXIT_RE='cli/|"commands\.h"|"oct-exit\.h"|\bOCT_EXIT_[A-Z]+|\bEXIT_(USAGE|IO|CORRUPT|BUSY|UNSUPPORTED)\b'

# Calls go down: serve/ (and the engine, frontends, libraries) return
# -errno and a reason (serve.h, struct serve_fail); only the CLI maps them
# to the exit codes of common/oct-exit.h.  Before h9/errno, serve/serve.c
# and serve/upgrade.c included ../cli/commands.h and returned EXIT_* (this
# test named both).
@test "nothing below the CLI includes a cli/ header or picks an exit code" {
	run below_cli_offenders "$EXIT_RE"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "the below-the-CLI check finds a planted cli/ include and exit code" {
	t=$(mktemp -d)
	mkdir -p "$t/ublk-server/serve" "$t/ublk-server/cli" "$t/libalign" \
		"$t/plumbing" "$t/common"
	printf '#include "../cli/commands.h"\n' >"$t/ublk-server/serve/a.c"
	printf 'int f(void) { return EXIT_BUSY; }\n' >"$t/ublk-server/cli/b.c"
	printf '/* EXIT_IO in a comment is fine */\n' >"$t/libalign/c.c"
	printf 'int g(void) { return OCT_EXIT_IO; }\n' >"$t/plumbing/d.c"
	printf '#define OCT_EXIT_IO 3\n' >"$t/common/oct-exit.h"
	cd "$t"
	run below_cli_offenders "$EXIT_RE"
	[ "$output" = "$(printf 'plumbing/d.c\nublk-server/serve/a.c')" ]
	cd /
	rm -rf "$t"
}
