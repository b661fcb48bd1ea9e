#!/usr/bin/env bats
# make install / make uninstall into a DESTDIR (dist/module.mk), as a Debian
# package build would: every file in its place, libalign usable through the
# installed .pc (shared and static), man pages lint-clean and complete, bash
# completion, the systemd unit verified, the unit's and the udev rule's
# helpers, and an uninstall that leaves nothing.
load ../helpers

MULTIARCH=$(gcc -print-multiarch 2>/dev/null)
MULTIARCH=${MULTIARCH:-x86_64-linux-gnu}
LIBDIR_MA=/usr/lib/$MULTIARCH

setup_file() {
	export STAGE=$BATS_FILE_TMPDIR/stage STAGE2=$BATS_FILE_TMPDIR/stage-local
	# Debian style: PREFIX=/usr, multiarch LIBDIR
	make -s -C "$OCTANT_TOP" BUILD="$BUILD" install DESTDIR="$STAGE" \
		PREFIX=/usr LIBDIR="$LIBDIR_MA" >"$BATS_FILE_TMPDIR/install.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/install.log" >&3; return 1; }
	# the default prefix (/usr/local)
	make -s -C "$OCTANT_TOP" BUILD="$BUILD" install DESTDIR="$STAGE2" \
		>>"$BATS_FILE_TMPDIR/install.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/install.log" >&3; return 1; }
}

# pkg-config reading the staged .pc as if it were installed at PREFIX
stage_pc() {
	PKG_CONFIG_PATH=$STAGE$LIBDIR_MA/pkgconfig \
		pkg-config --define-variable=prefix="$STAGE/usr" "$@"
}

@test "install PREFIX=/usr LIBDIR=multiarch: tools, library, header, .pc, man, completion, unit, rule" {
	local f
	for f in usr/bin/ublk-flash usr/bin/alignpart \
		 usr/include/octant/align.h \
		 "${LIBDIR_MA#/}/libalign.a" "${LIBDIR_MA#/}/libalign.so.0.1.0" \
		 "${LIBDIR_MA#/}/pkgconfig/libalign.pc" \
		 usr/share/man/man8/ublk-flash.8 usr/share/man/man8/alignpart.8 \
		 usr/share/bash-completion/completions/ublk-flash \
		 usr/share/bash-completion/completions/alignpart \
		 usr/lib/systemd/system/ublk-flash@.service \
		 usr/lib/udev/rules.d/60-octant.rules \
		 usr/libexec/octant/ublk-flash-service usr/libexec/octant/octant-udev-name; do
		[ -f "$STAGE/$f" ] || { echo "missing $f"; false; }
	done
	[ -x "$STAGE/usr/bin/ublk-flash" ] && [ -x "$STAGE/usr/libexec/octant/ublk-flash-service" ]
	# soname chain: libalign.so -> libalign.so.0 -> libalign.so.0.1.0
	[ "$(readlink "$STAGE$LIBDIR_MA/libalign.so")" = libalign.so.0 ]
	[ "$(readlink "$STAGE$LIBDIR_MA/libalign.so.0")" = libalign.so.0.1.0 ]
	run readelf -d "$STAGE$LIBDIR_MA/libalign.so.0.1.0"
	[[ $output == *"Library soname: [libalign.so.0]"* ]]
	# the installed tools run
	run "$STAGE/usr/bin/ublk-flash" --version
	[ "$status" -eq 0 ] && [[ $output == "ublk-flash "* ]]
	run "$STAGE/usr/bin/alignpart" --version
	[ "$status" -eq 0 ]
	# nothing of the staging folder leaks into what is installed
	run grep -rl "$STAGE" "$STAGE"
	[ -z "$output" ] || { echo "files naming the DESTDIR: $output"; false; }
	# the unit and the rule name the installed paths
	grep -q '^ExecStart=/usr/libexec/octant/ublk-flash-service %I --pidfile %t/ublk-flash@%i.pid --log syslog$' \
		"$STAGE/usr/lib/systemd/system/ublk-flash@.service"
	grep -q '^ExecStop=/usr/libexec/octant/ublk-flash-service --stop %I$' \
		"$STAGE/usr/lib/systemd/system/ublk-flash@.service"
	grep -q 'IMPORT{program}="/usr/libexec/octant/octant-udev-name %k"' \
		"$STAGE/usr/lib/udev/rules.d/60-octant.rules"
}

@test "the installed .pc names the installed prefix and libdir (multiarch and default)" {
	requires pkg-config
	run env PKG_CONFIG_PATH="$STAGE$LIBDIR_MA/pkgconfig" pkg-config --variable=prefix libalign
	[ "$output" = /usr ]
	run env PKG_CONFIG_PATH="$STAGE$LIBDIR_MA/pkgconfig" pkg-config --variable=libdir libalign
	[ "$output" = "$LIBDIR_MA" ]
	run env PKG_CONFIG_PATH="$STAGE$LIBDIR_MA/pkgconfig" pkg-config --variable=includedir libalign
	[ "$output" = /usr/include/octant ]
	run env PKG_CONFIG_PATH="$STAGE$LIBDIR_MA/pkgconfig" pkg-config --modversion libalign
	[ "$output" = "$("$BUILD/ublk-flash" --version | cut -d' ' -f2)" ]
	# default PREFIX=/usr/local, LIBDIR=$PREFIX/lib; udev reads no rules
	# under /usr/local, so the rule goes to /etc
	run env PKG_CONFIG_PATH="$STAGE2/usr/local/lib/pkgconfig" pkg-config --variable=libdir libalign
	[ "$output" = /usr/local/lib ]
	[ -f "$STAGE2/usr/local/include/octant/align.h" ]
	[ -f "$STAGE2/usr/local/lib/systemd/system/ublk-flash@.service" ]
	[ -f "$STAGE2/etc/udev/rules.d/60-octant.rules" ]
	grep -q '^ExecStart=/usr/local/libexec/octant/ublk-flash-service' \
		"$STAGE2/usr/local/lib/systemd/system/ublk-flash@.service"
}

# a small program of libalign's: the odd topology, an image probed, the version
write_prog() {
	cat >"$BATS_TEST_TMPDIR/prog.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <align.h>

int main(int argc, char **argv)
{
	struct align_topology t;
	char buf[256];
	int r;

	if (align_topology_parse("512/4096/3584", &t) ||
	    !align_lba_is_aligned(&t, 63) || align_lba_is_aligned(&t, 64))
		return 1;
	r = align_topology_probe(argv[1], &t);   /* libblkid, for an image */
	if (r) {
		fprintf(stderr, "probe %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	align_topology_describe(&t, buf, sizeof(buf));
	printf("%s\nlibalign %s\n", buf, align_version());
	return argc == 2 ? 0 : 1;
}
EOF
	"$STAGE/usr/bin/ublk-flash" create "$BATS_TEST_TMPDIR/t.img" --size 16M \
		--align odd >/dev/null
}

@test "a program builds through the installed .pc (shared) and runs on the installed libalign.so.0" {
	requires pkg-config cc readelf
	write_prog
	cc -o "$BATS_TEST_TMPDIR/prog" "$BATS_TEST_TMPDIR/prog.c" $(stage_pc --cflags --libs libalign)
	run readelf -d "$BATS_TEST_TMPDIR/prog"
	[[ $output == *"Shared library: [libalign.so.0]"* ]]
	run env LD_LIBRARY_PATH="$STAGE$LIBDIR_MA" ldd "$BATS_TEST_TMPDIR/prog"
	[[ $output == *"libalign.so.0 => $STAGE$LIBDIR_MA/libalign.so.0 "* ]]
	run env LD_LIBRARY_PATH="$STAGE$LIBDIR_MA" "$BATS_TEST_TMPDIR/prog" "$BATS_TEST_TMPDIR/t.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == "512/4096 offset 3584 "* ]]
	[ "${lines[1]}" = "libalign 0.1.0" ]
}

@test "a program links statically through the installed .pc (--static: libalign.a + blkid) and runs" {
	requires pkg-config cc readelf
	write_prog
	cc -static -o "$BATS_TEST_TMPDIR/prog-static" "$BATS_TEST_TMPDIR/prog.c" \
		$(stage_pc --static --cflags --libs libalign) 2>"$BATS_TEST_TMPDIR/ld.err" || {
		cat "$BATS_TEST_TMPDIR/ld.err"
		grep -q "cannot find -lc\b\|cannot find -lblkid" "$BATS_TEST_TMPDIR/ld.err" &&
			skip "no static libc/libblkid (libc6-dev, libblkid-dev)"
		false
	}
	run readelf -d "$BATS_TEST_TMPDIR/prog-static"
	[[ $output == *"no dynamic section"* ]]
	run "$BATS_TEST_TMPDIR/prog-static" "$BATS_TEST_TMPDIR/t.img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == "512/4096 offset 3584 "* ]]
}

@test "libalign.so exports exactly what debian/libalign0.symbols names (make deb fails otherwise)" {
	local want got
	want=$(awk '/^ [a-z0-9_]+@ALIGN/ { sub(/^ /, ""); print $1 }' "$OCTANT_TOP/debian/libalign0.symbols" | sort)
	got=$(nm -D --defined-only "$BUILD/libalign.so" | awk '$2 == "T" { sub(/@@/, "@", $3); print $3 }' | sort)
	diff <(echo "$want") <(echo "$got") | sed 's/^/# symbols file vs library: /'
	[ -n "$got" ]
	[ "$want" = "$got" ]
}

@test "man pages: lint clean (mandoc -T lint, else man --warnings) and found by man" {
	local page
	if command -v mandoc >/dev/null; then
		for page in "$STAGE"/usr/share/man/man8/*.8; do
			run mandoc -T lint "$page"
			echo "$output"
			[ "$status" -eq 0 ] && [ -z "$output" ]
		done
	elif command -v man >/dev/null; then
		echo "# mandoc not installed: man --warnings instead" >&3
		for page in "$STAGE"/usr/share/man/man8/*.8; do
			run bash -c 'man --warnings -l "$1" 2>&1 >/dev/null' _ "$page"
			echo "$output"
			[ -z "$output" ]
		done
	else
		skip "requires mandoc or man (neither installed)"
	fi
	requires man
	run env MANPATH="$STAGE/usr/share/man" man -w ublk-flash
	[ "$output" = "$STAGE/usr/share/man/man8/ublk-flash.8" ]
	run env MANPATH="$STAGE/usr/share/man" man -w 8 alignpart
	[ "$output" = "$STAGE/usr/share/man/man8/alignpart.8" ]
}

# every command of TOOL --help and every --option of TOOL CMD --help is in
# its man page (as \-\-option): new commands and options cannot go undocumented
man_covers() { # TOOL PAGE
	local tool=$1 page=$2 cmd opt missing=
	local cmds
	cmds=$("$tool" --help | sed -n '/^Commands:/,/^$/{/^  [a-z]/{s/^  \([a-z-]*\).*/\1/p}}')
	[ -n "$cmds" ]
	for cmd in $cmds; do
		grep -q "^\.B.* $cmd\b\|^\.BI\? \"\?$cmd\b" "$page" || missing+=" command:$cmd"
		for opt in $("$tool" "$cmd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
			grep -q -- "$(printf '%s' "$opt" | sed 's/-/\\\\-/g')" "$page" ||
				missing+=" $cmd:$opt"
		done
	done
	[ -z "$missing" ] || { echo "$page lacks:$missing"; return 1; }
}

@test "ublk-flash(8) documents every command and option --help names, and every exit code" {
	man_covers "$STAGE/usr/bin/ublk-flash" "$STAGE/usr/share/man/man8/ublk-flash.8"
	local code page=$STAGE/usr/share/man/man8/ublk-flash.8
	# the codes of ublk-server/cli/commands.h
	for code in 0 1 $(sed -n 's/^#define EXIT_[A-Z]* *\([0-9]*\)$/\1/p' \
			"$OCTANT_TOP/ublk-server/cli/commands.h"); do
		sed -n '/^\.SH EXIT STATUS/,/^\.SH/p' "$page" | grep -qx "\.IP $code" ||
			{ echo "EXIT STATUS lacks $code"; false; }
	done
	for s in ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
		grep -q "^\.SH $s" "$page" || { echo "no $s section"; false; }
	done
}

@test "alignpart(8) documents every command and option --help names" {
	man_covers "$STAGE/usr/bin/alignpart" "$STAGE/usr/share/man/man8/alignpart.8"
}

# complete WORDS...: what the installed completion offers for the last word
complete_words() {
	local tool=$1
	PATH="$STAGE/usr/bin:$PATH" bash -c '
		source "$1"; shift; f=$1; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); $f
		printf "%s\n" "${COMPREPLY[@]}"' _ \
		"$STAGE/usr/share/bash-completion/completions/$tool" "${@:2}"
}

@test "bash completion: ublk-flash commands, options and values" {
	run complete_words ublk-flash _ublk_flash ublk-flash ""
	[ "$(echo $output)" = "create info fsck stats health serve stop upgrade resize list --help --version" ] ||
		[[ " $(echo $output) " == *" create "*" serve "*" stop "* ]]
	run complete_words ublk-flash _ublk_flash ublk-flash st
	[ "$(echo $output)" = "stats stop" ]
	run complete_words ublk-flash _ublk_flash ublk-flash serve --fr
	[ "$output" = "--frontend" ]
	run complete_words ublk-flash _ublk_flash ublk-flash serve x.img --frontend ""
	[ "$(echo $output)" = "ublk fuse" ]
	run complete_words ublk-flash _ublk_flash ublk-flash create x.img --align ""
	[ "$(echo $output)" = "odd 1m" ]
	run complete_words ublk-flash _ublk_flash ublk-flash serve --gc c
	[ "$output" = "cost-benefit" ]
	run complete_words ublk-flash _ublk_flash ublk-flash stop --t
	[ "$output" = "--timeout" ]
	run complete_words ublk-flash _ublk_flash ublk-flash upgrade --b
	[ "$output" = "--binary" ]
	# list: its options, and -o completes column names after a comma
	run complete_words ublk-flash _ublk_flash ublk-flash list --
	[ "$(echo $output)" = "--json --noheadings --output --raw" ]
	run complete_words ublk-flash _ublk_flash ublk-flash list -o DEVICE,S
	[ "$(echo $output)" = "DEVICE,SIZE DEVICE,STATE DEVICE,STARTED" ]
	run complete_words ublk-flash _ublk_flash ublk-flash serve x.img --log s
	[ "$(echo $output)" = "syslog stderr" ]
	run complete_words ublk-flash _ublk_flash ublk-flash serve --pi
	[ "$output" = "--pidfile" ]
	run complete_words ublk-flash _ublk_flash ublk-flash serve --re
	[ "$(echo $output)" = "--read-only --recover" ]
	# an image path completes as a file
	touch "$BATS_TEST_TMPDIR/disk-a.img"
	run complete_words ublk-flash _ublk_flash ublk-flash info "$BATS_TEST_TMPDIR/disk-"
	[ "$output" = "$BATS_TEST_TMPDIR/disk-a.img" ]
	# the file registers the function for the command
	run bash -c 'source "$1"; complete -p ublk-flash' _ \
		"$STAGE/usr/share/bash-completion/completions/ublk-flash"
	[ "$output" = "complete -F _ublk_flash ublk-flash" ]
}

@test "bash completion: alignpart commands, options, profiles, labels" {
	run complete_words alignpart _alignpart alignpart ""
	[[ " $(echo $output) " == *" check create suggest predict convert map unmap "* ]]
	run complete_words alignpart _alignpart alignpart create d.img --profile ""
	[ "$(echo $output)" = "odd 1m legacy 4kn 512n auto" ]
	run complete_words alignpart _alignpart alignpart create d.img --label ""
	[ "$(echo $output)" = "gpt dos" ]
	run complete_words alignpart _alignpart alignpart check d.img --top
	[ "$output" = "--topology" ]
	run bash -c 'source "$1"; complete -p alignpart' _ \
		"$STAGE/usr/share/bash-completion/completions/alignpart"
	[ "$output" = "complete -F _alignpart alignpart" ]
}

@test "systemd unit: systemd-analyze verify is clean (executables, man page, keys)" {
	command -v systemd-analyze >/dev/null ||
		skip "requires systemd-analyze (Debian package systemd): the unit is NOT verified"
	local v=$BATS_TEST_TMPDIR/units
	mkdir -p "$v"
	# an instance, with the installed paths moved into the DESTDIR so that
	# verify finds the executables it names
	sed "s|/usr/|$STAGE/usr/|g" "$STAGE/usr/lib/systemd/system/ublk-flash@.service" \
		>"$v/ublk-flash@demo.service"
	run env MANPATH="$STAGE/usr/share/man" systemd-analyze verify "$v/ublk-flash@demo.service"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]   # warnings (unknown keys, bad values) are failures too
	grep -q '^Type=notify$' "$v/ublk-flash@demo.service"
	grep -q '^Restart=on-failure$' "$v/ublk-flash@demo.service"
	# verify can fail at all: a broken copy is reported
	sed 's/^Type=notify$/Type=notifyy/' "$v/ublk-flash@demo.service" >"$v/ublk-flash@bad.service"
	run env MANPATH="$STAGE/usr/share/man" systemd-analyze verify "$v/ublk-flash@bad.service"
	[[ $output == *"notifyy"* ]]
}

# A fake run registry entry: DIR IMAGE FRONTEND DEV
fake_entry() {
	mkdir -p "$1"
	echo "$2" >"$1/image"; echo "$3" >"$1/frontend"; echo "$4" >"$1/dev"
	echo 999999 >"$1/pid"; : >"$1/lock"
}

@test "unit helper: serve --foreground; --recover only for a dead ublk server whose device is still there" {
	requires flock realpath
	local h=$STAGE/usr/libexec/octant/ublk-flash-service t=$BATS_TEST_TMPDIR
	mkdir -p "$t/run" "$t/sys/block"
	: >"$t/data.img"
	# a stand-in ublk-flash that prints how it was called
	printf '#!/bin/sh\necho "$*"\n' >"$t/uf"; chmod +x "$t/uf"
	export UBLK_FLASH=$t/uf UBLK_FLASH_RUN_DIR=$t/run OCTANT_SYSFS=$t/sys
	run env IMAGE="$t/data.img" "$h" data
	[ "$output" = "serve --foreground -- $t/data.img" ]
	# default image /var/lib/octant/NAME.img; missing: a clear error, exit 2
	run env -u IMAGE "$h" nosuchname-$$
	[ "$status" -eq 2 ]
	[[ $output == *"no image /var/lib/octant/nosuchname-$$.img"* ]]
	# OPTIONS from /etc/octant/NAME.conf are passed on
	run env IMAGE="$t/data.img" OPTIONS="--frontend fuse --dm d0" "$h" data
	[ "$output" = "serve --foreground --frontend fuse --dm d0 -- $t/data.img" ]
	# a dead ublk server whose device is gone: a plain serve (it cleans up)
	fake_entry "$t/run/img-1-2" "$t/data.img" ublk /dev/ublkb7
	run env IMAGE="$t/data.img" "$h" data
	[ "$output" = "serve --foreground -- $t/data.img" ]
	# ... whose device the kernel still keeps: --recover
	mkdir "$t/sys/block/ublkb7"
	run env IMAGE="$t/data.img" "$h" data
	[ "${lines[-1]}" = "serve --foreground --recover -- $t/data.img" ]
	[[ $output == *"/dev/ublkb7 was left by a dead server"* ]]
	# a live server (it holds the lock): no --recover, serve says busy
	flock -x "$t/run/img-1-2/lock" sleep 30 &
	local holder=$!
	sleep 0.3
	run env IMAGE="$t/data.img" "$h" data
	kill "$holder"; wait "$holder" 2>/dev/null || true
	[ "$output" = "serve --foreground -- $t/data.img" ]
	# a dead FUSE server: nothing to re-attach
	echo fuse >"$t/run/img-1-2/frontend"
	run env IMAGE="$t/data.img" "$h" data
	[ "$output" = "serve --foreground -- $t/data.img" ]
}

@test "unit helper --stop (ExecStop): nothing without a main process, else ublk-flash stop of its device" {
	local h=$STAGE/usr/libexec/octant/ublk-flash-service t=$BATS_TEST_TMPDIR
	mkdir -p "$t/run" "$t/sys"
	: >"$t/data.img"
	printf '#!/bin/sh\necho "$*"\n' >"$t/uf"; chmod +x "$t/uf"
	export UBLK_FLASH=$t/uf UBLK_FLASH_RUN_DIR=$t/run OCTANT_SYSFS=$t/sys
	fake_entry "$t/run/img-1-2" "$t/data.img" ublk /dev/ublkb7
	# MAINPID unset: the server exited already (systemd runs ExecStop after
	# a clean exit too): nothing is stopped, exit 0, so no restart follows
	run env -u MAINPID IMAGE="$t/data.img" "$h" --stop data
	[ "$status" -eq 0 ]
	[ "$output" = "ublk-flash@data: the server has exited already: nothing to stop" ]
	# the main process's device, from the registry (999999: fake_entry's pid)
	run env MAINPID=999999 IMAGE="$t/data.img" "$h" --stop data
	[ "$output" = "stop --timeout 60 -- /dev/ublkb7" ]
	# a main process the registry does not name: its image
	run env MAINPID=4242 IMAGE="$t/data.img" "$h" --stop data
	[ "$output" = "stop --timeout 60 -- $t/data.img" ]
	# under systemd (JOURNAL_STREAM) the lines carry their priority: <5> notice
	run env -u MAINPID JOURNAL_STREAM=1:2 IMAGE="$t/data.img" "$h" --stop data
	[[ $output == "<5>ublk-flash@data: "* ]]
	run "$h" --stop
	[ "$status" -eq 2 ]
}

@test "udev helper: OCTANT_NAME for a live server's device only" {
	requires flock
	local h=$STAGE/usr/libexec/octant/octant-udev-name t=$BATS_TEST_TMPDIR
	mkdir -p "$t/run" "$t/sys/block/loop3/loop"
	export UBLK_FLASH_RUN_DIR=$t/run OCTANT_SYSFS=$t/sys
	fake_entry "$t/run/img-1-2" "/srv/my disk.img" ublk /dev/ublkb4
	fake_entry "$t/run/img-1-3" /srv/f.img fuse /dev/loop3
	# no server holds the locks: dead, no name
	run "$h" ublkb4
	[ "$status" -eq 0 ] && [ -z "$output" ]
	flock -x "$t/run/img-1-2/lock" flock -x "$t/run/img-1-3/lock" sleep 30 &
	local holder=$!
	sleep 0.3
	run "$h" ublkb4
	local o1=$output
	run "$h" loop3
	local o2=$output
	# a detached loop device (no backing file) is not named
	run "$h" loop5
	local o3=$output
	run "$h" sda
	local o4=$output
	kill "$holder"; wait "$holder" 2>/dev/null || true
	echo "$o1 | $o2 | $o3 | $o4"
	[ "$o1" = "$(printf 'OCTANT_NAME=my_disk\nOCTANT_IMAGE=/srv/my disk.img')" ]
	[ "$o2" = "" ]   # loop3 has no loop/backing_file in the fake sysfs
	[ -z "$o3" ] && [ -z "$o4" ]
}

# udev_import OUTPUT: the KEY=value pairs udev's IMPORT{program} takes from
# a program's OUTPUT, one "KEY=value" a line, as systemd's udev-rules.c
# (TK_M_IMPORT_PROGRAM, get_property_from_string) reads it: split at \n and
# \r, leading blanks and '#' lines skipped, key and value stripped of
# whitespace, an empty value dropped, one pair of quotes around the value
# removed; no escape is decoded.
udev_import() {
	python3 -c '
import re, sys
for line in re.split("[\n\r]", sys.argv[1]):
    line = line.lstrip(" \t\n\r")
    if not line or line[0] == "#" or "=" not in line:
        continue
    k, v = line.split("=", 1)
    k, v = k.strip(" \t\n\r"), v.strip(" \t\n\r")
    if not k or not v:
        continue
    if v[0] in "\"'"'"'":
        if len(v) == 1 or v[-1] != v[0]:
            continue
        v = v[1:-1]
    print(k + "=" + v)' "$1"
}

# unxhh S: S with its \xHH escapes decoded (printf %b)
unxhh() {
	printf '%b' "$1"
}

@test "udev helper: an image path with a newline, a CR, a backslash, a space at its end or a quote cannot add a property; OCTANT_IMAGE is it in \\xHH" {
	bats_require_minimum_version 1.5.0
	requires flock python3
	local h=$STAGE/usr/libexec/octant/octant-udev-name t=$BATS_TEST_TMPDIR got e
	mkdir -p "$t/run"
	export UBLK_FLASH_RUN_DIR=$t/run
	# each path, and what OCTANT_IMAGE must say
	local -a paths want name
	paths=(
		$'/srv/x\nOCTANT_IMAGE=/etc/passwd\nOCTANT_NAME=root.img'
		$'/srv/cr\rOCTANT_NAME=evil.img'
		'/srv/back\slash\x0a.img'
		'/srv/trailing space.img '
		$'/srv/ends in a newline.img\n'
		'"/srv/q.img"'
		'/srv/my disk.img'
	)
	want=(
		'/srv/x\x0aOCTANT_IMAGE=/etc/passwd\x0aOCTANT_NAME=root.img'
		'/srv/cr\x0dOCTANT_NAME=evil.img'
		'/srv/back\x5cslash\x5cx0a.img'
		'/srv/trailing space.img\x20'
		'/srv/ends in a newline.img\x0a'
		'\x22/srv/q.img"'
		'/srv/my disk.img'
	)
	name=(passwd_OCTANT_NAME_root cr_OCTANT_NAME_evil back_slash_x0a
	      trailing_space.img_ ends_in_a_newline.img_ q.img_ my_disk)
	for e in "${!paths[@]}"; do
		rm -rf "$t/run/img-1-2"
		fake_entry "$t/run/img-1-2" "${paths[$e]}" ublk /dev/ublkb4
		flock -x "$t/run/img-1-2/lock" sleep 30 &
		local holder=$!
		sleep 0.3
		run --separate-stderr "$h" ublkb4
		kill "$holder"; wait "$holder" 2>/dev/null || true
		echo "path $e: status $status"; echo "$output" | od -c | head -n 8
		[ "$status" -eq 0 ]
		# exactly the two properties, as udev reads them
		got=$(udev_import "$output")
		echo "udev reads: $got"
		[ "$got" = "$(printf 'OCTANT_NAME=%s\nOCTANT_IMAGE=%s' "${name[$e]}" "${want[$e]}")" ]
		# and the \xHH decode back to the path
		[ "$(unxhh "${want[$e]}"; echo x)" = "${paths[$e]}x" ]
	done
}

# udevadm verify (systemd >= 254; Debian 12 has 252) and the rule run by a real
# udevd: the system guest, tests/vm/system-tap.sh ("udev rule: udevadm verify",
# "udev: /dev/disk/by-octant/data -> /dev/ublkb0").
@test "udev rule: its links and labels (udevadm verify: the system guest)" {
	local r=$STAGE/usr/lib/udev/rules.d/60-octant.rules
	# every SYMLINK is under disk/by-octant and every GOTO has its LABEL
	[ "$(grep -c 'SYMLINK+="disk/by-octant/' "$r")" -eq 2 ]
	[ "$(grep -o 'GOTO="[a-z_]*"' "$r" | sort -u)" = 'GOTO="octant_end"' ]
	grep -q '^LABEL="octant_end"$' "$r"
}

@test "make uninstall leaves nothing (both prefixes)" {
	make -s -C "$OCTANT_TOP" BUILD="$BUILD" uninstall DESTDIR="$STAGE" \
		PREFIX=/usr LIBDIR="$LIBDIR_MA"
	make -s -C "$OCTANT_TOP" BUILD="$BUILD" uninstall DESTDIR="$STAGE2"
	run find "$STAGE" "$STAGE2" ! -type d
	echo "$output"
	[ -z "$output" ]
	# and octant's own folders are gone
	[ ! -e "$STAGE/usr/include/octant" ] && [ ! -e "$STAGE/usr/libexec/octant" ]
	[ ! -e "$STAGE2/usr/local/include/octant" ]
}
