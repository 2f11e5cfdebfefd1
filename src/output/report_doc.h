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

struct gp_doc {
	const struct gp_model *m;
	bool failed; /* an allocation failed somewhere: the document is incomplete */
};

/* Values. NULL on allocation failure, which gp_doc_put()/gp_doc_push() then record. */
json_t *gp_j_u64(__u64 v);         /* integer (saturates at INT64_MAX) */
json_t *gp_j_s64(__s64 v);
json_t *gp_j_hex(__u64 v);         /* "0x1f" */
json_t *gp_j_str(const char *s);   /* NULL -> "" */
json_t *gp_j_real2(double v);      /* rounded to 2 decimals */

void gp_doc_put(struct gp_doc *d, json_t *obj, const char *key, json_t *val); /* steals val */
void gp_doc_push(struct gp_doc *d, json_t *arr, json_t *val);                 /* steals val */
json_t *gp_doc_obj_new(struct gp_doc *d);
json_t *gp_doc_arr_new(struct gp_doc *d);

/* Sections of one process (each returns the new value, or NULL + d->failed). */
json_t *gp_doc_api(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_nested_api(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_gpu_work(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_nccl(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_comm_id(const struct gp_nccl_comm *cm);   /* 16 hex digits, or null */
json_t *gp_doc_communicators(struct gp_doc *d);           /* the top-level communicators[] */
json_t *gp_doc_merge(struct gp_doc *d);                   /* gpuprobed merge's "merge"; null otherwise */
json_t *gp_doc_stalls(struct gp_doc *d);                  /* the top-level stalls[] */
const char *gp_doc_host(const struct gp_model *m, const struct gp_process *p);
/* report_doc_containers.c: a process's "container" (null: on the host); containers[] */
json_t *gp_doc_container(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_containers(struct gp_doc *d, const json_t *procs);
json_t *gp_doc_nvml(struct gp_doc *d); /* report_doc_gpus.c: NVML's state */
json_t *gp_doc_gpus(struct gp_doc *d); /* report_doc_gpus.c: the devices NVML sampled */
json_t *gp_doc_size_histogram(struct gp_doc *d, const __u64 *hist); /* [{lo_bytes, hi_bytes, calls}] of GP_SIZE_BUCKETS */
json_t *gp_doc_transfers(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_memsets(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_memory(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_kernels(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_graphs(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_streams(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_events(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_threads(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_stacks(struct gp_doc *d, const struct gp_process *p);
/* The stacks of p, heaviest first (calls, then first seen); *n of them, malloc'ed (NULL: none). */
const struct gp_stack **gp_doc_sorted_stacks(const struct gp_process *p, size_t *n);
json_t *gp_doc_cpu(struct gp_doc *d, const struct gp_process *p, __u64 from, __u64 to);
json_t *gp_doc_cpu_attr(struct gp_doc *d, const struct gp_cpu_attr *a);

/* The values of a u64map, malloc'ed (NULL when empty or on failure: check *n). */
void **gp_doc_map_values(struct gp_doc *d, const struct gp_u64map *map, size_t *n);

#endif /* GP_REPORT_DOC_H */
