/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_builders.h — shared by the report_doc*.c files that build the report
 * document: the per-section builders (their jansson helpers: json_out.h).
 */
#ifndef GP_REPORT_BUILDERS_H
#define GP_REPORT_BUILDERS_H

#include <jansson.h>

#include "model/view.h"
#include "report/report.h"
#include "report/json_out.h"

/* Sections of one process (each returns the new value, or NULL + d->failed). */
json_t *gp_doc_api(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_nested_api(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_gpu_work(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_nccl(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_comm_id(const struct gp_nccl_comm *cm); /* 16 hex digits, or null */
json_t *gp_doc_communicators(struct gp_doc *d);	       /* the top-level communicators[] */
json_t *gp_doc_merge(struct gp_doc *d);	 /* gpuprobed merge's "merge"; null otherwise */
json_t *gp_doc_stalls(struct gp_doc *d); /* the top-level stalls[] */
const char *gp_doc_host(const struct gp_model *m, const struct gp_process *p);
/* report_doc_containers.c: a process's "container" (null: on the host); containers[] */
json_t *gp_doc_container(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_containers(struct gp_doc *d, const json_t *procs);
json_t *gp_doc_nvml(struct gp_doc *d); /* report_doc_gpus.c: NVML's state */
json_t *gp_doc_gpus(struct gp_doc *d); /* report_doc_gpus.c: the devices NVML sampled */
json_t *
gp_doc_size_histogram(struct gp_doc *d,
		      const __u64 *hist); /* [{lo_bytes, hi_bytes, calls}] of GP_SIZE_BUCKETS */
json_t *gp_doc_transfers(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_memsets(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_memory(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_kernels(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_graphs(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_streams(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_events(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_threads(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_stacks(struct gp_doc *d, const struct gp_process *p);
json_t *gp_doc_cpu(struct gp_doc *d, const struct gp_process *p, __u64 from, __u64 to);
json_t *gp_doc_cpu_attr(struct gp_doc *d, const struct gp_cpu_attr *a);
/*
 * report_doc_advice.c: "recommendations", every process's findings ranked, each with the ranks of
 * the findings it overlaps; and in *verdicts ("verdicts") the states they explain, each with the
 * ranks of the findings that name its causes.
 */
json_t *gp_doc_recommendations(struct gp_doc *d, json_t **verdicts);

#endif /* GP_REPORT_BUILDERS_H */
