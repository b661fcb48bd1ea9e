# shellcheck shell=bash
# `alignpart predict` against the real tools, shared by tests/vm/guest/align-matrix.sh
# (scsi_debug and dm-stripe disks in the guest) and tests/cli/alignpart-predict.bats (image
# files and loop devices on the host).  Named .bash so guest-all.sh does not run it as a test.
#
#   pv_verify LABEL TARGET [ALIGNPART ARGS...]
#       runs `alignpart predict TARGET ARGS --json`, then every command it predicts on a
#       fresh TARGET: the first partition's start, the exit status, what the tool says (each
#       " ... "-separated part of the prediction's `says` in its output), for mkfs the stripe
#       unit / width and block size (mkfs.xfs -N, mke2fs -n -v: nothing written), for a block
#       device the kernel's alignment_offset of the partition (sysfs); then each `avoid`
#       command: it must put the partition at alignpart's start, silently.
#   Results go through t_ok DESC / t_fail DESC DETAIL... (guest-lib.sh's, or the caller's).
#   PV_FRESH: a function that makes TARGET blank again (default: pv_fresh_default).
#   PV_AFTER: a function run after each command (dm: remove parted's partition mappings).
#   PV_NO_KOFF=1: no partition offsets to compare (a dm device takes no partitions).
#   PV_AP: the alignpart binary.  PV_JSON: the last predict --json output.
# Under TCG every program started costs ~0.5 s: one jq per target, sysfs read with $(<).

PV_AP=${PV_AP:-${ALIGNPART:-/octant/build/alignpart}}

# pv_fresh_default TARGET: a regular file is recreated sparse at its size; a block device
# loses every signature (tables at both ends; wipefs makes the kernel re-read it).
pv_fresh_default() {
	local t=$1 size
	if [ -f "$t" ]; then
		size=$(stat -c %s "$t") && rm -f "$t" && truncate -s "$size" "$t"
	else
		wipefs -a -q "$t" >/dev/null 2>&1
		true
	fi
}

# pv_sysfs_part TARGET: the sysfs folder of the kernel's partition 1 of block device TARGET
# ("" if none; a kernel without the DOS/EFI parsers, the host's, gets it from partx: BLKPG).
pv_sysfs_part() {
	local b p
	[ -b "$1" ] || return 0
	b=$1
	[ -L "$b" ] && b=$(readlink -f "$b")
	b=${b##*/}
	for p in /sys/class/block/"$b"/"$b"1 /sys/class/block/"$b"/"$b"p1; do
		[ -e "$p/start" ] && { echo "$p"; return 0; }
	done
	partx -u "$1" >/dev/null 2>&1 || return 0
	for p in /sys/class/block/"$b"/"$b"1 /sys/class/block/"$b"/"$b"p1; do
		[ -e "$p/start" ] && { echo "$p"; return 0; }
	done
}

# pv_start TARGET: the first partition's start in TARGET's sectors ("" if none).
pv_start() {
	local p l
	p=$(pv_sysfs_part "$1")
	if [ -n "$p" ]; then       # sysfs counts 512-byte sectors
		l=${p%/*}
		l=$(<"$l/queue/logical_block_size")
		echo $(( $(<"$p/start") * 512 / l ))
		return 0
	fi
	[[ "$(sfdisk -d "$1" 2>/dev/null)" =~ start=\ *([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}

# pv_part_offset TARGET: the kernel's alignment_offset of partition 1 ("" if none).
pv_part_offset() {
	local p
	p=$(pv_sysfs_part "$1")
	[ -n "$p" ] && echo "$(<"$p/alignment_offset")"
}

# pv_says OUTPUT SAYS: every " ... "-separated part of SAYS occurs in OUTPUT (lines joined).
pv_says() {
	local out=${1//$'\n'/ } part rest=${2#... }
	while [ -n "$rest" ]; do
		part=${rest%% ... *}
		[ "$part" = "$rest" ] && rest='' || rest=${rest#* ... }
		[ -z "$part" ] || [[ "$out" == *"$part"* ]] || return 1
	done
}

# pv_run CMD: run a predicted command the way a user would type it; output and status in
# PV_OUT / PV_RC.
pv_run() {
	PV_OUT=$( (eval "$1") 2>&1 </dev/null )
	PV_RC=$?
	if [ -n "${PV_AFTER:-}" ]; then "$PV_AFTER"; fi
	return 0
}

# pv_mkfs OUTPUT: "BLOCKSIZE STRIPE_UNIT STRIPE_WIDTH" (bytes) from mkfs.xfs -N or
# mke2fs -n -v output.
pv_mkfs() {
	local o=${1//$'\n'/ } bs
	if [[ "$o" =~ bsize=([0-9]+)\ +blocks= ]]; then           # mkfs.xfs: data section
		bs=${BASH_REMATCH[1]}
		[[ "$o" =~ sunit=([0-9]+)\ +swidth=([0-9]+)\ blks ]] &&
			echo "$bs $((BASH_REMATCH[1] * bs)) $((BASH_REMATCH[2] * bs))"
	elif [[ "$o" =~ Block\ size=([0-9]+) ]]; then              # mke2fs
		bs=${BASH_REMATCH[1]}
		[[ "$o" =~ Stride=([0-9]+)\ blocks,\ Stripe\ width=([0-9]+)\ blocks ]] &&
			echo "$bs $((BASH_REMATCH[1] * bs)) $((BASH_REMATCH[2] * bs))"
	fi
}

pv_verify() {
	local label=$1 t=$2 fresh=${PV_FRESH:-pv_fresh_default} rows=() row
	local tool lab cmd start exit says avoid koff su sw bs apstart apkoff got want d
	local -A tried=() ap=()
	local -
	set +e                  # under bats' errexit too: every result goes to t_ok / t_fail
	shift 2
	PV_JSON=$("$PV_AP" predict "$t" "$@" --json 2>/dev/null)     # notes go to stderr
	mapfile -t rows < <(jq -r '.predictions[] | [.tool, (.label // "-"), .command,
		(.start_sector // "" | tostring), (.exit_status | tostring), (.says // ""),
		(.avoid // ""), (.kernel_offset // "" | tostring),
		(.stripe_unit_bytes // "" | tostring), (.stripe_width_bytes // "" | tostring),
		(.block_size_bytes // "" | tostring)] | join("\u001f")' <<<"$PV_JSON" 2>/dev/null)
	if [ ${#rows[@]} -eq 0 ]; then
		t_fail "$label: alignpart predict --json" "$("$PV_AP" predict "$t" "$@" --json 2>&1)"
		return 0
	fi
	for row in "${rows[@]}"; do
		IFS=$'\x1f' read -r tool lab cmd start exit says avoid koff su sw bs <<<"$row"
		[ "$tool" = alignpart ] && ap[$lab]="$start $koff"
	done
	for row in "${rows[@]}"; do
		IFS=$'\x1f' read -r tool lab cmd start exit says avoid koff su sw bs <<<"$row"
		[ "$tool" = alignpart ] && continue
		d="$label: $tool $lab"
		# sfdisk and parted write a new label over whatever is there (and tell the
		# kernel); sgdisk would add to a GPT, mkfs would see a table: wipe first
		case "$tool" in sfdisk|parted*) ;; *) "$fresh" "$t" ;; esac
		case "$tool" in
		mkfs.xfs|mke2fs)
			# the same mkfs, writing nothing
			if [ "$tool" = mke2fs ]; then
				pv_run "${cmd/#mke2fs /mke2fs -n -v }"
			else
				pv_run "${cmd/#mkfs.xfs /mkfs.xfs -N }"
			fi
			got="exit $PV_RC" want="exit $exit"
			if [ "$exit" = 0 ]; then
				got+=" $(pv_mkfs "$PV_OUT")"
				want+=" $bs $su $sw"
			fi
			;;
		*)
			pv_run "$cmd"
			got="exit $PV_RC start $(pv_start "$t")"
			want="exit $exit start $start"
			if [ -b "$t" ] && [ -z "${PV_NO_KOFF:-}" ] && [ -n "$start" ] && [ "$exit" = 0 ]; then
				got+=" kernel_offset $(pv_part_offset "$t")"
				want+=" kernel_offset $koff"
			fi
			;;
		esac
		if [ "$got" != "$want" ]; then
			t_fail "$d: $cmd" "predicted: $want" "real:      $got" "output: $PV_OUT"
		elif ! pv_says "$PV_OUT" "$says"; then
			t_fail "$d: $cmd: says what was predicted" "predicted: $says" "output: $PV_OUT"
		else
			t_ok "$d: $cmd -> $want${says:+ (says: ${says:0:60})}"
		fi
		# the way around it puts the partition where alignpart would, silently
		case "$tool" in mkfs.xfs|mke2fs) continue ;; esac
		[ -n "$avoid" ] && [ -z "${tried[$avoid]:-}" ] || continue
		tried[$avoid]=1         # parted 1MiB and 0% share theirs: once is enough
		read -r apstart apkoff <<<"${ap[$lab]}"
		"$fresh" "$t"
		pv_run "$avoid"
		got="exit $PV_RC start $(pv_start "$t")"
		want="exit 0 start $apstart"
		if [ -b "$t" ] && [ -z "${PV_NO_KOFF:-}" ]; then
			got+=" kernel_offset $(pv_part_offset "$t")"
			want+=" kernel_offset $apkoff"
		fi
		if [ "$got" != "$want" ] || [[ "$PV_OUT" == *"not properly aligned"* ]]; then
			t_fail "$d: avoid: $avoid" "want: $want" "real: $got" "output: $PV_OUT"
		else
			t_ok "$d: avoid: $avoid -> $got"
		fi
	done
	"$fresh" "$t"
}
