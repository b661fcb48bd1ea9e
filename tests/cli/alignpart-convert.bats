#!/usr/bin/env bats
# alignpart convert (issue 32 item 3): an sfdisk dump or a live table rewritten for 512- or
# 4096-byte sectors, every partition at the same bytes; what a sector size cannot hold is one
# line and exit 2.  Round trips through the real sfdisk (util-linux #1744: a dump moved
# between sector sizes), on loop devices of both sizes over the same bytes as root.
load ../helpers
load alignpart-lib

setup() {
	ap_setup
	requires sfdisk
}
teardown() {
	local d
	for d in ${LOOPS:-}; do losetup -d "$d" 2>/dev/null; done
	ap_teardown
}

# dump IMG SCRIPT: a table written by sfdisk on a 512-byte-sector image, dumped.
dump() {
	img "$1" 64M
	printf '%b' "$2" | sfdisk -q --no-reread "$1" >/dev/null
	sfdisk -d "$1"
}

# ranges DUMP SECTOR: "start_byte+size_bytes" per partition line.
ranges() {
	sed -n 's/.*start= *\([0-9]*\), *size= *\([0-9]*\).*/\1 \2/p' <<<"$1" |
		awk -v s="$2" '{ printf "%d+%d ", $1 * s, $2 * s }'
}

@test "gpt dump 512 -> 4096 -> 512: the same dump back, the same bytes in between" {
	d512=$(dump g.img 'label: gpt\nsize=8MiB, name="a, b"\nsize=16MiB, type=S\n,\n')
	echo "$d512" >g.dump
	run --separate-stderr "$ALIGNPART" convert g.dump --to 4096
	[ "$status" -eq 0 ]
	d4k=$output
	[[ "$d4k" == *"sector-size: 4096"* ]]
	[[ "$d4k" == *"first-lba: 256"* ]]
	[[ "$d4k" == *"last-lba: 16378"* ]]       # the same 64 MiB with 4 KiB backup area
	[[ "$d4k" == *'name="a, b"'* ]]
	[ "$(ranges "$d4k" 4096)" = "$(ranges "$d512" 512)" ]
	run --separate-stderr "$ALIGNPART" convert - --to 512 <<<"$d4k"
	[ "$status" -eq 0 ]
	[ "$output" = "$d512" ]
}

@test "dos with logical partitions, and the live table of an image: the same as its dump" {
	d512=$(dump d.img 'label: dos\n,8MiB\n,,E\n,8MiB\n,8MiB\n')
	run --separate-stderr "$ALIGNPART" convert d.img --profile 512n --to 4096
	[ "$status" -eq 0 ]
	[ "$(ranges "$output" 4096)" = "$(ranges "$d512" 512)" ]
	[ "$(grep -c 'start=' <<<"$output")" -eq 4 ]
	live=$output
	run --separate-stderr "$ALIGNPART" convert - --to 4096 <<<"$d512"
	[ "$output" = "$live" ]
	# a device name may hold '=' and ':' (an image 'd=1:a.img'): the name ends at " : "
	run --separate-stderr "$ALIGNPART" convert - --to 4096 <<<"${d512//d.img/d=1:a.img}"
	[ "$status" -eq 0 ]
	[ "$(ranges "$output" 4096)" = "$(ranges "$d512" 512)" ]
	[[ "$output" == *"d=1:a.img1 : start=        256,"* ]]   # the rest of the line as it was
	# keys in any case, as sfdisk reads them; end= is refused, not copied
	run --separate-stderr "$ALIGNPART" convert - --to 4096 <<<"${d512//start=/START=}"
	[ "$(ranges "${output//START=/start=}" 4096)" = "$(ranges "$d512" 512)" ]
	run "$ALIGNPART" convert - --to 4096 <<<"${d512//size=/end=}"
	one_line_error 2
}

@test "what 4096-byte sectors cannot hold is one line, exit 2: odd starts, odd sizes, the backup GPT" {
	echo "$(dump o.img 'label: dos\nstart=2047, size=8192\n')" >o.dump
	run "$ALIGNPART" convert o.dump --to 4096
	one_line_error 2
	[[ "$output" == *"o.img1: start 2047 (byte 1048064) is not a multiple of 4096 bytes"* ]]
	echo "$(dump s.img 'label: dos\nstart=2048, size=8193\n')" >s.dump
	run "$ALIGNPART" convert s.dump --to 4096
	one_line_error 2
	[[ "$output" == *"size 8193 (bytes: 4194816) is not a multiple of 4096 bytes"* ]]
	# GPT's 512-byte backup area is 16.5 KiB, 4096's 20 KiB: on a disk of 64 MiB + 2 KiB
	# (131076 sectors of 512) a partition may end in between
	printf 'label: gpt\nunit: sectors\nfirst-lba: 2048\nlast-lba: 131042\nsector-size: 512\n\nstart=2048, size=128992\n' >b.dump
	run "$ALIGNPART" convert b.dump --to 4096
	one_line_error 2
	[[ "$output" == *"inside the backup GPT of 4096-byte sectors"* ]]
	# and a dos table past 2^32 sectors of 512 bytes
	printf 'label: dos\nunit: sectors\nsector-size: 4096\n\nstart=256, size=600000000, type=83\n' >big.dump
	run "$ALIGNPART" convert big.dump --to 512
	one_line_error 2
	[[ "$output" == *"ends past sector 2^32"* ]]
}

@test "convert: bad input is one line and exit 2 (or 3), nothing on stdout" {
	echo "$(dump g.img 'label: gpt\n,\n')" >g.dump
	grep -v sector-size g.dump >nosize.dump
	run "$ALIGNPART" convert nosize.dump --to 4096
	one_line_error 2
	[[ "$output" == *"give --from 512|4096"* ]]
	run --separate-stderr "$ALIGNPART" convert nosize.dump --to 4096 --from 512
	[ "$status" -eq 0 ]
	run "$ALIGNPART" convert g.dump --to 4096 --from 4096
	one_line_error 2
	run "$ALIGNPART" convert g.dump --to 1000
	one_line_error 2
	run "$ALIGNPART" convert g.dump
	one_line_error 2
	run "$ALIGNPART" convert g.dump --to 4096 --json
	one_line_error 2
	sed 's/unit: sectors/unit: cylinders/' g.dump >cyl.dump
	run "$ALIGNPART" convert cyl.dump --to 4096
	one_line_error 2
	printf 'label: dos\n2048,8192,83\n' >pos.dump
	run "$ALIGNPART" convert pos.dump --to 4096 --from 512
	one_line_error 2
	printf 'label: dos\nunit: sectors\n\nstart=2048, size=8MiB\n' >unit.dump
	run "$ALIGNPART" convert unit.dump --to 4096 --from 512
	one_line_error 2
	img blank.img 8M
	run "$ALIGNPART" convert blank.img --profile 512n --to 4096
	one_line_error 3
	run "$ALIGNPART" convert nosuch.img --to 4096
	one_line_error 3
}

# loopdev IMG SECTOR: a loop device with partitions over IMG; its path on stdout.
loopdev() {
	local d
	d=$(losetup -f --show -P --sector-size "$2" "$1") || return 1
	LOOPS="${LOOPS:-} $d"
	echo "$d"
}

# parts DEV: the kernel's partitions, made by partx where the kernel does not parse tables.
parts() {
	partx -u "$1" >/dev/null 2>&1 || true
}

@test "root: a table moved 512 -> 4096 -> 512 on the same bytes with real sfdisk; the data stays in its partition" {
	requires_root
	for label in gpt dos; do
		img m.img 64M
		d=$(loopdev m.img 512)
		if [ $label = gpt ]; then script='label: gpt\nsize=8MiB\nsize=16MiB\n,\n'
		else script='label: dos\n,8MiB\n,,E\n,8MiB\n,8MiB\n'; fi
		printf '%b' "$script" | sfdisk -q "$d" >/dev/null 2>&1 || true
		parts "$d"
		echo "marker-$label-p1" | dd of="${d}p1" conv=notrunc status=none
		echo "marker-$label-p5" | dd of="${d}p$([ $label = gpt ] && echo 3 || echo 5)" conv=notrunc status=none
		d512=$(sfdisk -d "$d")
		run --separate-stderr "$ALIGNPART" convert "$d" --to 4096
		[ "$status" -eq 0 ]
		d4k=$output
		losetup -d "$d"
		# the same bytes as a 4Kn disk: the converted table, applied by sfdisk
		d=$(loopdev m.img 4096)
		sfdisk -q "$d" <<<"$d4k" >/dev/null 2>&1 || true
		parts "$d"
		[ "$(ranges "$(sfdisk -d "$d")" 4096)" = "$(ranges "$d512" 512)" ]
		[ "$(head -c 13 "${d}p1")" = "marker-$label-p1" ]
		[ "$(head -c 16 "${d}p$([ $label = gpt ] && echo 3 || echo 5)")" = "marker-$label-p5" ]
		# and back, from the live 4Kn table
		run --separate-stderr "$ALIGNPART" convert "$d" --to 512
		[ "$status" -eq 0 ]
		back=$output
		losetup -d "$d"
		d=$(loopdev m.img 512)
		sfdisk -q "$d" <<<"$back" >/dev/null 2>&1 || true
		[ "$(ranges "$(sfdisk -d "$d")" 512)" = "$(ranges "$d512" 512)" ]
		losetup -d "$d"
		LOOPS=
	done
}
