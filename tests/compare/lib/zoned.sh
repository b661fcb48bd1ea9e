# shellcheck shell=bash
# make compare --zoned: the log inside the disk or inside the filesystem (issue 30).
# Per cell, LAYOUT:FS:AGE[:DISCARD]: an image of LAYOUT (ftl: the engine's FTL under a
# random-write disk; zoned: `create --zoned`, a host-managed zoned disk with no FTL)
# served over ublk, FS made on the whole disk (no partition: the kernel allows none on a
# host-managed disk), filled and measured as --aged does (lib/aged.sh): AGE fresh =
# fill, then the measured window at once; aged = the device written end to end first
# (zoned: then every zone reset), fill, aging windows until the device WA is steady,
# then the measured window.  Needs ublk's ZONED mode (Linux 6.6+): the 7.3 guest
# (tests/compare/run --vm boots it).  Sourced by tests/compare/run; uses lib/common.sh,
# lib/cell.sh, lib/aged.sh.

zoned_usage() {
	cat <<'EOF'
Usage: tests/compare/run --zoned [OPTIONS]    (needs ublk with ZONED: Linux 6.6+)
       tests/compare/run --vm [OPTIONS]       (the same in the 7.3 qemu guest,
                                               results and plots on this host)
The log inside the disk or inside the filesystem: per cell LAYOUT:FS:AGE[:DISCARD],
an image (ftl: ublk-flash's FTL; zoned: create --zoned, no FTL) is served over ublk,
FS is made on the whole disk and the --aged procedure runs: fill --fill of the
room free after mkfs (f2fs on a small zoned disk counts half of it used: its
reserved sections), then
(aged) aging windows until the device WA is steady, then one measured window (4K
random overwrites of the database files, oldest generation deleted, a new one
written).  Per cell: filesystem WA (host/app), device WA (flash/host), erases
(zone resets erase blocks: counted as erases) and the wear spread.

Options:
  --cells LIST     LAYOUT:FS:AGE[:DISCARD], LAYOUT ftl|zoned, FS ext4|btrfs|f2fs
                   (zoned: btrfs|f2fs), AGE fresh|aged, DISCARD none|fstrim|online
                   (ftl) or resets|none (zoned: resets = the filesystem's default
                   mount; f2fs refuses nodiscard on a zoned disk)  [ftl: online
                   (the disk is told what is free, as a zoned one is by resets),
                   zoned: resets]
                   [ftl:ext4,ftl:btrfs,ftl:f2fs,zoned:btrfs,zoned:f2fs x fresh,aged]
  --size SIZE      image size                                  [512M]
  --zone-size SIZE zone size of the zoned images               [16M]
  --op PERCENT     over-provisioning of the FTL images         [7]
  --fill PERCENT   the fill: this much of the room free after mkfs [50]
  --window SIZE    bytes of overwrites per window              [size/4]
  --tolerance, --min-windows, --max-windows N   as --aged     [5, 4, 6]
  --out DIR, --no-plot, --keep                  as --aged
  --vm-timeout S   with --vm: the guest's time limit           [7200]
f2fs on a zoned disk keeps its metadata on a regular device: a loop device on a
file beside the images (as mkfs.f2fs -m -c needs); what f2fs writes there is added
to the cell's host bytes and counted once as flash bytes (a conventional area
with no GC), reported apart as meta_bytes.
Randomness: one seed per run, printed; replay with OCTANT_SEED=N.
Output in DIR: zoned.json, zoned.csv, zoned-table.md, zoned-summary.txt,
zoned-wa.png, zoned-erase-hist.png, zoned-wear.png (and .svg), per cell the
counter snapshots, windows.tsv and fio JSON.
Exit: 0 done, 1 a cell failed, 2 bad option, 3 missing tool, not root, or a kernel
without zoned ublk.
EOF
}

ZONED_DEFAULT_CELLS="ftl:ext4:fresh ftl:btrfs:fresh ftl:f2fs:fresh zoned:btrfs:fresh zoned:f2fs:fresh
ftl:ext4:aged ftl:btrfs:aged ftl:f2fs:aged zoned:btrfs:aged zoned:f2fs:aged"

zoned_parse_args() {
	local opt val cells='' c l f a d
	OPT_OUT='' OPT_FRONTEND=ublk OPT_PLOT=1 OPT_KEEP=0 OPT_SIZE=512M ZONED_ZS=16M AGED_OP=7
	AGED_FILL=50 AGED_TOL=5 AGED_MINW=4 AGED_MAXW=6 ZONED_WINDOW='' ZONED_VM_TIMEOUT=7200
	while [ $# -gt 0 ]; do
		opt=$1 val=
		case $opt in --*=*) val=${opt#*=}; opt=${opt%%=*} ;; esac
		case $opt in
		--cells|--size|--zone-size|--op|--fill|--window|--tolerance|--min-windows|--max-windows|--out|--vm-timeout)
			if [[ $1 != *=* ]]; then
				[ $# -ge 2 ] || cmp_usage_err "$opt needs a value"
				val=$2; shift
			fi ;;
		--zoned|--vm|--help|-h|--no-plot|--keep)
			[[ $1 == *=* ]] && cmp_usage_err "$opt takes no value" ;;
		*) cmp_usage_err "unknown option '$1' with --zoned" ;;
		esac
		case $opt in
		--cells)       cells=$val ;;
		--size)        OPT_SIZE=$val ;;
		--zone-size)   ZONED_ZS=$val ;;
		--op)          AGED_OP=$val ;;
		--fill)        AGED_FILL=$val ;;
		--window)      ZONED_WINDOW=$val ;;
		--tolerance)   AGED_TOL=$val ;;
		--min-windows) AGED_MINW=$val ;;
		--max-windows) AGED_MAXW=$val ;;
		--out)         OPT_OUT=$val ;;
		--vm-timeout)  ZONED_VM_TIMEOUT=$val ;;
		--no-plot)     OPT_PLOT=0 ;;
		--keep)        OPT_KEEP=1 ;;
		--help|-h)     zoned_usage; exit 0 ;;
		esac
		shift
	done
	ZONED_CELLS=${cells:-$ZONED_DEFAULT_CELLS}
	ZONED_CELLS=${ZONED_CELLS//,/ }
	aged_check_numbers --zoned
	cmp_bytes "$ZONED_ZS" >/dev/null || cmp_usage_err "--zone-size: bad size '$ZONED_ZS'"
	if [ -n "$ZONED_WINDOW" ]; then
		ZONED_WINDOW=$(cmp_bytes "$ZONED_WINDOW") && [ "$ZONED_WINDOW" -ge $((1 << 20)) ] ||
			cmp_usage_err "--window: not a size of at least 1M"
	fi
	[[ $ZONED_VM_TIMEOUT =~ ^[0-9]+$ ]] || cmp_usage_err "--vm-timeout: not a number of seconds"
	for c in $ZONED_CELLS; do
		IFS=: read -r l f a d <<<"$c"
		case $l:$f in ftl:ext4|ftl:btrfs|ftl:f2fs|zoned:btrfs|zoned:f2fs) ;;
		*) cmp_usage_err "--cells: '$c': not ftl:ext4|btrfs|f2fs or zoned:btrfs|f2fs" ;; esac
		case $a in fresh|aged) ;; *) cmp_usage_err "--cells: '$c': age not fresh or aged" ;; esac
		case $l:${d:-none} in ftl:none|ftl:fstrim|ftl:online|zoned:none|zoned:resets) ;;
		*) cmp_usage_err "--cells: '$c': discard not none, fstrim or online (ftl) or resets (zoned)" ;; esac
	done
	OPT_FS=$(for c in $ZONED_CELLS; do IFS=: read -r l f a <<<"$c"; echo "$f"; done | sort -u | paste -sd,)
}

zoned_check_tools() {
	cmp_need jq jq
	cmp_need fio fio
	[ "$OPT_PLOT" = 1 ] && cmp_need gnuplot gnuplot-nox
	cmp_need blkzone util-linux
	cmp_need losetup mount
	cmp_need fstrim util-linux
	[[ ,$OPT_FS, == *,ext4,* ]] && cmp_need mkfs.ext4 e2fsprogs
	[[ ,$OPT_FS, == *,btrfs,* ]] && cmp_need mkfs.btrfs btrfs-progs
	[[ ,$OPT_FS, == *,f2fs,* ]] && cmp_need mkfs.f2fs f2fs-tools
	cmp_need_octant "$UBLK_FLASH" create info serve stats stop
	[ "$(id -u)" -eq 0 ] || cmp_die 3 "needs root (it serves block devices and mounts them)"
	[ -e /dev/ublk-control ] || modprobe ublk_drv 2>/dev/null
	[ -e /dev/ublk-control ] ||
		cmp_die 3 "no ublk on this kernel ($(uname -r)); tests/compare/run --vm runs the cells in the 7.3 guest"
	local f
	for f in ${OPT_FS//,/ }; do
		grep -qw "$f" /proc/filesystems || modprobe "$f" 2>/dev/null ||
			cmp_die 3 "the kernel has no $f (cells with $f need it)"
	done
	[[ ,$OPT_FS, == *,f2fs,* ]] && { modprobe crc32_generic 2>/dev/null; modprobe crc32-pclmul 2>/dev/null; }
	return 0
}

# df -B1 --output=FIELD[,FIELD] PATH (what lib/aged.sh asks) from statfs, for the
# guest's busybox df that has no --output; anything else goes to df itself.
df() {
	if [ $# = 3 ] && [ "$1" = -B1 ] && [[ $2 == --output=* ]] && ! command df --output=used / >/dev/null 2>&1; then
		local f bs tot fre ava out=()
		# stat -f: fundamental block size, total, free, available to non-root
		read -r bs tot fre ava < <(stat -f -c '%S %b %f %a' "$3")
		for f in $(tr ',' ' ' <<<"${2#--output=}"); do
			case $f in
			used) out+=($(( (tot - fre) * bs ))) ;;
			avail) out+=($(( ava * bs ))) ;;
			size) out+=($(( tot * bs ))) ;;
			esac
		done
		echo "${2#--output=}"
		echo "${out[*]}"
	else
		command df "$@"
	fi
}

# zoned_meta_sectors: sectors written to f2fs's metadata device so far (0 without one).
zoned_meta_sectors() {
	if [ -n "$ZONED_META_DEV" ]; then
		awk '{ print $7 }' "/sys/block/$(basename "$ZONED_META_DEV")/stat"
	else
		echo 0
	fi
}

# aged_snap FILE (replaces aged.sh's): sync, the live counters, plus the sectors
# written to f2fs's metadata device as meta_write_sectors.
aged_snap() {
	cell_sync "$CELL_MNT"
	cell_stats "$1" || return 1
	local tmp
	tmp=$(jq -c --argjson m "$(zoned_meta_sectors)" '. + {meta_write_sectors: $m}' "$1") &&
		echo "$tmp" >"$1"
}

# zoned_setup DIR: create and serve the cell's image; CELL_DEV, CELL_PART.
zoned_setup() {
	local dir=$1 log=$1/setup.log
	: >"$log"
	if [ "$CELL_LAYOUT" = zoned ]; then
		"$UBLK_FLASH" create "$CELL_IMG" --size "$OPT_SIZE" --zoned --zone-size "$ZONED_ZS" --force >>"$log" 2>&1
	else
		"$UBLK_FLASH" create "$CELL_IMG" --size "$OPT_SIZE" --align 1m --over-provision "$AGED_OP" --force >>"$log" 2>&1
	fi || { cell_fail "ublk-flash create" "$log"; return; }
	"$UBLK_FLASH" info "$CELL_IMG" --json >"$dir/info.json" 2>>"$log"
	CELL_SERVED=1
	"$UBLK_FLASH" serve "$CELL_IMG" --frontend ublk >"$dir/serve.out" 2>>"$log"
	CELL_DEV=$(grep -m1 '^/dev/' "$dir/serve.out")
	[ -n "$CELL_DEV" ] && cell_wait_node "$CELL_DEV" || { cell_fail "ublk-flash serve" "$log"; return; }
	echo "served on $CELL_DEV ($(cat "/sys/block/${CELL_DEV#/dev/}/queue/zoned"))" >>"$log"
	CELL_PART=$CELL_DEV
}

# zoned_precondition LOG: the device written end to end once (zoned: in zone order,
# then every zone reset, so every block has been programmed and erased).
zoned_precondition() {
	dd if=/dev/zero of="$CELL_DEV" bs=1M oflag=direct conv=fsync status=none 2>>"$1" ||
		grep -q 'No space left' "$1" || return 1
	[ "$CELL_LAYOUT" = zoned ] || return 0
	blkzone reset "$CELL_DEV" 2>>"$1"
}

# zoned_mkfs_mount DIR: mkfs on the whole device and mount (CELL_MNT).
zoned_mkfs_mount() {
	local log=$1/setup.log nod=''
	[ "$CELL_DISCARD" = none ] && nod=1
	case $CELL_LAYOUT:$CELL_FS in
	ftl:ext4) mkfs.ext4 -q -F -b 4096 -E "lazy_itable_init=0,lazy_journal_init=0${nod:+,nodiscard}" "$CELL_DEV" ;;
	ftl:btrfs) mkfs.btrfs -q -f ${nod:+-K} "$CELL_DEV" ;;
	ftl:f2fs) mkfs.f2fs -q -f ${nod:+-t 0} "$CELL_DEV" ;;
	zoned:btrfs) mkfs.btrfs -q -f -O zoned "$CELL_DEV" ;;
	zoned:f2fs)
		# f2fs's metadata needs random writes: a regular device first (-c: the zoned
		# one), with the zoned disk's 4096-byte sectors
		truncate -s 64M "$CMP_WORK/$CELL_NAME.meta"
		ZONED_META_DEV=$(losetup -f --show -b 4096 "$CMP_WORK/$CELL_NAME.meta") || return 1
		CELL_PART=$ZONED_META_DEV
		mkfs.f2fs -q -f -m -c "$CELL_DEV" "$ZONED_META_DEV" ;;
	esac >>"$log" 2>&1 || { cell_fail "mkfs.$CELL_FS ($CELL_LAYOUT)" "$log"; return; }
	aged_mount "$1"
}

# zoned_cell DIR: the whole cell; appends a record to zoned.jsonl.
zoned_cell() {
	local dir=$1 w was=() wa steady=0 reached=0 t0=$SECONDS t_age nw
	: >"$dir/age.log"
	printf 'window\tdevice_wa\n' >"$dir/windows.tsv"
	zoned_setup "$dir" || return 1
	if [ "$CELL_AGE" = aged ]; then
		cmp_progress "$CELL_LABEL: precondition"
		zoned_precondition "$dir/setup.log" || { cell_fail "precondition" "$dir/setup.log"; return 1; }
	fi
	zoned_mkfs_mount "$dir" || return 1
	cmp_progress "$CELL_LABEL: fill to $AGED_FILL %"
	aged_fill "$dir" || return 1
	[ -n "$ZONED_WINDOW" ] && AGED_OW_BYTES=$ZONED_WINDOW
	aged_snap "$dir/filled.json" || { cell_fail "stats" "$dir/filled.json.err"; return 1; }
	cp "$dir/filled.json" "$dir/w0.json"
	t_age=$SECONDS
	nw=0
	[ "$CELL_AGE" = aged ] && nw=$AGED_MAXW
	for w in $(seq 1 "$nw"); do
		cmp_progress "$CELL_LABEL: aging window $w/$nw${was:+ (WA ${was[*]})}"
		aged_window "$dir" "$w" || return 1
		aged_snap "$dir/w$w.json" || { cell_fail "stats" "$dir/w$w.json.err"; return 1; }
		wa=$(aged_wa "$dir/w$((w - 1)).json" "$dir/w$w.json")
		was+=("$(printf '%.2f' "$wa")")
		printf '%s\t%s\n' "$w" "$wa" >>"$dir/windows.tsv"
		if [ "$w" -ge "$AGED_MINW" ] && aged_steady "${was[@]:1}"; then steady=1 reached=$w; break; fi
	done
	[ "$CELL_AGE" = fresh ] && steady=1
	t_age=$((SECONDS - t_age))
	aged_measure "$dir" "$t0" "$steady" "$reached" "${#was[@]}" "${was[*]}" "$t_age" || return 1
	zoned_readback "$dir" || return 1
	zoned_amend "$dir"
}

# zoned_readback DIR: the database files' checksums, then unmount, drop the caches,
# mount again: the same checksums, or the cell fails.
zoned_readback() {
	local log=$1/setup.log sum1 sum2 opts
	sum1=$(cd "$CELL_MNT/db" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
	umount "$CELL_MNT" >>"$log" 2>&1 || { cell_fail "readback: umount" "$log"; return; }
	echo 3 >/proc/sys/vm/drop_caches
	opts=$(sed -n 's/^mounted [a-z0-9]* -o //p' "$log" | tail -n 1)
	mount -t "$CELL_FS" -o "${opts:-defaults}" "$CELL_PART" "$CELL_MNT" >>"$log" 2>&1 ||
		{ cell_fail "readback: mount again" "$log"; return; }
	sum2=$(cd "$CELL_MNT/db" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
	[ "$sum1" = "$sum2" ] || { echo "readback: $sum1 then $sum2" >>"$log"; cell_fail "readback: the data differs after a remount" "$log"; return; }
	echo "readback: the database files' checksums equal after a remount" >>"$log"
}

# zoned_amend DIR: aged_record's line (the last of aged.jsonl) with this compare's
# fields, the metadata device's bytes in host and flash bytes, into zoned.jsonl.
zoned_amend() {
	local line
	line=$(tail -n 1 "$OUT/aged.jsonl")
	jq -c --slurpfile b "$1/w$(jq -r .aging_windows <<<"$line").json" --slurpfile a "$1/measured.json" \
		--arg layout "$CELL_LAYOUT" --arg age "$CELL_AGE" --arg cell "$CELL_NAME" '
	def d(k): (($a[0][k] // 0) - ($b[0][k] // 0));
	def per(x; y): if (y // 0) > 0 then x / y else null end;
	(d("meta_write_sectors") * 512) as $meta
	| .cell = $cell | .layout = $layout | .age = $age | .meta_bytes = $meta | .readback_ok = true
	| .host_bytes += $meta | .flash_bytes += $meta
	| .zone_resets = d("zone_resets") | .reset_erases = d("reset_erases")
	| .finish_pages = d("finish_pages")
	| .fs_wa = per(.host_bytes; .app_bytes) | .device_wa = per(.flash_bytes; .host_bytes)
	| .total_wa = per(.flash_bytes; .app_bytes)
	| del(.mode, .start, .wl, .wl_threshold, .alignpart_aligned, .predicted_alignment_offset, .pinned_state)
	' <<<"$line" >>"$OUT/zoned.jsonl"
}

zoned_cell_cleanup() {
	cell_cleanup
	if [ -n "${ZONED_META_DEV:-}" ]; then
		losetup -d "$ZONED_META_DEV" 2>/dev/null
		ZONED_META_DEV=
	fi
	rm -f "$CMP_WORK/$CELL_NAME.meta"
}

ZONED_ROW_FMT='%-5s %-5s %-5s %-6s | %-8s | %8s %8s %8s %7s %7s | %5s %5s %5s | %4s %4s %5s\n'

zoned_row() {
	local line
	line=$(tail -n 1 "$OUT/zoned.jsonl" | jq -r '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	[.layout, .fs, .age, .discard,
	 (if .age == "fresh" then "-" elif .steady then "w\(.steady_window)" else "no (\(.aging_windows))" end),
	 (.app_bytes / 1048576 | f(1)), (.host_bytes / 1048576 | f(1)), (.flash_bytes / 1048576 | f(1)),
	 (.gc_relocations | tostring), (.block_erases | tostring),
	 (.fs_wa | f(2)), (.device_wa | f(2)), (.total_wa | f(2)),
	 (.erase_min | tostring), (.erase_max | tostring), (.erase_stddev | f(2))] | @tsv')
	local IFS=$'\t'
	cmp_progress_clear
	# shellcheck disable=SC2086,SC2059
	printf "$ZONED_ROW_FMT" $line
}

# zoned_finish META: zoned.json, zoned.csv, zoned-table.md, zoned-summary.txt.
zoned_finish() {
	aged_json_csv zoned "$1"
	jq -r -s '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	"| layout | fs | age | discard | steady (window) | app MiB | host MiB | flash MiB | GC relocations | erases (zone resets) | fs WA | device WA | total WA | erase min / max / mean / sd |",
	"|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
	(.[] | "| \(.layout) | \(.fs) | \(.age) | \(.discard) | \(if .age == "fresh" then "-" elif .steady then "yes (\(.steady_window))" else "**no** (\(.aging_windows))" end) | \(.app_bytes / 1048576 | f(1)) | \(.host_bytes / 1048576 | f(1)) | \(.flash_bytes / 1048576 | f(1)) | \(.gc_relocations) | \(.block_erases)\(if .layout == "zoned" then " (\(.zone_resets))" else "" end) | \(.fs_wa | f(2)) | \(.device_wa | f(2)) | \(.total_wa | f(2)) | \(.erase_min) / \(.erase_max) / \(.erase_mean | f(1)) / \(.erase_stddev | f(1)) |")
	' "$OUT/zoned.jsonl" >"$OUT/zoned-table.md"
	jq -r -s '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	"Flash per application byte (total WA = fs WA x device WA), least first, per age:",
	(group_by(.age)[] | "  \(.[0].age):", (sort_by(.total_wa)[]
	 | "    \(.layout) \(.fs): total WA \(.total_wa | f(2)) = fs WA \(.fs_wa | f(2)) x device WA \(.device_wa | f(2)); erases \(.block_erases)"))
	' "$OUT/zoned.jsonl" >"$OUT/zoned-summary.txt"
}

# zoned_plots SUBTITLE: zoned-wa, zoned-erase-hist, zoned-wear (.png, .svg), by aged.gp.
zoned_plots() {
	local pd=$OUT/plot f
	mkdir -p "$pd"
	aged_plot_files "$OUT/zoned.jsonl" "$pd" '"\(.layout) \(.fs) \(.age)"' \
		'"\(.layout) \(.fs) \(.age) (\(.discard))"' "$1" \
		"with the log in the disk (ftl) or the fs (zoned)" || return 1
	for f in wa erase-hist wear; do
		mv "$pd/aged-$f.png" "$OUT/zoned-$f.png" && mv "$pd/aged-$f.svg" "$OUT/zoned-$f.svg" || return 1
	done
}

# zoned_meta: the run's settings as JSON.
zoned_meta() {
	jq -n --arg cmd "$CMD_LINE" --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		--arg kernel "$(uname -r)" --argjson nproc "$(nproc)" --arg fio "$(fio --version)" \
		--arg ublk "$("$UBLK_FLASH" --version 2>/dev/null)" --arg size "$OPT_SIZE" \
		--arg zs "$ZONED_ZS" --argjson op "$AGED_OP" --argjson fill "$AGED_FILL" \
		--argjson tol "$AGED_TOL" --argjson maxw "$AGED_MAXW" --argjson minw "$AGED_MINW" \
		--argjson seed "$AGED_SEED" --argjson elapsed "$1" --arg load0 "$2" \
		--arg load1 "$(cut -d' ' -f1-3 /proc/loadavg)" \
		'{command: $cmd, date: $date, kernel: $kernel, nproc: $nproc, fio: $fio, ublk_flash: $ublk,
		  image_size: $size, zone_size: $zs, op_percent: $op, fill_percent: $fill, tolerance_pct: $tol,
		  min_windows: $minw, max_windows: $maxw, seed: $seed, elapsed_s: $elapsed,
		  loadavg_start: $load0, loadavg_end: $load1}'
}

# zoned_main "$@": the --zoned run (in a kernel with zoned ublk).
zoned_main() {
	zoned_parse_args "$@"
	zoned_check_tools
	AGED_SEED=${OCTANT_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 2147483647 + 1 ))}
	AGED_RS=$AGED_SEED AGED_GENS=10 ZONED_META_DEV= AGED_FILL_OF=avail
	OUT=${OPT_OUT:-$BUILD/compare/zoned-$(date -u +%Y%m%d-%H%M%S)}
	mkdir -p "$OUT" || cmp_die 3 "cannot create the output folder $OUT"
	OUT=$(cd "$OUT" && pwd)
	CMP_WORK=${ZONED_WORK:-$OUT/images}
	mkdir -p "$CMP_WORK"
	: >"$OUT/aged.jsonl"
	: >"$OUT/zoned.jsonl"
	local cells=($ZONED_CELLS) c i=0 failed=0 t_start=$SECONDS load0 dir
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	cmp_say "make compare --zoned: ${#cells[@]} cells, image $OPT_SIZE (zones $ZONED_ZS, FTL OP $AGED_OP %), fill $AGED_FILL %, aged: steady within $AGED_TOL % over 3 windows, $AGED_MINW..$AGED_MAXW windows"
	cmp_say "seed $AGED_SEED (replay: OCTANT_SEED=$AGED_SEED)"
	cmp_say "output: $OUT"
	# shellcheck disable=SC2059
	printf "$ZONED_ROW_FMT" layout fs age disc steady "app MiB" "host MiB" "flashMiB" "GC rel" erases fsWA devWA WA emin emax sd
	for c in "${cells[@]}"; do
		i=$((i + 1))
		IFS=: read -r CELL_LAYOUT CELL_FS CELL_AGE CELL_DISCARD <<<"$c"
		[ -n "$CELL_DISCARD" ] || { [ "$CELL_LAYOUT" = ftl ] && CELL_DISCARD=online || CELL_DISCARD=resets; }
		# what aged_record wants to know
		CELL_MODE=$CELL_LAYOUT CELL_START=0 CELL_WL=off CELL_WLT=0 CELL_ALIGNED=yes CELL_PREDICTED=0
		AGED_UTIL=0
		CELL_NAME=$CELL_LAYOUT-$CELL_FS-$CELL_AGE-$CELL_DISCARD
		CELL_LABEL="[$i/${#cells[@]}] $CELL_NAME"
		CELL_IMG=$CMP_WORK/$CELL_NAME.img
		dir=$OUT/cells/$CELL_NAME
		mkdir -p "$dir"
		if zoned_cell "$dir" && zoned_row; then
			cell_teardown "$dir" || failed=$((failed + 1))
		else
			failed=$((failed + 1))
		fi
		zoned_cell_cleanup
		rm -f "$CELL_IMG"
	done
	cmp_progress_clear
	if [ -s "$OUT/zoned.jsonl" ]; then
		zoned_finish "$(zoned_meta "$((SECONDS - t_start))" "$load0")"
		cmp_say ""
		cat "$OUT/zoned-summary.txt"
		if [ "$OPT_PLOT" = 1 ]; then
			zoned_plots "$OPT_SIZE images, fill $AGED_FILL %, $(date -u +%Y-%m-%d)" ||
				{ cmp_say "plots failed (see $OUT/gnuplot.log)"; failed=$((failed + 1)); }
		fi
	fi
	rm -f "$OUT/aged.jsonl"
	cmp_say "done in $((SECONDS - t_start))s (seed $AGED_SEED); in $OUT: zoned.json zoned.csv zoned-table.md zoned-summary.txt$([ "$OPT_PLOT" = 1 ] && echo " zoned-wa.png zoned-erase-hist.png zoned-wear.png")"
	[ "$failed" -eq 0 ] || { cmp_say "$failed cell(s) failed; logs in $OUT/cells/*/"; exit 1; }
	exit 0
}

# zoned_vm "$@": boot the 7.3 qemu guest (tests/vm/vm-run.sh), run --zoned there with
# the same options (its images on the guest's scratch disk, its output in the host's
# --out folder over 9p), then make the plots here.
zoned_vm() {
	local a args=()
	zoned_parse_args "$@"
	while [ $# -gt 0 ]; do   # the guest writes to /octant/out, the host plots
		case $1 in
		--vm|--no-plot|--out=*|--vm-timeout=*) ;;
		--out|--vm-timeout) shift ;;
		*) args+=("$1") ;;
		esac
		shift
	done
	[ "$OPT_PLOT" = 1 ] && cmp_need gnuplot gnuplot-nox
	cmp_need jq jq
	OUT=${OPT_OUT:-$BUILD/compare/zoned-vm-$(date -u +%Y%m%d-%H%M%S)}
	mkdir -p "$OUT" || cmp_die 3 "cannot create the output folder $OUT"
	OUT=$(cd "$OUT" && pwd)
	local scratch=$(( SIZE_BYTES * 3 / 1073741824 + 2 ))G rc=0
	cmp_say "compare --vm: booting the 7.3 guest (TCG: slow), scratch $scratch, timeout ${ZONED_VM_TIMEOUT}s; output: $OUT"
	BUILD=$BUILD "$TOP/tests/vm/vm-run.sh" --kernel 7.3 --scratch "$scratch" --timeout "$ZONED_VM_TIMEOUT" \
		--out "$OUT" "$CMP_HERE/lib/vm-zoned.sh" "${args[@]}" || rc=$?
	case $rc in 0|1) ;; 77) cmp_die 3 "the 7.3 guest cannot be prepared (see above)" ;;
	*) cmp_die 1 "the guest run failed (exit $rc)" ;; esac
	[ -s "$OUT/zoned.jsonl" ] || cmp_die 1 "the guest made no records (see $OUT/cells/*/)"
	if [ "$OPT_PLOT" = 1 ]; then
		zoned_plots "$(jq -r '.meta | "\(.image_size) images, fill \(.fill_percent) %, guest \(.kernel), \(.date[0:10])"' "$OUT/zoned.json")" ||
			cmp_die 1 "plots failed (see $OUT/gnuplot.log)"
		cmp_say "plots: $OUT/zoned-wa.png zoned-erase-hist.png zoned-wear.png"
	fi
	exit "$rc"
}
