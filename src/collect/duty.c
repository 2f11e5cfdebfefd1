/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* duty.c — the overhead budget's duty cycle: schedule and arithmetic (duty.h). */
#include <string.h>

#include "collect/duty.h"

void gp_duty_init(struct gp_duty *d, double budget, double hit_ns, __u64 now)
{
	memset(d, 0, sizeof(*d));
	d->budget = budget;
	d->hit_ns = d->report.hit_ns = hit_ns > 0 ? hit_ns : GP_PROBE_HIT_COST_NS;
	d->duty = 1;
	d->period_start = d->on_start = now;
	d->open = true;
	d->report.budget = budget;
	d->report.duty = 1;
	d->report.overhead = d->report.overhead_full = -1;
}

void gp_duty_set_budget(struct gp_duty *d, double budget)
{
	d->budget = budget;
	d->report.budget = budget;
}

static __u64 window_ns(const struct gp_duty *d)
{
	return (__u64)(d->duty * (double)GP_DUTY_PERIOD_NS);
}

enum gp_duty_step gp_duty_due(const struct gp_duty *d, __u64 now)
{
	if (now >= d->period_start + GP_DUTY_PERIOD_NS)
		return GP_DUTY_PERIOD_END;
	if (d->open && d->duty < 1 && now >= d->on_start + window_ns(d))
		return GP_DUTY_CLOSE;
	return GP_DUTY_NOTHING;
}

void gp_duty_closed(struct gp_duty *d, __u64 now)
{
	d->open = false;
	d->on_end = now;
}

static __u64 overlap(__u64 a0, __u64 a1, __u64 b0, __u64 b1)
{
	__u64 lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

double gp_duty_weight(const struct gp_duty *d, __u64 from, __u64 to)
{
	__u64 span, seen;

	if (from < d->period_start)
		from = d->period_start;
	if (to <= from)
		return 1;
	span = to - from;
	seen = overlap(from, to, d->on_start, d->open ? to : d->on_end);
	return seen && seen < span ? (double)span / (double)seen : 1;
}

/*
 * The duty cycle that keeps the cost at the budget: cost(f) = (other + f x
 * gated_full) x hit cost, and cost(f) / (work + cost(f)) <= budget, where
 * work is the traced CPU time that was not the probes' own.
 */
static double plan(struct gp_duty *d, double gated_full, double other, double work_ns)
{
	double allowed, f;

	if (d->budget <= 0 || d->budget >= 1 || gated_full <= 0)
		return 1;
	allowed = d->budget / (1 - d->budget) * work_ns / d->hit_ns; /* hits */
	f = (allowed - other) / gated_full;
	if (f >= 1)
		return 1;
	if (f < GP_DUTY_MIN) {
		d->report.over_budget++;
		return GP_DUTY_MIN;
	}
	return f;
}

void gp_duty_next_period(struct gp_duty *d, __u64 now, __u64 gated_hits, __u64 other_hits,
			 __u64 traced_cpu_ns)
{
	__u64 len = now - d->period_start;
	__u64 on = overlap(d->period_start, now, d->on_start, d->open ? now : d->on_end);
	double f = len ? (double)on / (double)len : 1;

	d->report.periods++;
	d->report.period_ns += len;
	d->report.attached_ns += on;
	if (d->duty < 1)
		d->report.sampled_periods++;
	if (d->have_prev && traced_cpu_ns && gated_hits >= d->prev_gated_hits &&
	    other_hits >= d->prev_other_hits) {
		double gated = (double)(gated_hits - d->prev_gated_hits);
		double other = (double)(other_hits - d->prev_other_hits);
		double cost = (gated + other) * d->hit_ns;
		double gated_full = f > 0 ? gated / f : gated;
		double cost_full = (gated_full + other) * d->hit_ns;
		double work = (double)traced_cpu_ns > cost ? (double)traced_cpu_ns - cost : 1;

		d->report.overhead = cost / (double)traced_cpu_ns;
		d->report.overhead_full = cost_full / (work + cost_full);
		d->duty = plan(d, gated_full, other, work);
	} else if (d->budget <= 0) {
		d->duty = 1;
	}
	d->prev_gated_hits = gated_hits;
	d->prev_other_hits = other_hits;
	d->have_prev = true;
	d->report.duty = d->duty;
	d->period_start = d->on_start = now;
	d->on_end = 0;
	d->open = true;
}
