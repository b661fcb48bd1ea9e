# shellcheck shell=bash
# make compare: one cell = one fresh image, served, partitioned, formatted,
# mounted, put through each workload.  Sourced by tests/compare/run.
#
# State of the cell being run (for the cleanup trap): CELL_IMG CELL_DEV CELL_MNT.

CELL_IMG= CELL_DEV= CELL_MNT= CELL_SERVED=0 CELL_MAPPED=0

# cell_cleanup: undo whatever the current cell set up (safe to call twice).
cell_cleanup() {
	if [ -n "$CELL_MNT" ] && mountpoint -q "$CELL_MNT" 2>/dev/null; then
		umount "$CELL_MNT" 2>/dev/null || umount -l "$CELL_MNT" 2>/dev/null ||
			echo "compare: could not unmount $CELL_MNT" >&2
	fi
	[ -n "$CELL_MNT" ] && rmdir "$CELL_MNT" 2>/dev/null
	[ "$CELL_MAPPED" = 1 ] && "$ALIGNPART" unmap "$CELL_DEV" >/dev/null 2>&1
	CELL_MAPPED=0
	if [ "$CELL_SERVED" = 1 ] && [ -z "$CELL_DEV" ]; then
		"$UBLK_FLASH" stop "$CELL_IMG" >/dev/null 2>&1
	elif [ "$CELL_SERVED" = 1 ]; then
		"$UBLK_FLASH" stop "$CELL_DEV" >/dev/null 2>&1 ||
			"$UBLK_FLASH" stop "$CELL_IMG" >/dev/null 2>&1 ||
			echo "compare: could not stop the server of $CELL_IMG ($CELL_DEV)" >&2
	fi
	CELL_SERVED=0 CELL_DEV= CELL_MNT=
}

# cell_fail WHAT LOGFILE: report a failed step of the cell (with the log's last lines).
cell_fail() {
	cmp_say "  FAILED: $CELL_NAME: $1"
	if [ -s "$2" ]; then
		# the error lines first (fio's "err=" / "error", a tool's message), which the
		# closing summary of a long log pushes out of its last lines
		grep -m 4 -iE 'err=|error|no space|denied|failed' "$2" | sed 's/^/    ! /'
		tail -n 5 "$2" | sed 's/^/    | /'
	fi
	return 1
}

# cell_partname DEV: the first partition's node (/dev/loop3 -> /dev/loop3p1).
cell_partname() {
	case $1 in
	*[0-9]) echo "${1}p1" ;;
	*) echo "${1}1" ;;
	esac
}

# cell_wait_node PATH [TENTHS]: wait (default 10 s) for a block device node.
cell_wait_node() {
	local i
	for i in $(seq "${2:-100}"); do
		[ -b "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# cell_part_starts_at PART LBA: the kernel's partition PART starts at LBA.
cell_part_starts_at() {
	[ "$(cat "/sys/class/block/$(basename "$1")/start" 2>/dev/null)" = "$2" ]
}

# cell_stats FILE: the live engine counters (JSON) into FILE.
cell_stats() {
	"$UBLK_FLASH" stats "$CELL_DEV" --json >"$1" 2>"$1.err" && jq -e 'type == "object"' "$1" >/dev/null
}

# cell_sync TARGET [all]: push everything written to TARGET down to the engine and
# flush it: syncfs() for a mounted filesystem, fsync of the block device otherwise.
# Never a global sync(), which would wait for every other filesystem on the machine.
# With "all" (the deterministic direct-n) a filesystem's partition is flushed too
# (BLKFLSBUF): the metadata its journal committed but has not yet written home, which
# the kernel's flusher would otherwise write some 30 s later, at a time that depends on
# the machine's speed, inside or outside the measured window.
cell_sync() {
	if [ -d "$1" ]; then
		sync -f "$1"
		[ "${2:-}" = all ] && blockdev --flushbufs "$CELL_PART"
	else
		blockdev --flushbufs "$1"
	fi
	return 0
}

# cell_setup DIR: fresh image, served, partitioned, verdict; fills CELL_PART,
# CELL_TOPO, CELL_PAGE and writes info.json / check.json into DIR.
cell_setup() {
	local dir=$1 log=$1/setup.log spec
	: >"$log"
	# shellcheck disable=SC2086  # CELL_CREATE_ARGS / CELL_SERVE_ARGS: --aged's words
	"$UBLK_FLASH" create "$CELL_IMG" --size "$OPT_SIZE" --align "$CELL_MODE" --force \
		${CELL_CREATE_ARGS:-} >>"$log" 2>&1 || { cell_fail "ublk-flash create" "$log"; return; }
	"$UBLK_FLASH" info "$CELL_IMG" --json >"$dir/info.json" 2>>"$log" ||
		{ cell_fail "ublk-flash info" "$log"; return; }
	# The topology alignpart must judge against: what the engine reports to the
	# kernel (a loop device cannot carry the odd mode's alignment_offset).
	spec=$(jq -r '[.. | objects | select(has("alignment_offset"))][0]
		| "\(.logical_block_size // .logical)/\(.physical_block_size // .physical)/\(.alignment_offset)"' \
		"$dir/info.json" 2>>"$log")
	[[ $spec =~ ^[0-9]+/[0-9]+/[0-9]+$ ]] ||
		{ echo "no topology in ublk-flash info --json" >>"$log"; cell_fail "topology" "$log"; return; }
	CELL_TOPO=$spec
	CELL_PAGE=$(jq -r '[.. | objects | select(has("page_size"))][0].page_size // empty' "$dir/info.json")
	[[ $CELL_PAGE =~ ^[0-9]+$ ]] || { echo "no page_size in info" >>"$log"; cell_fail "page size" "$log"; return; }

	CELL_SERVED=1
	# To a file, not a pipe: the daemon may keep its stdout open.
	local dm=()
	[ "${OPT_DM:-0}" = 1 ] && dm=(--dm "cmp-$$-$CELL_NAME")
	# shellcheck disable=SC2086
	"$UBLK_FLASH" serve "$CELL_IMG" ${OPT_FRONTEND:+--frontend "$OPT_FRONTEND"} "${dm[@]}" \
		${CELL_SERVE_ARGS:-} >"$dir/serve.out" 2>>"$log"
	CELL_DEV=$(grep -m1 '^/dev/' "$dir/serve.out")
	[ -n "$CELL_DEV" ] && cell_wait_node "$CELL_DEV" ||
		{ cell_fail "ublk-flash serve" "$log"; return; }
	echo "served on $CELL_DEV" >>"$log"

	"$ALIGNPART" create "$CELL_DEV" --label dos --profile "$CELL_MODE" --topology "$CELL_TOPO" \
		--start "$CELL_START" --part rest --force >>"$log" 2>&1 ||
		{ cell_fail "alignpart create" "$log"; return; }
	if [ "${OPT_DM:-0}" = 1 ]; then
		# a dm device has no partition scan: alignpart map makes NAME-part1
		CELL_MAPPED=1
		CELL_PART=$("$ALIGNPART" map "$CELL_DEV" 2>>"$log" | head -n 1)
		[ -n "$CELL_PART" ] && cell_wait_node "$CELL_PART" ||
			{ cell_fail "alignpart map $CELL_DEV" "$log"; return; }
	else
		CELL_PART=$(cell_partname "$CELL_DEV")
		# The kernel should re-read the table itself; kernels whose partition scan
		# finds nothing (no msdos parser built in) still take BLKPG, so fall back to
		# partx, and make sure the node is the partition just written.
		if ! cell_wait_node "$CELL_PART" 20 || ! cell_part_starts_at "$CELL_PART" "$CELL_START"; then
			echo "partition node missing or stale after alignpart create: partx -d/-a $CELL_DEV" >>"$log"
			[ -b "$CELL_PART" ] && partx -d "$CELL_DEV" >>"$log" 2>&1
			partx -a "$CELL_DEV" >>"$log" 2>&1
			cell_wait_node "$CELL_PART" 100 && cell_part_starts_at "$CELL_PART" "$CELL_START" ||
				{ cell_fail "partition node $CELL_PART at LBA $CELL_START never appeared" "$log"; return; }
		fi
	fi
	local rc=0
	"$ALIGNPART" check "$CELL_DEV" --topology "$CELL_TOPO" --json >"$dir/check.json" 2>>"$log" || rc=$?
	case $rc in
	0) CELL_ALIGNED=yes ;;
	1) CELL_ALIGNED=no ;;
	*) cell_fail "alignpart check (exit $rc)" "$log"; return ;;
	esac
	CELL_PREDICTED=$(cell_predicted_offset "$dir/check.json")
	CELL_EXPLAIN=$(cell_explanation "$dir/check.json")
	return 0
}

# cell_predicted_offset CHECK_JSON: partition 1's predicted alignment_offset
# (alignpart check --json: partitions[].kernel_offset).
cell_predicted_offset() {
	jq -r 'first(.partitions[] | select(.nr == 1) | .kernel_offset) // "?"' "$1" 2>/dev/null || echo "?"
}

# cell_explanation CHECK_JSON: alignpart's parted-style reason for partition 1.
cell_explanation() {
	jq -r 'first(.partitions[] | select(.nr == 1) | .explanation) // ""' "$1" 2>/dev/null
}

# cell_mkfs_once: format CELL_PART for CELL_FS (output to stdout/stderr).
cell_mkfs_once() {
	case $CELL_FS in
	ext4)
		# 4K blocks as on any real-size disk (mke2fs picks 1K blocks below
		# 512 MiB); inode tables and journal written now, not by a background
		# thread during the workloads.
		mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$CELL_PART" ;;
	btrfs)
		mkfs.btrfs -q -f "$CELL_PART" ;;
	esac
}

# cell_mkfs DIR: format the partition and mount it on CELL_MNT (raw: nothing).
cell_mkfs() {
	local log=$1/setup.log try
	[ "$CELL_FS" = raw ] && return 0
	# mkfs.btrfs stats every mount point to see whether the device is in use;
	# a dead FUSE mount elsewhere on the machine (ENOTCONN) makes it fail, so a
	# failed mkfs is retried twice (each attempt is in the log).
	for try in 1 2 3; do
		cell_mkfs_once >>"$log" 2>&1 && break
		[ $try = 3 ] && { cell_fail "mkfs.$CELL_FS" "$log"; return; }
		echo "mkfs.$CELL_FS failed (attempt $try); retrying in 2 s" >>"$log"
		sleep 2
	done
	CELL_MNT=$CMP_WORK/mnt-$CELL_NAME
	mkdir -p "$CELL_MNT"
	mount -t "$CELL_FS" ${OPT_MOUNT_OPTS:+-o "$OPT_MOUNT_OPTS"} "$CELL_PART" "$CELL_MNT" >>"$log" 2>&1 ||
		{ cell_fail "mount" "$log"; return; }
}

# cell_workload DIR WORKLOAD: run one workload between two counter snapshots;
# writes DIR/WORKLOAD.{before,after,fio}.json.  Returns 2 when not applicable.
cell_workload() {
	local dir=$1 w=$2 job=$CMP_HERE/fio/$2.fio target
	if [ "$CELL_FS" = raw ]; then
		case $w in direct|direct-n) ;; *) return 2 ;; esac
		target=$CELL_PART
		export CMP_FILE=$CELL_PART CMP_DIR=/nonexistent
	else
		target=$CELL_MNT
		export CMP_FILE=$CELL_MNT/direct.dat CMP_DIR=$CELL_MNT
	fi
	export CMP_RUNTIME=$OPT_RUNTIME CMP_FILESET=$FILESET_BYTES CMP_SEED=$OPT_SEED
	local log=$dir/$w.log
	: >"$log"
	# Lay files out first (not measured): the workload then overwrites them.
	if [ "$CELL_FS" != raw ] && [ "$w" != smallfiles ]; then
		fio --create_only=1 "$job" >>"$log" 2>&1 || { cell_fail "$w: fio layout" "$log"; return; }
	fi
	local how=''
	[ "$w" = direct-n ] && how=all
	cell_sync "$target" $how
	cell_stats "$dir/$w.before.json" || { cell_fail "$w: ublk-flash stats" "$dir/$w.before.json.err"; return; }
	fio --output-format=json --output="$dir/$w.fio.json" "$job" >>"$log" 2>&1 ||
		{ cell_fail "$w: fio" "$log"; return; }
	cell_sync "$target" $how
	cell_stats "$dir/$w.after.json" || { cell_fail "$w: ublk-flash stats" "$dir/$w.after.json.err"; return; }
	# Free the space for the next workload (not measured).
	[ "$CELL_FS" != raw ] && find "$CELL_MNT" -mindepth 1 -maxdepth 1 -name "$w.*" -delete
	return 0
}

# cell_teardown DIR: unmount, stop the server, keep the final offline counters.
cell_teardown() {
	local log=$1/setup.log ok=0
	if [ -n "$CELL_MNT" ]; then
		umount "$CELL_MNT" >>"$log" 2>&1 || ok=1
		rmdir "$CELL_MNT" 2>/dev/null
		CELL_MNT=
	fi
	if [ "$CELL_MAPPED" = 1 ]; then
		"$ALIGNPART" unmap "$CELL_DEV" >>"$log" 2>&1 || ok=1
		CELL_MAPPED=0
	fi
	if [ "$CELL_SERVED" = 1 ]; then
		"$UBLK_FLASH" stop "$CELL_DEV" >>"$log" 2>&1 || ok=1
		CELL_SERVED=0
	fi
	[ $ok = 0 ] || { cell_fail "teardown" "$log"; return; }
	"$UBLK_FLASH" stats "$CELL_IMG" --json >"$1/final-stats.json" 2>>"$log" || true
	[ "$OPT_KEEP" = 1 ] || rm -f "$CELL_IMG"
	return 0
}
