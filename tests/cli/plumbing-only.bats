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

# the files function $1 lists with a line (not a comment) matching ERE $2
matching() {
	local f
	"$1" | while read -r f; do
		grep -vE '^[[:space:]]*(/?\*|//)' "$f" | grep -qE "$2" && echo "$f"
	done
	return 0
}

# the files of sources() with a line (not a comment) matching ERE $1
offenders() {
	matching sources "$1"
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
	matching below_cli "$1"
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

MOUNT_RE='<libmount/libmount\.h>|/proc/self/mountinfo|/proc/mounts|"holders"|/holders[/"]'

# The mount and holder checks are plumbing/holders.c's: alignpart's "in
# use" refusal (partition-tool/safety.c: libmount and holders/ by hand),
# ublk-flash's syncfs before a forced stop (serve/syncdev.c) and its FUSE
# abort (serve/cleanup.c, mountinfo by hand).  On main before h9/errno this
# named those three files.
@test "no mount table or holders/ walk outside plumbing/" {
	run offenders "$MOUNT_RE"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

# plumbing/'s public functions (every function its public headers declare,
# every function its .c files define that is not static) are plumb_*; what
# its files share among themselves is plumbp_* (plumb-private.h), called
# from nowhere else.  On main before h9/errno: dmstack_, loop_, serve_ and
# sysfs_ names.
plumb_functions() {
	local f
	for f in "$@"; do
		grep -vE '^[[:space:]]|^static|^/?\*|^#' "$f" |
			grep -E '^[A-Za-z][A-Za-z0-9_ ]*[ *]+[a-z_][a-z0-9_]*\(' |
			sed -E 's/^[^(]*[ *]([a-z_][a-z0-9_]*)\(.*/\1/'
	done
}

@test "plumbing/ has one prefix: plumb_ public, plumbp_ private" {
	local hdrs=() h
	for h in plumbing/*.h; do
		[ "$h" = plumbing/plumb-private.h ] || hdrs+=("$h")
	done
	run plumb_functions "${hdrs[@]}"
	echo "public: $output"
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	[ -z "$(grep -v '^plumb_' <<<"$output")" ]
	run plumb_functions plumbing/plumb-private.h
	echo "private: $output"
	[ -z "$(grep -v '^plumbp_' <<<"$output")" ]
	run plumb_functions plumbing/*.c
	echo "defined: $output"
	[ -z "$(grep -vE '^plumbp?_' <<<"$output")" ]
	run offenders '\bplumbp_'
	echo "$output"
	[ -z "$output" ]
}

@test "the mount and prefix checks find a planted mountinfo read and a stray name" {
	t=$(mktemp -d)
	mkdir -p "$t/ublk-server" "$t/libalign" "$t/partition-tool" "$t/common" \
		"$t/plumbing"
	printf 'FILE *f = fopen("/proc/self/mountinfo", "re");\n' >"$t/libalign/a.c"
	printf '/* /proc/self/mountinfo in a comment is fine */\n' >"$t/common/b.c"
	printf 'int plumb_a(void);\nint loop_b(int x);\n' >"$t/plumbing/x.h"
	printf 'static int c(void)\n{\n}\n\nint plumbp_d(void)\n{\n}\nDIR *e_f(const char *x)\n{\n}\n' \
		>"$t/plumbing/x.c"
	cd "$t"
	run offenders "$MOUNT_RE"
	[ "$output" = libalign/a.c ]
	run plumb_functions plumbing/x.h
	[ "$output" = "$(printf 'plumb_a\nloop_b')" ]
	run plumb_functions plumbing/x.c
	[ "$output" = "$(printf 'plumbp_d\ne_f')" ]
	cd /
	rm -rf "$t"
}
