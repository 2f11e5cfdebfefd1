/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * aggregate.c — gp_model_api_aggregate(): calls counted in the kernel
 * (--aggregate) folded into the same totals their records would have fed
 * (ingest.c): the API's time statistics, errors and CPU attribution, the
 * process's and the thread's totals, the per-layer GPU work, and the
 * nesting links. What only a record can give (kernel names, streams,
 * stacks, the timeline) is not there: docs/design.md, "In-kernel
 * aggregation", lists it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "model/model_ops.h"

static void attr_add_agg(struct gp_cpu_attr *c, const struct gp_api_aggregate *a)
{
	c->offcpu_ns += a->offcpu_ns;
	c->vol_switches += a->vol_switches;
	c->invol_switches += a->invol_switches;
	c->minor_faults += a->minor_faults;
	c->major_faults += a->major_faults;
}

/* n errors, all with code (the kernel keeps the latest failed call's code only). */
static void count_errors(struct gp_api_stats *st, __s32 code, __u64 n)
{
	struct gp_errcount *codes;

	st->errors += n;
	for (size_t i = 0; i < st->ncodes; i++) {
		if (st->codes[i].code == code) {
			st->codes[i].count += n;
			return;
		}
	}
	codes = realloc(st->codes, (st->ncodes + 1) * sizeof(*codes));
	if (!codes)
		return; /* the errors still count; only their code is lost */
	st->codes = codes;
	codes[st->ncodes++] = (struct gp_errcount){ .code = code, .count = n };
}

/* The nesting link tables of nesting.c, n calls at once. */
static void link_add_n(struct gp_api_stats *st, struct gp_api_link *links, __u16 api, __u64 n)
{
	for (int i = 0; i < GP_API_LINKS_MAX; i++) {
		if (links[i].api == api) {
			links[i].calls += n;
			return;
		}
		if (!links[i].api) {
			links[i] = (struct gp_api_link){ .api = api, .calls = n };
			return;
		}
	}
	st->links_other += n;
}

static struct gp_api_stats *stats_of(struct gp_process *p, unsigned api)
{
	if (!p->api[api])
		p->api[api] = calloc(1, sizeof(*p->api[api]));
	return p->api[api];
}

static void nested(struct gp_process *p, struct gp_api_stats *st, const struct gp_api_aggregate *a)
{
	struct gp_api_stats *o;

	st->nested_calls += a->calls;
	st->nested_ns += a->sum_ns;
	st->nested_errors += a->errors;
	link_add_n(st, st->outer, a->parent_api, a->calls);
	if (a->parent_api < GP_API_MAX && (o = stats_of(p, a->parent_api)))
		link_add_n(o, o->inner, a->api, a->calls);
}

/*
 * The time statistics: count, sum, min and max exact; the histogram (and
 * so the percentiles) from the log2 buckets, each bucket's calls at its
 * geometric middle clamped to [min, max]; the variance from those too.
 */
static void time_add(struct gp_stats *t, const struct gp_api_aggregate *a)
{
	__u64 count = t->count, sum = t->sum, min = t->min, max = t->max;

	for (unsigned k = 0; k < GP_AGG_HIST_BUCKETS; k++) {
		__u64 v = 0;

		if (!a->dur_hist[k])
			continue;
		if (k) /* [2^(k-1), 2^k): its geometric middle */
			v = (__u64)llround(ldexp(M_SQRT2, (int)k - 1));
		if (a->calls && v < a->min_ns)
			v = a->min_ns;
		if (a->calls && v > a->max_ns)
			v = a->max_ns;
		gp_stats_add_n(t, v, a->dur_hist[k]);
	}
	/* a live read may see a call counted before its bucket: the totals are the counters' */
	t->count = count + a->calls;
	t->sum = sum + a->sum_ns;
	if (a->calls) {
		t->min = count && min < a->min_ns ? min : a->min_ns;
		t->max = count && max > a->max_ns ? max : a->max_ns;
	} else {
		t->min = min;
		t->max = max;
	}
	if (t->count)
		t->mean = (double)t->sum / (double)t->count;
}

/* The combined GPU work view (ingest.c's count_work): successful outermost launches. */
static void count_work(struct gp_process *p, const struct gp_api_aggregate *a)
{
	const struct gp_api_info *info = &gp_apis[a->api];
	__u64 ok = a->calls >= a->errors ? a->calls - a->errors : 0;
	__u64 ok_ns = a->sum_ns >= a->error_ns ? a->sum_ns - a->error_ns : 0;
	struct gp_layer_work *w;

	if (info->family < GP_FAM_CUDART || info->family > GP_FAM_NCCL)
		return;
	w = &p->work[info->family];
	switch (gp_shapes[info->shape].queues) {
	case GP_Q_KERNEL:
		w->launches += ok;
		break;
	case GP_Q_GRAPH:
		w->graph_launches += ok;
		break;
	case GP_Q_COPY: /* never counted in the kernel: their bytes and direction need each call */
	case GP_Q_MEMSET:
	case GP_Q_COLL:
	case GP_Q_NONE:
		return;
	}
	w->host_ns += ok_ns;
}

static int aggregate(struct gp_model *m, const struct gp_api_aggregate *a)
{
	struct gp_process *p;
	struct gp_api_stats *st;
	struct gp_thread *t;

	if (a->api <= GP_API_INVALID || a->api >= GP_API_MAX || a->parent_api >= GP_API_MAX) {
		gp_model_drop_add(m, "malformed_records", 1);
		return -EINVAL;
	}
	p = gp_model_process_get(m, a->pid);
	st = p ? stats_of(p, a->api) : NULL;
	if (!st)
		return -ENOMEM;
	if (a->last_ns > m->last_event_ns)
		m->last_event_ns = a->last_ns;
	if (a->parent_api) { /* the implementation of the calls around them: counted there */
		nested(p, st, a);
		return 0;
	}
	time_add(&st->time, a);
	st->aggregated_calls += a->calls;
	if (a->errors) {
		count_errors(st, a->last_error, a->errors);
		st->error_ns += a->error_ns;
	}
	p->api_calls += a->calls;
	p->api_total_ns += a->sum_ns;
	attr_add_agg(&st->inside, a);
	attr_add_agg(&p->in_calls, a);
	if (gp_apis[a->api].attr & GP_A_SYNC_CALL)
		attr_add_agg(&p->in_sync_calls, a);
	t = gp_process_thread_get(p, a->tid);
	if (t) {
		attr_add_agg(&t->in_calls, a);
		if (a->calls) {
			if (!t->calls || a->first_ns < t->first_ns)
				t->first_ns = a->first_ns;
			if (a->last_ns > t->last_ns)
				t->last_ns = a->last_ns;
		}
		t->calls += a->calls;
		t->host_ns += a->sum_ns;
		t->errors += a->errors;
	}
	count_work(p, a);
	return 0;
}

int gp_model_api_aggregate(struct gp_model *m, const struct gp_api_aggregate *a)
{
	int err = aggregate(m, a);

	gp_model_tap_api_aggregate(m,
				   &(struct gp_op_api_aggregate){ .aggregate = { a, sizeof(*a) } });
	return err;
}

int gp_model_api_estimated(struct gp_model *m, __u32 pid, unsigned api, __u64 calls)
{
	struct gp_process *p;
	struct gp_api_stats *st;

	gp_model_tap_api_estimated(
		m, &(struct gp_op_api_estimated){ .pid = pid, .api = api, .calls = calls });
	if (api <= GP_API_INVALID || api >= GP_API_MAX)
		return -EINVAL;
	p = gp_model_process_get(m, pid);
	st = p ? stats_of(p, api) : NULL;
	if (!st)
		return -ENOMEM;
	st->estimated_calls += calls;
	m->estimated_calls += calls;
	return 0;
}

void gp_model_set_sampling(struct gp_model *m, const struct gp_sampling *s)
{
	m->sampling = *s;
	m->sampling.set = true;
	gp_model_tap_sampling(
		m, &(struct gp_op_sampling){ .sampling = { &m->sampling, sizeof(m->sampling) } });
}
