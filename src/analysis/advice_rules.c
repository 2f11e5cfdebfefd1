/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice_rules.c — the recommendation rules (docs/recommendations.md has
 * each formula and threshold in words; keep the two in step). Every rule
 * reads one process of the model and hands at most one finding per rule to
 * gp_advice_emit(), except failing-calls (one per API).
 */
#include <stdio.h>
#include <stdlib.h>

#include "array.h"
#include "analysis/advice.h"

#define MS(buf, ns) gp_advice_ms(buf, sizeof(buf), ns)

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static __u64 sub_sat(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* bytes per ns = GB/s */
static double gbps(__u64 bytes, __u64 ns)
{
	return ns ? (double)bytes / (double)ns : 0;
}

static json_t *j_gbps(double v, bool known)
{
	return known ? gp_j_real2(v) : json_null();
}

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

/* ---- copies ----------------------------------------------------------------- */

static bool site_pageable(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_COPY && r->op.hostmem == GP_HM_PAGEABLE &&
	       (r->op.dir == GP_DIR_HTOD || r->op.dir == GP_DIR_DTOH);
}

static void rule_pageable(struct gp_advice *a)
{
	static const enum gp_dir dirs[] = { GP_DIR_HTOD, GP_DIR_DTOH };
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "pageable-copies", .about = GP_ABOUT_COPIES,
				.estimate = "model", .site = site_pageable,
				.action = "Allocate the host buffers with cudaMallocHost/cudaHostAlloc, or cudaHostRegister "
					  "them once (PyTorch: pin_memory=True); pinned memory is copied by DMA directly." };
	json_t *arr = gp_doc_arr_new(a->d);
	__u64 calls = 0, bytes = 0, host = 0;
	size_t len = 0;
	char t[32];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		const struct gp_xfer_row *ps = &p->xfer[dirs[i]][GP_HM_PAGEABLE][1], *pa = &p->xfer[dirs[i]][GP_HM_PAGEABLE][0];
		const struct gp_xfer_row *pin = &p->xfer[dirs[i]][GP_HM_PINNED][1];
		__u64 T = ps->total_ns + pa->total_ns, save;
		double pg = gbps(ps->bytes, ps->total_ns), pn = gbps(pin->bytes, pin->total_ns), r;
		bool measured = ps->bytes >= GP_ADVICE_MEASURE_BYTES && pin->bytes >= GP_ADVICE_MEASURE_BYTES &&
				pg > 0 && pn > 0;
		json_t *o;

		if (!ps->calls && !pa->calls)
			continue;
		r = measured ? (pg < pn ? pg / pn : 1.0) : GP_ADVICE_PAGEABLE_RATIO;
		save = (__u64)((double)T * (1.0 - r));
		f.impact_ns += save;
		calls += ps->calls + pa->calls;
		bytes += ps->bytes + pa->bytes;
		host += T;
		o = gp_doc_obj_new(a->d);
		gp_doc_put(a->d, o, "direction", gp_j_str(gp_dir_name(dirs[i])));
		gp_doc_put(a->d, o, "calls", gp_j_u64(ps->calls + pa->calls));
		gp_doc_put(a->d, o, "bytes", gp_j_u64(ps->bytes + pa->bytes));
		gp_doc_put(a->d, o, "host_ns", gp_j_u64(T));
		gp_doc_put(a->d, o, "pageable_gbps", j_gbps(pg, ps->calls && ps->total_ns));
		gp_doc_put(a->d, o, "pinned_gbps", j_gbps(pn, measured));
		gp_doc_put(a->d, o, "ratio", gp_j_real2(r));
		gp_doc_put(a->d, o, "ratio_source", gp_j_str(measured ? "measured" : "assumed"));
		gp_doc_push(a->d, arr, o);
		if (len < sizeof(f.method))
			len += (size_t)snprintf(f.method + len, sizeof(f.method) - len,
						"%s%s: %s in pageable copies × (1 − %.2f, pageable/pinned bandwidth %s) = %s",
						len ? "; " : "", gp_dir_name(dirs[i]), MS(t, T), r,
						measured ? "measured" : "assumed", gp_advice_ms((char[32]){ 0 }, 32, save));
	}
	if (!calls) {
		json_decref(arr);
		return;
	}
	snprintf(f.title, sizeof(f.title), "%llu copies of pageable host memory (%.1f MiB) took %s of host time",
		 (unsigned long long)calls, (double)bytes / (1 << 20), MS(t, host));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "directions", arr);
	gp_advice_emit(a, &f);
}

static bool site_sync_copy(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_COPY && r->op.dir != GP_DIR_HTOH && !(gp_apis[r->api].attr & GP_A_ASYNC);
}

static void rule_sync_copies(struct gp_advice *a, __u64 outside)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "sync-copies", .about = GP_ABOUT_COPIES | GP_ABOUT_OUTSIDE,
				.estimate = "upper_bound", .site = site_sync_copy,
				.action = "Use cudaMemcpyAsync on a stream (from pinned memory) and synchronise only where "
					  "the data is needed, so that the host works while the copy runs." };
	__u64 calls = 0, bytes = 0, T = 0;
	char t1[32], t2[32], t3[32];

	for (int dir = 0; dir < GP_DIR_MAX; dir++) {
		if (dir == GP_DIR_HTOH)
			continue;
		for (int hm = 0; hm < GP_HM_MAX; hm++) {
			calls += p->xfer[dir][hm][1].calls;
			bytes += p->xfer[dir][hm][1].bytes;
			T += p->xfer[dir][hm][1].total_ns;
		}
	}
	if (!calls)
		return;
	f.impact_ns = min_u64(T, outside);
	snprintf(f.title, sizeof(f.title), "%llu synchronous copies held the host for %s",
		 (unsigned long long)calls, MS(t1, T));
	snprintf(f.method, sizeof(f.method),
		 "min(host time in synchronous copies %s, host time outside GPU calls %s) = %s: the most an "
		 "asynchronous copy can overlap with the host's own work", MS(t1, T), MS(t2, outside),
		 MS(t3, f.impact_ns));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "calls", gp_j_u64(calls));
	gp_doc_put(a->d, f.evidence, "bytes", gp_j_u64(bytes));
	gp_doc_put(a->d, f.evidence, "host_ns", gp_j_u64(T));
	gp_doc_put(a->d, f.evidence, "outside_ns", gp_j_u64(outside));
	gp_advice_emit(a, &f);
}

static bool site_small_copy(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_COPY && r->op.bytes <= GP_SMALL_COPY_BYTES;
}

static void rule_small_copies(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "small-copies", .about = GP_ABOUT_COPIES,
				.estimate = "model", .site = site_small_copy,
				.action = "Gather small tensors into one buffer and copy it once (or use pinned, mapped "
					  "memory the kernels read directly): each copy call pays a fixed cost." };
	json_t *rows = gp_doc_arr_new(a->d);
	__u64 calls = 0, S = 0;
	char t1[32], t2[32];

	for (int dir = 0; dir < GP_DIR_MAX; dir++)
		for (int hm = 0; hm < GP_HM_MAX; hm++)
			calls += p->xfer[dir][hm][0].small_calls + p->xfer[dir][hm][1].small_calls;
	if (calls < GP_ADVICE_SMALL_MIN_CALLS) {
		json_decref(rows);
		return;
	}
	for (int dir = 0; dir < GP_DIR_MAX; dir++) {
		for (int hm = 0; hm < GP_HM_MAX; hm++) {
			for (int sync = 0; sync < 2; sync++) {
				const struct gp_xfer_row *r = &p->xfer[dir][hm][sync];
				__u64 big = r->bytes - r->small_bytes, big_ns = r->total_ns - r->small_ns;
				bool measured = big >= GP_ADVICE_MEASURE_BYTES && big_ns;
				double bw = measured ? gbps(big, big_ns)
						     : hm == GP_HM_PAGEABLE ? GP_ADVICE_PAGEABLE_GBPS : GP_ADVICE_PINNED_GBPS;
				json_t *o;

				if (!r->small_calls)
					continue;
				f.impact_ns += sub_sat(r->small_ns, (__u64)((double)r->small_bytes / bw));
				S += r->small_ns;
				o = gp_doc_obj_new(a->d);
				gp_doc_put(a->d, o, "direction", gp_j_str(gp_dir_name(dir)));
				gp_doc_put(a->d, o, "host_memory", gp_j_str(gp_hostmem_name(hm)));
				gp_doc_put(a->d, o, "sync", json_boolean(sync));
				gp_doc_put(a->d, o, "calls", gp_j_u64(r->small_calls));
				gp_doc_put(a->d, o, "bytes", gp_j_u64(r->small_bytes));
				gp_doc_put(a->d, o, "host_ns", gp_j_u64(r->small_ns));
				gp_doc_put(a->d, o, "reference_gbps", gp_j_real2(bw));
				gp_doc_put(a->d, o, "reference_source", gp_j_str(measured ? "measured" : "assumed"));
				gp_doc_push(a->d, rows, o);
			}
		}
	}
	snprintf(f.title, sizeof(f.title), "%llu copies of at most 64 KiB took %s of host time",
		 (unsigned long long)calls, MS(t1, S));
	snprintf(f.method, sizeof(f.method),
		 "per direction and memory kind: host time of the small copies − their bytes at the reference "
		 "bandwidth (that of the larger copies of the same kind when measured); summed: %s",
		 MS(t2, f.impact_ns));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "rows", rows);
	gp_advice_emit(a, &f);
}

/* ---- synchronisation ------------------------------------------------------------ */

static bool site_sync(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_SYNC;
}

/* Host time of the synchronisation calls (waited: minus the redundant ones), and per API. */
static __u64 sync_time(struct gp_advice *a, bool redundant, __u64 *calls, json_t **by_api)
{
	const struct gp_process *p = a->p;
	__u64 total = 0;

	*calls = 0;
	*by_api = gp_doc_arr_new(a->d);
	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];
		__u64 n, ns;
		json_t *o;

		if (!st || !(gp_apis[i].attr & GP_A_SYNC_CALL))
			continue;
		n = redundant ? st->redundant_syncs : st->time.count - st->redundant_syncs;
		ns = redundant ? st->redundant_ns : sub_sat(st->time.sum, st->redundant_ns);
		if (!n)
			continue;
		*calls += n;
		total += ns;
		o = gp_doc_obj_new(a->d);
		gp_doc_put(a->d, o, "api", gp_j_str(gp_apis[i].symbol));
		gp_doc_put(a->d, o, "calls", gp_j_u64(n));
		gp_doc_put(a->d, o, "host_ns", gp_j_u64(ns));
		gp_doc_push(a->d, *by_api, o);
	}
	return total;
}

static void rule_sync_wait(struct gp_advice *a, __u64 outside)
{
	struct gp_finding f = { .id = "sync-wait", .about = GP_ABOUT_SYNCS | GP_ABOUT_OUTSIDE,
				.estimate = "upper_bound", .site = site_sync,
				.action = "Overlap the host's work with the GPU's: queue the next step (prefetch the next "
					  "batch) before waiting for this one, wait on events rather than the whole device, "
					  "and as late as possible." };
	json_t *by_api;
	__u64 calls, B = sync_time(a, false, &calls, &by_api);
	char t1[32], t2[32], t3[32];

	if (!calls) {
		json_decref(by_api);
		return;
	}
	f.impact_ns = min_u64(B, outside);
	snprintf(f.title, sizeof(f.title), "the host was blocked %s in %llu synchronisations, then worked %s while the GPU waited",
		 MS(t1, B), (unsigned long long)calls, MS(t2, outside));
	snprintf(f.method, sizeof(f.method),
		 "min(host time blocked in synchronisations that waited for work %s, host time outside GPU calls %s) "
		 "= %s: what overlapping the two saves at most", MS(t1, B), MS(t2, outside), MS(t3, f.impact_ns));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "calls", gp_j_u64(calls));
	gp_doc_put(a->d, f.evidence, "host_ns", gp_j_u64(B));
	gp_doc_put(a->d, f.evidence, "outside_ns", gp_j_u64(outside));
	gp_doc_put(a->d, f.evidence, "by_api", by_api);
	gp_advice_emit(a, &f);
}

static void rule_redundant_sync(struct gp_advice *a)
{
	struct gp_finding f = { .id = "redundant-sync", .about = GP_ABOUT_SYNCS,
				.estimate = "exact", .site = NULL,
				.action = "Remove synchronisations that follow another one (or a synchronous copy) with "
					  "nothing queued in between: they wait for nothing." };
	json_t *by_api;
	__u64 calls, T = sync_time(a, true, &calls, &by_api);
	char t1[32];

	if (!calls) {
		json_decref(by_api);
		return;
	}
	f.impact_ns = T;
	snprintf(f.title, sizeof(f.title), "%llu synchronisations waited for nothing new (%s)",
		 (unsigned long long)calls, MS(t1, T));
	snprintf(f.method, sizeof(f.method),
		 "the host time of the synchronisation calls that covered no work queued since the previous "
		 "synchronisation of their streams: %s", MS(t1, T));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "calls", gp_j_u64(calls));
	gp_doc_put(a->d, f.evidence, "host_ns", gp_j_u64(T));
	gp_doc_put(a->d, f.evidence, "by_api", by_api);
	gp_advice_emit(a, &f);
}

/* ---- launches, allocations ----------------------------------------------------- */

static bool site_launch(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_KERNEL;
}

static void rule_launch_bound(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "launch-bound", .about = GP_ABOUT_LAUNCHES,
				.estimate = "model", .site = site_launch,
				.action = "Capture the steady-state step in a CUDA Graph (cudaStreamBeginCapture, "
					  "torch.cuda.graphs) and launch it once per step; fuse small kernels "
					  "(torch.compile)." };
	__u64 L = 0, H = 0, n = p->pending.blocked_calls[GP_WORK_KERNEL], blocked = p->pending.blocked_ns[GP_WORK_KERNEL];
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
	snprintf(f.title, sizeof(f.title), "%llu kernel launches cost the host %s (%.1f µs each), more than it waited for the kernels",
		 (unsigned long long)L, MS(t1, H), (double)H / (double)L / 1e3);
	snprintf(f.method, sizeof(f.method),
		 "host time in launches %s − %llu synchronisation windows × the average launch (one graph launch per "
		 "window) = %s; the host waited %s for kernels", MS(t1, H), (unsigned long long)n, MS(t2, f.impact_ns),
		 MS(t3, blocked));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "launches", gp_j_u64(L));
	gp_doc_put(a->d, f.evidence, "host_ns", gp_j_u64(H));
	gp_doc_put(a->d, f.evidence, "avg_launch_ns", gp_j_u64(H / L));
	gp_doc_put(a->d, f.evidence, "sync_windows", gp_j_u64(n));
	gp_doc_put(a->d, f.evidence, "blocked_on_kernels_ns", gp_j_u64(blocked));
	gp_advice_emit(a, &f);
}

static bool site_alloc(const struct gp_stack_op *r)
{
	return (r->op.kind == GP_OP_ALLOC || r->op.kind == GP_OP_FREE) &&
	       (gp_apis[r->api].shape == GP_SHAPE_ALLOC || gp_apis[r->api].shape == GP_SHAPE_FREE);
}

static void rule_alloc_churn(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "alloc-churn", .about = GP_ABOUT_ALLOCS,
				.estimate = "model", .site = site_alloc,
				.action = "Allocate once and reuse the buffers (PyTorch's caching allocator does), or use "
					  "cudaMallocAsync with a memory pool: allocation calls synchronise and are slow." };
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
	snprintf(f.title, sizeof(f.title), "%llu allocations and %llu frees (%s) for at most %llu buffers live at once",
		 (unsigned long long)A, (unsigned long long)F, MS(t1, Ans + Fns), (unsigned long long)peak);
	snprintf(f.method, sizeof(f.method),
		 "%llu allocations beyond the peak of %llu live × the average allocation %s + as many frees × the "
		 "average free %s = %s", (unsigned long long)churn, (unsigned long long)peak, MS(t1, Ans / A),
		 MS(t2, F ? Fns / F : 0), MS(t3, f.impact_ns));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "alloc_calls", gp_j_u64(A));
	gp_doc_put(a->d, f.evidence, "free_calls", gp_j_u64(F));
	gp_doc_put(a->d, f.evidence, "peak_live_allocations", gp_j_u64(peak));
	gp_doc_put(a->d, f.evidence, "churn", gp_j_u64(churn));
	gp_doc_put(a->d, f.evidence, "alloc_host_ns", gp_j_u64(Ans));
	gp_doc_put(a->d, f.evidence, "free_host_ns", gp_j_u64(Fns));
	gp_advice_emit(a, &f);
}

/* ---- the host's own work, faults --------------------------------------------- */

static void rule_cpu_feeding(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "cpu-feeding", .about = GP_ABOUT_OUTSIDE,
				.estimate = "upper_bound",
				.action = "Move data loading and preprocessing off the GPU-feeding threads (worker "
					  "processes, DataLoader(num_workers=N, pin_memory=True)) and prefetch ahead of the "
					  "GPU." };
	size_t n;
	void **ts = gp_doc_map_values(a->d, &p->threads, &n);
	__u64 C = 0, wall = 0, B = 0, calls;
	unsigned threads = 0;
	json_t *by_api;
	char t1[32], t2[32], t3[32];

	for (size_t i = 0; i < n; i++) {
		const struct gp_thread *t = ts[i];
		__u64 in_calls_cpu = sub_sat(t->host_ns, t->in_calls.offcpu_ns);

		if (!t->calls || !t->cpu.known || t->cpu.end_ns <= t->cpu.start_ns)
			continue;
		threads++;
		C += sub_sat(t->cpu.oncpu_ns, in_calls_cpu);
		wall += t->cpu.end_ns - t->cpu.start_ns;
	}
	free(ts);
	B = sync_time(a, false, &calls, &by_api);
	json_decref(by_api);
	B += sync_time(a, true, &calls, &by_api);
	json_decref(by_api);
	if (!threads || (double)C < GP_ADVICE_FEED_CPU_SHARE * (double)wall || B * GP_ADVICE_FEED_SYNC_DIV > C)
		return;
	f.impact_ns = C;
	snprintf(f.title, sizeof(f.title), "the GPU-feeding threads ran %s on the CPU outside GPU calls (%.0f %% of their time) while the GPU waited",
		 MS(t1, C), 100.0 * (double)C / (double)wall);
	snprintf(f.method, sizeof(f.method),
		 "on-CPU time of the %u threads that made GPU calls, outside those calls: %s, with only %s blocked in "
		 "synchronisations (the GPU was done first); upper bound: what the steps save if that work ran in "
		 "parallel with the GPU (%s of thread time)", threads, MS(t1, C), MS(t2, B), MS(t3, wall));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "threads", gp_j_u64(threads));
	gp_doc_put(a->d, f.evidence, "cpu_outside_calls_ns", gp_j_u64(C));
	gp_doc_put(a->d, f.evidence, "thread_wall_ns", gp_j_u64(wall));
	gp_doc_put(a->d, f.evidence, "sync_blocked_ns", gp_j_u64(B));
	gp_advice_emit(a, &f);
}

static void rule_faults(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "faults-in-calls", .estimate = "model",
				.action = "Touch (or pin) host buffers once, before the loop, and reuse them: fresh pages "
					  "fault inside the copies that first use them." };
	__u64 minor = p->in_calls.minor_faults, major = p->in_calls.major_faults, top_faults = 0;
	unsigned top = 0;
	json_t *by_api;
	char t1[32];

	if (minor + major < GP_ADVICE_FAULTS_MIN)
		return;
	by_api = gp_doc_arr_new(a->d);
	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];
		json_t *o;

		if (!st || !(st->inside.minor_faults + st->inside.major_faults))
			continue;
		/* never more than those calls took: the off-CPU time only of the APIs that waited on the disk */
		f.impact_ns += min_u64(st->inside.minor_faults * GP_ADVICE_FAULT_NS +
					       (st->inside.major_faults ? st->inside.offcpu_ns : 0),
				       st->time.sum);
		f.about |= gp_about_api(i);
		if (st->inside.minor_faults + st->inside.major_faults > top_faults) {
			top_faults = st->inside.minor_faults + st->inside.major_faults;
			top = i;
		}
		o = gp_doc_obj_new(a->d);
		gp_doc_put(a->d, o, "api", gp_j_str(gp_apis[i].symbol));
		gp_doc_put(a->d, o, "minor_faults", gp_j_u64(st->inside.minor_faults));
		gp_doc_put(a->d, o, "major_faults", gp_j_u64(st->inside.major_faults));
		gp_doc_push(a->d, by_api, o);
	}
	snprintf(f.title, sizeof(f.title), "%llu page faults inside GPU calls (%llu major), %llu of them in %s",
		 (unsigned long long)(minor + major), (unsigned long long)major, (unsigned long long)top_faults,
		 gp_apis[top].symbol);
	snprintf(f.method, sizeof(f.method),
		 "per API: the minor faults in its calls × 1 µs%s, at most the host time of its calls; summed: %s",
		 major ? " + the off-CPU time inside its calls where they took major faults (those wait for the disk)"
		       : "",
		 MS(t1, f.impact_ns));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "minor_faults", gp_j_u64(minor));
	gp_doc_put(a->d, f.evidence, "major_faults", gp_j_u64(major));
	gp_doc_put(a->d, f.evidence, "by_api", by_api);
	gp_advice_emit(a, &f);
}

/* ---- errors, leaks ------------------------------------------------------------ */

static void rule_failing_calls(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	char t1[32];

	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];
		struct gp_finding f = { .id = "failing-calls", .estimate = "exact", .unconditional = true,
					.action = "Check the error the first time it happens: a call that keeps failing "
						  "does nothing but cost time (and may hide a bug)." };
		json_t *codes;

		if (!st || st->errors < GP_ADVICE_FAIL_MIN)
			continue;
		f.about = gp_about_api(i);
		f.impact_ns = st->error_ns;
		codes = gp_doc_arr_new(a->d);
		for (size_t j = 0; j < st->ncodes; j++) {
			const char *name = gp_error_name(gp_apis[i].family, st->codes[j].code);
			json_t *o = gp_doc_obj_new(a->d);

			gp_doc_put(a->d, o, "code", gp_j_s64(st->codes[j].code));
			gp_doc_put(a->d, o, "name", name ? gp_j_str(name) : json_null());
			gp_doc_put(a->d, o, "count", gp_j_u64(st->codes[j].count));
			gp_doc_push(a->d, codes, o);
		}
		snprintf(f.title, sizeof(f.title), "%s failed %llu of %llu times", gp_apis[i].symbol,
			 (unsigned long long)st->errors, (unsigned long long)st->time.count);
		snprintf(f.method, sizeof(f.method), "the host time of the %llu failed calls: %s",
			 (unsigned long long)st->errors, MS(t1, st->error_ns));
		f.evidence = gp_doc_obj_new(a->d);
		gp_doc_put(a->d, f.evidence, "api", gp_j_str(gp_apis[i].symbol));
		gp_doc_put(a->d, f.evidence, "calls", gp_j_u64(st->time.count));
		gp_doc_put(a->d, f.evidence, "errors", gp_j_u64(st->errors));
		gp_doc_put(a->d, f.evidence, "error_host_ns", gp_j_u64(st->error_ns));
		gp_doc_put(a->d, f.evidence, "codes", codes);
		gp_advice_emit(a, &f);
	}
}

static void rule_leak(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = { .id = "leak", .about = 0,
				.estimate = "exact", .unconditional = true,
				.action = "Free what the process allocates before it exits (if it is a framework's cache, "
					  "this is how much it kept)." };
	const struct gp_alloc **live;
	size_t n;
	__u64 count[GP_AK_MAPPED + 1] = { 0 }, bytes[GP_AK_MAPPED + 1] = { 0 }, total = 0;
	json_t *by_kind;

	if (!p->exited || gp_memory_live(p, &live, &n) || !n)
		return;
	for (size_t i = 0; i < n; i++) {
		count[live[i]->kind]++;
		bytes[live[i]->kind] += live[i]->bytes;
		total += live[i]->bytes;
	}
	free(live);
	by_kind = gp_doc_arr_new(a->d);
	for (int k = 0; k <= GP_AK_MAPPED; k++) {
		json_t *o;

		if (!count[k])
			continue;
		o = gp_doc_obj_new(a->d);
		gp_doc_put(a->d, o, "kind", gp_j_str(gp_alloc_kind_name(k)));
		gp_doc_put(a->d, o, "allocations", gp_j_u64(count[k]));
		gp_doc_put(a->d, o, "bytes", gp_j_u64(bytes[k]));
		gp_doc_push(a->d, by_kind, o);
	}
	snprintf(f.title, sizeof(f.title), "%zu allocation%s (%.1f MiB) never freed before the process exited", n,
		 n == 1 ? "" : "s", (double)total / (1 << 20));
	snprintf(f.method, sizeof(f.method), "memory, not time: the allocations live at exit (memory.leaks)");
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "allocations", gp_j_u64(n));
	gp_doc_put(a->d, f.evidence, "bytes", gp_j_u64(total));
	gp_doc_put(a->d, f.evidence, "by_kind", by_kind);
	gp_advice_emit(a, &f);
}

/* ---- NCCL: a straggler among the ranks of one job ------------------------------- */

struct rank_of {
	const struct gp_process *p;
	const struct gp_nccl_comm *c;
	__u64 blocked_ns; /* synchronisations that waited for this rank's collectives */
};

static __u64 comm_blocked(const struct gp_nccl_comm *c)
{
	__u64 ns = 0;

	for (size_t i = 0; i < c->nrows; i++)
		ns += c->rows[i]->blocked_ns;
	return ns;
}

/*
 * The ranks of a communicator size N are those traced processes' communicators of N ranks; they are
 * taken as one job when exactly one of them holds each rank 0..N-1 (several jobs of the same size in one
 * session are not told apart: no finding). The straggler is the rank its peers waited for.
 */
static void straggler_of_size(struct gp_doc *d, json_t *out, struct rank_of *ranks, size_t n, __s32 nranks)
{
	const struct gp_model *m = d->m;
	struct rank_of *by_rank = calloc((size_t)nranks, sizeof(*by_rank));
	size_t found = 0, slow = 0;
	__u64 others = 0;
	char t1[32], t2[32], t3[32];

	if (!by_rank)
		return;
	for (size_t i = 0; i < n; i++) {
		if (ranks[i].c->nranks != nranks || ranks[i].c->rank < 0 || ranks[i].c->rank >= nranks)
			continue;
		if (by_rank[ranks[i].c->rank].p) /* two jobs of this size, or a rank seen twice */
			goto out;
		by_rank[ranks[i].c->rank] = ranks[i];
		found++;
	}
	if (found != (size_t)nranks)
		goto out;
	for (size_t r = 1; r < (size_t)nranks; r++)
		if (by_rank[r].blocked_ns < by_rank[slow].blocked_ns)
			slow = r;
	for (size_t r = 0; r < (size_t)nranks; r++)
		if (r != slow)
			others += by_rank[r].blocked_ns;
	others /= (__u64)(nranks - 1);
	if (by_rank[slow].blocked_ns * 2 > others)
		goto out; /* its peers did not wait for it much more than it waited for them */
	{
		const struct gp_process *p = by_rank[slow].p;
		__u64 from, to;

		gp_process_window(m, p, &from, &to);
		struct gp_advice a = { .d = d, .p = p, .wall_ns = from && to > from ? to - from : 0, .out = out };
		struct gp_finding f = { .id = "nccl-straggler", .about = GP_ABOUT_NCCL,
					.estimate = "model",
					.action = "Find what delays this rank before its collectives (its own CPU work, "
						  "data loading, a slower device or link) and balance the work across ranks; "
						  "every collective waits for the last rank to arrive." };
		json_t *arr = gp_doc_arr_new(d);

		f.impact_ns = others - by_rank[slow].blocked_ns;
		for (size_t r = 0; r < (size_t)nranks; r++) {
			json_t *o = gp_doc_obj_new(d);

			gp_doc_put(d, o, "rank", gp_j_u64(r));
			gp_doc_put(d, o, "pid", gp_j_u64(by_rank[r].p->pid));
			gp_doc_put(d, o, "blocked_ns", gp_j_u64(by_rank[r].blocked_ns));
			gp_doc_push(d, arr, o);
		}
		snprintf(f.title, sizeof(f.title), "rank %zu of %d is the straggler: its peers waited %s for its collectives, it waited %s",
			 slow, nranks, MS(t1, others), MS(t2, by_rank[slow].blocked_ns));
		snprintf(f.method, sizeof(f.method),
			 "the other ranks' average time blocked in synchronisations that waited for collectives %s − this "
			 "rank's %s = %s: what each rank saves if this one arrived as early as they do",
			 MS(t1, others), MS(t2, by_rank[slow].blocked_ns), MS(t3, f.impact_ns));
		f.evidence = gp_doc_obj_new(d);
		gp_doc_put(d, f.evidence, "rank", gp_j_u64(slow));
		gp_doc_put(d, f.evidence, "nranks", gp_j_u64((__u64)nranks));
		gp_doc_put(d, f.evidence, "peers_blocked_avg_ns", gp_j_u64(others));
		gp_doc_put(d, f.evidence, "ranks", arr);
		gp_advice_emit(&a, &f);
	}
out:
	free(by_rank);
}

void gp_advice_jobs(struct gp_doc *d, json_t *out)
{
	const struct gp_model *m = d->m;
	struct rank_of *ranks = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < m->nprocs; i++) {
		const struct gp_nccl *nc = m->procs[i]->nccl;

		for (size_t j = 0; nc && j < nc->ncomms; j++) {
			if (nc->comms[j]->nranks < 2 || nc->comms[j]->parent)
				continue;
			if (GP_ARRAY_GROW(ranks, cap, n + 1, 16)) {
				d->failed = true;
				free(ranks);
				return;
			}
			ranks[n++] = (struct rank_of){ .p = m->procs[i], .c = nc->comms[j],
						       .blocked_ns = comm_blocked(nc->comms[j]) };
		}
	}
	/* each communicator size once, in the order first seen */
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = ranks[j].c->nranks == ranks[i].c->nranks;
		if (!seen)
			straggler_of_size(d, out, ranks, n, ranks[i].c->nranks);
	}
	free(ranks);
}

/* ---- the GPU's side (NVML) ------------------------------------------------------ */

/* The device NVML listed the process on, when it is the only process listed there (else NULL). */
static const struct gp_gpu_device *sole_device(const struct gp_model *m, __u32 pid)
{
	const struct gp_gpu_device *found = NULL;

	for (size_t i = 0; i < m->gpus.n; i++) {
		const struct gp_gpu_device *d = &m->gpus.devs[i];
		bool here = false;

		for (size_t j = 0; j < d->nprocs; j++) {
			if (d->procs[j].pid != pid)
				return NULL; /* another process's work would be in the utilization too */
			here = true;
		}
		if (here && found)
			return NULL; /* on two devices: which one idled is not known */
		if (here)
			found = d;
	}
	return found;
}

/*
 * The GPU idle while the host was busy or blocked on host-side work: NVML's
 * utilization (the device's, time-weighted, as busy time over the process's
 * traced window) beside the host's time in pageable copies, allocation calls
 * and on the CPU outside GPU calls (over the spans of the threads that made
 * GPU calls).
 */
static void rule_gpu_idle(struct gp_advice *a)
{
	static const char *const part_names[] = { "pageable copies", "allocation calls",
						  "on the CPU outside GPU calls" };
	const struct gp_process *p = a->p;
	const struct gp_gpu_device *dev = sole_device(a->d->m, p->pid);
	struct gp_finding f = { .id = "gpu-idle-host-busy", .estimate = "upper_bound", .verdict = true,
				.about = GP_ABOUT_COPIES | GP_ABOUT_ALLOCS | GP_ABOUT_OUTSIDE,
				.action = "Overlap the host's work with the GPU's: pinned buffers and cudaMemcpyAsync for "
					  "the copies, allocations hoisted out of the loop, input preparation on other "
					  "threads or processes ahead of the GPU (DataLoader workers, prefetching)." };
	__u64 part[3] = { 0 }, span = 0, host, busy, idle;
	const struct gp_gpu_stat *util;
	double util_avg, gpu_share, host_share;
	bool cpu_known = false;
	size_t n, top = 0;
	void **ts;
	char t1[32], t2[32], t3[32], t4[32];

	if (!dev || !a->wall_ns || !(util = &dev->m[GP_GM_UTIL_GPU])->n || !dev->window_ns)
		return;
	for (int d = 0; d < GP_DIR_MAX; d++)
		for (int k = 0; k < 2; k++)
			part[0] += p->xfer[d][GP_HM_PAGEABLE][k].total_ns;
	for (unsigned i = 0; i < GP_API_MAX; i++)
		if (p->api[i] && (gp_apis[i].shape == GP_SHAPE_ALLOC || gp_apis[i].shape == GP_SHAPE_FREE))
			part[1] += p->api[i]->time.sum;
	ts = gp_doc_map_values(a->d, &p->threads, &n);
	for (size_t i = 0; i < n; i++) {
		const struct gp_thread *t = ts[i];

		__u64 window;

		if (!t->calls || t->last_ns <= t->first_ns)
			continue;
		/*
		 * The on-CPU time is the thread's whole traced window's (before its first call too: a
		 * program filling its buffers), so that window is the span it is a share of; its calls lie
		 * inside it, and what is not in them bounds the on-CPU time outside them.
		 */
		window = t->last_ns - t->first_ns;
		if (t->cpu.known && t->cpu.end_ns > t->cpu.start_ns) {
			window = t->cpu.end_ns - t->cpu.start_ns;
			if (window < t->last_ns - t->first_ns)
				window = t->last_ns - t->first_ns;
			cpu_known = true;
			part[2] += min_u64(sub_sat(t->cpu.oncpu_ns, sub_sat(t->host_ns, t->in_calls.offcpu_ns)),
					   sub_sat(window, t->host_ns));
		}
		span += window;
	}
	free(ts);
	host = part[0] + part[1] + part[2];
	util_avg = gp_gpu_stat_mean(util);
	/* every busy moment of the device is this process's (it is the only one NVML listed there) */
	busy = min_u64((__u64)(util_avg / 100.0 * (double)dev->window_ns), a->wall_ns);
	gpu_share = (double)busy / (double)a->wall_ns;
	host_share = span ? (double)host / (double)span : 0;
	if (gpu_share >= GP_ADVICE_GPU_IDLE_SHARE || host_share < GP_ADVICE_HOST_BUSY_SHARE)
		return;
	for (size_t i = 1; i < 3; i++)
		if (part[i] > part[top])
			top = i;
	idle = a->wall_ns - busy;
	f.impact_ns = min_u64(host, idle);
	snprintf(f.title, sizeof(f.title),
		 "GPU %u busy %.0f %% of the time while the host spent %.0f %% of its time in %s (%.0f %% on host-side work in all)",
		 dev->index, 100.0 * gpu_share, span ? 100.0 * (double)part[top] / (double)span : 0.0, part_names[top],
		 100.0 * host_share);
	snprintf(f.method, sizeof(f.method),
		 "NVML's GPU utilization %.2f %% (time-weighted over %llu samples, %s) = %s busy in the process's %s; "
		 "host-side work of the threads that made GPU calls: %s in pageable copies + %s in allocation calls + "
		 "%s on the CPU outside GPU calls%s = %s of their %s; upper bound: the smaller of that work and the "
		 "GPU's idle time, what overlapping the two could save at most",
		 util_avg, (unsigned long long)util->n, MS(t1, dev->window_ns), MS(t2, busy), MS(t3, a->wall_ns),
		 MS(t4, part[0]), gp_advice_ms((char[32]){ 0 }, 32, part[1]), gp_advice_ms((char[32]){ 0 }, 32, part[2]),
		 cpu_known ? "" : " (not known: no scheduling records)", gp_advice_ms((char[32]){ 0 }, 32, host),
		 gp_advice_ms((char[32]){ 0 }, 32, span));
	f.evidence = gp_doc_obj_new(a->d);
	gp_doc_put(a->d, f.evidence, "gpu", gp_j_u64(dev->index));
	gp_doc_put(a->d, f.evidence, "gpu_util_avg", gp_j_real2(util_avg));
	gp_doc_put(a->d, f.evidence, "gpu_samples", gp_j_u64(util->n));
	gp_doc_put(a->d, f.evidence, "gpu_window_ns", gp_j_u64(dev->window_ns));
	gp_doc_put(a->d, f.evidence, "gpu_busy_ns", gp_j_u64(busy));
	gp_doc_put(a->d, f.evidence, "process_wall_ns", gp_j_u64(a->wall_ns));
	gp_doc_put(a->d, f.evidence, "gpu_busy_share", gp_j_real2(gpu_share));
	gp_doc_put(a->d, f.evidence, "pageable_copy_ns", gp_j_u64(part[0]));
	gp_doc_put(a->d, f.evidence, "alloc_free_ns", gp_j_u64(part[1]));
	gp_doc_put(a->d, f.evidence, "cpu_outside_calls_ns", cpu_known ? gp_j_u64(part[2]) : json_null());
	gp_doc_put(a->d, f.evidence, "host_side_ns", gp_j_u64(host));
	gp_doc_put(a->d, f.evidence, "threads_span_ns", gp_j_u64(span));
	gp_doc_put(a->d, f.evidence, "host_share", gp_j_real2(host_share));
	gp_advice_emit(a, &f);
}

void gp_advice_rules(struct gp_advice *a)
{
	__u64 outside = outside_ns(a->d, a->p);

	rule_pageable(a);
	rule_sync_copies(a, outside);
	rule_small_copies(a);
	rule_sync_wait(a, outside);
	rule_redundant_sync(a);
	rule_launch_bound(a);
	rule_alloc_churn(a);
	rule_cpu_feeding(a);
	rule_faults(a);
	rule_failing_calls(a);
	rule_leak(a);
	rule_gpu_idle(a);
}
