/* SPDX-License-Identifier: MIT */
/*
 * ublk-flash subcommands, one file each (cmd_<name>.c).  Each takes the
 * arguments after the command name (argv[0] is the command) and returns
 * the process exit status.
 *
 * Exit codes shared by every command (docs/ublk-flash.1.md):
 *   0 success; 1 the check/fsck found problems; 2 usage error;
 *   3 I/O or system error; 4 corrupt or unsupported image; 5 busy
 *   (already served, device in use).
 */
#ifndef OCTANT_COMMANDS_H
#define OCTANT_COMMANDS_H

#define EXIT_USAGE   2
#define EXIT_IO      3
#define EXIT_CORRUPT 4
#define EXIT_BUSY    5

int cmd_create(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_stop(int argc, char **argv);

/* Map an -errno from the engine to an exit code above, after printing
 * "ublk-flash: WHAT: strerror" on stderr. */
int cli_fail(const char *what, int err);

#endif
