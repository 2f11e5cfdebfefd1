/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice.c — the recommendations of a model (advice.h): every rule on
 * every process, then across the processes of a job, and the ranking of all
 * findings by impact, each beside the findings it overlaps; verdicts apart,
 * each beside the findings that name its causes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/advice_rules.h"

/* O: per thread that made calls, its time between its first call's entry and its last call's return
 * spent outside traced calls; summed. */
static __u64 outside_ns(struct gp_advice *a)
{
	size_t n;
	void **ts = gp_advice_map_values(a, &a->p->threads, &n);
	__u64 o = 0;

	for (size_t i = 0; i < n; i++) {
		const struct gp_thread *t = ts[i];

		if (t->calls && t->last_ns > t->first_ns)
			o += sub_sat(t->last_ns - t->first_ns, t->host_ns);
	}
	free(ts);
	return o;
}

/* Every rule on one process, always in this order. */
static void process_rules(struct gp_advice *a)
{
	__u64 outside = outside_ns(a);

	gp_rule_pageable(a);
	gp_rule_sync_copies(a, outside);
	gp_rule_small_copies(a);
	gp_rule_sync_wait(a, outside);
	gp_rule_redundant_sync(a);
	gp_rule_launch_bound(a);
	gp_rule_alloc_churn(a);
	gp_rule_cpu_feeding(a);
	gp_rule_faults(a);
	gp_rule_failing_calls(a);
	gp_rule_leak(a);
	gp_rule_gpu_idle(a);
}

/* As report.json holds it: an integer saturated at INT64_MAX (the ranking compared those). */
static __u64 saturated(__u64 v)
{
	return v > INT64_MAX ? INT64_MAX : v;
}

/* impact_ns descending, then id, then pid */
static int cmp_finding(const void *a, const void *b)
{
	const struct gp_finding *x = *(const struct gp_finding *const *)a;
	const struct gp_finding *y = *(const struct gp_finding *const *)b;
	__u64 ix = saturated(x->impact_ns), iy = saturated(y->impact_ns);
	int c;

	if (ix != iy)
		return ix > iy ? -1 : 1;
	c = strcmp(x->id, y->id);
	if (c)
		return c;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* f->ranks: the ranks (1-based) of the ranked findings of f's process other than f whose host time
 * meets f's. */
static int ranks_meeting(const struct gp_findings *fs, struct gp_finding *f)
{
	for (size_t i = 0; i < fs->n; i++) {
		const struct gp_finding *o = fs->v[i];

		if (o == f || o->pid != f->pid || !(o->about & f->about))
			continue;
		if (!f->ranks && !(f->ranks = malloc(fs->n * sizeof(*f->ranks))))
			return -ENOMEM;
		f->ranks[f->nranks++] = i + 1;
	}
	return 0;
}

int gp_advise(const struct gp_model *m, struct gp_findings *out)
{
	*out = (struct gp_findings){ 0 };
	for (size_t i = 0; i < m->nprocs; i++) {
		const struct gp_process *p = m->procs[i];
		__u64 from, to;

		gp_process_window(m, p, &from, &to);
		struct gp_advice a = { .m = m,
				       .p = p,
				       .wall_ns = from && to > from ? to - from : 0,
				       .out = out,
				       .verdicts = true };

		process_rules(&a);
	}
	gp_advice_jobs(m, out);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_finding);
	for (size_t i = 0; i < out->n && !out->failed; i++)
		out->failed = ranks_meeting(out, out->v[i]) != 0;
	for (size_t i = 0; i < out->nverdicts && !out->failed; i++)
		out->failed = ranks_meeting(out, out->verdicts[i]) != 0;
	if (out->failed) {
		gp_findings_release(out);
		return -ENOMEM;
	}
	return 0;
}
