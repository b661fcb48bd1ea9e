/* SPDX-License-Identifier: MIT */
/* The one JSON writer (see oct-json.h). */
#include <math.h>
#include <string.h>

#include "oct-json.h"

void oct_json_init(struct oct_json *j, FILE *out)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->first[0] = true;
}

void oct_json_init_list(struct oct_json *j, FILE *out)
{
	oct_json_init(j, out);
	j->list = true;
}

/* Length of the valid UTF-8 sequence at @s (1..4), 0 if not one. */
static size_t oct_json_utf8(const unsigned char *s)
{
	size_t n;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void oct_json_quote(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	fputc('"', out);
	while (*s) {
		size_t n = oct_json_utf8(s);

		if (n == 0) {
			fputs("\\ufffd", out);
			s++;
			continue;
		}
		if (n > 1) {
			fwrite(s, 1, n, out);
			s += n;
			continue;
		}
		switch (*s) {
		case '"':  fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		case '\b': fputs("\\b", out); break;
		case '\f': fputs("\\f", out); break;
		default:
			if (*s < 0x20 || *s == 0x7f)
				fprintf(out, "\\u%04x", *s);
			else
				fputc(*s, out);
		}
		s++;
	}
	fputc('"', out);
}

/* The comma and "key": before a value at the current level. */
static void oct_json_key(struct oct_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	if (key && j->depth > 0 && j->close[j->depth] == '}') {
		oct_json_quote(j->out, key);
		fputc(':', j->out);
	}
}

/* After a complete value at the top level: the line ends. */
static void oct_json_done(struct oct_json *j)
{
	if (j->depth == 0 && !j->list) {
		fputc('\n', j->out);
		j->first[0] = true;
	}
}

static void oct_json_open(struct oct_json *j, const char *key, char open,
			  char close)
{
	oct_json_key(j, key);
	if (j->depth >= OCT_JSON_DEPTH) {
		fputs("null", j->out);   /* never nested this deep here */
		return;
	}
	fputc(open, j->out);
	j->depth++;
	j->first[j->depth] = true;
	j->close[j->depth] = close;
}

void oct_json_obj(struct oct_json *j, const char *key)
{
	oct_json_open(j, key, '{', '}');
}

void oct_json_arr(struct oct_json *j, const char *key)
{
	oct_json_open(j, key, '[', ']');
}

void oct_json_end(struct oct_json *j)
{
	if (j->depth == 0)
		return;
	fputc(j->close[j->depth], j->out);
	j->depth--;
	oct_json_done(j);
}

void oct_json_str(struct oct_json *j, const char *key, const char *v)
{
	oct_json_key(j, key);
	oct_json_quote(j->out, v);
	oct_json_done(j);
}

void oct_json_u64(struct oct_json *j, const char *key, uint64_t v)
{
	oct_json_key(j, key);
	fprintf(j->out, "%llu", (unsigned long long)v);
	oct_json_done(j);
}

void oct_json_i64(struct oct_json *j, const char *key, int64_t v)
{
	oct_json_key(j, key);
	fprintf(j->out, "%lld", (long long)v);
	oct_json_done(j);
}

void oct_json_dbl(struct oct_json *j, const char *key, double v)
{
	oct_json_key(j, key);
	if (isfinite(v))
		fprintf(j->out, "%.6g", v);
	else
		fputs("null", j->out);
	oct_json_done(j);
}

void oct_json_bool(struct oct_json *j, const char *key, bool v)
{
	oct_json_key(j, key);
	fputs(v ? "true" : "false", j->out);
	oct_json_done(j);
}

void oct_json_null(struct oct_json *j, const char *key)
{
	oct_json_key(j, key);
	fputs("null", j->out);
	oct_json_done(j);
}
