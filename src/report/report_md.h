/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md.h — shared by report_md*.c: reading the report document and
 * printing its pieces as Markdown.
 */
#ifndef GP_REPORT_MD_H
#define GP_REPORT_MD_H

#include <stdbool.h>
#include <stdio.h>

#include "text/md_table.h"
#include "report/report.h"

json_int_t gp_md_int(const json_t *o, const char *key);  /* 0 when absent or null */
const char *gp_md_str(const json_t *o, const char *key); /* "" when absent or null */
bool gp_md_bool(const json_t *o, const char *key);
char *gp_md_n(char *buf, const json_t *o, const char *key); /* gp_md_int with thousands separators */
/* "+1.234567 s" since the session start (or the raw monotonic ns when unknown). */
void gp_md_rel_time(char *buf, size_t len, const json_t *doc, json_int_t mono_ns);
/* Prints and frees t; -ENOMEM when t is NULL or failed. */
int gp_md_flush_table(struct gp_md_table *t, FILE *out);

/* report_md_merge.c: gpuprobed merge's captures and clocks (nothing without "merge"). 0 or -ENOMEM. */
int gp_md_merge(const json_t *doc, FILE *out);

/* One process: its header, then every section of the registry (report_sections.h). 0 or -ENOMEM. */
int gp_md_process(const json_t *doc, const json_t *proc, FILE *out);

/* report_md_process.c: sections of one process, each 0 or -ENOMEM. */
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
int gp_md_stalls(const json_t *doc, FILE *out);        /* the top-level stalls[] */

/* report_md_stacks.c: who launches what, from the call stacks. 0 or -ENOMEM. */
int gp_md_stacks(const json_t *p, FILE *out);

/* report_md_advice.c: the ranked recommendations of every process. 0 or -ENOMEM. */
int gp_md_recommendations(const json_t *doc, FILE *out);

/* report_md_cpu.c: the CPU, scheduling and page-fault section. 0 or -ENOMEM. */
int gp_md_cpu(const json_t *p, FILE *out);

#endif /* GP_REPORT_MD_H */
