/* SPDX-License-Identifier: MIT */
/*
 * The exit codes of both tools, ublk-flash and alignpart: one table, so that a
 * script reading either gets the same meaning for the same number.  Documented
 * in docs/ublk-flash.8 and docs/alignpart.8 (EXIT STATUS); only main() and the
 * CLI layers return them, everything below returns -errno (and a reason).
 */
#ifndef OCTANT_OCT_EXIT_H
#define OCTANT_OCT_EXIT_H

#define OCT_EXIT_OK          0 /* success */
#define OCT_EXIT_FINDING     1 /* it worked and found something: alignpart check/predict a
                                  misaligned partition, map --verify a disagreement;
                                  ublk-flash fsck --repair repaired problems */
#define OCT_EXIT_USAGE       2 /* bad option, value, size or layout */
#define OCT_EXIT_IO          3 /* cannot open, probe, read or write; not served */
#define OCT_EXIT_CORRUPT     4 /* not an octant image, or a damaged one */
#define OCT_EXIT_BUSY        5 /* refused for safety: in use (served, mounted, held,
                                  locked, attached to a loop device) or holds data
                                  without --force */
#define OCT_EXIT_UNSUPPORTED 6 /* not possible here: the kernel or the image lacks
                                  what it needs */

#endif
