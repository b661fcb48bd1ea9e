#!/usr/bin/env bash
# In the qemu guest (tests/compare/run --vm, via tests/vm/vm-run.sh): the --zoned
# compare with the host's options, its images on the scratch disk, its output in the
# host's folder (/octant/out over 9p), no plots (the host makes them).
set -u
work=${OCTANT_VM_SCRATCH:-/tmp}/compare-zoned
mkdir -p "$work"
ZONED_WORK=$work exec /octant/tests/compare/run --zoned --no-plot --out "${OCTANT_VM_OUT:?no host folder shared}" "$@"
