/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc.h — shared by the report_doc*.c files that build the report
 * document: small jansson helpers that remember the first failure, and the
 * per-section builders.
 */
#ifndef GP_REPORT_DOC_H
#define GP_REPORT_DOC_H

#include <jansson.h>

#include "model/view.h"
#include "output/report.h"

struct doc {
	const struct gp_model *m;
	bool failed; /* an allocation failed somewhere: the document is incomplete */
};

/* Values. NULL on allocation failure, which put()/push() then record. */
json_t *j_u64(__u64 v);         /* integer (saturates at INT64_MAX) */
json_t *j_s64(__s64 v);
json_t *j_hex(__u64 v);         /* "0x1f" */
json_t *j_str(const char *s);   /* NULL -> "" */
json_t *j_real2(double v);      /* rounded to 2 decimals */

void put(struct doc *d, json_t *obj, const char *key, json_t *val); /* steals val */
void push(struct doc *d, json_t *arr, json_t *val);                 /* steals val */
json_t *obj_new(struct doc *d);
json_t *arr_new(struct doc *d);

/* Sections of one process (each returns the new value, or NULL + d->failed). */
json_t *doc_api(struct doc *d, const struct gp_process *p);
json_t *doc_nested_api(struct doc *d, const struct gp_process *p);
json_t *doc_gpu_work(struct doc *d, const struct gp_process *p);
json_t *doc_nccl(struct doc *d, const struct gp_process *p);
json_t *doc_size_histogram(struct doc *d, const __u64 *hist); /* [{lo_bytes, hi_bytes, calls}] of GP_SIZE_BUCKETS */
json_t *doc_transfers(struct doc *d, const struct gp_process *p);
json_t *doc_memsets(struct doc *d, const struct gp_process *p);
json_t *doc_memory(struct doc *d, const struct gp_process *p);
json_t *doc_kernels(struct doc *d, const struct gp_process *p);
json_t *doc_graphs(struct doc *d, const struct gp_process *p);
json_t *doc_streams(struct doc *d, const struct gp_process *p);
json_t *doc_events(struct doc *d, const struct gp_process *p);
json_t *doc_threads(struct doc *d, const struct gp_process *p);
json_t *doc_stacks(struct doc *d, const struct gp_process *p);
/* The stacks of p, heaviest first (calls, then first seen); *n of them, malloc'ed (NULL: none). */
const struct gp_stack **sorted_stacks(const struct gp_process *p, size_t *n);
json_t *doc_cpu(struct doc *d, const struct gp_process *p, __u64 from, __u64 to);
json_t *doc_cpu_attr(struct doc *d, const struct gp_cpu_attr *a);

/* The values of a u64map, malloc'ed (NULL when empty or on failure: check *n). */
void **map_values(struct doc *d, const struct gp_u64map *map, size_t *n);

#endif /* GP_REPORT_DOC_H */
