/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md.h — shared by report_md*.c: the pieces of report.md, each
 * printed from the report document (their helpers: md_out.h).
 */
#ifndef GP_REPORT_MD_H
#define GP_REPORT_MD_H

#include <stdbool.h>
#include <stdio.h>

#include "report/md_out.h"
#include "report/report.h"

/* report_md_merge.c: gpuprobed merge's captures and clocks (nothing without "merge"). 0 or -ENOMEM. */
int gp_md_merge(const json_t *doc, FILE *out);

/* report_md_process.c: one process, its header then the registry's sections. 0 or -ENOMEM. */
int gp_md_process(const json_t *doc, const json_t *proc, FILE *out);

/* report_md_calls.c: sections of one process, each 0 or -ENOMEM. */
int gp_md_api_table(const json_t *doc, const json_t *p, FILE *out);
int gp_md_errors(const json_t *doc, const json_t *p, FILE *out);
int gp_md_transfers(const json_t *doc, const json_t *p, FILE *out);
int gp_md_memory(const json_t *doc, const json_t *p, FILE *out);

/* report_md_work.c: sections of one process, each 0 or -ENOMEM. */
int gp_md_kernels(const json_t *p, FILE *out);
int gp_md_streams(const json_t *p, FILE *out);
int gp_md_threads(const json_t *doc, const json_t *p, FILE *out);

/* report_md_nccl.c: nested calls, the combined GPU work view, NCCL. 0 or -ENOMEM. */
int gp_md_nested(const json_t *p, FILE *out);
int gp_md_gpu_work(const json_t *p, FILE *out);

/* report_md_containers.c: "Containers" (nothing when no process is in one). 0 or -ENOMEM. */
int gp_md_containers(const json_t *doc, FILE *out);
/* " (container web-1)" for a process's heading; "" on the host. */
void gp_md_container_heading(char *buf, size_t len, const json_t *p);
/* A process's header lines of where it runs: container, pod, cgroup, its pid in its namespace. */
void gp_md_place_lines(const json_t *p, FILE *out);

/* report_md_gpus.c: "GPU devices" (NVML). 0 or -ENOMEM. */
int gp_md_gpus(const json_t *doc, FILE *out);
int gp_md_nccl(const json_t *p, FILE *out);
int gp_md_communicators(const json_t *doc, FILE *out); /* the top-level communicators[] */
int gp_md_stalls(const json_t *doc, FILE *out);	       /* the top-level stalls[] */

/* report_md_stacks.c: who launches what, from the call stacks. 0 or -ENOMEM. */
int gp_md_stacks(const json_t *p, FILE *out);

/* report_md_advice.c: the ranked recommendations of every process. 0 or -ENOMEM. */
int gp_md_recommendations(const json_t *doc, FILE *out);

/* report_md_cpu.c: the CPU, scheduling and page-fault section. 0 or -ENOMEM. */
int gp_md_cpu(const json_t *p, FILE *out);

#endif /* GP_REPORT_MD_H */
