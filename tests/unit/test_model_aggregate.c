/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_aggregate.c — gp_model_api_aggregate(), the calls the kernel
 * counted (--aggregate): N calls folded as one aggregate give the same
 * counts, sums, min/max, errors, CPU attribution, thread and per-layer work
 * totals as their N records ingested one by one; nested aggregates link
 * like nested records; a capture tap sees it as one operation that replays;
 * gp_stats_add_n equals n gp_stats_add.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "capture/capture_load.h"
#include "model/model_ops.h"
#include "records.h"

/* Durations of the N calls, and which fail. */
static const __u64 durs[] = { 100, 250, 90, 4000, 120, 130, 101, 777 };
#define N (sizeof(durs) / sizeof(durs[0]))

static bool fails(size_t i)
{
	return i == 2 || i == 5;
}

static struct gp_api_call nth(enum gp_api_id api, __u32 tid, size_t i)
{
	struct gp_api_call c = rec(api, T_PID, tid, 1000 + 10000 * i, durs[i], fails(i) ? 400 : 0);

	c.offcpu_ns = 7 * i;
	c.vol_switches = (__u32)i;
	c.invol_switches = 1;
	c.minor_faults = 2;
	c.major_faults = (__u32)(i & 1);
	return c;
}

/* The same calls as the kernel would aggregate them. */
static struct gp_api_aggregate agg_of(enum gp_api_id api, __u32 tid, __u16 parent)
{
	struct gp_api_aggregate a;

	memset(&a, 0, sizeof(a));
	a.pid = T_PID;
	a.tid = tid;
	a.api = (__u16)api;
	a.parent_api = parent;
	for (size_t i = 0; i < N; i++) {
		struct gp_api_call c = nth(api, tid, i);
		unsigned k = c.dur_ns ? 64 - (unsigned)__builtin_clzll(c.dur_ns) : 0;

		if (!a.calls || c.dur_ns < a.min_ns)
			a.min_ns = c.dur_ns;
		if (c.dur_ns > a.max_ns)
			a.max_ns = c.dur_ns;
		if (!a.calls)
			a.first_ns = c.hdr.ts_ns;
		a.last_ns = c.hdr.ts_ns + c.dur_ns;
		a.calls++;
		a.sum_ns += c.dur_ns;
		if (c.ret) {
			a.errors++;
			a.error_ns += c.dur_ns;
			a.last_error = c.ret;
		}
		a.offcpu_ns += c.offcpu_ns;
		a.vol_switches += c.vol_switches;
		a.invol_switches += c.invol_switches;
		a.minor_faults += c.minor_faults;
		a.major_faults += c.major_faults;
		a.dur_hist[k]++;
	}
	return a;
}

static void same_attr(const struct gp_cpu_attr *x, const struct gp_cpu_attr *y)
{
	assert_int_equal(x->offcpu_ns, y->offcpu_ns);
	assert_int_equal(x->vol_switches, y->vol_switches);
	assert_int_equal(x->invol_switches, y->invol_switches);
	assert_int_equal(x->minor_faults, y->minor_faults);
	assert_int_equal(x->major_faults, y->major_faults);
}

/* mr: the reference (records when ref_records, else the same aggregates). */
static void check_same(struct gp_model *ma, struct gp_model *mr, enum gp_api_id api, __u32 tid,
		       bool ref_records)
{
	struct gp_process *pa = proc(ma, T_PID), *pr = proc(mr, T_PID);
	const struct gp_api_stats *a = pa->api[api], *r = pr->api[api];
	const struct gp_thread *ta = gp_u64map_get(&pa->threads, tid),
			       *tr = gp_u64map_get(&pr->threads, tid);

	assert_non_null(a);
	assert_non_null(r);
	assert_int_equal(a->time.count, r->time.count);
	assert_int_equal(a->time.sum, r->time.sum);
	assert_int_equal(a->time.min, r->time.min);
	assert_int_equal(a->time.max, r->time.max);
	assert_int_equal(a->errors, r->errors);
	assert_int_equal(a->error_ns, r->error_ns);
	assert_int_equal(a->ncodes, r->ncodes);
	for (size_t i = 0; i < a->ncodes; i++) {
		assert_int_equal(a->codes[i].code, r->codes[i].code);
		assert_int_equal(a->codes[i].count, r->codes[i].count);
	}
	assert_int_equal(a->aggregated_calls, a->time.count);
	assert_int_equal(r->aggregated_calls, ref_records ? 0 : r->time.count);
	/* percentiles within a factor of two, inside [min, max] */
	for (double pct = 10; pct <= 100; pct += 10) {
		__u64 x = gp_stats_percentile(&a->time, pct),
		      y = gp_stats_percentile(&r->time, pct);

		assert_true(x >= a->time.min && x <= a->time.max);
		assert_true(x <= 2 * y && y <= 2 * x);
	}
	same_attr(&a->inside, &r->inside);
	same_attr(&pa->in_calls, &pr->in_calls);
	same_attr(&pa->in_sync_calls, &pr->in_sync_calls);
	assert_int_equal(pa->api_calls, pr->api_calls);
	assert_int_equal(pa->api_total_ns, pr->api_total_ns);
	assert_non_null(ta);
	assert_non_null(tr);
	assert_int_equal(ta->calls, tr->calls);
	assert_int_equal(ta->errors, tr->errors);
	assert_int_equal(ta->host_ns, tr->host_ns);
	assert_int_equal(ta->first_ns, tr->first_ns);
	assert_int_equal(ta->last_ns, tr->last_ns);
	same_attr(&ta->in_calls, &tr->in_calls);
	for (int f = GP_FAM_CUDART; f <= GP_FAM_NCCL; f++) {
		assert_int_equal(pa->work[f].launches, pr->work[f].launches);
		assert_int_equal(pa->work[f].graph_launches, pr->work[f].graph_launches);
		assert_int_equal(pa->work[f].host_ns, pr->work[f].host_ns);
	}
}

static void folds_like_records(void **state)
{
	static const enum gp_api_id apis[] = { GP_API_CUDA_LAUNCH_KERNEL,
					       GP_API_CUDA_STREAM_SYNCHRONIZE,
					       GP_API_CUDA_GRAPH_LAUNCH, GP_API_CU_LAUNCH_KERNEL,
					       GP_API_CUDA_DEVICE_SYNCHRONIZE };

	for (size_t k = 0; k < sizeof(apis) / sizeof(apis[0]); k++) {
		struct gp_model *ma = gp_model_new(NULL), *mr = gp_model_new(NULL);
		struct gp_api_aggregate a = agg_of(apis[k], 77, 0);

		assert_non_null(ma);
		assert_non_null(mr);
		for (size_t i = 0; i < N; i++) {
			struct gp_api_call c = nth(apis[k], 77, i);

			feed(mr, &c);
		}
		assert_int_equal(gp_model_api_aggregate(ma, &a), 0);
		check_same(ma, mr, apis[k], 77, true);
		assert_int_equal(gp_model_last_event_ns(ma), gp_model_last_event_ns(mr));
		gp_model_free(ma);
		gp_model_free(mr);
	}
}

/* Deltas in two parts (two reads of the map) give what one gives. */
static void deltas_add_up(void **state)
{
	struct gp_model *m1 = gp_model_new(NULL), *m2 = gp_model_new(NULL);
	struct gp_api_aggregate all = agg_of(GP_API_CUDA_LAUNCH_KERNEL, 5, 0), part = all;

	part.calls = 3;
	part.errors = 1;
	part.sum_ns = 100 + 250 + 90;
	part.error_ns = 90;
	part.min_ns = 90;
	part.max_ns = 250;
	memset(part.dur_hist, 0, sizeof(part.dur_hist));
	part.dur_hist[7] = 2; /* 100, 90 */
	part.dur_hist[8] = 1; /* 250 */
	part.offcpu_ns = part.vol_switches = part.invol_switches = part.minor_faults =
		part.major_faults = 0;
	assert_int_equal(gp_model_api_aggregate(m2, &part), 0);

	struct gp_api_aggregate rest = all;

	rest.calls -= part.calls;
	rest.errors -= part.errors;
	rest.sum_ns -= part.sum_ns;
	rest.error_ns -= part.error_ns;
	for (unsigned b = 0; b < GP_AGG_HIST_BUCKETS; b++)
		rest.dur_hist[b] -= part.dur_hist[b];
	assert_int_equal(gp_model_api_aggregate(m2, &rest), 0);
	assert_int_equal(gp_model_api_aggregate(m1, &all), 0);

	const struct gp_stats *x = &proc(m1, T_PID)->api[GP_API_CUDA_LAUNCH_KERNEL]->time;
	const struct gp_stats *y = &proc(m2, T_PID)->api[GP_API_CUDA_LAUNCH_KERNEL]->time;

	assert_int_equal(x->count, y->count);
	assert_int_equal(x->sum, y->sum);
	assert_int_equal(x->min, y->min);
	assert_int_equal(x->max, y->max);
	assert_int_equal(proc(m1, T_PID)->api[GP_API_CUDA_LAUNCH_KERNEL]->errors,
			 proc(m2, T_PID)->api[GP_API_CUDA_LAUNCH_KERNEL]->errors);
	gp_model_free(m1);
	gp_model_free(m2);
}

static void nested_aggregate_links(void **state)
{
	struct gp_model *ma = gp_model_new(NULL), *mr = gp_model_new(NULL);
	struct gp_api_aggregate a = agg_of(GP_API_CU_LAUNCH_KERNEL, 9, GP_API_CUDA_LAUNCH_KERNEL);

	for (size_t i = 0; i < N; i++) {
		struct gp_api_call c = nth(GP_API_CU_LAUNCH_KERNEL, 9, i);

		/* their outer calls are counted in the kernel: no record of them for these to wait for */
		c.hdr.flags |= (__u32)GP_API_CUDA_LAUNCH_KERNEL << GP_EVF_PARENT_SHIFT |
			       GP_EVF_PARENT_COUNTED;
		feed(mr, &c);
	}
	assert_int_equal(gp_model_api_aggregate(ma, &a), 0);

	const struct gp_api_stats *in_a = proc(ma, T_PID)->api[GP_API_CU_LAUNCH_KERNEL];
	const struct gp_api_stats *in_r = proc(mr, T_PID)->api[GP_API_CU_LAUNCH_KERNEL];
	const struct gp_api_stats *out_a = proc(ma, T_PID)->api[GP_API_CUDA_LAUNCH_KERNEL];
	const struct gp_api_stats *out_r = proc(mr, T_PID)->api[GP_API_CUDA_LAUNCH_KERNEL];

	assert_int_equal(in_a->nested_calls, N);
	assert_int_equal(in_a->nested_calls, in_r->nested_calls);
	assert_int_equal(in_a->nested_ns, in_r->nested_ns);
	assert_int_equal(in_a->nested_errors, in_r->nested_errors);
	assert_int_equal(in_a->time.count, 0); /* counted as its outer call, not itself */
	assert_int_equal(in_a->outer[0].api, GP_API_CUDA_LAUNCH_KERNEL);
	assert_int_equal(in_a->outer[0].calls, in_r->outer[0].calls);
	assert_non_null(out_a);
	assert_int_equal(out_a->inner[0].api, GP_API_CU_LAUNCH_KERNEL);
	assert_int_equal(out_a->inner[0].calls, out_r->inner[0].calls);
	assert_int_equal(proc(ma, T_PID)->api_calls, 0);
	gp_model_free(ma);
	gp_model_free(mr);
}

/* The tap sees one api_aggregate operation, and applying it rebuilds the same numbers. */
struct tap_buf {
	unsigned op;
	unsigned char data[1024];
	size_t len;
	int n;
};

static void tap_record(void *ctx, unsigned op, const void *data, size_t len)
{
	struct tap_buf *t = ctx;

	t->n++;
	t->op = op;
	assert_true(data && len <= sizeof(t->data));
	memcpy(t->data, data, len);
	t->len = len;
}

static void replays_from_a_capture(void **state)
{
	struct gp_model *live = gp_model_new(NULL), *again = gp_model_new(NULL);
	struct gp_api_aggregate a = agg_of(GP_API_CUDA_STREAM_SYNCHRONIZE, 3, 0);
	struct tap_buf t = { 0 };

	gp_model_set_tap(live, &(struct gp_model_tap){ .ctx = &t, .record = tap_record });
	assert_int_equal(gp_model_api_aggregate(live, &a), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.op, GP_MOP_API_AGGREGATE);
	assert_int_equal(t.len, sizeof(a));
	assert_true(GP_MOP_API_AGGREGATE > GP_MOP_END);
	assert_string_equal(gp_model_op_name(GP_MOP_API_AGGREGATE), "api_aggregate");
	assert_int_equal(gp_capture_apply(again, NULL, t.op, t.data, t.len), 0);
	check_same(again, live, GP_API_CUDA_STREAM_SYNCHRONIZE, 3, false);
	/* a payload of the wrong size is malformed */
	assert_true(gp_capture_apply(again, NULL, t.op, t.data, t.len - 1) < 0);
	gp_model_free(live);
	gp_model_free(again);
}

static void bad_api_is_malformed(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_aggregate a = agg_of(GP_API_CUDA_LAUNCH_KERNEL, 1, 0);

	a.api = GP_API_MAX;
	assert_int_equal(gp_model_api_aggregate(m, &a), -EINVAL);
	assert_int_equal(gp_model_drop_get(m, "malformed_records"), 1);
	gp_model_free(m);
}

static void stats_add_n_equals_n_adds(void **state)
{
	struct gp_stats one = { 0 }, many = { 0 };
	static const struct {
		__u64 v, n;
	} runs[] = { { 5, 3 }, { 1000, 1 }, { 17, 10 }, { 0, 2 }, { 123456789, 4 } };

	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		for (__u64 i = 0; i < runs[r].n; i++)
			gp_stats_add(&one, runs[r].v);
		assert_int_equal(gp_stats_add_n(&many, runs[r].v, runs[r].n), 0);
	}
	assert_int_equal(gp_stats_add_n(&many, 99, 0), 0); /* nothing */
	assert_int_equal(one.count, many.count);
	assert_int_equal(one.sum, many.sum);
	assert_int_equal(one.min, many.min);
	assert_int_equal(one.max, many.max);
	assert_true(fabs(one.mean - many.mean) <= 1e-9 * fabs(one.mean));
	assert_true(fabs(gp_stats_stddev(&one) - gp_stats_stddev(&many)) <=
		    1e-9 * gp_stats_stddev(&one));
	for (double p = 1; p <= 100; p += 7)
		assert_int_equal(gp_stats_percentile(&one, p), gp_stats_percentile(&many, p));
	gp_stats_release(&one);
	gp_stats_release(&many);
}

/*
 * The daemon's process bound: exited processes go first (the one that
 * exited first), then the live one idle longest; a live one removed comes
 * back, counted from zero, at its next call.
 */
static void bound_evicts_exited_then_idlest_live(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_aggregate a;
	size_t evicted = 0;

	assert_non_null(m);
	assert_int_equal(gp_model_process_add(m, 100, "busy", "busy", 1000, true), 0);
	assert_int_equal(gp_model_process_add(m, 200, "idle", "idle", 2000, true), 0);
	assert_int_equal(gp_model_process_add(m, 300, "gone", "gone", 500, true), 0);
	assert_int_equal(gp_model_process_exited(m, 300, 9000), 0);
	a = agg_of(GP_API_CUDA_LAUNCH_KERNEL, 101, 0);
	a.pid = 100;
	a.first_ns = 5000;
	a.last_ns = 8000; /* busy's latest call: after idle's admission */
	assert_int_equal(gp_model_api_aggregate(m, &a), 0);
	/* no grace over; a bound of 2: the exited one goes, though it is the newest to change */
	assert_int_equal(gp_model_forget_exited(m, 0, 2, &evicted), 1);
	assert_int_equal(evicted, 1);
	assert_int_equal(m->nprocs, 2);
	assert_null(gp_u64map_get(&m->by_pid, 300));
	/* a bound of 1: idle (admitted at 2000, no call) goes before busy (a call at 8000) */
	assert_int_equal(gp_model_forget_exited(m, 0, 1, &evicted), 1);
	assert_int_equal(evicted, 1);
	assert_int_equal(m->nprocs, 1);
	assert_int_equal(m->procs[0]->pid, 100);
	/* idle's next call: a new row, from zero, without its name */
	a.pid = 200;
	assert_int_equal(gp_model_api_aggregate(m, &a), 0);
	assert_int_equal(m->nprocs, 2);
	assert_true(!m->procs[1]->comm || strcmp(m->procs[1]->comm, "idle"));
	assert_int_equal(m->procs[1]->api[GP_API_CUDA_LAUNCH_KERNEL]->time.count, a.calls);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(folds_like_records),
		cmocka_unit_test(deltas_add_up),
		cmocka_unit_test(nested_aggregate_links),
		cmocka_unit_test(replays_from_a_capture),
		cmocka_unit_test(bad_api_is_malformed),
		cmocka_unit_test(stats_add_n_equals_n_adds),
		cmocka_unit_test(bound_evicts_exited_then_idlest_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
