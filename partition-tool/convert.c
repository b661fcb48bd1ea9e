/* SPDX-License-Identifier: MIT */
/*
 * alignpart convert: an sfdisk dump (or the live table of a device or
 * image, dumped by libfdisk) rewritten for another logical sector size,
 * 512 <-> 4096: every partition keeps its byte range, so its alignment on
 * the medium; what the target sector size cannot represent (a start or a
 * size that is not a whole number of target sectors, a dos table past 2^32
 * sectors) is refused with one line naming the partition.  The output is
 * an sfdisk dump: `sfdisk DEV < converted` or `alignpart create DEV --script`.
 *
 * Fields converted: start= and size= of each partition (plain sector
 * counts; the rest of the line is copied byte for byte, so the way back
 * reads it the same way), the headers sector-size (set), first-lba (the same byte, at
 * least the UEFI minimum of the target: 2 + 16 KiB of entries), last-lba
 * (the last usable LBA of the same disk in the target's sectors: 512 and
 * 4096 keep different backup areas).  Everything else is copied as it is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <libfdisk/libfdisk.h>

#include "ap.h"
#include "oct-parse.h"

#define CONV_MAX_LINES 4096
#define CONV_LINE 4096
#define GPT_ENTRY_BYTES 128ull

struct conv {
	uint64_t from, to;          /* sector sizes, bytes */
	bool gpt;                   /* label: gpt */
	uint64_t table_length;      /* GPT entries (table-length:, default 128) */
	uint64_t first_lba_new;     /* converted first-lba (0: none) */
	uint64_t max_end_byte;      /* partitions end below this (0: unknown) */
	size_t nparts;
	char *out;                  /* the converted dump */
	size_t outlen, outcap;
};

static int emit(struct conv *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int emit(struct conv *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(c->out + c->outlen, c->outcap - c->outlen, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if ((size_t)n < c->outcap - c->outlen)
			break;
		c->outcap = (c->outcap + (size_t)n + 1) * 2;
		char *p = realloc(c->out, c->outcap);
		if (!p)
			return -ENOMEM;
		c->out = p;
	}
	c->outlen += (size_t)n;
	return 0;
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

static char *trim(char *s)
{
	char *e;

	while (is_space(*s))
		s++;
	e = s + strlen(s);
	while (e > s && (is_space(e[-1]) || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

/* A plain decimal sector count. */
static int parse_count(const char *s, uint64_t *v)
{
	return oct_parse_uint(s, 0, UINT64_MAX, v);
}

/* GPT: sectors the entry array takes on a disk of @ss-byte sectors. */
static uint64_t gpt_entry_sectors(const struct conv *c, uint64_t ss)
{
	return (c->table_length * GPT_ENTRY_BYTES + ss - 1) / ss;
}

/* A header line "key: value" (already known to be one). */
static int convert_header(struct conv *c, char *line, size_t lineno)
{
	char *colon = strchr(line, ':'), *key = line, *val;
	uint64_t v, bytes, nv, min;

	*colon = 0;
	key = trim(key);
	val = trim(colon + 1);
	if (!strcmp(key, "sector-size"))
		return emit(c, "sector-size: %" PRIu64 "\n", c->to) ? -ENOMEM : 0;
	if (!strcmp(key, "unit") && strcmp(val, "sectors"))
		return ap_fail(AP_EXIT_USAGE, "line %zu: unit '%s': only a dump in "
			       "sectors is converted", lineno, val);
	if (!strcmp(key, "first-lba") || !strcmp(key, "last-lba")) {
		if (parse_count(val, &v))
			return ap_fail(AP_EXIT_USAGE, "line %zu: %s '%s' is not a sector number",
				       lineno, key, val);
		if (key[0] == 'f') {
			bytes = v * c->from;
			nv = (bytes + c->to - 1) / c->to;
			min = 2 + gpt_entry_sectors(c, c->to);
			if (nv < min)
				nv = min;       /* the target's UEFI minimum */
			c->first_lba_new = nv;
		} else {
			/* the same disk in the target's sectors, standard layout:
			 * last usable + 1 + entries + backup header */
			uint64_t disk = (v + 2 + gpt_entry_sectors(c, c->from)) * c->from;

			nv = disk / c->to - 2 - gpt_entry_sectors(c, c->to);
			c->max_end_byte = (nv + 1) * c->to;
		}
		return emit(c, "%s: %" PRIu64 "\n", key, nv) ? -ENOMEM : 0;
	}
	if (!strcmp(key, "label"))
		c->gpt = !strcmp(val, "gpt");
	return emit(c, "%s: %s\n", key, val) ? -ENOMEM : 0;
}

/* The end of the comma-separated field that starts at @s (quotes whole). */
static const char *field_end(const char *s)
{
	bool q = false;

	for (; *s; s++) {
		if (*s == '"')
			q = !q;
		else if (*s == ',' && !q)
			break;
	}
	return s;
}

/* [@s, @e) without the blanks at both ends. */
static void strip(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

/*
 * A partition line "[NAME :] start=N, size=M, type=..., ...": copied byte
 * for byte but for the numbers of start= and size=, so that what it was
 * read as (name, fields, separators) is what the conversion back reads.
 */
static int convert_part(struct conv *c, const char *line, size_t lineno)
{
	const char *colon = NULL, *p = line, *done = line, *fs, *fe, *eq, *ks, *ke, *vs, *ve;
	char name[256] = "", key[16], val[32];
	uint64_t start = 0, size = 0, v, nv;
	bool has_start = false, has_size = false;

	/* the device name before " : " (sfdisk -d writes it; a name may hold
	 * '=' or ':', not ','), else before a ':' that comes before any '=' */
	colon = strstr(line, " : ");
	if (colon && memchr(line, ',', (size_t)(colon - line)))
		colon = NULL;           /* a field's text, not a name */
	if (colon)
		colon++;
	for (const char *s = line; !colon && *s && *s != '='; s++)
		if (*s == ':')
			colon = s;
	c->nparts++;
	if (colon) {
		ks = line;
		ke = colon;
		strip(&ks, &ke);
		snprintf(name, sizeof(name), "%.*s", (int)(ke - ks), ks);
		p = colon + 1;
	} else {
		snprintf(name, sizeof(name), "%zu", c->nparts);
	}
	for (; *p; p = *fe ? fe + 1 : fe) {
		fs = p;
		fe = field_end(p);
		ks = fs;
		ke = fe;
		strip(&ks, &ke);
		if (ks == ke)
			continue;               /* "," : sfdisk's defaults */
		eq = memchr(ks, '=', (size_t)(ke - ks));
		if (!eq || *ks == '"') {
			if ((ke - ks == 8 && !strncasecmp(ks, "bootable", 8)) ||
			    (ke - ks == 1 && *ks == '*'))
				continue;
			return ap_fail(AP_EXIT_USAGE, "line %zu: '%.*s': only the name=value "
				       "fields sfdisk -d writes are converted", lineno,
				       (int)(ke - ks), ks);
		}
		snprintf(key, sizeof(key), "%.*s", (int)(eq - ks), ks);
		if (eq - ks < (ptrdiff_t)sizeof(key) && !strcasecmp(key, "end"))
			return ap_fail(AP_EXIT_USAGE, "line %zu: %s=: only start= and size= "
				       "are converted", lineno, key);
		/* as sfdisk reads them: any case, no space before '=' */
		if (eq - ks >= (ptrdiff_t)sizeof(key) ||
		    (strcasecmp(key, "start") && strcasecmp(key, "size")))
			continue;
		vs = eq + 1;
		ve = ke;
		strip(&vs, &ve);
		snprintf(val, sizeof(val), "%.*s", (int)(ve - vs), vs);
		if (ve - vs >= (ptrdiff_t)sizeof(val) || parse_count(val, &v))
			return ap_fail(AP_EXIT_USAGE, "line %zu: %s=%.*s: only plain sector "
				       "counts are converted", lineno, key, (int)(ve - vs), vs);
		if (v > UINT64_MAX / c->from)
			return ap_fail(AP_EXIT_USAGE, "line %zu: %s=%s is out of range",
				       lineno, key, val);
		if (v * c->from % c->to)
			return ap_fail(AP_EXIT_USAGE,
				       "partition %s: %s %" PRIu64 " (%s %" PRIu64 ") is not a "
				       "multiple of %" PRIu64 " bytes: a disk of %" PRIu64
				       "-byte sectors cannot hold it", name,
				       (key[1] | 0x20) == 't' ? "start" : "size", v,
				       (key[1] | 0x20) == 't' ? "byte" : "bytes:", v * c->from,
				       c->to, c->to);
		nv = v * c->from / c->to;
		if ((key[1] | 0x20) == 't') {
			start = nv;
			has_start = true;
		} else {
			size = nv;
			has_size = true;
		}
		/* everything up to the number as it was, then the new number */
		if (emit(c, "%.*s%" PRIu64, (int)(vs - done), done, nv))
			return -ENOMEM;
		done = ve;
	}
	if (emit(c, "%s\n", done))
		return -ENOMEM;
	if (!has_start || !has_size)
		return 0;                       /* defaults: sfdisk decides */
	if (c->gpt && c->first_lba_new && start < c->first_lba_new)
		return ap_fail(AP_EXIT_USAGE, "partition %s: start %" PRIu64 " is inside the "
			       "GPT of %" PRIu64 "-byte sectors (first usable LBA %" PRIu64 ")",
			       name, start, c->to, c->first_lba_new);
	if (c->gpt && c->max_end_byte && start + size > c->max_end_byte / c->to)
		return ap_fail(AP_EXIT_USAGE, "partition %s ends at byte %" PRIu64 ", inside "
			       "the backup GPT of %" PRIu64 "-byte sectors on a disk of this size",
			       name, (start + size) * c->to, c->to);
	if (!c->gpt && start + size > (1ull << 32))
		return ap_fail(AP_EXIT_USAGE, "partition %s ends past sector 2^32: a dos "
			       "table of %" PRIu64 "-byte sectors cannot address it",
			       name, c->to);
	return 0;
}

/* Is @line a header ("key: value" before any '=')? */
static bool is_header(const char *line)
{
	const char *colon = strchr(line, ':'), *eq = strchr(line, '=');

	if (!colon || (eq && eq < colon))
		return false;
	/* "/dev/sda1 : start=..." is a partition: a header key has no space */
	for (const char *s = line; s < colon; s++)
		if (is_space(*s))
			return false;
	return !eq;
}

/* The value of header @key ("key: value" lines, read as convert_text reads
 * them) into @buf; false when the dump has no such header. */
static bool header_value(const char *in, const char *key, char *buf, size_t len)
{
	const char *l = in, *e;
	char line[CONV_LINE], *t, *colon;

	for (; *l; l = *e ? e + 1 : e) {
		e = strchr(l, '\n');
		if (!e)
			e = l + strlen(l);
		snprintf(line, sizeof(line), "%.*s", (int)(e - l), l);
		t = trim(line);
		if (!*t || *t == '#' || !is_header(t))
			continue;
		colon = strchr(t, ':');
		*colon = 0;
		if (strcmp(trim(t), key))
			continue;
		snprintf(buf, len, "%s", trim(colon + 1));
		return true;
	}
	return false;
}

/* Convert dump @in (NUL-terminated) from c->from to c->to into c->out. */
static int convert_text(struct conv *c, char *in)
{
	char val[64];
	bool has_size_hdr = header_value(in, "sector-size", val, sizeof(val));
	size_t lineno = 0;
	char *line, *next;
	int rc;

	c->table_length = 128;
	/* last-lba comes before table-length in sfdisk's dumps: read it first */
	if (header_value(in, "table-length", val, sizeof(val)) &&
	    (parse_count(val, &c->table_length) || !c->table_length ||
	     c->table_length > 1u << 20))
		return ap_fail(AP_EXIT_USAGE, "table-length '%s' is not a number of entries", val);
	for (line = in; line && *line; line = next) {
		char *t;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		t = trim(line);
		if (++lineno > CONV_MAX_LINES)
			return ap_fail(AP_EXIT_USAGE, "the dump has more than %d lines",
				       CONV_MAX_LINES);
		if (!*t || *t == '#') {
			rc = emit(c, "%s\n", t);
		} else if (is_header(t)) {
			rc = convert_header(c, t, lineno);
			/* no sector-size line: say it after the unit */
			if (!rc && !has_size_hdr && !strncmp(t, "unit", 4) &&
			    !strcmp(trim(t), "unit")) {   /* convert_header cut it at ':' */
				rc = emit(c, "sector-size: %" PRIu64 "\n", c->to);
				has_size_hdr = true;
			}
		} else {
			if (!has_size_hdr) {
				rc = emit(c, "sector-size: %" PRIu64 "\n", c->to);
				has_size_hdr = true;
				if (rc)
					return ap_fail(AP_EXIT_IO, "out of memory");
			}
			rc = convert_part(c, t, lineno);
		}
		if (rc == -ENOMEM)
			return ap_fail(AP_EXIT_IO, "out of memory");
		if (rc)
			return rc;
	}
	if (!c->nparts)
		return ap_fail(AP_EXIT_USAGE, "the dump describes no partitions");
	return 0;
}

/* Convert dump @in (NUL-terminated, modified) from @from-byte to @to-byte
 * sectors: 0 and *@out (malloc'd, NUL-terminated), or AP_EXIT_* after one
 * line on stderr. */
int ap_convert_dump(char *in, uint64_t from, uint64_t to, char **out)
{
	struct conv c = { .from = from, .to = to };
	int rc;

	*out = NULL;
	c.outcap = 4096;
	c.out = malloc(c.outcap);
	if (!c.out)
		return ap_fail(AP_EXIT_IO, "out of memory");
	c.out[0] = 0;
	rc = convert_text(&c, in);
	if (rc) {
		free(c.out);
		return rc;
	}
	*out = c.out;
	return 0;
}

/* The sector size a dump says it was written in ("sector-size: N"), 0 if
 * it does not say. */
static uint64_t dump_sector_size(const char *in)
{
	uint64_t v = 0;
	char buf[64];

	if (!header_value(in, "sector-size", buf, sizeof(buf)))
		return 0;
	return parse_count(buf, &v) ? 0 : v;
}

/* Read all of @f (at most 1 MiB: a dump of 128 partitions is ~25 KiB). */
static int slurp(FILE *f, const char *name, char **buf)
{
	size_t cap = 1 << 20, n;
	char *b = malloc(cap + 1);

	if (!b)
		return ap_fail(AP_EXIT_IO, "out of memory");
	n = fread(b, 1, cap, f);
	if (ferror(f)) {
		free(b);
		return ap_fail(AP_EXIT_IO, "%s: cannot read it", name);
	}
	if (n == cap && fgetc(f) != EOF) {
		free(b);
		return ap_fail(AP_EXIT_USAGE, "%s: over 1 MiB, not an sfdisk dump", name);
	}
	b[n] = 0;
	if (strlen(b) != n) {
		free(b);
		return ap_fail(AP_EXIT_USAGE, "%s: not text (a NUL byte): not an sfdisk dump", name);
	}
	*buf = b;
	return 0;
}

/* Does regular file @path look like an sfdisk dump (text, a header or a
 * start= in its first 4 KiB) rather than a disk image? */
static bool looks_like_dump(const char *path)
{
	char buf[4097];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	n = fread(buf, 1, 4096, f);
	fclose(f);
	buf[n] = 0;
	if (!n || strlen(buf) != n)
		return false;
	return !strncmp(buf, "label:", 6) || strstr(buf, "\nlabel:") ||
	       strstr(buf, "unit: sectors") || strstr(buf, "start=");
}

/* The live table of a device or image as an sfdisk dump: libfdisk's own
 * (sfdisk -d), read with the topology's sector size. */
static int dump_live(const struct ap_opts *o, char **buf, uint64_t *ss)
{
	struct fdisk_context *cxt = NULL;
	struct fdisk_script *dp = NULL;
	struct ap_topo tp;
	size_t len = 0;
	FILE *mem = NULL;
	int rc;

	*buf = NULL;
	rc = ap_topo_resolve(o, &tp);
	if (rc)
		return rc;
	if (tp.is_image)
		return ap_fail(AP_EXIT_USAGE, "%s is an octant flash image, not a disk: "
			       "convert the table of the device ublk-flash serves", o->target);
	cxt = fdisk_new_context();
	if (!cxt)
		return ap_fail(AP_EXIT_IO, "out of memory");
	if (!tp.is_blockdev)
		fdisk_save_user_sector_size(cxt, tp.t.physical, tp.t.logical);
	rc = fdisk_assign_device(cxt, o->target, 1);
	if (rc < 0) {
		fdisk_unref_context(cxt);
		return ap_fail(AP_EXIT_IO, "%s: libfdisk cannot open it: %s", o->target,
			       strerror(-rc));
	}
	if (!fdisk_has_label(cxt)) {
		fdisk_unref_context(cxt);
		return ap_fail(AP_EXIT_IO, "%s: no partition table found (libfdisk knows none on it)",
			       o->target);
	}
	dp = fdisk_new_script(cxt);
	mem = open_memstream(buf, &len);
	rc = dp && mem ? fdisk_script_read_context(dp, NULL) : -ENOMEM;
	if (!rc)
		rc = fdisk_script_write_file(dp, mem);
	if (mem && fclose(mem) && !rc)
		rc = -EIO;
	fdisk_unref_script(dp);
	fdisk_unref_context(cxt);
	if (rc) {
		free(*buf);
		*buf = NULL;
		return ap_fail(AP_EXIT_IO, "%s: cannot dump its table: %s", o->target,
			       strerror(-rc));
	}
	*ss = tp.t.logical;
	return 0;
}

/* alignpart convert SOURCE --to N [--from N]: the dump on stdout. */
int ap_cmd_convert(const struct ap_opts *o)
{
	struct conv c = { .to = o->to_sector };
	struct stat st;
	char *in = NULL;
	int rc;

	if (!strcmp(o->target, "-")) {
		rc = slurp(stdin, "stdin", &in);
	} else if (!stat(o->target, &st) && S_ISREG(st.st_mode) &&
		   looks_like_dump(o->target)) {
		FILE *f = fopen(o->target, "re");

		rc = f ? slurp(f, o->target, &in)
		       : ap_fail(AP_EXIT_IO, "%s: %s", o->target, strerror(errno));
		if (f)
			fclose(f);
	} else {
		rc = dump_live(o, &in, &c.from);
	}
	if (rc)
		goto out;
	if (!c.from)
		c.from = dump_sector_size(in);
	if (o->from_sector) {
		if (c.from && c.from != o->from_sector) {
			rc = ap_fail(AP_EXIT_USAGE, "--from %" PRIu64 " but the table is in "
				     "%" PRIu64 "-byte sectors", o->from_sector, c.from);
			goto out;
		}
		c.from = o->from_sector;
	}
	if (!c.from) {
		rc = ap_fail(AP_EXIT_USAGE, "the dump does not say its sector size (no "
			     "'sector-size:' line): give --from 512|4096");
		goto out;
	}
	rc = ap_convert_dump(in, c.from, c.to, &c.out);
	if (rc)
		goto out;
	c.outlen = strlen(c.out);
	if (fwrite(c.out, 1, c.outlen, stdout) != c.outlen || fflush(stdout))
		rc = ap_fail(AP_EXIT_IO, "cannot write the dump: %s", strerror(errno));
out:
	free(in);
	free(c.out);
	return rc;
}
