#!/usr/bin/env bats
# make compare, reduced: the physics that must hold whatever the filesystem.
# 4K-aligned O_DIRECT random writes through a partition that alignpart calls
# aligned never straddle flash pages (rmw_straddle == 0); through a misaligned
# one every 4K write straddles two pages.  Runs tests/compare/run itself on
# small images (raw partition device, and files on ext4), then reads its JSON.
load ../helpers
load compare-lib


# The physics, independent of alignpart and the engine: a partition starting at
# LBA s on a medium where logical byte x sits at byte x + shift (512 in odd mode,
# 0 in 1m mode) is 4K-aligned when (s*512 + shift) % 4096 == 0.
expect_aligned() { # mode start
	local shift=0
	[ "$1" = odd ] && shift=512
	[ $(( ($2 * 512 + shift) % 4096 )) -eq 0 ]
}

# align_a MODE: the alignment_offset the engine reports in MODE.
align_a() { if [ "$1" = odd ]; then echo 3584; else echo 0; fi; }

requires_compare() {
	requires_root
	requires jq fio mkfs.ext4 losetup
	[ -e /dev/fuse ] || [ -e /dev/ublk-control ] || skip "requires /dev/fuse or /dev/ublk-control"
	[ -x "$UBLK_FLASH" ] || skip "requires $UBLK_FLASH (not built)"
	[ -x "$ALIGNPART" ] || skip "requires $ALIGNPART (not built)"
	local s
	for s in create info serve stats stop; do
		"$UBLK_FLASH" $s --help >/dev/null 2>&1 || skip "ublk-flash $s is not ready"
	done
	for s in create check; do
		"$ALIGNPART" $s --help >/dev/null 2>&1 || skip "alignpart $s is not ready"
	done
}

# check_physics JSON: every record of the run obeys the physics.
check_physics() {
	local json=$1 n rec cell mode start aligned straddle host page predicted pages
	n=$(jq '.results | length' "$json")
	[ "$n" -ge 1 ]
	for rec in $(jq -r '.results[] | [.cell, .mode, .start, .alignpart_aligned, .rmw_straddle,
	                    .host_bytes, .page_size, .predicted_alignment_offset] | join(":")' "$json"); do
		IFS=: read -r cell mode start aligned straddle host page predicted <<<"$rec"
		pages=$((host / page))
		echo "# $cell: alignpart aligned=$aligned offset=$predicted, host pages $pages, straddling RMWs $straddle"
		[ "$pages" -gt 100 ]                     # the workload really wrote
		# alignpart predicts the kernel's offset: (gran + A - start*512 % gran) % gran
		[ "$predicted" -eq $(( (4096 + $(align_a "$mode") - start * 512 % 4096) % 4096 )) ]
		if expect_aligned "$mode" "$start"; then
			[ "$aligned" = true ]                # alignpart's verdict agrees
			[ "$straddle" -eq 0 ]                # and the flash measured no straddle
		else
			[ "$aligned" = false ]
			# every 4K write touches two pages: at least one straddling RMW per page written
			[ "$straddle" -ge "$pages" ]
		fi
	done
}

@test "compare: 4K direct writes on the raw partition straddle pages exactly when misaligned" {
	requires_compare
	run "$COMPARE" --fs raw --modes odd,1m --starts 63,2048 --workloads direct \
		--size 64M --fileset 16M --runtime 2 --no-plot --out "$SCRATCH/out"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$SCRATCH/out/results.csv" ]
	[ "$(jq '.results | length' "$SCRATCH/out/results.json")" -eq 4 ]
	check_physics "$SCRATCH/out/results.json"
	# cleaned up: no mount, no server left for these images
	run grep -q "$SCRATCH" /proc/mounts
	[ "$status" -ne 0 ]                         # nothing left mounted
	[ ! -e "$SCRATCH/out/images" ] || [ -z "$(ls "$SCRATCH/out/images")" ]
}

@test "compare: the same through files on ext4" {
	requires_compare
	run "$COMPARE" --fs ext4 --modes odd,1m --starts 63,2048 --workloads direct \
		--size 96M --fileset 16M --runtime 2 --out "$SCRATCH/out"
	echo "$output"
	[ "$status" -eq 0 ]
	check_physics "$SCRATCH/out/results.json"
	[ -s "$SCRATCH/out/plot.png" ]
	[ -s "$SCRATCH/out/plot.svg" ]
	run grep -q "$SCRATCH" /proc/mounts
	[ "$status" -ne 0 ]                         # nothing left mounted
}

# physics COMPARE_OUT: per cell, the counters a frontend must not change (one line each);
# programs leave out the flush summary pages (their number follows the flushes the kernel's
# ext4 sends, as in guest/compare-ublk.sh).
physics() {
	jq -r '.results[] | (.page_programs - .flush_pages) as $p
	       | [.cell, .host_bytes, $p, .page_reads, .block_erases, .rmw_subpage, .rmw_straddle,
	          .straddle_per_page, ($p * .page_size / .host_bytes), .gc_relocations]
	       | map(tostring) | join(" ")' "$1/results.json"
}

@test "compare: direct-n is deterministic: the same seed gives the same counters in every cell" {
	requires_compare
	local seed=$(( RANDOM * 32768 + RANDOM + 1 )) a b
	echo "# seed $seed"
	for a in 1 2; do
		run "$COMPARE" --fs raw,ext4 --modes odd,1m --starts 63,2048 --workloads direct-n \
			--size 64M --fileset 4M --seed "$seed" --mount-opts lazytime,commit=600 \
			--no-plot --out "$SCRATCH/out$a"
		echo "$output"
		[ "$status" -eq 0 ]
	done
	a=$(physics "$SCRATCH/out1") b=$(physics "$SCRATCH/out2")
	diff <(echo "$a") <(echo "$b") | sed 's/^/# run 1 vs 2: /' || true
	echo "$a"
	[ "$(wc -l <<<"$a")" -eq 8 ]
	[ "$a" = "$b" ]
	[ "$(jq .meta.seed "$SCRATCH/out1/results.json")" -eq "$seed" ]
	# every block of the 4 MiB fileset once: 1024 writes; raw cells: exactly the fileset
	[ "$(jq '[.results[] | select(.fs == "raw") | .host_bytes] | unique' -c "$SCRATCH/out1/results.json")" = "[4194304]" ]
	check_physics "$SCRATCH/out1/results.json"
}

@test "compare: a bad option is one line and exit 2" {
	run "$COMPARE" --frobnicate
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"unknown option '--frobnicate'"* ]]
	run "$COMPARE" --modes odd,2m
	[ "$status" -eq 2 ]
	[[ $output == *"--modes: unknown value '2m'"* ]]
	run "$COMPARE" --runtime abc
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	run "$COMPARE" --seed abc
	[ "$status" -eq 2 ]
	[[ $output == *"--seed: 'abc' is not a number"* ]]
	run "$COMPARE" --dm --frontend fuse
	[ "$status" -eq 2 ]
	[[ $output == *"--dm needs --frontend ublk"* ]]
	run "$COMPARE" --mount-opts 'a b'
	[ "$status" -eq 2 ]
}

@test "compare: a missing tool names its Debian package, exit 3" {
	requires jq
	local farm=$SCRATCH/bin f
	mkdir -p "$farm"
	# every program of the system except fio
	for f in /usr/bin/* /usr/sbin/*; do
		[ "$(basename "$f")" = fio ] || ln -sf "$f" "$farm/"
	done
	PATH=$farm run "$COMPARE" --fs raw --workloads direct
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"missing tool 'fio'"*"Debian package fio"* ]]
	# an octant tool that is not built
	run env BUILD="$SCRATCH/nobuild" "$COMPARE" --fs raw --workloads direct
	[ "$status" -eq 3 ]
	[[ $output == *"missing tool"*"ublk-flash"* ]]
}
