/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice.h — recommendations ranked by the time a fix would save
 * (docs/recommendations.md defines every rule, formula and threshold).
 * advice.c owns a finding's shape, its threshold, its call sites and the
 * ranking; advice_rules.c holds the rules, each reading one process of the
 * model (const) and nothing else, so a report rebuilt from a capture has
 * the same findings.
 */
#ifndef GP_ADVICE_H
#define GP_ADVICE_H

#include "model/view.h"
#include "text/json_out.h"

/* Thresholds (docs/recommendations.md). */
#define GP_ADVICE_MIN_NS          100000ull /* a finding saves at least 100 us ... */
#define GP_ADVICE_MIN_SHARE       0.01      /* ... and 1 % of the process's traced wall time */
#define GP_ADVICE_PAGEABLE_RATIO  0.4       /* pageable / pinned bandwidth when not measured */
#define GP_ADVICE_MEASURE_BYTES   (1ull << 20) /* bytes each kind must move for a measured bandwidth */
#define GP_ADVICE_SMALL_MIN_CALLS 100
#define GP_ADVICE_PINNED_GBPS     25.0      /* reference bandwidths when not measured */
#define GP_ADVICE_PAGEABLE_GBPS   10.0
#define GP_ADVICE_LAUNCH_MIN      1000
#define GP_ADVICE_CHURN_MIN       10
#define GP_ADVICE_FEED_CPU_SHARE  0.30      /* on-CPU outside calls / the feeding threads' wall time */
#define GP_ADVICE_FEED_SYNC_DIV   4         /* synchronisations blocked at most C / 4 */
#define GP_ADVICE_FAULTS_MIN      1000
#define GP_ADVICE_FAULT_NS        1000ull   /* cost of one minor fault */
#define GP_ADVICE_FAIL_MIN        2
#define GP_ADVICE_GPU_IDLE_SHARE  0.50      /* gpu-idle-host-busy: the GPU busy less than half the time ... */
#define GP_ADVICE_HOST_BUSY_SHARE 0.50      /* ... while the host-side work took at least half of it */

/*
 * What host time a finding is about (report.json "about"): two findings of one process about the
 * same kind of time claim some of the same nanoseconds, so their savings do not add up.
 */
enum gp_about {
	GP_ABOUT_COPIES = 1u << 0,      /* copy and memset calls */
	GP_ABOUT_SYNCS = 1u << 1,       /* synchronisation calls */
	GP_ABOUT_LAUNCHES = 1u << 2,    /* launch calls */
	GP_ABOUT_ALLOCS = 1u << 3,      /* allocation, free and registration calls */
	GP_ABOUT_NCCL = 1u << 4,        /* NCCL calls */
	GP_ABOUT_OTHER_CALLS = 1u << 5, /* any other traced call */
	GP_ABOUT_OUTSIDE = 1u << 6,     /* the calling threads' time outside traced calls */
	GP_ABOUT_MAX = 7
};

/* The kind of host time a call of API api is. */
unsigned gp_about_api(unsigned api);

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
/* Every rule on one process (advice_rules.c). */
void gp_advice_rules(struct gp_advice *a);
/* Rules across the processes of one job (NCCL ranks), findings into out. */
void gp_advice_jobs(struct gp_doc *d, json_t *out);

/* "12.345 ms" */
const char *gp_advice_ms(char *buf, size_t len, __u64 ns);

/*
 * report.json "recommendations": every process's findings, ranked, each with the ranks of the
 * findings it overlaps; and in *verdicts (report.json "verdicts") the states they explain, each
 * with the ranks of the findings that name its causes.
 */
json_t *gp_doc_recommendations(struct gp_doc *d, json_t **verdicts);

#endif /* GP_ADVICE_H */
