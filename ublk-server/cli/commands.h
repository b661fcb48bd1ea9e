/* SPDX-License-Identifier: MIT */
/*
 * ublk-flash subcommands, one file each (cmd_<name>.c).  Each takes the
 * arguments after the command name (argv[0] is the command) and returns
 * the process exit status.
 *
 * Exit codes shared by every command (docs/engine.md, docs/serve.md):
 *   0 success; 1 the check/fsck found problems; 2 usage error (also a
 *   target that is a directory or neither a file nor a block device);
 *   3 I/O or system error; 4 not an octant image, or a corrupt or
 *   unsupported one; 5 busy (already served, device in use); 6 not
 *   possible here, nothing changed (`upgrade`: the kernel has no
 *   QUIESCE_DEV, the image is served over FUSE, its server predates live
 *   upgrade).
 */
#ifndef OCTANT_COMMANDS_H
#define OCTANT_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "oct-exit.h"

/* ublk-flash's names for the shared table (common/oct-exit.h) */
#define EXIT_USAGE       OCT_EXIT_USAGE
#define EXIT_IO          OCT_EXIT_IO
#define EXIT_CORRUPT     OCT_EXIT_CORRUPT
#define EXIT_BUSY        OCT_EXIT_BUSY
#define EXIT_UNSUPPORTED OCT_EXIT_UNSUPPORTED

int cmd_create(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_health(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_upgrade(int argc, char **argv);
int cmd_resize(int argc, char **argv);

/* Map an -errno from the engine to an exit code above, after printing
 * "ublk-flash: WHAT: strerror" on stderr. */
int cli_fail(const char *what, int err);
/* The exit status cli_fail gives error @err (without printing anything). */
int cli_exit_of(int err);

/* ---- cli_report.c: stats and health ---- */

struct ftl_set;
/* `CMD IMG|DEV [--json]` (@help on --help): a served image's server
 * answers "CMD json|text" (serve/control.c); else @offline prints the
 * report of the image opened read-only.  Returns the exit code. */
int cli_report(int argc, char **argv, const char *cmd, const char *help,
	       void (*offline)(struct ftl_set *f, FILE *out, bool json));

/* ---- cli_args.c: option values, one message shape for every command ---- */

/* A whole number in [@min, @max] (common/oct-parse.h) into *v; else print
 * "ublk-flash: CMD: OPT: 'S' is not a whole number (MIN..MAX)" or
 * "... S is out of range (MIN..MAX)" and return -1. */
int cli_uint(const char *cmd, const char *opt, const char *s, uint64_t min,
	     uint64_t max, uint64_t *v);
/* The same into an unsigned. */
int cli_unsigned(const char *cmd, const char *opt, const char *s,
		 unsigned min, unsigned max, unsigned *v);
/* "on" or "off" into *v; else "ublk-flash: CMD: OPT: 'S' is not on or
 * off" and -1. */
int cli_on_off(const char *cmd, const char *opt, const char *s, bool *v);
/* A size with an optional unit (align_parse_size, "s" = 512-byte sectors)
 * into *bytes; else "... 'S' is not a size (e.g. ...)" and -1. */
int cli_size(const char *cmd, const char *opt, const char *s, uint64_t *bytes);
/* getopt_long returned '?' or ':' (the optstring starts with ':'): print
 * "CMD: unknown option 'X'" or "CMD: option 'X' needs a value"; EXIT_USAGE. */
int cli_bad_option(const char *cmd, int c, char **argv);

/* ---- cli_target.c: what an IMG|DEV argument names ---- */

struct serve_entry;
/* The registry entry of @arg (serve_entry_find): an image path, a served
 * device, its --dm device (/dev/mapper/NAME or a bare NAME), or a
 * partition of a served device (/dev/loop3p1: its whole disk, through
 * sysfs).  @path (@len bytes) receives what @arg names: @arg, or
 * /dev/mapper/NAME for a bare NAME.  *blk: that is a block device.  0;
 * -ENOENT none; -ESTALE entries name the device's number but it is another
 * device now (@e the first of them); -ENODEV no such dm device: a bare NAME
 * that is neither a file nor /dev/mapper/NAME, or a /dev/mapper/NAME that
 * does not exist but an entry records as its --dm device (@e that entry,
 * else @e->dm is ""); else -errno (stat's: @arg does not exist). */
int cli_find(const char *arg, struct serve_entry *e, bool *blk, char *path,
	     size_t len);
/* cli_find() said -ENODEV for @arg: one line "CMD: ARG: no such file, and
 * no device-mapper device /dev/mapper/ARG ..." or, when @e records it as
 * its --dm device, "CMD: ARG: /dev/mapper/NAME does not exist: it was the
 * --dm device of the server of IMG (pid N, running|gone) on DEV; name the
 * image or that device"; EXIT_IO. */
int cli_no_dm(const char *cmd, const char *arg, const struct serve_entry *e);
/* serve_entry_find() said -ESTALE for @arg (@e: the entry that named its
 * number): one line "CMD: ARG is not served by ublk-flash now: ..." and
 * EXIT_IO. */
int cli_stale(const char *cmd, const char *arg, const struct serve_entry *e);

/* ---- cli_image.c: why an image could not be used ---- */

/* After the engine failed on @path with @err: print one line that says
 * what @path is ("not an octant image (it holds ext4)", "is a directory",
 * "corrupt image (run `ublk-flash fsck ...`)", wrong size, other version)
 * and return the exit code (2 not a file or block device, 4 not an octant
 * image / corrupt, else as cli_fail). */
int cli_image_fail(const char *cmd, const char *path, int err);
/* The same with the medium's own reason @why (a remote medium opened in
 * another process: serve's daemon, serve_fail.why); NULL or "": as
 * cli_image_fail. */
int cli_image_fail_why(const char *cmd, const char *path, int err,
		       const char *why);
/* Before a command that reads @path as an image: 1 after printing "CMD:
 * PATH: not an octant image (...)" when @path holds no octant superblock
 * and is empty, too small or holds something libblkid knows; 0 otherwise
 * (an octant image, maybe damaged, or nothing to tell). */
int cli_image_foreign(const char *cmd, const char *path);
/* Take the engine's image lock on @path for a command that writes it
 * (serve_image_lock): 0 with the fd in *fd (-1 if @path does not exist
 * yet), or the exit code after one line "CMD: PATH is served on DEV (pid
 * N)[; ADVICE]" (5) or the reason it could not be opened. */
int cli_image_lock(const char *cmd, const char *path, const char *advice,
		   int *fd);
/* "it holds ext4", "it holds an octant image", ... for @path into @what. */
void cli_image_holds(const char *path, char *what, size_t len);
/* Refuse (one line on stderr, EXIT_UNSUPPORTED) @what ("cannot grow",
 * ...) of the image at @path when it is a set of more than one part
 * (ftl-set.h); 0 otherwise (a plain image, or one that cannot be read:
 * the command's own open says why). */
int cli_image_set_refuse(const char *cmd, const char *path, const char *what);

#endif
