/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice_rules.h — what the files of analysis/ share: a rule's view of one
 * process, how it builds a finding's evidence and hands the finding to
 * gp_advice_emit(), and the rules, family by family (advice.c runs them).
 */
#ifndef GP_ADVICE_RULES_H
#define GP_ADVICE_RULES_H

#include "analysis/advice.h"

/* A rule's view: one process of the model, and where its findings go. */
struct gp_advice {
	const struct gp_model *m;
	const struct gp_process *p;
	__u64 wall_ns;		 /* the process's traced wall time; 0: unknown */
	struct gp_findings *out; /* the findings so far, all processes (not yet ranked) */
	bool verdicts;		 /* a verdict goes to out->verdicts (else among the findings) */
};

/* Keeps f if it passes the threshold, with its process and call sites (its evidence either way). */
void gp_advice_emit(struct gp_advice *a, struct gp_finding *f);

/* "12.345 ms" */
const char *gp_advice_ms(char *buf, size_t len, __u64 ns);

/* The values of a u64map, malloc'ed (NULL when empty, or on failure: then a->out->failed). */
void **gp_advice_map_values(struct gp_advice *a, const struct gp_u64map *map, size_t *n);

/* Evidence: values added to f (nothing when f is NULL), rows of values kept apart until put. */
void gp_ev_u64(struct gp_fields *f, const char *key, __u64 v);
void gp_ev_s64(struct gp_fields *f, const char *key, __s64 v);
void gp_ev_real2(struct gp_fields *f, const char *key, double v);
void gp_ev_str(struct gp_fields *f, const char *key, const char *s); /* static s; NULL: "" */
void gp_ev_bool(struct gp_fields *f, const char *key, bool v);
void gp_ev_null(struct gp_fields *f, const char *key);
struct gp_ev_rows *gp_ev_rows_new(void);	   /* NULL on failure (put records it) */
struct gp_fields *gp_ev_row(struct gp_ev_rows *r); /* a new row; NULL on failure */
void gp_ev_rows_put(struct gp_fields *f, const char *key, struct gp_ev_rows *r); /* takes r */
void gp_ev_rows_free(struct gp_ev_rows *r);
void gp_fields_release(struct gp_fields *f);

#define MS(buf, ns) gp_advice_ms(buf, sizeof(buf), ns)

static inline __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static inline __u64 sub_sat(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* bytes per ns = GB/s */
static inline double gbps(__u64 bytes, __u64 ns)
{
	return ns ? (double)bytes / (double)ns : 0;
}

/* rules_copies.c */
void gp_rule_pageable(struct gp_advice *a);
void gp_rule_sync_copies(struct gp_advice *a, __u64 outside);
void gp_rule_small_copies(struct gp_advice *a);
/* rules_calls.c; gp_sync_time: the host time of the synchronisation calls (waited: minus the
 * redundant ones), and per API */
__u64 gp_sync_time(struct gp_advice *a, bool redundant, __u64 *calls, struct gp_ev_rows **by_api);
void gp_rule_sync_wait(struct gp_advice *a, __u64 outside);
void gp_rule_redundant_sync(struct gp_advice *a);
void gp_rule_launch_bound(struct gp_advice *a);
void gp_rule_alloc_churn(struct gp_advice *a);
/* rules_host.c */
void gp_rule_cpu_feeding(struct gp_advice *a);
void gp_rule_faults(struct gp_advice *a);
void gp_rule_gpu_idle(struct gp_advice *a);
/* rules_errors.c */
void gp_rule_failing_calls(struct gp_advice *a);
void gp_rule_leak(struct gp_advice *a);
/* rules_nccl.c: across the processes of one job (NCCL ranks), findings into out */
void gp_advice_jobs(const struct gp_model *m, struct gp_findings *out);

#endif /* GP_ADVICE_RULES_H */
