# shellcheck shell=bash disable=SC2034
# The reduced `make compare` matrix of guest/compare-ublk.sh, shared with the host FUSE
# reference run that guest-tap.sh makes (the two must be the same command but for the
# frontend).  Named .bash so guest-all.sh does not run it as a test.
#   raw and ext4, odd and 1m, partition starts 63 and 2048; direct-n: every 4K block of a
#   2 MiB fileset written once with O_DIRECT in the order of one seed; ext4 mounted
#   lazytime,commit=600 (no timestamp or commit-timer writes inside the measured window).
CMP_VM_ARGS=(--fs raw,ext4 --modes odd,1m --starts 63,2048 --workloads direct-n --size 64M
             --fileset 2M --mount-opts lazytime,commit=600 --no-plot)
# The kernels the guest test runs on (the others print a skip naming this variable): under
# TCG a cell takes 10-40 s, so one kernel keeps the vm tier within its time budget.
CMP_VM_KERNELS=${OCTANT_VM_COMPARE_KERNELS:-6.12}
