/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * json_out.c — the jansson helpers of the report document (json_out.h):
 * values, and objects and arrays that remember the first failed allocation.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/u64map.h"
#include "report/json_out.h"

json_t *gp_j_u64(__u64 v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *gp_j_s64(__s64 v)
{
	return json_integer((json_int_t)v);
}

json_t *gp_j_hex(__u64 v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	return json_string(buf);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80	     ? 1
		     : (s[0] & 0xe0) == 0xc0 ? 2
		     : (s[0] & 0xf0) == 0xe0 ? 3
		     : (s[0] & 0xf8) == 0xf0 ? 4
					     : 0;

	if (!len || len > n || (len == 2 && s[0] < 0xc2) || (len == 4 && s[0] > 0xf4))
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0; /* overlong, or a UTF-16 surrogate */
	if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return len;
}

/* Command lines and paths are bytes, JSON strings are UTF-8: invalid bytes become U+FFFD. */
json_t *gp_j_str(const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), seq;
	bool valid = true;

	for (size_t i = 0; i < n && valid; i += seq)
		valid = (seq = utf8_seq(u + i, n - i)) != 0;
	if (valid)
		return json_string((const char *)u);

	char *clean = malloc(n * 3 + 1), *o = clean;

	if (!clean)
		return NULL;
	for (size_t i = 0; i < n;) {
		seq = utf8_seq(u + i, n - i);
		if (seq) {
			memcpy(o, u + i, seq);
			o += seq;
			i += seq;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';

	json_t *j = json_string(clean);

	free(clean);
	return j;
}

json_t *gp_j_real2(double v)
{
	return json_real(round(v * 100.0) / 100.0);
}

void gp_doc_put(struct gp_doc *d, json_t *obj, const char *key, json_t *val)
{
	if (!obj || !val || json_object_set_new(obj, key, val))
		d->failed = true;
}

void gp_doc_push(struct gp_doc *d, json_t *arr, json_t *val)
{
	if (!arr || !val || json_array_append_new(arr, val))
		d->failed = true;
}

json_t *gp_doc_obj_new(struct gp_doc *d)
{
	json_t *o = json_object();

	if (!o)
		d->failed = true;
	return o;
}

json_t *gp_doc_arr_new(struct gp_doc *d)
{
	json_t *a = json_array();

	if (!a)
		d->failed = true;
	return a;
}

void **gp_doc_map_values(struct gp_doc *d, const struct gp_u64map *map, size_t *n)
{
	void **v = map->count ? malloc(map->count * sizeof(*v)) : NULL;

	*n = 0;
	if (map->count && !v) {
		d->failed = true;
		return NULL;
	}
	*n = gp_u64map_values(map, v, map->count);
	return v;
}
