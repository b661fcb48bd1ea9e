/* SPDX-License-Identifier: MIT */
/*
 * registry (plumbing/) — the run registry's reader: what ublk-flash's
 * commands (list, stop, info of a device...) and libalign's served-device
 * probe read of the folders a live server writes (the layout and the
 * writer: ublk-server/serve/serve.h, serve/registry.c).  Prefix plumb_
 * (plumb_run_base, plumb_entry_*; struct serve_entry keeps its name).
 */
#ifndef OCTANT_REGISTRY_H
#define OCTANT_REGISTRY_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

struct serve_entry {
	char dir[PATH_MAX - 32];  /* the entry's folder */
	char image[PATH_MAX];     /* image path as served (realpath) */
	char dev[128];            /* block device, "" if not recorded */
	char dm[128];             /* --dm device stacked on it, "" if none */
	char frontend[16];
	char backing[64];         /* "MAJ:MIN:INO" of the loop's file, "" if none */
	pid_t pid;
	bool live;                /* a server holds the lock */
	bool read_only;           /* access "ro": serve --read-only */
};

/* The registry's base folder ($UBLK_FLASH_RUN_DIR or /run/octant). */
const char *plumb_run_base(void);

/* Load the entry in @dir (e->live: plumb_entry_held); -ENOENT if it
 * records no server. */
int plumb_entry_load(const char *dir, struct serve_entry *e);

/* Every entry that records a server, live or not (for `list`): a
 * malloc'ed array in *out (free it), sorted by device path; the count or
 * -errno.  No registry folder: 0 entries.  *unreadable: how many entry
 * folders this user may not read (they are root's, mode 0700). */
int plumb_entry_list(struct serve_entry **out, int *unreadable);

#endif
