#!/usr/bin/env bats
# Bad input, one case per test: the exit code, the one line on stderr that
# says what is wrong (and what to do), and the target left as it was.
# Issue 11 "Errors that mislead"; every case here failed before the fix.
load ../helpers

setup() {
	setup_scratch
	export UBLK_FLASH_RUN_DIR=$SCRATCH/run
	cd "$SCRATCH"
}

teardown() {
	teardown_scratch
}

sum() { sha256sum <"$1" | cut -d' ' -f1; }


# ext4 NAME: a 32 MiB file holding an ext4 filesystem.
ext4() {
	requires mkfs.ext4
	truncate -s 32M "$1"
	mkfs.ext4 -q -F "$1"
}

# serve_ok: serve cases need the FUSE frontend to get as far as the image.
serve_ok() {
	requires_root
	requires_dev /dev/fuse
}

# ---- ublk-flash: images that are not octant images ----------------------

@test "info ext4.img: not an octant image (it holds ext4), exit 4" {
	ext4 e.img; s=$(sum e.img)
	bad 4 "e.img: not an octant image (it holds ext4)" "$UBLK_FLASH" info e.img
	[ "$(sum e.img)" = "$s" ]
}

@test "stats ext4.img: not an octant image (it holds ext4), exit 4" {
	ext4 e.img; s=$(sum e.img)
	bad 4 "e.img: not an octant image (it holds ext4)" "$UBLK_FLASH" stats e.img
	[ "$(sum e.img)" = "$s" ]
}

@test "health ext4.img: not an octant image (it holds ext4), exit 4" {
	ext4 e.img; s=$(sum e.img)
	bad 4 "health: e.img: not an octant image (it holds ext4)" "$UBLK_FLASH" health e.img
	[ "$(sum e.img)" = "$s" ]
}

@test "stats / health of a missing file: no such file, exit 3" {
	for c in stats health; do
		bad 3 "$c: $SCRATCH/missing.img: No such file or directory" \
			"$UBLK_FLASH" $c "$SCRATCH/missing.img"
	done
}

@test "fsck ext4.img: not an octant image (it holds ext4), exit 4" {
	ext4 e.img; s=$(sum e.img)
	bad 4 "e.img: not an octant image (it holds ext4)" "$UBLK_FLASH" fsck e.img
	bad 4 "e.img: not an octant image (it holds ext4)" "$UBLK_FLASH" fsck e.img --repair
	[ "$(sum e.img)" = "$s" ]
}

@test "serve ext4.img: not an octant image (it holds ext4), exit 4" {
	serve_ok
	ext4 e.img; s=$(sum e.img)
	bad 4 "e.img: not an octant image (it holds ext4)" \
		"$UBLK_FLASH" serve e.img --frontend fuse
	[ "$(sum e.img)" = "$s" ]
}

@test "info / serve of a small text file: not an octant image (too small), exit 4" {
	printf 'root:x:0:0:root:/root:/bin/sh\n' > passwd
	bad 4 "passwd: not an octant image (30 bytes, too small to be one)" \
		"$UBLK_FLASH" info passwd
	bad 4 "passwd: not an octant image (30 bytes, too small to be one)" \
		"$UBLK_FLASH" stats passwd
	serve_ok
	bad 4 "passwd: not an octant image (30 bytes, too small to be one)" \
		"$UBLK_FLASH" serve passwd --frontend fuse
}

@test "info of an empty file: not an octant image (it is empty), exit 4" {
	: > empty
	bad 4 "empty: not an octant image (it is empty)" "$UBLK_FLASH" info empty
	bad 4 "empty: not an octant image (it is empty)" "$UBLK_FLASH" fsck empty
}

@test "stats / serve of a truncated image: wrong size, both sizes named, exit 4" {
	"$UBLK_FLASH" create t.img --size 8M --align odd
	need=$(stat -c %s t.img)
	truncate -s 4M t.img
	bad 4 "t.img: wrong size: the superblock needs $need bytes, it has 4194304 bytes" \
		"$UBLK_FLASH" stats t.img
	bad 4 "t.img: wrong size: the superblock needs $need bytes, it has 4194304 bytes" \
		"$UBLK_FLASH" info t.img
	serve_ok
	bad 4 "t.img: wrong size: the superblock needs $need bytes, it has 4194304 bytes" \
		"$UBLK_FLASH" serve t.img --frontend fuse
}

@test "info / stats of an image of another format version: which version, exit 4" {
	"$UBLK_FLASH" create v.img --size 8M --align odd
	for off in 8 4104; do   # the version field of both superblock copies
		printf '\x02' | dd of=v.img bs=1 seek=$off conv=notrunc status=none
	done
	s=$(sum v.img)
	bad 4 "v.img: an octant image of format version 2; this ublk-flash reads version 1" \
		"$UBLK_FLASH" info v.img
	bad 4 "v.img: an octant image of format version 2; this ublk-flash reads version 1" \
		"$UBLK_FLASH" stats v.img
	[ "$(sum v.img)" = "$s" ]
}

@test "info / stats / health / fsck DIR: is a directory, exit 2" {
	mkdir d
	bad 2 "d: is a directory, not an image" "$UBLK_FLASH" info d
	bad 2 "d: is a directory, not an image" "$UBLK_FLASH" stats d
	bad 2 "d: is a directory, not an image" "$UBLK_FLASH" health d
	bad 2 "d: is a directory, not an image" "$UBLK_FLASH" fsck d
}

@test "serve DIR: is a directory, exit 2" {
	serve_ok
	mkdir d
	bad 2 "d: is a directory, not an image" "$UBLK_FLASH" serve d --frontend fuse
}

@test "info / stats / health / fsck /dev/null: a character device, not an image, exit 2" {
	for c in info stats health fsck; do
		bad 2 "/dev/null: is a character device, not an image file or a block device" \
			"$UBLK_FLASH" $c /dev/null
	done
}

# ---- ublk-flash create ----------------------------------------------------

@test "create --size 8T (4 KiB pages): the limit and the fix, exit 2, no file" {
	bad 2 "--size 8T is too large for 4096-byte pages (at most 8796093013504 bytes); use --page-size 8192 or 16384" \
		"$UBLK_FLASH" create big.img --size 8T --align odd
	[ ! -e big.img ]
}

@test "create --size 64T: too large for any page size, exit 2" {
	bad 2 "--size 64T is too large for 4096-byte pages (at most 8796093013504 bytes); no page size holds it (16384-byte pages: at most 35184372055552 bytes)" \
		"$UBLK_FLASH" create big.img --size 64T --align odd
	[ ! -e big.img ]
}

@test "create over ext4 / an octant image without --force: says what it holds, exit 5" {
	ext4 e.img; s=$(sum e.img)
	bad 5 "create: e.img is not empty (it holds ext4); use --force to overwrite it" \
		"$UBLK_FLASH" create e.img --size 8M --align odd
	[ "$(sum e.img)" = "$s" ]
	"$UBLK_FLASH" create o.img --size 8M --align odd
	s=$(sum o.img)
	bad 5 "create: o.img is not empty (it holds an octant image); use --force to overwrite it" \
		"$UBLK_FLASH" create o.img --size 8M --align 1m
	[ "$(sum o.img)" = "$s" ]
}

@test "create /dev/null: a character device, not an image file or a block device, exit 2" {
	bad 2 "/dev/null: is a character device, not an image file or a block device" \
		"$UBLK_FLASH" create /dev/null --size 1G --align odd
}

@test "create DIR: is a directory, exit 2" {
	mkdir d
	bad 2 "d: is a directory, not an image" "$UBLK_FLASH" create d --size 1G --align odd
}

@test "create --size 3G5: not a size, exit 2" {
	bad 2 "--size: '3G5' is not a size" "$UBLK_FLASH" create x.img --size 3G5 --align odd
	[ ! -e x.img ]
}

@test "create --size 1000: not a multiple of 512 bytes, exit 2" {
	bad 2 "--size: 1000 is not a multiple of 512 bytes" \
		"$UBLK_FLASH" create x.img --size 1000 --align odd
}

@test "create --page-size 3000: which page sizes there are, exit 2" {
	bad 2 "--page-size: 3000 is not 4096, 8192 or 16384" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --page-size 3000
}

@test "create --page-size 99999999999 / 4k1: the value as given, exit 2" {
	bad 2 "--page-size: 99999999999 is not 4096, 8192 or 16384" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --page-size 99999999999
	bad 2 "--page-size: '4k1' is not a size" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --page-size 4k1
}

@test "create --pages-per-block 3 / 2048 / 64k: a power of 2 in 4..1024, exit 2" {
	bad 2 "--pages-per-block: 3 is not a power of 2 in 4..1024" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --pages-per-block 3
	bad 2 "--pages-per-block: 2048 is not a power of 2 in 4..1024" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --pages-per-block 2048
	bad 2 "--pages-per-block: '64k' is not a whole number" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --pages-per-block 64k
}

@test "create --oob-size 20 / 40 / 100: a multiple of 8 in 48..1024, exit 2" {
	bad 2 "--oob-size: 20 is not a multiple of 8 in 48..1024" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --oob-size 20
	# 40 is a multiple of 8 but cannot hold the flush record
	bad 2 "--oob-size: 40 is not a multiple of 8 in 48..1024" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --oob-size 40
	bad 2 "--oob-size: 100 is not a multiple of 8 in 48..1024" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --oob-size 100
}

@test "create --over-provision nan / ' 0x10' / 7.25: not a percentage, exit 2, no image" {
	bad 2 "--over-provision: 'nan' is not a percentage in 1..1000 (at most one decimal)" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --over-provision nan
	bad 2 "--over-provision: ' 0x10' is not a percentage in 1..1000 (at most one decimal)" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --over-provision ' 0x10'
	bad 2 "--over-provision: '7.25' is not a percentage in 1..1000 (at most one decimal)" \
		"$UBLK_FLASH" create x.img --size 1G --align odd --over-provision 7.25
	[ ! -e x.img ]
}

@test "create --endurance 0 / 10000001 / lots: out of range or not a number, exit 2, no image" {
	bad 2 "--endurance: 0 is out of range (1..10000000)" \
		"$UBLK_FLASH" create e.img --size 8M --align odd --endurance 0
	bad 2 "--endurance: 10000001 is out of range (1..10000000)" \
		"$UBLK_FLASH" create e.img --size 8M --align odd --endurance 10000001
	bad 2 "--endurance: 'lots' is not a whole number (1..10000000)" \
		"$UBLK_FLASH" create e.img --size 8M --align odd --endurance lots
	[ ! -e e.img ]
}

@test "create without IMG, or with an extra argument: says which, exit 2" {
	bad 2 "create: missing IMG" "$UBLK_FLASH" create --size 1G --align odd
	bad 2 "create: unexpected argument 'extra' after IMG 'x.img'" \
		"$UBLK_FLASH" create x.img --size 1G --align odd extra
	bad 2 "create: missing --align odd|1m" "$UBLK_FLASH" create x.img --size 1G
	[ ! -e x.img ]
}

@test "create --size with no value: needs a value, exit 2" {
	bad 2 "create: option '--size' needs a value" "$UBLK_FLASH" create x.img --align odd --size
}

# ---- ublk-flash stop / serve numbers --------------------------------------

@test "stop --timeout abc / -1 / 0 / 99999999999: validated before anything is stopped, exit 2" {
	bad 2 "stop: --timeout: 'abc' is not a whole number (1..86400)" \
		"$UBLK_FLASH" stop x.img --timeout abc
	bad 2 "stop: --timeout: '-1' is not a whole number (1..86400)" \
		"$UBLK_FLASH" stop x.img --timeout -1
	bad 2 "stop: --timeout: 0 is out of range (1..86400)" \
		"$UBLK_FLASH" stop x.img --timeout 0
	bad 2 "stop: --timeout: 99999999999 is out of range (1..86400)" \
		"$UBLK_FLASH" stop x.img --timeout 99999999999
}

@test "stop --timeout with no value: needs a value, exit 2" {
	bad 2 "stop: option '--timeout' needs a value" "$UBLK_FLASH" stop x.img --timeout
}

@test "serve --queues 0 / 65, --depth 0 / 4097: out of range, exit 2" {
	bad 2 "serve: --queues: 0 is out of range (1..64)" "$UBLK_FLASH" serve x.img --queues 0
	bad 2 "serve: --queues: 65 is out of range (1..64)" "$UBLK_FLASH" serve x.img --queues 65
	bad 2 "serve: --depth: 0 is out of range (1..4096)" "$UBLK_FLASH" serve x.img --depth 0
	bad 2 "serve: --depth: 4097 is out of range (1..4096)" "$UBLK_FLASH" serve x.img --depth 4097
}

@test "serve --dev-id -1 / abc, --wl-threshold 0: validated, exit 2" {
	bad 2 "serve: --dev-id: '-1' is not a whole number (0..1048575)" \
		"$UBLK_FLASH" serve x.img --dev-id -1
	bad 2 "serve: --dev-id: 'abc' is not a whole number (0..1048575)" \
		"$UBLK_FLASH" serve x.img --dev-id abc
	bad 2 "serve: --wl-threshold: 0 is out of range (1..1000000)" \
		"$UBLK_FLASH" serve x.img --wl-threshold 0
}

@test "serve --streams maybe: validated, exit 2" {
	bad 2 "serve: --streams: 'maybe' is not on or off" \
		"$UBLK_FLASH" serve x.img --streams maybe
}

@test "serve --gc-thread maybe: validated, exit 2" {
	bad 2 "serve: --gc-thread: 'maybe' is not on or off" \
		"$UBLK_FLASH" serve x.img --gc-thread maybe
}

@test "serve with a ublk-only option where there is no ublk: refused, exit 2" {
	[ ! -e /dev/ublk-control ] || skip "this kernel has /dev/ublk-control (ublk would serve)"
	bad 2 "serve: --queues applies to the ublk frontend only, and there is no /dev/ublk-control here" \
		"$UBLK_FLASH" serve x.img --queues 2
}

@test "serve --frontend fuse with a ublk-only option: refused, exit 2" {
	for o in "--queues 2" "--depth 8" "--dev-id 3" "--recover"; do
		bad 2 "serve: ${o%% *} applies to the ublk frontend only" \
			"$UBLK_FLASH" serve x.img --frontend fuse $o
	done
}

# ---- alignpart numbers -----------------------------------------------------

@test "alignpart create --start ' 2048' / 2^64-1: not an LBA / out of range, exit 2" {
	truncate -s 64M disk.img; s=$(sum disk.img)
	bad 2 "--start: ' 2048' is not an LBA (a whole number of sectors)" \
		"$ALIGNPART" create disk.img --label gpt --profile odd --part 1M --start ' 2048'
	bad 2 "--start: 18446744073709551615 is out of range (at most 9223372036854775807)" \
		"$ALIGNPART" create disk.img --label gpt --profile odd --part 1M \
		--start 18446744073709551615
	[ "$(sum disk.img)" = "$s" ]
}

@test "alignpart create --part 3G5: not a size, exit 2" {
	truncate -s 64M disk.img; s=$(sum disk.img)
	bad 2 "--part '3G5:L': '3G5' is not a size" \
		"$ALIGNPART" create disk.img --label gpt --profile odd --part 3G5:L
	[ "$(sum disk.img)" = "$s" ]
}

# ---- RBD URIs (no cluster needed: librbd1 only) ----------------------------

@test "an RBD URI that cannot work: malformed, conf= missing, unknown option, no monitor, a silent monitor: one line each" {
	[ -e /usr/lib/x86_64-linux-gnu/librbd.so.1 ] || ldconfig -p | grep -q 'librbd\.so\.1 ' ||
		skip "requires librbd1 (an RBD medium loads it)"
	export -n CEPH_CONF CEPH_ARGS
	unset CEPH_CONF CEPH_ARGS
	bad 2 "rbd://pool: not an RBD URI (rbd://POOL[/NAMESPACE]/IMAGE[@SNAP]" \
		"$UBLK_FLASH" info rbd://pool
	bad 2 "not an RBD URI" "$UBLK_FLASH" create 'rbd://p/i@' --size 64M --align odd
	bad 3 "cannot read the Ceph configuration $SCRATCH/none.conf: No such file or directory" \
		"$UBLK_FLASH" info "rbd://rbd/x?conf=$SCRATCH/none.conf"
	bad 2 "option bogus_opt=1: no such Ceph option" \
		"$UBLK_FLASH" info 'rbd://rbd/x?mon_host=127.0.0.1:9&bogus_opt=1'
	# the connection options reach librados: id= names the client, a
	# conf= file's mon_host is used (nothing listens on port 9)
	printf '[global]\nmon_host = 127.0.0.1:9\n' >c.conf
	local t0=$SECONDS
	bad 3 "cannot connect to the Ceph cluster: Connection timed out" \
		"$UBLK_FLASH" info "rbd://rbd/x?conf=$SCRATCH/c.conf&id=octant&timeout=2"
	[ $((SECONDS - t0)) -lt 20 ]
	if [ ! -e /etc/ceph/ceph.conf ]; then
		bad 3 "no Ceph monitor address (no ceph.conf found" "$UBLK_FLASH" info rbd://rbd/x
	fi
	[ ! -e "rbd:" ] && [ -z "$(ls "$SCRATCH" | grep -v '^c.conf$\|^run$')" ]   # nothing made
}
