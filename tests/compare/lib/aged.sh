# shellcheck shell=bash
# make compare --aged: filesystems on an aged (full, garbage-collected) flash
# device.  Per cell: precondition the device, partition, mkfs, mount, fill to a
# set utilisation with a mixed file set, age with overwrites + file churn
# until the device's write amplification is steady, then measure one window.
# Sourced by tests/compare/run; uses lib/common.sh, lib/cell.sh.

aged_usage() {
	cat <<'EOF'
Usage: tests/compare/run --aged [OPTIONS]     (or: make compare ARGS="--aged ...")
Filesystems on an aged flash device: per cell, the device is preconditioned
(written once end to end, as a used SSD), partitioned, formatted, mounted, filled
to --fill of the filesystem's room (used + available) with a realistic file set
(database-like files, generations of small 4-64 KiB and large 1-8 MiB files, and
a cold set written once, last, until df reports --fill) and
aged window by window (4K random overwrites of the database files, the oldest
generation deleted and a new one created, fstrim after each window in the fstrim
discard mode) until the device's write amplification is steady: the last 3
windows (from the 2nd on) within --tolerance of their mean (or --max-windows is
reached: reported as not steady; at least --min-windows first). A window
overwrites a quarter of the image. One more window is then measured.

Options (lists are comma-separated):
  --preset NAME      quick (default: 10-13 minutes on 2 busy cores) or long
                     (the full matrix, 48 cells on 1 GiB: hours)
  --cells LIST       explicit cells FS:MODE:START:DISCARD:WL, e.g.
                     ext4:odd:63:none:off,btrfs:1m:2048:online:on
                     FS ext4|btrfs|xfs, MODE odd|1m, START an LBA,
                     DISCARD none|fstrim|online, WL off|on   [the preset's]
  --size SIZE        image size (xfs needs > 300 MB)  [quick 320M, long 1G]
  --op PERCENT       over-provisioning             [quick 4, long 7]
  --fill PERCENT     filesystem utilisation after the fill        [70]
  --tolerance PCT    steady: last 3 windows' WA within PCT of their mean [5]
  --min-windows N    age at least N windows before steady counts [4]
  --max-windows N    aging windows at most         [quick 8, long 30]
  --wl-threshold N   static wear levelling "on" threshold (serve
                     --wl-threshold); "off" is 1000000   [quick 8, long 32]
  --out DIR, --no-plot, --keep, --frontend NAME   as without --aged
  --medium rbd://POOL[?conf=PATH&...]
                     the cells' media are RBD images of POOL (one per cell
                     and setting, aged-KEY), and each cell's aged state is
                     pinned: once aged, the image is snapshotted (@aged) and
                     what the run knows of it kept beside it (a RADOS object
                     aged-KEY.state); a later run with the same cell and
                     settings rolls the image back to it and only measures
  --re-age           with --medium: age again, and pin anew
  --help             this text

Discard modes: none (mkfs without discard, mounted nodiscard: the device never
learns what is free), fstrim (fstrim after every window), online (mount -o
discard).  Static WL off/on: ublk-flash serve --wl-threshold 1000000 / N.
Randomness (file sizes, overwrite offsets, which files) comes from one seed per
run, printed; replay with OCTANT_SEED=N.
Output in DIR: aged.csv, aged.json, aged-table.md, aged-summary.txt,
aged-wa.png, aged-erase-hist.png, aged-wear.png (and .svg), per cell
(cells/CELL/) the window log (windows.tsv), counter snapshots and fio JSON.
The key of a pinned state covers the cell, --size, --op, --fill, --tolerance,
--min-windows, --max-windows and --wl-threshold (not the seed: the state keeps
the one it was aged with).
Exit: 0 done, 1 a cell failed, 2 bad option, 3 missing tool or not root.
EOF
}

# The presets: cells as FS:MODE:START:DISCARD:WL.  quick = what fits in about
# 10 minutes: every discard mode on ext4, btrfs and xfs without and with
# fstrim, ext4's misaligned twin and ext4 with static WL, all in the odd mode
# (LBA 63 aligned there, 2048 misaligned).  320M: mkfs.xfs wants > 300 MB.
AGED_QUICK_CELLS="ext4:odd:63:none:off ext4:odd:63:fstrim:off ext4:odd:63:online:off
ext4:odd:2048:none:off ext4:odd:63:none:on btrfs:odd:63:none:off btrfs:odd:63:fstrim:off
xfs:odd:63:none:off xfs:odd:63:fstrim:off"

aged_long_cells() {
	local fs mode start d
	for fs in ext4 btrfs xfs; do
		for mode in odd 1m; do
			for start in 63 2048; do
				for d in none fstrim online; do
					echo "$fs:$mode:$start:$d:off"
				done
				echo "$fs:$mode:$start:none:on"
			done
		done
	done
}

# aged_check_numbers MODE: --size, --op, --fill, --tolerance, --max-windows and
# --min-windows (SIZE_BYTES set) or exit 2; MODE (--aged, --zoned) names the run.
aged_check_numbers() {
	SIZE_BYTES=$(cmp_bytes "$OPT_SIZE") || cmp_usage_err "--size: bad size '$OPT_SIZE'"
	[ "$SIZE_BYTES" -ge $((128 << 20)) ] || cmp_usage_err "--size: at least 128M with $1"
	[[ $AGED_OP =~ ^[0-9]+$ ]] && [ "$AGED_OP" -ge 1 ] && [ "$AGED_OP" -le 100 ] ||
		cmp_usage_err "--op: '$AGED_OP' is not a percentage 1..100"
	[[ $AGED_FILL =~ ^[0-9]+$ ]] && [ "$AGED_FILL" -ge 10 ] && [ "$AGED_FILL" -le 90 ] ||
		cmp_usage_err "--fill: '$AGED_FILL' is not a percentage 10..90"
	[[ $AGED_TOL =~ ^[0-9]+$ ]] && [ "$AGED_TOL" -ge 1 ] && [ "$AGED_TOL" -le 50 ] ||
		cmp_usage_err "--tolerance: '$AGED_TOL' is not a percentage 1..50"
	[[ $AGED_MAXW =~ ^[0-9]+$ ]] && [ "$AGED_MAXW" -ge 3 ] ||
		cmp_usage_err "--max-windows: '$AGED_MAXW' is not a number >= 3"
	[[ $AGED_MINW =~ ^[0-9]+$ ]] && [ "$AGED_MINW" -ge 1 ] ||
		cmp_usage_err "--min-windows: '$AGED_MINW' is not a number >= 1"
}

aged_parse_args() {
	local opt val preset=quick cells='' size='' op='' maxw='' wlt=''
	OPT_OUT='' OPT_FRONTEND='' OPT_PLOT=1 OPT_KEEP=0 AGED_FILL=70 AGED_TOL=5 AGED_MINW=4
	AGED_MEDIUM='' AGED_REAGE=0
	while [ $# -gt 0 ]; do
		opt=$1 val=
		case $opt in --*=*) val=${opt#*=}; opt=${opt%%=*} ;; esac
		case $opt in
		--preset|--cells|--size|--op|--fill|--tolerance|--min-windows|--max-windows|--wl-threshold|--out|--frontend|--medium)
			if [[ $1 != *=* ]]; then
				[ $# -ge 2 ] || cmp_usage_err "$opt needs a value"
				val=$2; shift
			fi ;;
		--aged|--help|-h|--no-plot|--keep|--re-age)
			[[ $1 == *=* ]] && cmp_usage_err "$opt takes no value" ;;
		*) cmp_usage_err "unknown option '$1' with --aged" ;;
		esac
		case $opt in
		--preset)       preset=$val ;;
		--cells)        cells=$val ;;
		--size)         size=$val ;;
		--op)           op=$val ;;
		--fill)         AGED_FILL=$val ;;
		--tolerance)    AGED_TOL=$val ;;
		--min-windows)  AGED_MINW=$val ;;
		--max-windows)  maxw=$val ;;
		--wl-threshold) wlt=$val ;;
		--out)          OPT_OUT=$val ;;
		--frontend)     OPT_FRONTEND=$val ;;
		--no-plot)      OPT_PLOT=0 ;;
		--keep)         OPT_KEEP=1 ;;
		--medium)       AGED_MEDIUM=$val ;;
		--re-age)       AGED_REAGE=1 ;;
		--help|-h)      aged_usage; exit 0 ;;
		esac
		shift
	done
	case $preset in
	quick) AGED_CELLS=$AGED_QUICK_CELLS OPT_SIZE=320M AGED_OP=4 AGED_MAXW=8 AGED_WLT=8 ;;
	long)  AGED_CELLS=$(aged_long_cells) OPT_SIZE=1G AGED_OP=7 AGED_MAXW=30 AGED_WLT=32 ;;
	*) cmp_usage_err "--preset: unknown value '$preset' (one of: quick long)" ;;
	esac
	AGED_PRESET=$preset
	[ -n "$cells" ] && AGED_CELLS=${cells//,/ } AGED_PRESET="$preset (--cells)"
	[ -n "$size" ] && OPT_SIZE=$size
	[ -n "$op" ] && AGED_OP=$op
	[ -n "$maxw" ] && AGED_MAXW=$maxw
	[ -n "$wlt" ] && AGED_WLT=$wlt
	aged_check_numbers --aged
	[[ $AGED_WLT =~ ^[0-9]+$ ]] && [ "$AGED_WLT" -ge 1 ] && [ "$AGED_WLT" -lt 1000000 ] ||
		cmp_usage_err "--wl-threshold: '$AGED_WLT' is not a number 1..999999"
	case $OPT_FRONTEND in ""|ublk|fuse) ;;
	*) cmp_usage_err "--frontend: unknown value '$OPT_FRONTEND' (one of: ublk fuse)" ;;
	esac
	local c f m s d w
	for c in $AGED_CELLS; do
		IFS=: read -r f m s d w <<<"$c"
		case $f in ext4|btrfs|xfs) ;; *) cmp_usage_err "--cells: '$c': filesystem not ext4, btrfs or xfs" ;; esac
		case $m in odd|1m) ;; *) cmp_usage_err "--cells: '$c': mode not odd or 1m" ;; esac
		[[ $s =~ ^[0-9]+$ ]] && [ "$s" -ge 1 ] || cmp_usage_err "--cells: '$c': start not an LBA >= 1"
		case $d in none|fstrim|online) ;; *) cmp_usage_err "--cells: '$c': discard not none, fstrim or online" ;; esac
		case $w in off|on) ;; *) cmp_usage_err "--cells: '$c': WL not off or on" ;; esac
	done
	OPT_FS=$(for c in $AGED_CELLS; do echo "${c%%:*}"; done | sort -u | paste -sd,)
	AGED_POOL='' AGED_QUERY='' AGED_CONF=''
	if [ -n "$AGED_MEDIUM" ]; then
		[[ $AGED_MEDIUM =~ ^rbd://([^/?@]+)/?(\?.*)?$ ]] ||
			cmp_usage_err "--medium: '$AGED_MEDIUM' is not rbd://POOL[?OPTIONS]"
		AGED_POOL=${BASH_REMATCH[1]} AGED_QUERY=${BASH_REMATCH[2]}
		[[ $AGED_QUERY =~ [?\&]conf=([^\&]+) ]] && AGED_CONF=${BASH_REMATCH[1]}
	elif [ "$AGED_REAGE" = 1 ]; then
		cmp_usage_err "--re-age goes with --medium"
	fi
}

aged_check_tools() {
	cmp_check_tools
	if [ -n "$AGED_POOL" ]; then
		cmp_need rbd ceph-common
		cmp_need rados ceph-common
	fi
	cmp_need fstrim util-linux
	cmp_need dd coreutils
	[[ ,$OPT_FS, == *,xfs,* ]] && cmp_need mkfs.xfs xfsprogs
	grep -qw xfs /proc/filesystems || ! [[ ,$OPT_FS, == *,xfs,* ]] || modprobe xfs 2>/dev/null ||
		cmp_die 3 "the kernel has no xfs (cells with xfs need it)"
	return 0
}

# aged_rand: the next number of the run's generator (seeded by AGED_SEED).
aged_rand() {
	AGED_RS=$(( (AGED_RS * 1103515245 + 12345) % 2147483648 ))
	echo "$AGED_RS"
}

# aged_snap FILE: sync the filesystem, then the live counters into FILE.
aged_snap() {
	cell_sync "$CELL_MNT"
	cell_stats "$1"
}

# aged_files DIR BYTES LOG [FIOJSON]: one generation of mixed files in DIR: a
# quarter of BYTES in small files (4-64 KiB, mean 34 KiB), the rest in at least 8
# large ones (mean A = 4.5 MiB, less for small generations; sizes A/4 .. 7A/4),
# so that the random sizes add up to about BYTES.
aged_files() {
	local small=$(( $2 / 4 )) large=$(( $2 * 3 / 4 )) a
	a=$(( large / 8 ))
	[ "$a" -le 4718592 ] || a=4718592
	[ "$a" -ge 262144 ] || a=262144
	mkdir -p "$1"
	AGED_DIR=$1 AGED_NSMALL=$(( small / 34816 + 1 )) AGED_NLARGE=$(( large / a + 1 )) \
	AGED_LMIN=$(( a / 4 >> 12 << 12 )) AGED_LMAX=$(( a * 7 / 4 >> 12 << 12 )) \
	AGED_SEED=$(aged_rand) fio ${4:+--output-format=json --output="$4"} \
		"$CMP_HERE/fio/aged-files.fio" >>"$3" 2>&1
}

# aged_overwrite LOG [FIOJSON]: one window of database overwrites.
aged_overwrite() {
	AGED_DIR=$CELL_MNT/db AGED_DB_FILES=$AGED_DB_FILES AGED_DB_BYTES=$AGED_DB_BYTES \
	AGED_OW_BYTES=$AGED_OW_BYTES AGED_SEED=$(aged_rand) \
		fio ${2:+--output-format=json --output="$2"} "$CMP_HERE/fio/aged-overwrite.fio" >>"$1" 2>&1
}

# aged_precondition: write the whole device once (a used device: SNIA-style),
# then its first sector back: the partition table alignpart wrote (zeroed, it
# was gone from the medium while the kernel kept the partition; a pinned state
# served again found no partition).
aged_precondition() {
	local mbr=$CMP_WORK/mbr-$CELL_NAME
	dd if="$CELL_DEV" of="$mbr" bs=512 count=1 iflag=direct status=none 2>>"$1" || return 1
	dd if=/dev/zero of="$CELL_DEV" bs=1M oflag=direct conv=fsync status=none 2>>"$1" ||
		grep -q 'No space left' "$1" || return 1
	dd if="$mbr" of="$CELL_DEV" bs=512 count=1 oflag=direct conv=fsync status=none 2>>"$1" || return 1
	rm -f "$mbr"
}

# aged_mkfs_mount DIR: format (discard at mkfs only when the cell discards)
# and mount with the cell's discard option.
aged_mkfs_mount() {
	local log=$1/setup.log try nod=
	[ "$CELL_DISCARD" = none ] && nod=1
	for try in 1 2 3; do
		case $CELL_FS in
		ext4) mkfs.ext4 -q -F -b 4096 -E "lazy_itable_init=0,lazy_journal_init=0${nod:+,nodiscard}" \
			"$CELL_PART" >>"$log" 2>&1 && break ;;
		btrfs) mkfs.btrfs -q -f ${nod:+-K} "$CELL_PART" >>"$log" 2>&1 && break ;;
		xfs) mkfs.xfs -q -f ${nod:+-K} "$CELL_PART" >>"$log" 2>&1 && break ;;
		esac
		[ $try = 3 ] && { cell_fail "mkfs.$CELL_FS" "$log"; return; }
		sleep 2
	done
	aged_mount "$1"
}

# aged_mount DIR: mount CELL_PART on CELL_MNT with the cell's discard option.
aged_mount() {
	local log=$1/setup.log opts
	case $CELL_DISCARD in
	online) opts=discard ;;
	resets) opts=defaults ;;     # --zoned: a zoned disk's filesystem resets zones itself
	*) opts=nodiscard ;;
	esac
	# btrfs turns on async discard by itself on non-rotational devices
	[ "$CELL_FS" = btrfs ] && [ "$CELL_DISCARD" = online ] && opts=discard=async
	CELL_MNT=$CMP_WORK/mnt-$CELL_NAME
	mkdir -p "$CELL_MNT"
	mount -t "$CELL_FS" -o "$opts" "$CELL_PART" "$CELL_MNT" >>"$log" 2>&1 ||
		{ cell_fail "mount -o $opts" "$log"; return; }
	echo "mounted $CELL_FS -o $opts" >>"$log"
}

# aged_util: the filesystem's utilisation in percent, used / (used + available),
# after a sync (btrfs updates its accounting at commit).
aged_util() {
	local u a
	sync -f "$CELL_MNT"
	read -r u a < <(df -B1 --output=used,avail "$CELL_MNT" | tail -n 1)
	u=$(( u - ${AGED_USED0:-0} ))   # what the fill wrote, with AGED_FILL_OF=avail
	echo $(( u * 100 / (u + a) ))
}

# aged_fill DIR: database files, generations, then the cold set (written once)
# in tenths until the filesystem is AGED_FILL % used.  The plan (25 % database,
# 35 % generations, 40 % cold of AGED_FILL % of the room) comes from df at mount;
# btrfs's room shrinks as it allocates duplicated metadata, so the cold set is
# what gives: AGED_UTIL is the utilisation really reached.
aged_fill() {
	local dir=$1 log=$1/fill.log total used want g k
	used=$(df -B1 --output=used "$CELL_MNT" | tail -n 1)
	total=$(( used + $(df -B1 --output=avail "$CELL_MNT" | tail -n 1) ))
	# AGED_FILL_OF=avail (--zoned): AGED_FILL % of the room free after mkfs (f2fs on a
	# small zoned disk counts half of it used at mount: its reserved sections)
	AGED_USED0=0
	[ "${AGED_FILL_OF:-}" = avail ] && AGED_USED0=$used total=$(( total - used )) used=0
	want=$(( total * AGED_FILL / 100 - used ))
	[ "$want" -gt $((8 << 20)) ] || { echo "no room to fill ($total, $used)" >>"$log"; cell_fail "fill" "$log"; return; }
	AGED_DB_FILES=4
	AGED_DB_BYTES=$(( want / 4 >> 20 << 20 ))
	AGED_GEN_BYTES=$(( want * 35 / 100 / AGED_GENS ))
	AGED_OW_BYTES=$(( SIZE_BYTES / 4 ))
	mkdir -p "$CELL_MNT/db"
	AGED_DIR=$CELL_MNT/db AGED_DB_FILES=$AGED_DB_FILES AGED_DB_BYTES=$AGED_DB_BYTES \
	AGED_OW_BYTES=$AGED_OW_BYTES AGED_SEED=1 \
		fio --create_only=1 "$CMP_HERE/fio/aged-overwrite.fio" >>"$log" 2>&1 ||
		{ cell_fail "fill: database files" "$log"; return; }
	for g in $(seq 1 "$AGED_GENS"); do
		aged_files "$CELL_MNT/gen-$g" "$AGED_GEN_BYTES" "$log" ||
			{ cell_fail "fill: generation $g" "$log"; return; }
	done
	AGED_NEXT_GEN=$(( AGED_GENS + 1 ))
	for k in $(seq 1 10); do
		[ "$(aged_util)" -lt "$AGED_FILL" ] || break
		aged_files "$CELL_MNT/cold/$k" $(( want * 2 / 5 / 10 )) "$log" ||
			{ cell_fail "fill: cold set" "$log"; return; }
	done
	AGED_UTIL=$(aged_util)
	df -B1 "$CELL_MNT" >>"$log"
	echo "fill: planned $(( want >> 20 )) MiB of $(( total >> 20 )) MiB; reached $AGED_UTIL % used" >>"$log"
}

# aged_window DIR N [TAG]: one aging window; TAG=measure keeps fio's JSON.
aged_window() {
	local dir=$1 n=$2 log=$1/age.log ow= cr=
	if [ "${3:-}" = measure ]; then ow=$dir/measure-overwrite.fio.json cr=$dir/measure-create.fio.json; fi
	aged_overwrite "$log" "$ow" || { cell_fail "window $n: overwrite" "$log"; return; }
	rm -rf "$CELL_MNT/gen-$(( AGED_NEXT_GEN - AGED_GENS ))"
	aged_files "$CELL_MNT/gen-$AGED_NEXT_GEN" "$AGED_GEN_BYTES" "$log" "$cr" ||
		{ cell_fail "window $n: new generation" "$log"; return; }
	AGED_NEXT_GEN=$(( AGED_NEXT_GEN + 1 ))
	if [ "$CELL_DISCARD" = fstrim ]; then
		fstrim "$CELL_MNT" >>"$log" 2>&1 || { cell_fail "window $n: fstrim" "$log"; return; }
	fi
}

# aged_wa BEFORE AFTER: device WA (flash bytes / host bytes) between snapshots.
aged_wa() {
	jq -n --slurpfile b "$1" --slurpfile a "$2" '
	($a[0].host_write_sectors - $b[0].host_write_sectors) as $h
	| if $h > 0 then ($a[0].page_programs - $b[0].page_programs) * $a[0].page_size / ($h * 512)
	  else 0 end'
}

# aged_steady WA...: 0 when the last 3 are within AGED_TOL % of their mean.
aged_steady() {
	[ $# -ge 3 ] || return 1
	local n=$# a b c
	a=${!n}; n=$((n - 1)); b=${!n}; n=$((n - 1)); c=${!n}
	awk -v a="$a" -v b="$b" -v c="$c" -v t="$AGED_TOL" 'BEGIN {
		m = (a + b + c) / 3; if (m <= 0) exit 1
		for (i = 0; i < 3; i++) { x = (i == 0 ? a : i == 1 ? b : c)
			if (x > m * (1 + t / 100) || x < m * (1 - t / 100)) exit 1 }
		exit 0 }'
}

# ---- pinned aged states (--medium rbd://POOL) ----------------------------
# An aged cell's image is snapshotted (rbd snap create POOL/aged-KEY@aged)
# after its aging windows, before the measured one, with the server stopped
# (a clean checkpoint); what the run knows about it (the window log, the
# counter snapshots, the variables below) goes into the RADOS object
# aged-KEY.state.  A later run rolls the image back and measures at once.

AGED_PIN_VARS="AGED_NEXT_GEN AGED_DB_FILES AGED_DB_BYTES AGED_GEN_BYTES AGED_OW_BYTES
AGED_UTIL AGED_SEED AGED_RS CELL_ALIGNED CELL_PREDICTED P_STEADY P_REACHED
P_WINDOWS P_WAS P_AGE_S P_CELL_S P_DATE"

aged_rbd() { rbd ${AGED_CONF:+-c "$AGED_CONF"} "$@"; }
aged_rados() { rados ${AGED_CONF:+-c "$AGED_CONF"} -p "$AGED_POOL" "$@"; }

# aged_key CELL: the pinned state's name for this cell and these settings.
aged_key() {
	printf 'v1|%s|%s|%s|%s|%s|%s|%s|%s' "$1" "$OPT_SIZE" "$AGED_OP" "$AGED_FILL" "$AGED_TOL" \
		"$AGED_MINW" "$AGED_MAXW" "$AGED_WLT" | cksum | cut -d' ' -f1
}

# aged_pinned: the cell's image has its @aged snapshot and its state object.
aged_pinned() {
	aged_rbd snap ls "$AGED_POOL/$AGED_IMGNAME" 2>/dev/null | awk '{ print $2 }' | grep -qx aged &&
		aged_rados stat "$AGED_IMGNAME.state" >/dev/null 2>&1
}

# aged_serve_mount DIR: serve CELL_IMG, find its partition, mount it (the
# cell's image holds its partition table and filesystem already).
aged_serve_mount() {
	local dir=$1 log=$1/setup.log
	CELL_SERVED=1
	# shellcheck disable=SC2086
	"$UBLK_FLASH" serve "$CELL_IMG" ${OPT_FRONTEND:+--frontend "$OPT_FRONTEND"} \
		${CELL_SERVE_ARGS:-} >"$dir/serve.out" 2>>"$log"
	CELL_DEV=$(grep -m1 '^/dev/' "$dir/serve.out")
	[ -n "$CELL_DEV" ] && cell_wait_node "$CELL_DEV" || { cell_fail "ublk-flash serve" "$log"; return; }
	CELL_PART=$(cell_partname "$CELL_DEV")
	if ! cell_wait_node "$CELL_PART" 20; then
		partx -a "$CELL_DEV" >>"$log" 2>&1
		cell_wait_node "$CELL_PART" 100 || { cell_fail "partition node $CELL_PART" "$log"; return; }
	fi
	aged_mount "$dir"
}

# aged_pin DIR: stop the aged cell, snapshot its image, keep its state; then
# serve and mount it again, as a later run starts (both measure right after
# a restart).
aged_pin() {
	local dir=$1 log=$1/setup.log f
	cell_sync "$CELL_MNT"
	umount "$CELL_MNT" >>"$log" 2>&1 || { cell_fail "umount before the snapshot" "$log"; return; }
	"$UBLK_FLASH" stop "$CELL_DEV" >>"$log" 2>&1 || { cell_fail "stop before the snapshot" "$log"; return; }
	CELL_SERVED=0 CELL_DEV=
	aged_rbd snap rm --no-progress "$AGED_POOL/$AGED_IMGNAME@aged" >/dev/null 2>&1
	aged_rbd snap create --no-progress "$AGED_POOL/$AGED_IMGNAME@aged" >>"$log" 2>&1 ||
		{ cell_fail "rbd snap create" "$log"; return; }
	P_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	for f in $AGED_PIN_VARS; do printf '%s=%q\n' "$f" "${!f}"; done >"$dir/pinned.env"
	tar -C "$dir" -czf "$dir/pinned.tgz" pinned.env windows.tsv filled.json info.json check.json \
		$(cd "$dir" && ls w*.json) ||
		{ cell_fail "pinned state" "$log"; return; }
	aged_rados put "$AGED_IMGNAME.state" "$dir/pinned.tgz" >>"$log" 2>&1 ||
		{ cell_fail "rados put $AGED_IMGNAME.state" "$log"; return; }
	echo "pinned: $AGED_POOL/$AGED_IMGNAME@aged" >>"$log"
	aged_serve_mount "$dir"
}

# aged_cell_pinned DIR: the cell from its pinned aged state: roll back,
# measure one window, record.
aged_cell_pinned() {
	local dir=$1 log=$1/setup.log t0=$SECONDS f
	: >"$log"
	: >"$dir/age.log"
	cmp_progress "$CELL_LABEL: from its pinned aged state ($AGED_POOL/$AGED_IMGNAME@aged)"
	aged_rados get "$AGED_IMGNAME.state" "$dir/pinned.tgz" >>"$log" 2>&1 &&
		tar -C "$dir" -xzf "$dir/pinned.tgz" || { cell_fail "pinned state" "$log"; return 1; }
	# shellcheck disable=SC1091
	. "$dir/pinned.env"
	aged_rbd snap rollback --no-progress "$AGED_POOL/$AGED_IMGNAME@aged" >>"$log" 2>&1 ||
		{ cell_fail "rbd snap rollback" "$log"; return 1; }
	aged_serve_mount "$dir" || return 1
	# the baseline of the measured window: after this restart's own writes
	aged_snap "$dir/w$P_WINDOWS.json" || { cell_fail "stats" "$dir/w$P_WINDOWS.json.err"; return 1; }
	AGED_PINNED=used
	aged_measure "$dir" "$t0" "$P_STEADY" "$P_REACHED" "$P_WINDOWS" "$P_WAS" "$P_AGE_S" || return 1
	echo "cell $CELL_NAME: from the state pinned $P_DATE in $((SECONDS - t0)) s (aging it had taken $P_CELL_S s)" \
		>>"$OUT/pinned.txt"
}

# aged_cell DIR: the whole cell; appends a record to aged.jsonl.
aged_cell() {
	local dir=$1 w was=() wa steady=0 reached=0 t0=$SECONDS t_age
	AGED_PINNED=
	if [ -n "$AGED_POOL" ] && [ "$AGED_REAGE" = 0 ] && aged_pinned; then
		aged_cell_pinned "$dir"
		return
	fi
	: >"$dir/setup.log"
	: >"$dir/age.log"
	printf 'window\thost_mib\tflash_mib\tgc_relocations\tdevice_wa\n' >"$dir/windows.tsv"
	cell_setup "$dir" || return 1
	aged_precondition "$dir/setup.log" || { cell_fail "precondition" "$dir/setup.log"; return 1; }
	aged_mkfs_mount "$dir" || return 1
	cmp_progress "$CELL_LABEL: fill to $AGED_FILL %"
	aged_fill "$dir" || return 1
	aged_snap "$dir/filled.json" || { cell_fail "stats" "$dir/filled.json.err"; return 1; }
	cp "$dir/filled.json" "$dir/w0.json"
	t_age=$SECONDS
	for w in $(seq 1 "$AGED_MAXW"); do
		cmp_progress "$CELL_LABEL: aging window $w/$AGED_MAXW${was:+ (WA ${was[*]})}"
		aged_window "$dir" "$w" || return 1
		aged_snap "$dir/w$w.json" || { cell_fail "stats" "$dir/w$w.json.err"; return 1; }
		wa=$(aged_wa "$dir/w$((w - 1)).json" "$dir/w$w.json")
		was+=("$(printf '%.2f' "$wa")")
		jq -r -n --slurpfile b "$dir/w$((w - 1)).json" --slurpfile a "$dir/w$w.json" --arg w "$w" --arg wa "$wa" '
			[$w, (($a[0].host_write_sectors - $b[0].host_write_sectors) / 2048 | . * 10 | round / 10),
			 (($a[0].page_programs - $b[0].page_programs) * $a[0].page_size / 1048576 | . * 10 | round / 10),
			 ($a[0].gc_relocations - $b[0].gc_relocations), ($wa | tonumber | . * 1000 | round / 1000)] | @tsv' \
			>>"$dir/windows.tsv"
		# the first window still overwrites the fill's fresh layout
		if [ "$w" -ge "$AGED_MINW" ] && [ "$w" -ge 4 ] && aged_steady "${was[@]:1}"; then steady=1 reached=$w; break; fi
	done
	t_age=$((SECONDS - t_age))
	if [ -n "$AGED_POOL" ]; then
		P_STEADY=$steady P_REACHED=$reached P_WINDOWS=${#was[@]} P_WAS="${was[*]}" P_AGE_S=$t_age
		P_CELL_S=$((SECONDS - t0))
		cmp_progress "$CELL_LABEL: pinning the aged state"
		aged_pin "$dir" || return 1
		AGED_PINNED=made
		# the baseline of the measured window: after the restart's writes
		aged_snap "$dir/w${#was[@]}.json" || { cell_fail "stats" "$dir/w${#was[@]}.json.err"; return 1; }
	fi
	aged_measure "$dir" "$t0" "$steady" "$reached" "${#was[@]}" "${was[*]}" "$t_age"
}

# aged_measure DIR T0 STEADY REACHED WINDOWS "WA..." AGE_S: the measured
# window, its counters, the cell's record (the cell began at T0).
aged_measure() {
	local dir=$1 tm=$SECONDS
	cmp_progress "$CELL_LABEL: measuring"
	aged_window "$dir" measure measure || return 1
	tm=$((SECONDS - tm))
	aged_snap "$dir/measured.json" || { cell_fail "stats" "$dir/measured.json.err"; return 1; }
	aged_record "$dir" "$3" "$4" "$5" "$6" "$7" "$tm" "$((SECONDS - $2))"
}

# aged_record DIR STEADY REACHED WINDOWS "WA..." AGE_S MEASURE_S CELL_S
aged_record() {
	local dir=$1 fo fc
	fo=$(sed -n '/^{/,$p' "$dir/measure-overwrite.fio.json")
	fc=$(sed -n '/^{/,$p' "$dir/measure-create.fio.json")
	jq -c -n --slurpfile b "$dir/w$4.json" --slurpfile a "$dir/measured.json" \
		--slurpfile f0 "$dir/filled.json" \
		--argjson fo "${fo:-null}" --argjson fc "${fc:-null}" \
		--arg cell "$CELL_NAME" --arg fs "$CELL_FS" --arg mode "$CELL_MODE" \
		--argjson start "$CELL_START" --arg discard "$CELL_DISCARD" --arg wl "$CELL_WL" \
		--argjson wlt "$CELL_WLT" --arg aligned "$CELL_ALIGNED" --arg predicted "$CELL_PREDICTED" \
		--argjson steady "$2" --argjson reached "$3" --argjson windows "$4" --arg was "$5" \
		--argjson age_s "$6" --argjson measure_s "$7" --argjson cell_s "$8" --argjson tol "$AGED_TOL" \
		--argjson util "$AGED_UTIL" --arg pinned "${AGED_PINNED:-}" '
	def d(k): (($a[0][k] // 0) - ($b[0][k] // 0));
	def per(x; y): if (y // 0) > 0 then x / y else null end;
	def jobsum(f; k): [(f.jobs // [])[] | .write[k] // 0] | add // 0;
	(jobsum($fo; "io_bytes") + jobsum($fc; "io_bytes")) as $app
	| (d("host_write_sectors") * 512) as $host
	| (d("page_programs") * $a[0].page_size) as $flash
	| {
	  cell: $cell, fs: $fs, mode: $mode, start: $start, discard: $discard, wl: $wl,
	  wl_threshold: $wlt, alignpart_aligned: ($aligned == "yes"),
	  predicted_alignment_offset: ($predicted | tonumber? // null),
	  fill_util_pct: $util, steady: ($steady == 1), steady_window: (if $steady == 1 then $reached else null end),
	  aging_windows: $windows, tolerance_pct: $tol,
	  window_device_wa: ($was | split(" ") | map(tonumber)),
	  app_bytes: $app, host_bytes: $host, flash_bytes: $flash,
	  host_discard_bytes: (d("host_discard_sectors") * 512),
	  page_programs: d("page_programs"), programs_host: d("programs_host"),
	  programs_gc: d("programs_gc"), programs_ckpt: d("programs_ckpt"),
	  gc_relocations: d("gc_relocations"), wl_relocations: d("wl_relocations"),
	  block_erases: d("block_erases"), rmw_straddle: d("rmw_straddle"),
	  fs_wa: per($host; $app), device_wa: per($flash; $host), total_wa: per($flash; $app),
	  erase_min: $a[0].erase_min, erase_max: $a[0].erase_max,
	  erase_mean: $a[0].erase_mean, erase_stddev: $a[0].erase_stddev,
	  erase_hist_base: $a[0].erase_hist_base, erase_hist_width: $a[0].erase_hist_width,
	  erase_hist: $a[0].erase_hist, wear_map_group: $a[0].wear_map_group,
	  wear_map: $a[0].wear_map,
	  aging_host_bytes: (($a[0].host_write_sectors - $f0[0].host_write_sectors) * 512),
	  aging_gc_relocations: ($a[0].gc_relocations - $f0[0].gc_relocations),
	  overwrite_bw_mib_s: (($fo.jobs[0].write.bw // null) | if . == null then null else . / 1024 end),
	  overwrite_iops: ($fo.jobs[0].write.iops // null),
	  create_bw_mib_s: ([($fc.jobs // [])[] | .write.bw // 0] | add | if . == null then null else . / 1024 end),
	  measure_s: $measure_s, aging_s: $age_s, cell_s: $cell_s,
	  pinned_state: (if $pinned == "" then null else $pinned end)
	}' >>"$OUT/aged.jsonl"
}

AGED_ROW_FMT='%-6s %-4s %5s %-6s %-3s | %-10s | %8s %8s %8s %8s %7s | %6s %6s %6s | %4s %4s %6s %5s | %6s\n'

aged_header() {
	# shellcheck disable=SC2059
	printf "$AGED_ROW_FMT" fs mode start disc WL steady "app MiB" "host MiB" "flashMiB" "GC rel" erases \
		"fsWA" "devWA" "WA" emin emax emean sd "MiB/s"
}

aged_row() {
	local line
	line=$(tail -n 1 "$OUT/aged.jsonl" | jq -r '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	[.fs, .mode, (.start | tostring), .discard, .wl,
	 (if .steady then "yes (w\(.steady_window))" else "no (\(.aging_windows))" end),
	 (.app_bytes / 1048576 | f(1)), (.host_bytes / 1048576 | f(1)), (.flash_bytes / 1048576 | f(1)),
	 (.gc_relocations | tostring), (.block_erases | tostring),
	 (.fs_wa | f(2)), (.device_wa | f(2)), (.total_wa | f(2)),
	 (.erase_min | tostring), (.erase_max | tostring), (.erase_mean | f(1)), (.erase_stddev | f(1)),
	 (.overwrite_bw_mib_s | f(1))] | @tsv')
	local IFS=$'\t'
	cmp_progress_clear
	# shellcheck disable=SC2086,SC2059
	printf "$AGED_ROW_FMT" $line
}

# aged_json_csv NAME META: OUT/NAME.json (meta + results) and OUT/NAME.csv (arrays
# as ;-joined) from OUT/NAME.jsonl.
aged_json_csv() {
	jq -s --argjson meta "$2" '{meta: $meta, results: .}' "$OUT/$1.jsonl" >"$OUT/$1.json"
	jq -r -s '(.[0] | keys_unsorted) as $k | ($k | @csv),
		(.[] | [.[$k[]] | if type == "array" then map(tostring) | join(";") else . end] | @csv)' \
		"$OUT/$1.jsonl" >"$OUT/$1.csv"
}

# aged_finish META: aged.json, aged.csv (arrays as ;-joined), aged-table.md.
aged_finish() {
	aged_json_csv aged "$1"
	jq -r -s '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	"| fs | mode | start | alignpart | discard | static WL | steady (window) | app MiB | host MiB | flash MiB | GC relocations | erases | fs WA | device WA | total WA | erase min / max / mean / sd | overwrite MiB/s |",
	"|---|---|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
	(.[] | "| \(.fs) | \(.mode) | \(.start) | \(if .alignpart_aligned then "aligned" else "**misaligned**" end) | \(.discard) | \(.wl) | \(if .steady then "yes (\(.steady_window))" else "**no** (\(.aging_windows))" end) | \(.app_bytes / 1048576 | f(1)) | \(.host_bytes / 1048576 | f(1)) | \(.flash_bytes / 1048576 | f(1)) | \(.gc_relocations) | \(.block_erases) | \(.fs_wa | f(2)) | \(.device_wa | f(2)) | \(.total_wa | f(2)) | \(.erase_min) / \(.erase_max) / \(.erase_mean | f(1)) / \(.erase_stddev | f(1)) | \(.overwrite_bw_mib_s | f(1)) |")
	' "$OUT/aged.jsonl" >"$OUT/aged-table.md"
}

# aged_summary: the relations the docs discuss, from the records.
aged_summary() {
	jq -r -s '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	def cell(fs; mode; start; d; wl): first(.[] | select(.fs == fs and .mode == mode and .start == start and .discard == d and .wl == wl));
	. as $r
	| "Least flash per application byte (total WA, discard none, WL off, aligned):",
	  ([$r[] | select(.discard == "none" and .wl == "off" and .alignpart_aligned)] | sort_by(.total_wa)[]
	   | "  \(.fs) \(.mode)@\(.start): total WA \(.total_wa | f(2)) = fs WA \(.fs_wa | f(2)) x device WA \(.device_wa | f(2))"),
	  "What discard is worth (device WA, total WA; WL off):",
	  ([$r[] | select(.wl == "off")] | group_by("\(.fs) \(.mode) \(.start)")[] | select(length > 1)
	   | "  \(.[0].fs) \(.[0].mode)@\(.[0].start): " + (map("\(.discard) \(.device_wa | f(2)) / \(.total_wa | f(2))") | join(", "))),
	  "Static wear levelling (erase min/max/stddev, WL off vs on, discard none):",
	  ([$r[] | select(.discard == "none")] | group_by("\(.fs) \(.mode) \(.start)")[] | select(length > 1 and any(.[]; .wl == "on"))
	   | "  \(.[0].fs) \(.[0].mode)@\(.[0].start): " + (map("WL \(.wl): \(.erase_min)/\(.erase_max)/sd \(.erase_stddev | f(2)), wl_relocations \(.wl_relocations), device WA \(.device_wa | f(2))") | join("; "))),
	  "Alignment on the aged device (device WA, total WA; discard none, WL off):",
	  ([$r[] | select(.discard == "none" and .wl == "off")] | group_by("\(.fs) \(.mode)")[] | select(length > 1)
	   | "  \(.[0].fs) \(.[0].mode): " + (map("@\(.start) \(if .alignpart_aligned then "aligned" else "misaligned" end) \(.device_wa | f(2)) / \(.total_wa | f(2)), straddles \(.rmw_straddle)") | join("; ")))
	' "$OUT/aged.jsonl"
}

# aged_plots SUBTITLE: aged-wa, aged-erase-hist, aged-wear (.png, .svg).
aged_plots() {
	aged_plot_files "$OUT/aged.jsonl" "$OUT" \
		'"\(.fs) \(.mode)@\(.start) \(.discard)\(if .wl == "on" then " WL" else "" end)"' \
		'"\(.fs) \(.mode)@\(.start) \(.discard) WL \(.wl)"' "$1"
}

# aged_plot_files JSONL DIR SHORT LONG SUBTITLE [WHAT]: aged.gp's figures of the records of
# JSONL in DIR (aged-wa, aged-erase-hist, aged-wear .png/.svg); SHORT and LONG are jq
# strings naming a record (the WA bars', the panels' and wear strips').
aged_plot_files() {
	# WA split: one row per cell
	jq -r -s '.[] | "\"\('"$3"')\" \(.fs_wa) \(.device_wa) \(.total_wa)"' "$1" >"$2/aged-wa.dat"
	# erase-count histograms: per cell a block (bucket start, blocks), blank lines between
	jq -r -s '.[] | . as $c | (.erase_hist | to_entries[] | "\($c.erase_hist_base + .key * $c.erase_hist_width + ($c.erase_hist_width - 1) / 2) \(.value) \($c.erase_hist_width)"), "", ""' \
		"$1" >"$2/aged-hist.dat"
	# wear map: a matrix, one row per cell
	# (rows padded with NaN to the longest: cells of different media, as --zoned's)
	jq -r -s '(map(.wear_map | length) | max) as $n
		| .[] | .wear_map | map(tostring) + [range($n - length) | "NaN"] | join(" ")' "$1" >"$2/aged-wear.dat"
	jq -r -s ".[] | $4" "$1" >"$2/aged-labels.txt"
	local term n
	n=$(wc -l <"$2/aged-labels.txt")
	: >"$OUT/gnuplot.log"
	for term in png svg; do
		gnuplot -e "dir='$2'; term='$term'; ncells=$n; subtitle='$5'${6:+; what='$6'}" \
			"$CMP_HERE/aged.gp" >>"$OUT/gnuplot.log" 2>&1 || return 1
	done
}

# aged_main "$@": the --aged run.
aged_main() {
	aged_parse_args "$@"
	aged_check_tools
	AGED_SEED=${OCTANT_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 2147483647 + 1 ))}
	AGED_RS=$AGED_SEED
	AGED_GENS=10
	OUT=${OPT_OUT:-$BUILD/compare/aged-$(date -u +%Y%m%d-%H%M%S)}
	mkdir -p "$OUT" || cmp_die 3 "cannot create the output folder $OUT"
	OUT=$(cd "$OUT" && pwd)
	CMP_WORK=$OUT/images
	mkdir -p "$CMP_WORK"
	: >"$OUT/aged.jsonl"
	local cells=($AGED_CELLS) c i=0 failed=0 t_start=$SECONDS load0
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	cmp_say "make compare --aged: preset $AGED_PRESET, ${#cells[@]} cells, image $OPT_SIZE, OP $AGED_OP %, fill $AGED_FILL %, steady within $AGED_TOL % over 3 windows, at most $AGED_MAXW windows"
	cmp_say "seed $AGED_SEED (replay: OCTANT_SEED=$AGED_SEED)"
	cmp_say "output: $OUT"
	[ -n "$AGED_POOL" ] && cmp_say "media: RBD images in pool $AGED_POOL, aged states pinned as snapshots (@aged)$([ "$AGED_REAGE" = 1 ] && echo ", aged again")"
	aged_header
	for c in "${cells[@]}"; do
		i=$((i + 1))
		IFS=: read -r CELL_FS CELL_MODE CELL_START CELL_DISCARD CELL_WL <<<"$c"
		CELL_NAME=$CELL_FS-$CELL_MODE-$CELL_START-$CELL_DISCARD-wl$CELL_WL
		CELL_LABEL="[$i/${#cells[@]}] $CELL_NAME"
		CELL_IMG=$CMP_WORK/$CELL_NAME.img
		if [ -n "$AGED_POOL" ]; then
			AGED_IMGNAME=aged-$(aged_key "$c")
			CELL_IMG=rbd://$AGED_POOL/$AGED_IMGNAME$AGED_QUERY
		fi
		CELL_WLT=$([ "$CELL_WL" = on ] && echo "$AGED_WLT" || echo 1000000)
		CELL_CREATE_ARGS="--over-provision $AGED_OP"
		CELL_SERVE_ARGS="--wl-threshold $CELL_WLT"
		local dir=$OUT/cells/$CELL_NAME
		mkdir -p "$dir"
		cmp_progress "$CELL_LABEL: create, serve, precondition, partition, mkfs"
		if aged_cell "$dir" && aged_row; then
			cell_teardown "$dir" || { cell_cleanup; failed=$((failed + 1)); }
		else
			cell_cleanup; failed=$((failed + 1))
		fi
		[ "$OPT_KEEP" = 1 ] || rm -f "$CELL_IMG"
	done
	cmp_progress_clear
	[ -s "$OUT/pinned.txt" ] && cat "$OUT/pinned.txt"
	local meta
	meta=$(jq -n --arg cmd "$CMD_LINE" --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		--arg kernel "$(uname -r)" --argjson nproc "$(nproc)" --arg fio "$(fio --version)" \
		--arg ublk "$("$UBLK_FLASH" --version 2>/dev/null)" --arg preset "$AGED_PRESET" \
		--arg size "$OPT_SIZE" --argjson op "$AGED_OP" --argjson fill "$AGED_FILL" \
		--argjson tol "$AGED_TOL" --argjson maxw "$AGED_MAXW" --argjson minw "$AGED_MINW" --argjson seed "$AGED_SEED" \
		--argjson wlt "$AGED_WLT" --argjson elapsed "$((SECONDS - t_start))" \
		--arg load0 "$load0" --arg load1 "$(cut -d' ' -f1-3 /proc/loadavg)" \
		'{command: $cmd, date: $date, kernel: $kernel, nproc: $nproc, fio: $fio, ublk_flash: $ublk,
		  preset: $preset, image_size: $size, op_percent: $op, fill_percent: $fill,
		  tolerance_pct: $tol, min_windows: $minw, max_windows: $maxw, seed: $seed, wl_threshold_on: $wlt,
		  elapsed_s: $elapsed, loadavg_start: $load0, loadavg_end: $load1}')
	if [ -s "$OUT/aged.jsonl" ]; then
		aged_finish "$meta"
		cmp_say ""
		aged_summary | tee "$OUT/aged-summary.txt"
		if [ "$OPT_PLOT" = 1 ]; then
			aged_plots "$AGED_PRESET preset, $OPT_SIZE image, OP $AGED_OP %, $(date -u +%Y-%m-%d)" ||
				{ cmp_say "plots failed (see $OUT/gnuplot.log)"; failed=$((failed + 1)); }
		fi
	fi
	cmp_say "done in $((SECONDS - t_start))s (seed $AGED_SEED); in $OUT: aged.csv aged.json aged-table.md aged-summary.txt$([ "$OPT_PLOT" = 1 ] && echo " aged-wa.png aged-erase-hist.png aged-wear.png")"
	[ "$failed" -eq 0 ] || { cmp_say "$failed cell(s) failed; logs in $OUT/cells/*/"; exit 1; }
	exit 0
}
