/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * json_out.h — the jansson helpers every builder of the report document
 * shares: values made the one way the report makes them (saturated
 * integers, hex, UTF-8-clean strings, reals to 2 decimals) and objects and
 * arrays grown while remembering the first allocation that failed, so that
 * a builder goes on and its caller finds the failure once, at the end.
 */
#ifndef GP_JSON_OUT_H
#define GP_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <linux/types.h>

struct gp_model;
struct gp_u64map;

/* The document being built: the model it reads, and whether it is complete. */
struct gp_doc {
	const struct gp_model *m;
	bool failed; /* an allocation failed somewhere: the document is incomplete */
};

/* Values. NULL on allocation failure, which gp_doc_put()/gp_doc_push() then record. */
json_t *gp_j_u64(__u64 v); /* integer (saturates at INT64_MAX) */
json_t *gp_j_s64(__s64 v);
json_t *gp_j_hex(__u64 v);	 /* "0x1f" */
json_t *gp_j_str(const char *s); /* NULL -> ""; bytes that are not UTF-8 -> U+FFFD */
json_t *gp_j_real2(double v);	 /* rounded to 2 decimals */

void gp_doc_put(struct gp_doc *d, json_t *obj, const char *key, json_t *val); /* steals val */
void gp_doc_push(struct gp_doc *d, json_t *arr, json_t *val);		      /* steals val */
json_t *gp_doc_obj_new(struct gp_doc *d);
json_t *gp_doc_arr_new(struct gp_doc *d);

/* The values of a u64map, malloc'ed (NULL when empty or on failure: check *n). */
void **gp_doc_map_values(struct gp_doc *d, const struct gp_u64map *map, size_t *n);

#endif /* GP_JSON_OUT_H */
