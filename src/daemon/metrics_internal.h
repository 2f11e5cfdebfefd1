/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_internal.h — what the files of the /metrics page share (nobody
 * else): the state of one rendering (what was collected of each process),
 * the text format's writers, and each file's part of the page.
 */
#ifndef GP_DAEMON_METRICS_INTERNAL_H
#define GP_DAEMON_METRICS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "daemon/metrics.h"
#include "model/view.h"

/* What the kernel says of a live process (/proc/PID/stat, task/N/status). */
struct proc_counts {
	bool stat_ok, switches_ok;
	__u64 utime, stime; /* clock ticks */
	__u64 minflt, majflt;
	__u64 vol, invol;
};

struct gp_findings;

/* One rendering of the page (gp_metrics_render). */
struct render {
	FILE *out;
	const struct gp_model *m;
	const struct gp_metrics_opts *o;
	const char *proc_root;
	char **labels;		/* [proc index]: its escaped label text; NULL: not rendered */
	struct proc_counts *pc; /* [proc index] */
	/* the model's recommendations (analysis/advice.h), found once a scrape; NULL: none */
	const struct gp_findings *findings;
};

/* ---- the text format's writers ------------------------------------------ */

/* metrics.c: a label value, \ " and newline escaped; bytes not UTF-8 text become U+FFFD. */
void gp_metrics_put_value(FILE *f, const char *s);

static inline void family(struct render *r, const char *name, const char *type, const char *help)
{
	/* our HELP texts hold no backslash or newline: nothing to escape */
	fprintf(r->out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{plabels[,k=v]: the sample's start; end it with one of the close_* below. */
static inline void open_sample(struct render *r, const char *name, const char *plabels)
{
	fprintf(r->out, "%s{%s", name, plabels);
}

static inline void label(struct render *r, bool comma, const char *key, const char *value)
{
	fprintf(r->out, "%s%s=\"", comma ? "," : "", key);
	gp_metrics_put_value(r->out, value);
	fputc('"', r->out);
}

static inline void close_u64(struct render *r, __u64 v)
{
	fprintf(r->out, "} %llu\n", (unsigned long long)v);
}

/* nanoseconds as seconds, exactly (no float rounding) */
static inline void close_ns(struct render *r, __u64 ns)
{
	fprintf(r->out, "} %llu.%09llu\n", (unsigned long long)(ns / 1000000000ull),
		(unsigned long long)(ns % 1000000000ull));
}

static inline void plain_u64(struct render *r, const char *name, __u64 v)
{
	fprintf(r->out, "%s %llu\n", name, (unsigned long long)v);
}

static inline void plain_double(struct render *r, const char *name, double v)
{
	fprintf(r->out, "%s %.9g\n", name, v);
}

/* Loops over the rendered processes: p, its index i and its labels L. */
#define FOR_PROCS(r, i, p, L)                                                    \
	for (size_t i = 0; i < (r)->m->nprocs; i++)                              \
		for (const struct gp_process *p = (r)->m->procs[i]; p; p = NULL) \
			for (const char *L = (r)->labels[i]; L; L = NULL)

/* ---- the parts of the page --------------------------------------------- */

/*
 * metrics_collect.c: process i's label set into r->labels[i] (NULL: not
 * rendered, an older entry of a reused pid) and, live, the kernel's counts
 * into r->pc[i]. 0 or -ENOMEM.
 */
int gp_metrics_collect(struct render *r, size_t i);
/* p's label set as gp_metrics_collect makes it, malloc'ed; NULL: out of memory. */
char *gp_metrics_label_text(struct render *r, const struct gp_process *p);
/* container, pod, namespace: where p runs, each absent on the host or unknown (p NULL: none). */
void gp_metrics_place_labels(FILE *f, const struct gp_process *p);

/* metrics_process.c: the per-process families (API calls, transfers, memory, NCCL, CPU). */
void gp_metrics_process_families(struct render *r);
/* metrics_pool.c: the same families, a series per group of processes (r->o->pool). 0 or -ENOMEM. */
int gp_metrics_pooled_families(struct render *r);

/* metrics_gpu.c: NVML's view of the devices and of the processes on them. */
void gp_metrics_gpu_families(struct render *r);

#endif /* GP_DAEMON_METRICS_INTERNAL_H */
