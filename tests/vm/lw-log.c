/* SPDX-License-Identifier: MIT */
/* lw-log — the dm-log-writes log reader (see lw-log.h). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lw-log.h"

#define LW_MAGIC	0x6A736677736872ULL
#define LW_VERSION	1ULL

struct lw_super {		/* sector 0 of the log, little-endian */
	uint64_t magic, version, nr_entries;
	uint32_t sectorsize;
} __attribute__((packed));

struct lw_entry {		/* one log sector per entry, then its data */
	uint64_t sector, nr_sectors, flags, data_len;
} __attribute__((packed));

int lr_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("logreplay: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

int lr_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int lr_open_log(struct lr_log *l, const char *path)
{
	struct lw_super s;

	memset(l, 0, sizeof(*l));
	l->fd = open(path, O_RDONLY);
	if (l->fd < 0)
		return lr_err(3, "%s: %s", path, strerror(errno));
	if (lr_pread(l->fd, &s, sizeof(s), 0))
		return lr_err(3, "%s: cannot read the log super block", path);
	if (le64toh(s.magic) != LW_MAGIC || le64toh(s.version) != LW_VERSION)
		return lr_err(3, "%s: not a dm-log-writes log (magic %#" PRIx64
			      " version %" PRIu64 ")", path, le64toh(s.magic),
			      le64toh(s.version));
	l->ss = le32toh(s.sectorsize);
	if (l->ss < 512 || l->ss > 65536 || (l->ss & (l->ss - 1)))
		return lr_err(3, "%s: bad sector size %u", path, l->ss);
	l->nr_entries = le64toh(s.nr_entries);
	l->pos = l->ss;
	l->hdr = aligned_alloc(4096, l->ss < 4096 ? 4096 : l->ss);
	return l->hdr ? 0 : lr_err(3, "out of memory");
}

/* lr_next: reads the next entry's header (not its data); 1 at the end. */
int lr_next(struct lr_log *l, struct lr_ent *e)
{
	struct lw_entry *w = (struct lw_entry *)l->hdr;
	size_t mlen;

	if (l->index >= l->nr_entries)
		return 1;
	if (lr_pread(l->fd, l->hdr, l->ss, l->pos))
		return lr_err(3, "entry %" PRIu64 ": short log", l->index);
	e->sector = le64toh(w->sector);
	e->nr = le64toh(w->nr_sectors);
	e->flags = le64toh(w->flags);
	e->len = le64toh(w->data_len);
	e->mark[0] = 0;
	if (e->flags & LW_MARK) {
		mlen = e->len < sizeof(e->mark) - 1 ? e->len : sizeof(e->mark) - 1;
		if (mlen > l->ss - sizeof(*w))
			mlen = l->ss - sizeof(*w);
		memcpy(e->mark, l->hdr + sizeof(*w), mlen);
		e->mark[mlen] = 0;
	}
	l->pos += l->ss;
	return 0;
}

/* lr_data_len: bytes of data that follow the entry header in the log. */
uint64_t lr_data_len(const struct lr_log *l, const struct lr_ent *e)
{
	if (e->flags & (LW_DISCARD | LW_MARK))
		return 0;
	return e->nr * l->ss;
}

