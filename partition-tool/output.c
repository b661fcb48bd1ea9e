/* SPDX-License-Identifier: MIT */
/*
 * Output through libsmartcols.  A report ("doc") is a sequence of records
 * (key/value groups, e.g. the target and its topology) and tables (one row
 * per partition).  Readable mode prints records as "key: value" lines (a
 * value's control characters and backslashes as \xHH: one line per key)
 * and tables as columns; --json makes every record a one-row smartcols table
 * and joins the smartcols JSON of all parts into one JSON object.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libsmartcols/libsmartcols.h>

#include "ap.h"

static int ap_table_col(struct libscols_table *tb, const char *name, int jtype,
			bool right, bool hidden);

#define DOC_MAX_PARTS 8
#define DOC_MAX_COLS  32
#define DOC_MAX_KV    32

struct ap_doc {
	bool json;
	bool noheadings, raw, bytes;   /* -n, -r, -b: readable tables */
	const char *columns;           /* -o COLS */
	struct libscols_table *mapped; /* the table ap_table_cols made */
	size_t pos[DOC_MAX_COLS];      /* ... where each cell's column went */
	char *part[DOC_MAX_PARTS];       /* JSON members, braces stripped */
	size_t nparts;
	char *key[DOC_MAX_KV], *val[DOC_MAX_KV];
	int jtype[DOC_MAX_KV];
	size_t nkv;
	bool failed;
};

/* A new report for @o's output options (--json, -o, -n, -r, -b). */
struct ap_doc *ap_doc_new(const struct ap_opts *o)
{
	struct ap_doc *d = calloc(1, sizeof(*d));

	if (d) {
		d->json = o->json;
		d->noheadings = o->noheadings;
		d->raw = o->raw;
		d->bytes = o->bytes;
		d->columns = o->columns;
	}
	return d;
}

/* A size for a cell or record: a number of bytes in JSON and with -b,
 * else "8MiB". */
const char *ap_doc_size(const struct ap_doc *d, uint64_t bytes, char *buf,
			size_t len)
{
	if (d->json || d->bytes) {
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
		return buf;
	}
	return ap_human_size(bytes, buf, len);
}

/* The column of @cols named @name (its heading or JSON key, any case). */
static int col_find(const struct ap_col *cols, size_t n, const char *name,
		    size_t len)
{
	for (size_t i = 0; i < n; i++) {
		const char *j = cols[i].json ? cols[i].json : cols[i].name;

		if ((strlen(cols[i].name) == len &&
		     !strncasecmp(cols[i].name, name, len)) ||
		    (strlen(j) == len && !strncasecmp(j, name, len)))
			return (int)i;
	}
	return -1;
}

/* Check -o COLS against a command's columns before it does anything:
 * 0, or AP_EXIT_USAGE after one line naming the columns there are. */
int ap_cols_check(const struct ap_opts *o, const struct ap_col *cols, size_t n)
{
	const char *p = o->columns, *e;
	char all[512] = "";
	size_t used = 0;

	if (!p)
		return 0;
	for (size_t i = 0; i < n && used < sizeof(all); i++)
		used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s",
					 i ? "," : "", cols[i].name);
	for (size_t i = 0; all[i]; i++)
		all[i] = (char)toupper((unsigned char)all[i]);
	if (!*p)
		return ap_fail(AP_EXIT_USAGE, "-o: no columns given (columns: %s)", all);
	for (;; p = e + 1) {
		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		if (col_find(cols, n, p, (size_t)(e - p)) < 0)
			return ap_fail(AP_EXIT_USAGE, "-o: unknown column '%.*s' "
				       "(columns: %s)", (int)(e - p), p, all);
		if (!*e)
			break;
	}
	return 0;
}

/* Add @cols to @tb as -o, -n and -r ask (ap_cols_check passed): with -o
 * the columns named come first, in that order, and the others are hidden;
 * ap_table_row puts each cell where its column went. */
int ap_table_cols(struct ap_doc *d, struct libscols_table *tb,
		  const struct ap_col *cols, size_t n)
{
	bool placed[DOC_MAX_COLS] = { false };
	const char *p, *e;
	size_t pos = 0;

	if (n > DOC_MAX_COLS)
		return -EINVAL;
	d->mapped = tb;
	for (p = d->columns; p; p = *e ? e + 1 : NULL) {
		int i;

		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		i = col_find(cols, n, p, (size_t)(e - p));
		if (i < 0 || placed[i])
			continue;
		placed[i] = true;
		d->pos[i] = pos++;
		if (ap_table_col(tb, d->json && cols[i].json ? cols[i].json
				 : cols[i].name, cols[i].jtype, cols[i].right, false))
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (placed[i])
			continue;
		d->pos[i] = pos++;
		if (ap_table_col(tb, d->json && cols[i].json ? cols[i].json
				 : cols[i].name, cols[i].jtype, cols[i].right,
				 d->columns != NULL || (cols[i].hidden && !d->json)))
			return -ENOMEM;
	}
	if (!d->json) {
		scols_table_enable_noheadings(tb, d->noheadings);
		scols_table_enable_raw(tb, d->raw);
	}
	return 0;
}

/* Add a key/value to the pending record (jtype: SCOLS_JSON_*). */
void ap_doc_kv(struct ap_doc *d, const char *key, int jtype,
	       const char *fmt, ...)
{
	va_list ap;
	char *v = NULL;

	if (d->nkv >= DOC_MAX_KV) {
		d->failed = true;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&v, fmt, ap) < 0)
		v = NULL;
	va_end(ap);
	d->key[d->nkv] = strdup(key);
	d->val[d->nkv] = v;
	d->jtype[d->nkv] = jtype;
	if (!d->key[d->nkv] || !v)
		d->failed = true;
	d->nkv++;
}

static void clear_kv(struct ap_doc *d)
{
	for (size_t i = 0; i < d->nkv; i++) {
		free(d->key[i]);
		free(d->val[i]);
	}
	d->nkv = 0;
}

/* Keep the members of a smartcols JSON object (drop its outer braces). */
static int add_json(struct ap_doc *d, struct libscols_table *tb)
{
	char *s = NULL, *a, *b;

	if (d->nparts >= DOC_MAX_PARTS || scols_print_table_to_string(tb, &s) < 0 || !s)
		goto fail;
	a = strchr(s, '{');
	b = strrchr(s, '}');
	if (!a || !b || b <= a)
		goto fail;
	*b = 0;
	a++;
	while (*a == '\n')
		a++;
	for (b = a + strlen(a); b > a && isspace((unsigned char)b[-1]); )
		*--b = 0;
	d->part[d->nparts] = strdup(a);
	if (!d->part[d->nparts])
		goto fail;
	d->nparts++;
	free(s);
	return 0;
fail:
	free(s);
	d->failed = true;
	return -ENOMEM;
}

/* Emit the pending key/values as the record @name. */
int ap_doc_end_record(struct ap_doc *d, const char *name)
{
	struct libscols_table *tb;
	const char *cells[DOC_MAX_KV];
	size_t w = 0;
	int rc = 0;

	if (!d->json) {
		for (size_t i = 0; i < d->nkv; i++)
			if (strlen(d->key[i]) > w)
				w = strlen(d->key[i]);
		for (size_t i = 0; i < d->nkv; i++) {
			/* one line per key: a value (an image path) may hold
			 * a newline; JSON escapes its own way */
			size_t len = AP_ESCAPED_LEN(strlen(d->val[i]));
			char *v = malloc(len);

			if (!v) {
				d->failed = true;
				break;
			}
			printf("%s:%*s %s\n", d->key[i], (int)(w - strlen(d->key[i])), "",
			       ap_escape(d->val[i], v, len));
			free(v);
		}
		putchar('\n');
		clear_kv(d);
		return d->failed ? -ENOMEM : 0;
	}
	tb = ap_table_new(d, name);
	if (!tb) {
		clear_kv(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->nkv; i++) {
		ap_table_col(tb, d->key[i], d->jtype[i], false, false);
		cells[i] = d->val[i];
	}
	ap_table_row(d, tb, cells);
	rc = add_json(d, tb);
	scols_unref_table(tb);
	clear_kv(d);
	return rc;
}

/* Emit a table made by ap_table_new(). */
int ap_doc_table(struct ap_doc *d, struct libscols_table *tb)
{
	if (d->json)
		return add_json(d, tb);
	if (scols_print_table(tb) < 0)
		return -EIO;
	return 0;
}

/* Print the JSON document (readable output was printed as it came).
 * 0, or AP_EXIT_IO when something could not be formatted. */
int ap_doc_print(struct ap_doc *d)
{
	if (d->failed)
		return ap_fail(AP_EXIT_IO, "cannot format the output");
	if (!d->json)
		return fflush(stdout) ? AP_EXIT_IO : 0;
	fputs("{\n", stdout);
	for (size_t i = 0; i < d->nparts; i++)
		printf("%s%s\n", d->part[i], i + 1 < d->nparts ? "," : "");
	fputs("}\n", stdout);
	return fflush(stdout) ? AP_EXIT_IO : 0;
}

/* Free a report. */
void ap_doc_free(struct ap_doc *d)
{
	if (!d)
		return;
	clear_kv(d);
	for (size_t i = 0; i < d->nparts; i++)
		free(d->part[i]);
	free(d);
}

/* A new smartcols table named @name (the JSON member name). */
struct libscols_table *ap_table_new(struct ap_doc *d, const char *name)
{
	struct libscols_table *tb = scols_new_table();

	if (!tb)
		return NULL;
	if (d->json) {
		scols_table_enable_json(tb, 1);
		scols_table_set_name(tb, name);
	}
	return tb;
}

/* Add column @name (lower case; upper-cased for readable headings). */
static int ap_table_col(struct libscols_table *tb, const char *name, int jtype,
			bool right, bool hidden)
{
	struct libscols_column *cl;
	char head[64];
	size_t i;

	for (i = 0; name[i] && i + 1 < sizeof(head); i++)
		head[i] = scols_table_is_json(tb) ? name[i]
				: (char)toupper((unsigned char)name[i]);
	head[i] = 0;
	cl = scols_table_new_column(tb, head, 0, (right ? SCOLS_FL_RIGHT : 0) |
				    (hidden ? SCOLS_FL_HIDDEN : 0));
	if (!cl)
		return -ENOMEM;
	scols_column_set_json_type(cl, jtype);
	return 0;
}

/* Add a row; @cells has one string per column as the command defined
 * them (NULL = empty), put where -o moved each. */
int ap_table_row(struct ap_doc *d, struct libscols_table *tb,
		 const char *const *cells)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	size_t n = scols_table_get_ncols(tb);

	if (!ln)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (cells[i] && scols_line_set_data(ln, tb == d->mapped ? d->pos[i] : i,
						    cells[i]) < 0)
			return -ENOMEM;
	return 0;
}
