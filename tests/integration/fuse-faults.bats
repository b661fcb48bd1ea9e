#!/usr/bin/env bats
# ext4 on a failing medium (serve --faults, create --bad-blocks), FUSE + loop:
# program/erase failures and factory bad blocks are absorbed (files intact,
# e2fsck clean, counted in stats); uncorrectable bit errors surface as I/O
# errors for the sectors hit, e2fsck still runs.  Seeded: OCTANT_SEED replays.
load ../helpers
load fuse-lib

setup() {
	fuse_setup
	requires mkfs.ext4 e2fsck sha256sum
	SEED=${OCTANT_SEED:-$(( (RANDOM << 15) | RANDOM ))}
	echo "seed $SEED (OCTANT_SEED to replay)"
}
teardown() { fuse_teardown; }

@test "faults: ext4 on a medium with bad blocks and program/erase failures keeps every file" {
	local img=$SCRATCH/f.img n i
	"$UBLK_FLASH" create "$img" --size 128M --align odd --over-provision 20 \
		--bad-blocks 1e-3 --bad-block-seed "$SEED" --force
	DEV=$("$UBLK_FLASH" serve "$img" --frontend fuse \
		--faults "program=2e-3,erase=2e-2,seed=$SEED")
	[ -b "$DEV" ]
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	: > "$SCRATCH/sums"
	for i in $(seq 1 60); do
		n=$(( (RANDOM % 1024 + 1) * 1024 ))
		head -c "$n" /dev/urandom > "$SCRATCH/m/f$i"
		echo "f$i $(sha256sum < "$SCRATCH/m/f$i" | cut -d' ' -f1)" >> "$SCRATCH/sums"
	done
	# rewrite them: GC and erases under the failures
	for i in $(seq 1 60) $(seq 1 2 60); do
		head -c $(( (RANDOM % 1024 + 1) * 1024 )) /dev/urandom > "$SCRATCH/m/f$i"
		sed -i "/^f$i /d" "$SCRATCH/sums"
		echo "f$i $(sha256sum < "$SCRATCH/m/f$i" | cut -d' ' -f1)" >> "$SCRATCH/sums"
	done
	umount "$SCRATCH/m"
	fuse_fsck ext4 "$DEV"
	"$UBLK_FLASH" stats "$img"
	[ "$(fuse_stat_field "$img" program_fails)" -gt 0 ]
	[ "$(fuse_stat_field "$img" bad_blocks_grown)" -gt 0 ]
	[ "$(fuse_stat_field "$img" nand_violations)" = 0 ]
	"$UBLK_FLASH" stop "$img"
	# again, on a perfect medium: the retired blocks stay retired
	fuse_serve "$img"
	mount -o ro "$DEV" "$SCRATCH/m"
	while read -r n s; do
		[ "$(sha256sum < "$SCRATCH/m/$n" | cut -d' ' -f1)" = "$s" ] ||
			{ echo "$n changed"; false; }
	done < "$SCRATCH/sums"
	umount "$SCRATCH/m"
	[ "$(fuse_stat_field "$img" bad_blocks_grown)" -gt 0 ]
	"$UBLK_FLASH" stop "$img"
	run "$UBLK_FLASH" fsck "$img"
	[ "$status" -eq 0 ]
	[[ "$output" == *" bad blocks ("* ]]
}

@test "faults: bit errors beyond the ECC surface as I/O errors, e2fsck runs" {
	local img=$SCRATCH/b.img good=0 bad=0 i
	fuse_create b 64M 1m
	fuse_serve "$img"
	fuse_mkfs ext4 "$DEV"
	mount "$DEV" "$SCRATCH/m"
	head -c 24M /dev/urandom > "$SCRATCH/m/data"
	umount "$SCRATCH/m"
	"$UBLK_FLASH" stop "$img"
	# a weak ECC and a high raw error rate: some codewords stay
	# uncorrectable after the read retries
	DEV=$("$UBLK_FLASH" serve "$img" --frontend fuse \
		--faults "bitflip=3e-4,ecc=1,seed=$SEED")
	[ -b "$DEV" ]
	for i in $(seq 0 63); do
		if dd if="$DEV" of=/dev/null bs=1M skip="$i" count=1 \
		      iflag=direct status=none 2>/dev/null; then
			good=$((good + 1))
		else
			bad=$((bad + 1))
		fi
	done
	echo "1 MiB reads: $good fine, $bad with I/O errors"
	[ "$bad" -gt 0 ]
	[ "$(fuse_stat_field "$img" ecc_uncorrectable)" -gt 0 ]
	[ "$(fuse_stat_field "$img" ecc_corrected_bits)" -gt 0 ]
	# e2fsck sees the errors and finishes (exit 8 = operational error)
	run timeout 300 e2fsck -fn "$DEV"
	echo "e2fsck exit $status"
	[ "$status" -lt 16 ]
	"$UBLK_FLASH" stop "$img"
}
