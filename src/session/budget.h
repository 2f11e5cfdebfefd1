/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * budget.h — when the kernel's call aggregates are read (--aggregate), and
 * the always-on session's overhead budget (collect/duty.h: the schedule and
 * the arithmetic) carried out: the hot probes gated, the aggregates read at
 * each period's end and weighted, the next period planned.
 *
 * Without a duty cycle the aggregates are read at most once a second and at
 * the end; with one, at the end of each period (what a process's part of
 * the period counted is scaled to all of it) and when a process exits.
 */
#ifndef GP_SESSION_BUDGET_H
#define GP_SESSION_BUDGET_H

#include <stdbool.h>
#include <linux/types.h>

#include "collect/duty.h"

struct gp_agg;
struct gp_bpf;
struct gp_counters;
struct gp_model;
struct gp_procs;
struct gp_uprobes;

struct gp_budget {
	struct gp_agg *agg;   /* NULL: every call is a record */
	struct gp_duty *duty; /* NULL: no duty cycle (not always on) */
	struct gp_bpf *bpf;
	struct gp_uprobes *probes;
	struct gp_counters *counters;
	struct gp_procs *procs;
	struct gp_model *model;
	const double *overhead_budget; /* re-read at each period's end (a reload); NULL: none */
	__u64 agg_at_ns;	       /* when the aggregates were last read */
	__u64 read_ns; /* the time the aggregates being read reach (their weights') */
};

/*
 * What a probe hit and a traced call cost here, measured now
 * (gp_uprobes_measure_hit_ns, gp_uprobes_measure_call_ns with gpuprobed's own
 * process admitted for the moment) and set in the model for every report.
 * Returns what a hit costs a traced call (half of a traced call's cost; the
 * bare hit and GP_PROGRAM_HIT_NS when only that was measured), <= 0 when
 * neither could be measured (said, with what the daemon's estimates use then).
 */
double gp_budget_measure_probe_cost(struct gp_budget *b, bool daemon);

/*
 * With a duty cycle: what a probe hit costs (hit_ns <= 0: unknown), the
 * gate open, the weights set. 0, or -ENOMEM.
 */
int gp_budget_start_duty(struct gp_budget *b, double hit_ns);

/* At each drain: the aggregates when due; with a duty cycle its step. */
void gp_budget_step(struct gp_budget *b);

/* pid exited: its last aggregates now (then its keys can go). */
void gp_budget_process_exited(struct gp_budget *b, __u32 pid);

/* Every probe is detached: the duty cycle's window closes. */
void gp_budget_detached(struct gp_budget *b);
/* The last records are drained: the aggregates' final totals. */
void gp_budget_finish(struct gp_budget *b);

void gp_budget_release(struct gp_budget *b);

#endif
