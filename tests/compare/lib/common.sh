# shellcheck shell=bash
# make compare: option parsing, tool checks, messages.  Sourced by tests/compare/run.

CMP_ALL_FS="ext4 btrfs raw"
CMP_ALL_MODES="odd 1m"
CMP_ALL_WORKLOADS="randwrite smallfiles seqwrite direct direct-n"

cmp_usage() {
	cat <<'EOF'
Usage: tests/compare/run [OPTIONS]        (or: make compare ARGS="OPTIONS")
What partition alignment costs a filesystem on emulated 4K flash: for every cell of
{filesystem} x {flash mode} x {partition start}, a fresh ublk-flash image is served,
partitioned with alignpart, formatted, mounted and put through each workload; the
engine's counters (before/after each workload, after a sync) and fio's JSON give the cost.

Options (lists are comma-separated):
  --fs LIST          filesystems: ext4, btrfs, raw (no filesystem: the workload runs
                     on the partition device; only 'direct' applies)   [ext4,btrfs]
  --modes LIST       flash alignment modes: odd, 1m                   [odd,1m]
  --starts LIST      first partition start LBAs                       [63,2048]
  --workloads LIST   randwrite  fio 4K random writes, fsync every 32, over 8 files
                     smallfiles fio: small files created, written, fsynced, deleted
                     seqwrite   fio sequential 1 MiB O_DIRECT writes, fsync every 16
                     direct     fio 4K-aligned O_DIRECT random writes (file or partition)
                     direct-n   the same, but every 4K block of the fileset once, in the
                                order of --seed, no time limit: deterministic counters
                                                                      [randwrite,smallfiles,seqwrite]
  --size SIZE        image (disk) size, e.g. 768M, 2G                 [1G]
  --fileset SIZE     bytes of files a workload writes over            [size/8]
  --runtime SECS     seconds per workload                             [12]
  --frontend NAME    ublk-flash serve frontend: ublk, fuse            [ublk-flash's choice]
  --dm               serve with --dm (ublk + dm-linear carrying the odd shift); the
                     partition is mapped with alignpart map          [no]
  --seed N           fio's random seed for direct-n                   [1]
  --mount-opts OPTS  mount options for the filesystem, e.g. lazytime,commit=600
                     (with direct-n on ext4: no timestamp/commit-timer writes)  [none]
  --out DIR          output folder                                    [$BUILD/compare/<timestamp>]
  --no-plot          skip the gnuplot plots
  --keep             keep the flash images in DIR/images
  --aged             the aged-device comparison instead (its own options: --aged --help)
  --zoned, --vm      the log inside the disk or inside the filesystem: zoned images
                     beside the FTL (ublk ZONED, Linux 6.6+; --vm: in the 7.3 qemu
                     guest, results here; its own options: --zoned --help)
  --help             this text

Output in DIR: results.csv, results.json, table.md (Markdown), summary.txt, plot.png,
plot.svg, and per cell (cells/FS-MODE-START/) the raw engine counters,
`ublk-flash info`, `alignpart check` and fio JSON, and the logs.
Exit: 0 done, 1 a cell failed, 2 bad option, 3 missing tool or not root.
EOF
}

# cmp_die CODE MESSAGE: one line on stderr, exit CODE.
cmp_die() {
	local code=$1; shift
	cmp_progress_clear
	echo "compare: $*" >&2
	exit "$code"
}

cmp_usage_err() { cmp_die 2 "$* (try --help)"; }

# cmp_bytes SIZE: prints SIZE in bytes (suffixes K M G T, optional iB/B).
cmp_bytes() {
	local s=$1 n u
	[[ $s =~ ^([0-9]+)([KkMmGgTt]?)(i?B)?$ ]] || return 1
	n=${BASH_REMATCH[1]}; u=${BASH_REMATCH[2]}
	case $u in
	K|k) n=$((n << 10)) ;; M|m) n=$((n << 20)) ;;
	G|g) n=$((n << 30)) ;; T|t) n=$((n << 40)) ;;
	esac
	echo "$n"
}

# cmp_list_check NAME VALUE ALLOWED...: every comma item of VALUE is allowed.
cmp_list_check() {
	local name=$1 value=$2 item ok a; shift 2
	[ -n "$value" ] || cmp_usage_err "--$name: empty list"
	for item in ${value//,/ }; do
		ok=0
		for a in "$@"; do [ "$item" = "$a" ] && ok=1; done
		[ $ok = 1 ] || cmp_usage_err "--$name: unknown value '$item' (one of: $*)"
	done
}

# cmp_parse_args "$@": sets OPT_* globals; exits 2 on a bad option.
cmp_parse_args() {
	OPT_FS=ext4,btrfs OPT_MODES=odd,1m OPT_STARTS=63,2048
	OPT_WORKLOADS=randwrite,smallfiles,seqwrite OPT_SIZE=1G OPT_FILESET=
	OPT_RUNTIME=12 OPT_OUT= OPT_FRONTEND= OPT_PLOT=1 OPT_KEEP=0 OPT_DM=0 OPT_SEED=1
	OPT_MOUNT_OPTS=
	local opt val
	while [ $# -gt 0 ]; do
		opt=$1 val=
		case $opt in
		--*=*) val=${opt#*=}; opt=${opt%%=*} ;;
		esac
		case $opt in
		--fs|--modes|--starts|--workloads|--size|--fileset|--runtime|--out|--frontend|--seed|--mount-opts)
			if [[ $1 != *=* ]]; then
				[ $# -ge 2 ] || cmp_usage_err "$opt needs a value"
				val=$2; shift
			fi ;;
		--help|-h|--no-plot|--keep|--dm)
			[[ $1 == *=* ]] && cmp_usage_err "$opt takes no value" ;;
		*) cmp_usage_err "unknown option '$1'" ;;
		esac
		case $opt in
		--fs)        OPT_FS=$val ;;
		--modes)     OPT_MODES=$val ;;
		--starts)    OPT_STARTS=$val ;;
		--workloads) OPT_WORKLOADS=$val ;;
		--size)      OPT_SIZE=$val ;;
		--fileset)   OPT_FILESET=$val ;;
		--runtime)   OPT_RUNTIME=$val ;;
		--out)       OPT_OUT=$val ;;
		--frontend)  OPT_FRONTEND=$val ;;
		--no-plot)   OPT_PLOT=0 ;;
		--dm)        OPT_DM=1 ;;
		--seed)      OPT_SEED=$val ;;
		--mount-opts) OPT_MOUNT_OPTS=$val ;;
		--keep)      OPT_KEEP=1 ;;
		--help|-h)   cmp_usage; exit 0 ;;
		esac
		shift
	done
	# shellcheck disable=SC2086
	cmp_list_check fs "$OPT_FS" $CMP_ALL_FS
	# shellcheck disable=SC2086
	cmp_list_check modes "$OPT_MODES" $CMP_ALL_MODES
	# shellcheck disable=SC2086
	cmp_list_check workloads "$OPT_WORKLOADS" $CMP_ALL_WORKLOADS
	local s
	[ -n "$OPT_STARTS" ] || cmp_usage_err "--starts: empty list"
	for s in ${OPT_STARTS//,/ }; do
		[[ $s =~ ^[0-9]+$ ]] && [ "$s" -ge 1 ] ||
			cmp_usage_err "--starts: '$s' is not an LBA >= 1"
	done
	SIZE_BYTES=$(cmp_bytes "$OPT_SIZE") || cmp_usage_err "--size: bad size '$OPT_SIZE'"
	[ "$SIZE_BYTES" -ge $((64 << 20)) ] || cmp_usage_err "--size: at least 64M"
	if [ -n "$OPT_FILESET" ]; then
		FILESET_BYTES=$(cmp_bytes "$OPT_FILESET") ||
			cmp_usage_err "--fileset: bad size '$OPT_FILESET'"
		[ "$FILESET_BYTES" -ge $((1 << 20)) ] || cmp_usage_err "--fileset: at least 1M"
		[ "$FILESET_BYTES" -le $((SIZE_BYTES / 2)) ] ||
			cmp_usage_err "--fileset: at most half of --size"
	else
		FILESET_BYTES=$(( (SIZE_BYTES / 8) >> 20 << 20 ))
	fi
	[[ $OPT_RUNTIME =~ ^[0-9]+$ ]] && [ "$OPT_RUNTIME" -ge 1 ] ||
		cmp_usage_err "--runtime: '$OPT_RUNTIME' is not a number of seconds >= 1"
	[[ $OPT_SEED =~ ^[0-9]+$ ]] || cmp_usage_err "--seed: '$OPT_SEED' is not a number"
	[[ $OPT_MOUNT_OPTS =~ ^[A-Za-z0-9_=,.-]*$ ]] ||
		cmp_usage_err "--mount-opts: '$OPT_MOUNT_OPTS' is not a mount option list"
	[ "$OPT_DM" = 0 ] || [ "$OPT_FRONTEND" = ublk ] || cmp_usage_err "--dm needs --frontend ublk"
	case $OPT_FRONTEND in ""|ublk|fuse) ;;
	*) cmp_usage_err "--frontend: unknown value '$OPT_FRONTEND' (one of: ublk fuse)" ;;
	esac
}

# cmp_need CMD PACKAGE: exit 3 naming the Debian package when CMD is missing.
cmp_need() {
	command -v "$1" >/dev/null 2>&1 ||
		cmp_die 3 "missing tool '$1' (Debian package $2: apt-get install $2, or run make compare)"
}

# cmp_need_octant PATH SUBCOMMAND...: an octant tool, built and able to do SUBCOMMAND.
cmp_need_octant() {
	local path=$1 sub
	shift
	[ -x "$path" ] ||
		cmp_die 3 "missing tool '$path' (not built: make BUILD=${BUILD#"$TOP"/} all)"
	for sub in "$@"; do
		"$path" "$sub" --help >/dev/null 2>&1 ||
			cmp_die 3 "missing tool: '$(basename "$path") $sub' is not ready in $path ('$(basename "$path") $sub --help' fails)"
	done
}

cmp_check_tools() {
	cmp_need jq jq
	cmp_need fio fio
	[ "$OPT_PLOT" = 1 ] && cmp_need gnuplot gnuplot-nox
	cmp_need losetup mount
	cmp_need mountpoint util-linux
	cmp_need blockdev util-linux
	cmp_need partx util-linux
	[[ ,$OPT_FS, == *,ext4,* ]] && cmp_need mkfs.ext4 e2fsprogs
	[[ ,$OPT_FS, == *,btrfs,* ]] && cmp_need mkfs.btrfs btrfs-progs
	[ "$OPT_FRONTEND" = ublk ] || [ -e /dev/ublk-control ] || cmp_need fusermount3 fuse3
	cmp_need_octant "$UBLK_FLASH" create info serve stats stop
	cmp_need_octant "$ALIGNPART" create check
	[ "$(id -u)" -eq 0 ] || cmp_die 3 "needs root (it serves block devices, partitions and mounts them)"
}

# ---- progress line ----------------------------------------------------------
if [ -t 2 ]; then CMP_TTY=1; else CMP_TTY=0; fi
CMP_PROGRESS_SHOWN=0

# cmp_progress TEXT: a transient status line on a terminal, a plain line otherwise.
cmp_progress() {
	if [ "$CMP_TTY" = 1 ]; then
		printf '\r\e[K%s' "$*" >&2
		CMP_PROGRESS_SHOWN=1
	else
		printf '%s\n' "$*" >&2
	fi
}

cmp_progress_clear() {
	if [ "$CMP_PROGRESS_SHOWN" = 1 ]; then
		printf '\r\e[K' >&2
		CMP_PROGRESS_SHOWN=0
	fi
}

# cmp_say TEXT: a permanent line on stdout (clears the progress line first).
cmp_say() {
	cmp_progress_clear
	printf '%s\n' "$*"
}
