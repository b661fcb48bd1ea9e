/* SPDX-License-Identifier: MIT */
/*
 * The ublk feature flags (UBLK_F_* of <linux/ublk_cmd.h>), one row each:
 *
 *   X(NAME, BIT, SINCE, WANT)
 *     NAME   UBLK_F_NAME without the prefix; where the uapi header defines it,
 *            ublk-ctrl.c checks at compile time that it is 1 << BIT
 *     BIT    its bit in GET_FEATURES' mask and in dev_info.flags
 *     SINCE  the first mainline kernel whose driver honours it, as major *
 *            100 + minor (601 = 6.1).  Rows <= 601 are the set the server
 *            assumes when GET_FEATURES does not answer (Linux 6.1).  The
 *            6.1, 6.12 and 7.3 guests check the masks they offer
 *            (tests/vm/guest/ublk-features.sh); 703 marks a flag 7.3 has
 *            whose first release was not checked here.
 *     WANT   1: ADD_DEV asks for it whenever the driver offers it; 0: the
 *            server does not use it (yet): the I/O path it needs is named.
 *
 * ADD_DEV asks for WANT & offered, nothing else (ublk_ctrl_add_flags), so
 * the same binary serves on every kernel: a missing feature is simply not
 * asked for.  To use a new feature, write the code that needs it and turn
 * its WANT to 1; its users test dev_info.flags (what the driver granted).
 */
#ifndef OCTANT_UBLK_FEATURES_H
#define OCTANT_UBLK_FEATURES_H

#define UBLK_FEATURES(X) \
	/* zero copy through registered request buffers: a later task */ \
	X(SUPPORT_ZERO_COPY,      0, 615, 0) \
	/* the driver sets it itself where it wants to */ \
	X(URING_CMD_COMP_IN_TASK, 1, 600, 0) \
	/* writes copied in a second step: not needed with our buffers */ \
	X(NEED_GET_DATA,          2, 600, 0) \
	/* a dead server's device waits for serve --recover ... */ \
	X(USER_RECOVERY,          3, 601, 1) \
	/* ... and the requests it held are reissued to the new one */ \
	X(USER_RECOVERY_REISSUE,  4, 601, 1) \
	/* the server runs as root */ \
	X(UNPRIVILEGED_DEV,       5, 605, 0) \
	/* ioctl-encoded FETCH/COMMIT (control commands follow GET_FEATURES) */ \
	X(CMD_IOCTL_ENCODE,       6, 605, 1) \
	/* pread/pwrite on /dev/ublkcN instead of per-tag buffers: asked for \
	 * with ZONED, for zoned images only (ublk-zoned.c), with INTEGRITY, \
	 * and beside AUTO_BUF_REG for zero copy's short requests \
	 * (ublk_ctrl_add_flags, ublk-daemon.c) */ \
	X(USER_COPY,              7, 605, 0) \
	/* zoned device: zoned images only (ublk_zoned_flags, ublk-zoned.c) */ \
	X(ZONED,                  8, 606, 0) \
	/* fail, not queue, I/O while no server: REISSUE is what we want */ \
	X(USER_RECOVERY_FAIL_IO,  9, 613, 0) \
	/* UPDATE_SIZE command: online resize (a later task) */ \
	X(UPDATE_SIZE,           10, 614, 1) \
	/* zero copy: the request's pages registered in the daemon's ring,\
	 * data moved by io_uring copies (ublk-daemon.c) */ \
	X(AUTO_BUF_REG,          11, 616, 1) \
	/* QUIESCE_DEV command: live upgrade (`ublk-flash upgrade`) */ \
	X(QUIESCE,               12, 616, 1) \
	/* a task per tag: the queue's daemons (ublk-daemon.c; 7.3 sets it \
	 * anyway) */ \
	X(PER_IO_DAEMON,         13, 616, 1) \
	/* buffer (un)registration off the daemon thread (zero copy) */ \
	X(BUF_REG_OFF_DAEMON,    14, 617, 0) \
	/* batched FETCH/COMMIT: another I/O protocol */ \
	X(BATCH_IO,              15, 700, 0) \
	/* PI buffers, with USER_COPY: images with PI only \
	 * (ublk_pi_flags, ublk-integrity.c) */ \
	X(INTEGRITY,             16, 700, 0) \
	/* TRY_STOP_DEV command: stop only without openers */ \
	X(SAFE_STOP_DEV,         17, 703, 1) \
	/* no partition scan at START_DEV: alignpart relies on the scan */ \
	X(NO_AUTO_PART_SCAN,     18, 703, 0) \
	/* zero copy through registered shared memory (a later task) */ \
	X(SHMEM_ZC,              19, 703, 0) \
	/* io_desc_size in dev_info: descriptors of another size */ \
	X(IO_DESC_SIZE,          20, 703, 0)

#endif
