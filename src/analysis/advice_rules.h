/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice_rules.h — what the files of analysis/ share: a rule's view of one
 * process, the finding it hands to gp_advice_emit(), and the rules, family
 * by family (advice.c runs them).
 */
#ifndef GP_ADVICE_RULES_H
#define GP_ADVICE_RULES_H

#include "analysis/advice.h"

/* Which calls of a stack a finding is about (its call sites). */
typedef bool (*gp_advice_site_fn)(const struct gp_stack_op *r);

struct gp_finding {
	const char *id;
	__u64 impact_ns;
	const char *estimate;   /* "exact", "model", "upper_bound" */
	char title[256];
	char method[768];
	const char *action;
	json_t *evidence;       /* owned until gp_advice_emit */
	gp_advice_site_fn site; /* NULL: no call sites */
	bool unconditional;     /* reported whatever its impact (leak, failing-calls) */
	unsigned about;         /* enum gp_about: the host time its saving comes from */
	/*
	 * A state that other findings explain (gpu-idle-host-busy: the GPU waits while the host works):
	 * reported as a verdict beside the findings that name its causes, never ranked among them.
	 */
	bool verdict;
};

struct gp_advice {
	struct gp_doc *d;
	const struct gp_process *p;
	__u64 wall_ns;          /* the process's traced wall time; 0: unknown */
	json_t *out;            /* the findings so far, all processes */
	json_t *verdicts;       /* the verdicts so far (NULL: none expected) */
};

/* Reports f if it passes the threshold (takes its evidence either way). */
void gp_advice_emit(struct gp_advice *a, struct gp_finding *f);

/* "12.345 ms" */
const char *gp_advice_ms(char *buf, size_t len, __u64 ns);

/* The name of each bit of enum gp_about (report.json "about"). */
extern const char *const gp_about_names[GP_ABOUT_MAX];

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
__u64 gp_sync_time(struct gp_advice *a, bool redundant, __u64 *calls, json_t **by_api);
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
void gp_advice_jobs(struct gp_doc *d, json_t *out);

#endif /* GP_ADVICE_RULES_H */
