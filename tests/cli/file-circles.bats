#!/usr/bin/env bats
# No circle between the files of ublk-server/: each .c calls only files
# below it (docs/engine.md, "Where things live").  tests/file-circles reads
# the call edges between object files (nm -u against nm --defined-only) of
# $BUILD/obj/ublk-server and prints any circle.  On 5e2a097 it found three:
# nine files of ftl/ (append, badblock, bggc, ckpt, core, fsum, gc, scrub,
# stats), serve/owner <-> serve/registry, and cli/main with the commands
# and serve/serve (cli_fail).
load ../helpers

setup() {
	setup_scratch
	cd "$OCTANT_TOP"        # the .d files name sources from the top
	requires nm cc
}

teardown() {
	teardown_scratch
}

@test "no file of ublk-server/ calls into a file that calls back into it" {
	[ -d "$BUILD/obj/ublk-server/ftl" ] || skip "not built: $BUILD/obj/ublk-server"
	run tests/file-circles "$BUILD/obj/ublk-server"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *", no circle" ]]
	# it looked at the engine: ftl/ and nand/ objects are there
	[[ "$output" =~ ^[0-9]+\ files ]]
	n=${output%% files*}
	[ "$n" -ge 40 ]
}

@test "a planted circle is found, printed edge by edge with its symbols" {
	d=$SCRATCH/obj
	mkdir -p "$d/x"
	printf 'int b(void);\nint a(void) { return b(); }\n' >"$SCRATCH/a.c"
	printf 'int c(void);\nint b(void) { return c() + 1; }\n' >"$SCRATCH/b.c"
	printf 'int a(void);\nint c(void) { return a() + 2; }\nint leaf(void) { return 3; }\n' >"$SCRATCH/c.c"
	printf 'int leaf(void);\nint top(void) { return leaf(); }\n' >"$SCRATCH/top.c"
	for f in a b c top; do cc -c -o "$d/x/$f.o" "$SCRATCH/$f.c"; done
	run tests/file-circles "$d"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"circle 1: 3 files call each other: x/a x/b x/c"* ]]
	[[ "$output" == *"  x/a -> x/b (b)"* ]]
	[[ "$output" == *"  x/b -> x/c (c)"* ]]
	[[ "$output" == *"  x/c -> x/a (a)"* ]]
	[[ "$output" != *"x/top"* ]]
	[[ "${lines[-1]}" == "1 circle between files" ]]
	# without the edge back, no circle; --levels orders the files
	printf 'int c(void) { return 2; }\nint leaf(void) { return 3; }\n' >"$SCRATCH/c.c"
	cc -c -o "$d/x/c.o" "$SCRATCH/c.c"
	run tests/file-circles --levels "$d"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"level 2: x/a"* ]]
	[[ "$output" == *"level 1: x/b x/top"* ]]
	[[ "$output" == *"level 0: x/c"* ]]
	[[ "${lines[-1]}" == "4 files, 3 call edges between them, no circle" ]]
}

# Headers: no circle of #include "x.h" lines among ublk-server/'s files
# (none on d597cb7, 20 headers).
@test "no header of ublk-server/ includes a header that includes it back" {
	run tests/file-circles --includes ublk-server
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *" include edges between them, no circle" ]]
	n=${output%% files*}
	[ "$n" -ge 80 ]
}

@test "a planted include circle is found, printed edge by edge" {
	d=$SCRATCH/src
	mkdir -p "$d/x" "$d/y"
	printf '#include "b.h"\n' >"$d/x/a.h"
	printf '#include "../y/c.h"\n' >"$d/x/b.h"
	printf '#include <stdio.h>\n#include "a.h"\n' >"$d/y/c.h"
	printf '#include "a.h"\nint main(void) { return 0; }\n' >"$d/y/m.c"
	run tests/file-circles --includes "$d"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"circle 1: 3 files include each other: x/a.h x/b.h y/c.h"* ]]
	[[ "$output" == *"  x/a.h -> x/b.h (inc:b.h)"* ]]
	[[ "$output" == *"  x/b.h -> y/c.h (inc:c.h)"* ]]
	[[ "$output" == *"  y/c.h -> x/a.h (inc:a.h)"* ]]
	[[ "$output" != *"y/m.c"* ]]
	printf '#include <stdio.h>\n' >"$d/y/c.h"
	run tests/file-circles --includes "$d"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "4 files, 3 include edges between them, no circle" ]]
}

@test "bad usage and a missing folder: exit 2" {
	run tests/file-circles "$SCRATCH/none"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no such directory"* ]]
	mkdir -p "$SCRATCH/empty"
	run tests/file-circles "$SCRATCH/empty"
	[ "$status" -eq 2 ]
	run tests/file-circles a b
	[ "$status" -eq 2 ]
	run tests/file-circles --includes
	[ "$status" -eq 2 ]
	run tests/file-circles --includes "$SCRATCH/empty"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no .c or .h file"* ]]
}

# plumbing/ (issue 32) is below both tools: no circle among its files, and
# none of them calls a function defined in ublk-server/, libalign/ or
# partition-tool/ (objects whose source is gone are left out).
@test "plumbing/: no circle, and it calls nothing of the tools or libalign above it" {
	[ -d "$BUILD/obj/plumbing" ] || skip "not built: $BUILD/obj/plumbing"
	run tests/file-circles "$BUILD/obj/plumbing"
	echo "$output"
	[ "$status" -eq 0 ]
	live_objs() {
		local o
		find "$@" -name '*.o' | while read -r o; do
			o=${o#"$BUILD"/obj/}
			[ -e "${o%.o}.c" ] && echo "$BUILD/obj/$o"
		done
		return 0
	}
	above=$(live_objs "$BUILD/obj/ublk-server" "$BUILD/obj/libalign" \
			  "$BUILD/obj/partition-tool" |
		xargs nm --defined-only -g | awk 'NF == 3 { print $3 }' | sort -u)
	calls=$(live_objs "$BUILD/obj/plumbing" | xargs nm -u |
		awk 'NF == 2 { print $2 }' | sort -u)
	[ -n "$above" ] && [ -n "$calls" ]
	run comm -12 <(echo "$above") <(echo "$calls")
	echo "plumbing calls up into: $output"
	[ -z "$output" ]
}
