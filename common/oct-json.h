/* SPDX-License-Identifier: MIT */
/*
 * oct-json: the one JSON writer of ublk-flash (info, stats, fsck, list).
 * Compact output, one value per call, commas and nesting tracked here;
 * every string (keys too) is escaped: '"' and '\\', control characters
 * (\n, \t, ... else \u00XX), and bytes that are not valid UTF-8 become
 * U+FFFD, so the output is always valid JSON whatever a path holds.
 * Numbers: integers as they are, doubles with %.6g (NaN and infinities,
 * which JSON cannot hold, as null).  Prefix oct_json_.
 *
 *   struct oct_json j;
 *   oct_json_init(&j, stdout);
 *   oct_json_obj(&j, NULL);              {
 *   oct_json_str(&j, "image", path);       "image":"..."
 *   oct_json_arr(&j, "devices");           ,"devices":[
 *   oct_json_end(&j);                      ]
 *   oct_json_end(&j);                    }  (and a newline at the top)
 *
 * @key is NULL for a value inside an array (or the top-level value).
 */
#ifndef OCTANT_OCT_JSON_H
#define OCTANT_OCT_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define OCT_JSON_DEPTH 16

struct oct_json {
	FILE *out;
	int depth;                      /* open objects/arrays */
	bool first[OCT_JSON_DEPTH + 1]; /* nothing written yet at that level */
	char close[OCT_JSON_DEPTH + 1]; /* '}' or ']' */
	bool list;                      /* oct_json_init_list */
};

void oct_json_init(struct oct_json *j, FILE *out);
/* A writer of the inside of an array, to be copied into a document later
 * (e.g. findings gathered in a memstream while a check runs): top-level
 * values are separated by commas, with no newline. */
void oct_json_init_list(struct oct_json *j, FILE *out);
/* Open an object / array (deeper than OCT_JSON_DEPTH: written as null). */
void oct_json_obj(struct oct_json *j, const char *key);
void oct_json_arr(struct oct_json *j, const char *key);
/* Close the innermost object or array; a newline after the top one. */
void oct_json_end(struct oct_json *j);

void oct_json_str(struct oct_json *j, const char *key, const char *v);
void oct_json_u64(struct oct_json *j, const char *key, uint64_t v);
void oct_json_i64(struct oct_json *j, const char *key, int64_t v);
void oct_json_dbl(struct oct_json *j, const char *key, double v);
void oct_json_bool(struct oct_json *j, const char *key, bool v);
void oct_json_null(struct oct_json *j, const char *key);

/* Write @s as one JSON string (quotes included) to @out. */
void oct_json_quote(FILE *out, const char *s);

#endif /* OCTANT_OCT_JSON_H */
