/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice.c — the recommendations of a report (advice.h): every rule on
 * every process, then across the processes of a job, and the ranking of all
 * findings by impact, each beside the findings it overlaps; verdicts apart.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/advice_rules.h"

/* O: per thread that made calls, its time between its first call's entry and its last call's return
 * spent outside traced calls; summed. */
static __u64 outside_ns(struct gp_doc *d, const struct gp_process *p)
{
	size_t n;
	void **ts = gp_doc_map_values(d, &p->threads, &n);
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
	__u64 outside = outside_ns(a->d, a->p);

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

static unsigned about_of(const json_t *f)
{
	const json_t *v;
	unsigned about = 0;
	size_t i;

	json_array_foreach(json_object_get(f, "about"), i, v)
		for (unsigned k = 0; k < GP_ABOUT_MAX; k++)
			if (json_is_string(v) && !strcmp(json_string_value(v), gp_about_names[k]))
				about |= 1u << k;
	return about;
}

/* impact_ns descending, then id, then pid */
static int cmp_finding(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
	json_int_t ix = json_integer_value(json_object_get(x, "impact_ns"));
	json_int_t iy = json_integer_value(json_object_get(y, "impact_ns"));
	int c;

	if (ix != iy)
		return ix > iy ? -1 : 1;
	c = strcmp(json_string_value(json_object_get(x, "id")), json_string_value(json_object_get(y, "id")));
	if (c)
		return c;
	ix = json_integer_value(json_object_get(x, "pid"));
	iy = json_integer_value(json_object_get(y, "pid"));
	return (ix > iy) - (ix < iy);
}

/* The ranks (1-based) of the ranked findings of f's process other than f whose host time meets f's. */
static json_t *ranks_meeting(struct gp_doc *d, json_t *const *ranked, size_t n, const json_t *f)
{
	json_int_t pid = json_integer_value(json_object_get(f, "pid"));
	unsigned about = about_of(f);
	json_t *arr = gp_doc_arr_new(d);

	for (size_t i = 0; i < n; i++)
		if (ranked[i] != f && json_integer_value(json_object_get(ranked[i], "pid")) == pid &&
		    (about_of(ranked[i]) & about))
			gp_doc_push(d, arr, gp_j_u64(i + 1));
	return arr;
}

json_t *gp_doc_recommendations(struct gp_doc *d, json_t **verdicts)
{
	const struct gp_model *m = d->m;
	json_t *all = gp_doc_arr_new(d), *ranked, *v1;
	json_t **v;
	size_t n, i;

	*verdicts = gp_doc_arr_new(d);
	if (!all)
		return NULL;
	for (i = 0; i < m->nprocs; i++) {
		const struct gp_process *p = m->procs[i];
		__u64 from, to;

		gp_process_window(m, p, &from, &to);
		struct gp_advice a = { .d = d, .p = p, .wall_ns = from && to > from ? to - from : 0, .out = all,
				       .verdicts = *verdicts };

		process_rules(&a);
	}
	gp_advice_jobs(d, all);
	n = json_array_size(all);
	v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v) {
		d->failed = true;
		return all;
	}
	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(all, i));
	if (n)
		qsort(v, n, sizeof(*v), cmp_finding);
	ranked = gp_doc_arr_new(d);
	for (i = 0; i < n; i++) {
		gp_doc_put(d, v[i], "overlaps", ranks_meeting(d, v, n, v[i]));
		gp_doc_push(d, ranked, v[i]);
	}
	json_array_foreach(*verdicts, i, v1)
		gp_doc_put(d, v1, "explained_by", ranks_meeting(d, v, n, v1));
	free(v);
	json_decref(all);
	return ranked;
}
