# Shared by the compare tests (compare-physics.bats, compare-aged.bats): a
# scratch folder per test, and a teardown that unmounts and stops whatever
# tests/compare/run's output folder still names if the script was killed
# (it cleans up after itself otherwise).  load with:  load compare-lib
COMPARE=$OCTANT_TOP/tests/compare/run

setup() {
	setup_scratch
}

teardown() {
	local m d
	for m in "$SCRATCH"/out/images/mnt-*; do
		[ -d "$m" ] && mountpoint -q "$m" && umount -l "$m"
	done
	for d in "$SCRATCH"/out/cells/*/serve.out; do
		[ -f "$d" ] && "$UBLK_FLASH" stop "$(head -n 1 "$d")" >/dev/null 2>&1
	done
	teardown_scratch
}
