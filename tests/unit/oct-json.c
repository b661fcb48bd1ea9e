/* SPDX-License-Identifier: MIT */
/* common/oct-json + oct-fmt: escaping, nesting, numbers; human units. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "oct-fmt.h"
#include "oct-json.h"
#include "test.h"

/* Run @fn on a memstream writer and compare with @want. */
#define T_JSON(want, ...) do {                                           \
	char *b_ = NULL; size_t l_ = 0;                                  \
	FILE *m_ = open_memstream(&b_, &l_);                             \
	struct oct_json j_; oct_json_init(&j_, m_);                      \
	struct oct_json *j = &j_;                                        \
	__VA_ARGS__;                                                     \
	fclose(m_);                                                      \
	T_CHECK(!strcmp(b_, want), "got [%s] want [%s]", b_, want);      \
	free(b_);                                                        \
} while (0)

int main(void)
{
	char buf[64];

	T_JSON("{\"a\":1,\"b\":\"x\",\"c\":[true,null,-3],\"d\":{}}\n",
	       oct_json_obj(j, NULL); oct_json_u64(j, "a", 1);
	       oct_json_str(j, "b", "x"); oct_json_arr(j, "c");
	       oct_json_bool(j, NULL, true); oct_json_null(j, NULL);
	       oct_json_i64(j, NULL, -3); oct_json_end(j);
	       oct_json_obj(j, "d"); oct_json_end(j); oct_json_end(j));
	/* a path with a quote, a backslash, a newline, a tab, ESC, DEL */
	T_JSON("\"/tmp/a\\\"b\\\\c\\nd\\te\\u001bf\\u007f\"\n",
	       oct_json_str(j, NULL, "/tmp/a\"b\\c\nd\te\x1b" "f\x7f"));
	/* valid UTF-8 kept, invalid bytes (lone continuation, overlong,
	 * truncated sequence, surrogate) replaced */
	T_JSON("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\n",
	       oct_json_str(j, NULL, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	T_JSON("\"\\ufffda\\ufffd\\ufffd\\ufffdb\\ufffd\\ufffd\\ufffd\"\n",
	       oct_json_str(j, NULL, "\x80" "a\xc0\xaf\xe2" "b\xed\xa0\x80"));
	/* keys escaped too; doubles; NaN/inf as null */
	T_JSON("{\"k\\\"\":0.5,\"n\":null,\"i\":null,\"e\":1e+20}\n",
	       oct_json_obj(j, NULL); oct_json_dbl(j, "k\"", 0.5);
	       oct_json_dbl(j, "n", NAN); oct_json_dbl(j, "i", INFINITY);
	       oct_json_dbl(j, "e", 1e20); oct_json_end(j));
	T_JSON("18446744073709551615\n", oct_json_u64(j, NULL, UINT64_MAX));
	/* a list writer (an array's inside, copied in later): commas, no
	 * newline */
	T_JSON("{\"p\":true},{\"p\":false},3",
	       oct_json_init_list(j, m_); oct_json_obj(j, NULL);
	       oct_json_bool(j, "p", true); oct_json_end(j);
	       oct_json_obj(j, NULL); oct_json_bool(j, "p", false);
	       oct_json_end(j); oct_json_u64(j, NULL, 3));
	T_JSON("\"\"\n", oct_json_str(j, NULL, NULL));

	T_CHECK(!strcmp(oct_fmt_size(512, buf, sizeof(buf)), "512 B"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_size(4096, buf, sizeof(buf)), "4 KiB"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_size(1536 * 1024, buf, sizeof(buf)), "1.5 MiB"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_size(64ull << 30, buf, sizeof(buf)), "64 GiB"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_duration(45, buf, sizeof(buf)), "45s"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_duration(725, buf, sizeof(buf)), "12m 05s"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_duration(3 * 3600 + 120, buf, sizeof(buf)), "3h 02m"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_duration(4 * 86400 + 3 * 3600, buf, sizeof(buf)), "4d 03h"), "%s", buf);
	T_CHECK(!strcmp(oct_fmt_time(0, buf, sizeof(buf)), "never"), "%s", buf);
	setenv("TZ", "UTC", 1);
	T_CHECK(!strcmp(oct_fmt_time(1796303705, buf, sizeof(buf)),
			"2026-12-03T13:15:05+0000"), "%s", buf);
	return t_failures ? T_EXIT_FAIL : T_EXIT_PASS;
}
