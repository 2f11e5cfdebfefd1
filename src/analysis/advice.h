/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice.h — recommendations ranked by the time a fix would save
 * (docs/recommendations.md defines every rule, formula and threshold), as
 * plain C data (finding.h). advice.c runs the rules and ranks their
 * findings; finding.c keeps a finding that passes the threshold, with its
 * call sites; the rules_*.c files hold the rules (advice_rules.h), each
 * reading one process of the model (const) and nothing else, so a report
 * rebuilt from a capture has the same findings.
 */
#ifndef GP_ADVICE_H
#define GP_ADVICE_H

#include "analysis/finding.h"
#include "model/view.h"

/* Thresholds (docs/recommendations.md). */
#define GP_ADVICE_MIN_NS	 100000ull /* a finding saves at least 100 us ... */
#define GP_ADVICE_MIN_SHARE	 0.01	   /* ... and 1 % of the process's traced wall time */
#define GP_ADVICE_PAGEABLE_RATIO 0.4	   /* pageable / pinned bandwidth when not measured */
#define GP_ADVICE_MEASURE_BYTES \
	(1ull << 20) /* bytes each kind must move for a measured bandwidth */
#define GP_ADVICE_SMALL_MIN_CALLS 100
#define GP_ADVICE_PINNED_GBPS	  25.0 /* reference bandwidths when not measured */
#define GP_ADVICE_PAGEABLE_GBPS	  10.0
#define GP_ADVICE_LAUNCH_MIN	  1000
#define GP_ADVICE_CHURN_MIN	  10
#define GP_ADVICE_FEED_CPU_SHARE  0.30 /* on-CPU outside calls / the feeding threads' wall time */
#define GP_ADVICE_FEED_SYNC_DIV	  4    /* synchronisations blocked at most C / 4 */
#define GP_ADVICE_FAULTS_MIN	  1000
#define GP_ADVICE_FAULT_NS	  1000ull /* cost of one minor fault */
#define GP_ADVICE_FAIL_MIN	  2
#define GP_ADVICE_GPU_IDLE_SHARE \
	0.50 /* gpu-idle-host-busy: the GPU busy less than half the time ... */
#define GP_ADVICE_HOST_BUSY_SHARE 0.50 /* ... while the host-side work took at least half of it */

/* The kind of host time a call of API api is. */
unsigned gp_about_api(unsigned api);

/*
 * Every finding of m: the rules on each process, then across the processes of a job; the findings
 * ranked, each with the ranks of those it overlaps, and apart the verdicts (states the findings
 * explain), each with the ranks of those that name its causes. 0, or -ENOMEM (out is empty).
 * gp_findings_release() it either way.
 */
int gp_advise(const struct gp_model *m, struct gp_findings *out);
void gp_findings_release(struct gp_findings *fs);

#endif /* GP_ADVICE_H */
