/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * duty.h — the overhead budget's duty cycle (gpuprobed --daemon, [trace]
 * overhead_budget). Time is cut into periods of GP_DUTY_PERIOD_NS. At the
 * end of each, the probes' cost in it is estimated (their hits x the
 * measured cost of a hit) against the traced processes' CPU time; when the
 * cost with every probe attached would be over the budget, the hot probes
 * (the gated ones, probes/uprobes.h: the calls the kernel aggregates) are
 * attached only for the first part of the next period, as long as keeps
 * the cost at the budget. Whatever the kernel counted of a process in that
 * part is scaled up to the time the process was traced in the period:
 * weight = traced time / traced time with the probes attached.
 *
 * This file is the schedule and the arithmetic (unit-tested); the session
 * attaches, detaches and reads.
 */
#ifndef GP_COLLECT_DUTY_H
#define GP_COLLECT_DUTY_H

#include <stdbool.h>
#include <linux/types.h>

#include "model/model.h"

#define GP_DUTY_PERIOD_NS      1000000000ull
/* The shortest part of a period the hot probes are attached: below, the scaled counts say too little. */
#define GP_DUTY_MIN	       0.02
/*
 * Cost of one probe hit (an entry or a return) when it cannot be measured,
 * from docs/performance.md: an entry+return pair adds ~0.9 us (the kernel's
 * uprobe machinery) + ~0.35 us (our two programs) to a call. The session
 * measures the machinery's part at its start (gp_uprobes_measure_hit_ns)
 * and adds GP_PROGRAM_HIT_NS, what our programs do beyond their first check.
 */
#define GP_PROBE_HIT_COST_NS   620
#define GP_PROBE_HIT_COST_TEXT "620 ns"
#define GP_PROGRAM_HIT_NS      175

struct gp_duty {
	double budget;		   /* share of the traced CPU time; 0: none (always attached) */
	double hit_ns;		   /* the cost of a probe hit (report.hit_ns too) */
	double duty;		   /* this period's planned share */
	__u64 period_start;	   /* CLOCK_MONOTONIC ns */
	__u64 on_start, on_end;	   /* this period's window; on_end 0 while it is open */
	bool open;		   /* the hot probes are attached now */
	struct gp_sampling report; /* totals for the model (gp_model_set_sampling) */
	__u64 prev_gated_hits, prev_other_hits; /* hit totals at the previous period's end */
	bool have_prev;
};

/*
 * A duty cycle starting at now with the hot probes attached (a budget of 0:
 * always); hit_ns: what a probe hit costs (<= 0: GP_PROBE_HIT_COST_NS).
 */
void gp_duty_init(struct gp_duty *d, double budget, double hit_ns, __u64 now);

/* The budget may change at any time (a reload): it takes effect at the next period. */
void gp_duty_set_budget(struct gp_duty *d, double budget);

enum gp_duty_step {
	GP_DUTY_NOTHING,
	GP_DUTY_CLOSE,	    /* the window is over: detach the hot probes, then gp_duty_closed */
	GP_DUTY_PERIOD_END, /* read what the period counted (gp_duty_weight), then gp_duty_next_period */
};
enum gp_duty_step gp_duty_due(const struct gp_duty *d, __u64 now);

/* The hot probes were detached at now. */
void gp_duty_closed(struct gp_duty *d, __u64 now);

/*
 * The weight of what the kernel counted for a process traced during
 * [from, to] of the current period (from is clamped to the period's start):
 * that time over the part of it the hot probes were attached. 1 when they
 * were there all along, or never (then nothing was counted that a weight
 * could scale).
 */
double gp_duty_weight(const struct gp_duty *d, __u64 from, __u64 to);

/*
 * The period ends at now. gated_hits and other_hits: the probes' hit totals
 * so far (entries + returns; gated: the hot probes'); traced_cpu_ns: the CPU
 * time the traced processes used in the period (0: unknown, keeps the duty
 * cycle). Sets the next period's duty cycle and starts it, with the hot
 * probes attached: the caller attaches them if they were not.
 */
void gp_duty_next_period(struct gp_duty *d, __u64 now, __u64 gated_hits, __u64 other_hits,
			 __u64 traced_cpu_ns);

#endif
