/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rules_calls.c — the rules on the calls that hold the host
 * (docs/recommendations.md): synchronisations (sync-wait, redundant-sync),
 * launches (launch-bound), allocations (alloc-churn).
 */
#include <stdio.h>

#include "analysis/advice_rules.h"

/* ---- synchronisation ------------------------------------------------------------ */

static bool site_sync(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_SYNC;
}

/* Host time of the synchronisation calls (waited: minus the redundant ones), and per API. */
__u64 gp_sync_time(struct gp_advice *a, bool redundant, __u64 *calls, struct gp_ev_rows **by_api)
{
	const struct gp_process *p = a->p;
	__u64 total = 0;

	*calls = 0;
	*by_api = gp_ev_rows_new();
	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];
		__u64 n, ns;
		struct gp_fields *o;

		if (!st || !(gp_apis[i].attr & GP_A_SYNC_CALL))
			continue;
		n = redundant ? st->redundant_syncs : st->time.count - st->redundant_syncs;
		ns = redundant ? st->redundant_ns : sub_sat(st->time.sum, st->redundant_ns);
		if (!n)
			continue;
		*calls += n;
		total += ns;
		o = gp_ev_row(*by_api);
		gp_ev_str(o, "api", gp_apis[i].symbol);
		gp_ev_u64(o, "calls", n);
		gp_ev_u64(o, "host_ns", ns);
	}
	return total;
}

void gp_rule_sync_wait(struct gp_advice *a, __u64 outside)
{
	struct gp_finding f = {
		.id = "sync-wait",
		.about = GP_ABOUT_SYNCS | GP_ABOUT_OUTSIDE,
		.estimate = "upper_bound",
		.site = site_sync,
		.action =
			"Overlap the host's work with the GPU's: queue the next step (prefetch the next "
			"batch) before waiting for this one, wait on events rather than the whole device, "
			"and as late as possible."
	};
	struct gp_ev_rows *by_api;
	__u64 calls, B = gp_sync_time(a, false, &calls, &by_api);
	char t1[32], t2[32], t3[32];

	if (!calls) {
		gp_ev_rows_free(by_api);
		return;
	}
	f.impact_ns = min_u64(B, outside);
	snprintf(
		f.title, sizeof(f.title),
		"the host was blocked %s in %llu synchronisations, then worked %s while the GPU waited",
		MS(t1, B), (unsigned long long)calls, MS(t2, outside));
	snprintf(
		f.method, sizeof(f.method),
		"min(host time blocked in synchronisations that waited for work %s, host time outside GPU calls %s) "
		"= %s: what overlapping the two saves at most",
		MS(t1, B), MS(t2, outside), MS(t3, f.impact_ns));
	gp_ev_u64(&f.evidence, "calls", calls);
	gp_ev_u64(&f.evidence, "host_ns", B);
	gp_ev_u64(&f.evidence, "outside_ns", outside);
	gp_ev_rows_put(&f.evidence, "by_api", by_api);
	gp_advice_emit(a, &f);
}

void gp_rule_redundant_sync(struct gp_advice *a)
{
	struct gp_finding f = {
		.id = "redundant-sync",
		.about = GP_ABOUT_SYNCS,
		.estimate = "exact",
		.site = NULL,
		.action =
			"Remove synchronisations that follow another one (or a synchronous copy) with "
			"nothing queued in between: they wait for nothing."
	};
	struct gp_ev_rows *by_api;
	__u64 calls, T = gp_sync_time(a, true, &calls, &by_api);
	char t1[32];

	if (!calls) {
		gp_ev_rows_free(by_api);
		return;
	}
	f.impact_ns = T;
	snprintf(f.title, sizeof(f.title), "%llu synchronisations waited for nothing new (%s)",
		 (unsigned long long)calls, MS(t1, T));
	snprintf(
		f.method, sizeof(f.method),
		"the host time of the synchronisation calls that covered no work queued since the previous "
		"synchronisation of their streams: %s",
		MS(t1, T));
	gp_ev_u64(&f.evidence, "calls", calls);
	gp_ev_u64(&f.evidence, "host_ns", T);
	gp_ev_rows_put(&f.evidence, "by_api", by_api);
	gp_advice_emit(a, &f);
}

/* ---- launches, allocations ----------------------------------------------------- */

static bool site_launch(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_KERNEL;
}

void gp_rule_launch_bound(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "launch-bound",
		.about = GP_ABOUT_LAUNCHES,
		.estimate = "model",
		.site = site_launch,
		.action = "Capture the steady-state step in a CUDA Graph (cudaStreamBeginCapture, "
			  "torch.cuda.graphs) and launch it once per step; fuse small kernels "
			  "(torch.compile)."
	};
	__u64 L = 0, H = 0, n = p->pending.blocked_calls[GP_WORK_KERNEL],
	      blocked = p->pending.blocked_ns[GP_WORK_KERNEL];
	char t1[32], t2[32], t3[32];

	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];

		if (st && gp_api_queues(i) == GP_Q_KERNEL) {
			L += st->time.count;
			H += st->time.sum;
		}
	}
	if (L < GP_ADVICE_LAUNCH_MIN || blocked >= H)
		return;
	if (!n)
		n = 1;
	if (n > L)
		n = L;
	f.impact_ns = sub_sat(H, (__u64)((double)n * (double)H / (double)L));
	snprintf(
		f.title, sizeof(f.title),
		"%llu kernel launches cost the host %s (%.1f µs each), more than it waited for the kernels",
		(unsigned long long)L, MS(t1, H), (double)H / (double)L / 1e3);
	snprintf(
		f.method, sizeof(f.method),
		"host time in launches %s − %llu synchronisation windows × the average launch (one graph launch per "
		"window) = %s; the host waited %s for kernels",
		MS(t1, H), (unsigned long long)n, MS(t2, f.impact_ns), MS(t3, blocked));
	gp_ev_u64(&f.evidence, "launches", L);
	gp_ev_u64(&f.evidence, "host_ns", H);
	gp_ev_u64(&f.evidence, "avg_launch_ns", H / L);
	gp_ev_u64(&f.evidence, "sync_windows", n);
	gp_ev_u64(&f.evidence, "blocked_on_kernels_ns", blocked);
	gp_advice_emit(a, &f);
}

static bool site_alloc(const struct gp_stack_op *r)
{
	return (r->op.kind == GP_OP_ALLOC || r->op.kind == GP_OP_FREE) &&
	       (gp_apis[r->api].shape == GP_SHAPE_ALLOC || gp_apis[r->api].shape == GP_SHAPE_FREE);
}

void gp_rule_alloc_churn(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "alloc-churn",
		.about = GP_ABOUT_ALLOCS,
		.estimate = "model",
		.site = site_alloc,
		.action =
			"Allocate once and reuse the buffers (PyTorch's caching allocator does), or use "
			"cudaMallocAsync with a memory pool: allocation calls synchronise and are slow."
	};
	__u64 A = 0, Ans = 0, F = 0, Fns = 0, peak = p->mem.blocking_peak_allocs, churn;
	char t1[32], t2[32], t3[32];

	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];

		if (!st)
			continue;
		if (gp_apis[i].shape == GP_SHAPE_ALLOC) {
			A += st->time.count;
			Ans += st->time.sum;
		} else if (gp_apis[i].shape == GP_SHAPE_FREE) {
			F += st->time.count;
			Fns += st->time.sum;
		}
	}
	if (A < peak + GP_ADVICE_CHURN_MIN)
		return;
	churn = A - peak;
	f.impact_ns = (__u64)((double)churn * (double)Ans / (double)A) +
		      (F ? (__u64)((double)min_u64(F, churn) * (double)Fns / (double)F) : 0);
	snprintf(f.title, sizeof(f.title),
		 "%llu allocations and %llu frees (%s) for at most %llu buffers live at once",
		 (unsigned long long)A, (unsigned long long)F, MS(t1, Ans + Fns),
		 (unsigned long long)peak);
	snprintf(
		f.method, sizeof(f.method),
		"%llu allocations beyond the peak of %llu live × the average allocation %s + as many frees × the "
		"average free %s = %s",
		(unsigned long long)churn, (unsigned long long)peak, MS(t1, Ans / A),
		MS(t2, F ? Fns / F : 0), MS(t3, f.impact_ns));
	gp_ev_u64(&f.evidence, "alloc_calls", A);
	gp_ev_u64(&f.evidence, "free_calls", F);
	gp_ev_u64(&f.evidence, "peak_live_allocations", peak);
	gp_ev_u64(&f.evidence, "churn", churn);
	gp_ev_u64(&f.evidence, "alloc_host_ns", Ans);
	gp_ev_u64(&f.evidence, "free_host_ns", Fns);
	gp_advice_emit(a, &f);
}
