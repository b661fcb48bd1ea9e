/* SPDX-License-Identifier: MIT */
/*
 * lw-log — reads a dm-log-writes log (Documentation/admin-guide/
 * device-mapper/log-writes.rst): sector 0 holds the super block (magic,
 * version, number of entries, the data device's logical block size S); from
 * byte S on, each entry is one S-byte header (sector, nr_sectors, flags,
 * data_len; a mark's text follows the header) and then, for a write,
 * nr_sectors * S bytes of data.  Shared by logreplay and logreplay-engine.
 */
#ifndef OCTANT_LW_LOG_H
#define OCTANT_LW_LOG_H

#include <stdint.h>
#include <stddef.h>

#define LW_FLUSH	(1u << 0)
#define LW_FUA		(1u << 1)
#define LW_DISCARD	(1u << 2)
#define LW_MARK		(1u << 3)
#define LW_METADATA	(1u << 4)

struct lr_log {
	int fd;
	uint64_t nr_entries, pos, index;	/* pos: the next header's byte */
	uint32_t ss;				/* sector size of the log */
	uint8_t *hdr;				/* one log sector */
};

struct lr_ent {
	uint64_t sector, nr, flags, len;	/* sector, nr: in units of ss */
	char mark[256];
};

/* "logreplay: MESSAGE" on stderr; returns @code. */
int lr_err(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* pread of exactly @len bytes; -errno (or -EIO at the end). */
int lr_pread(int fd, void *buf, size_t len, uint64_t off);
/* 0, or an exit code (3) with the error printed. */
int lr_open_log(struct lr_log *l, const char *path);
/* Reads the next entry's header (not its data): 0, 1 at the end, or 3. */
int lr_next(struct lr_log *l, struct lr_ent *e);
/* Bytes of data that follow the entry header in the log. */
uint64_t lr_data_len(const struct lr_log *l, const struct lr_ent *e);

#endif
