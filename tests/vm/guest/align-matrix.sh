#!/usr/bin/env bash
# vm-timeout: 900
# Issue 32 item 2: real kernel disks of every kind.  scsi_debug emulates 512n, 512e with
# alignment_offset 0 and 3584 (physblk_exp, lowest_aligned), 4Kn (sector_size=4096), odd
# optimal I/O sizes (opt_blks: a 3 x 64 KiB stripe's 192 KiB, a USB bridge's 33553920) and
# dm-stripe a 3-disk stripe of 12 KiB chunks (minimum_io_size 12288, optimal 36864: not
# powers of two).  On each: `alignpart predict` against the real sfdisk, parted, sgdisk,
# mkfs.xfs and mke2fs (predict-lib.bash: start, exit status, words, stripe, the kernel's
# per-partition alignment_offset, and every suggested way around), and alignpart's own
# suggest / create / check against the kernel's sysfs.
. /octant/tests/vm/guest-lib.sh
. /octant/tests/vm/guest/predict-lib.bash
AP=${ALIGNPART:-/octant/build/alignpart}
PV_AP=$AP
[ -x "$AP" ] || { echo "SKIP: $AP not built yet"; exit 77; }
# One kernel, 6.12: the tools are the host's whatever the kernel, and the matrix costs ~3 min
# of TCG time.
case "$(uname -r)" in
6.12.*) ;;
*) echo "SKIP: align-matrix runs on the 6.12 guest only (this is $(uname -r))"; exit 77 ;;
esac
for c in sfdisk parted sgdisk mkfs.xfs mke2fs jq dmsetup; do
	command -v "$c" >/dev/null || { echo "SKIP: $c is not in the guest (VM_PROGS)"; exit 77; }
done
export DM_DISABLE_UDEV=1          # no udev in the guest: libdevmapper must not wait for it

# topo DEV: "logical physical alignment_offset minimum_io_size optimal_io_size"
topo() {
	local d q
	read -r maj min < <(stat -L -c '%t %T' "$1")
	d=/sys/dev/block/$((16#$maj)):$((16#$min)) q=$d/queue
	echo "$(<$q/logical_block_size) $(<$q/physical_block_size) $(<$d/alignment_offset)" \
	     "$(<$q/minimum_io_size) $(<$q/optimal_io_size)"
}

# kernel_cases LABEL DEV: alignpart's own choices against the kernel's sysfs: create puts
# the first partition where suggest said; the kernel agrees with every kernel_offset create
# predicted; check passes.
kernel_cases() {
	local label=$1 dev=$2 json s got want b p
	s=$("$AP" suggest "$dev" --label gpt --json 2>/dev/null | jq -r '.suggestions[0].first_lba')
	pv_fresh_default "$dev"
	if json=$("$AP" create "$dev" --label gpt --part 8MiB --part 8MiB --part rest --json 2>/tmp/ap.err); then
		want=$(jq -r '"\(.partitions[0].start_sector) " + ([.partitions[] | "\(.nr):\(.kernel_offset)"] | join(" "))' <<<"$json")
		b=${dev##*/} got="$s "
		for p in /sys/class/block/"$b"/"$b"[0-9]*; do
			[ -e "$p/partition" ] && got+="$(<"$p/partition"):$(<"$p/alignment_offset") "
		done
		t_eq "$label: create gpt at suggest's $s: the kernel's per-partition alignment_offset" "${got% }" "$want"
		t_check "$label: check passes on the table create wrote" "$AP" check "$dev"
	else
		t_fail "$label: alignpart create --label gpt" "$(</tmp/ap.err)"
	fi
	pv_fresh_default "$dev"
}

# sd_case LABEL WANT_TOPOLOGY SCSI_DEBUG_PARAMS...: one scsi_debug disk, 1 GiB (a 32 MiB
# store seen 32 times: mkfs.xfs wants 300 MB; the optimal transfer length must fit the store).
sd_case() {
	local label=$1 want=$2 t0=$SECONDS
	shift 2
	rmmod scsi_debug 2>/dev/null
	if ! modprobe scsi_debug dev_size_mb=32 virtual_gb=1 "$@" || ! sd=$(scsi_debug_dev); then
		t_fail "$label: scsi_debug $* appears"
		return
	fi
	t_eq "$label: scsi_debug $*: sysfs log/phys/offset/min/opt" "$(topo "$sd")" "$want"
	"$AP" predict "$sd" 2>&1 | sed 's/^/# /'       # the table, for the record (docs/alignpart.md)
	pv_verify "$label" "$sd"
	kernel_cases "$label" "$sd"
	rmmod scsi_debug 2>/dev/null
	echo "# $label: $((SECONDS - t0)) s"
}

sd_case "512n" "512 512 0 512 524288" sector_size=512 physblk_exp=0
sd_case "512e" "512 4096 0 4096 524288" physblk_exp=3 lowest_aligned=0
sd_case "512e offset 3584" "512 4096 3584 4096 524288" physblk_exp=3 lowest_aligned=7
sd_case "4Kn" "4096 4096 0 4096 4194304" sector_size=4096
sd_case "512e opt 192KiB" "512 4096 0 4096 196608" physblk_exp=3 opt_blks=384
sd_case "512n opt 33553920" "512 512 0 512 33553920" physblk_exp=0 opt_blks=65535

# --- a 3-disk stripe of 12 KiB chunks: dm-stripe over three thirds of a 512e disk -----------
# dm devices take no partitions (and a dm-linear standing in for one is no witness here: 6.12's
# blk_validate_limits reduces a stacked device's alignment_offset modulo the physical block,
# where a partition's is taken modulo max(physical, minimum_io_size)): starts, words and
# stripes are compared, not partition offsets; parted's own partition mappings are removed.
stripe_after() {
	local m
	for m in $(dmsetup ls 2>/dev/null | awk '$1 ~ /^st3p?[0-9]+$/ { print $1 }'); do
		dmsetup remove "$m" >/dev/null 2>&1
	done
}
rmmod scsi_debug 2>/dev/null
if modprobe scsi_debug dev_size_mb=32 virtual_gb=1 physblk_exp=3 && sd=$(scsi_debug_dev); then
	t_cleanup "rmmod scsi_debug"
	n=$(blockdev --getsz "$sd"); third=$(( n / 3 / 24 * 24 ))
	if out=$(dmsetup create st3 --table "0 $((third * 3)) striped 3 24 $sd 0 $sd $third $sd $((third * 2))" 2>&1); then
		t_cleanup "dmsetup remove st3"
		t_eq "dm-stripe 3 x 12 KiB: sysfs log/phys/offset/min/opt" "$(topo /dev/mapper/st3)" \
			"512 4096 0 12288 36864"
		PV_NO_KOFF=1 PV_AFTER=stripe_after pv_verify "dm-stripe 3 x 12 KiB" /dev/mapper/st3
		# alignpart's own grain: whole stripes, so whole chunks
		s=$("$AP" suggest /dev/mapper/st3 --label gpt --json 2>/dev/null | jq -r '.suggestions[0].first_lba')
		t_eq "dm-stripe: suggest gpt $s is on a whole stripe (36864 bytes)" $(( s * 512 % 36864 )) 0
	else
		t_fail "dm-stripe 3 x 12 KiB chunks" "$out"
	fi
else
	t_fail "scsi_debug 512e disk for the stripe appears"
fi
t_done
