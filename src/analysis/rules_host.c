/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rules_host.c — the rules on the host's own work (docs/recommendations.md):
 * cpu-feeding, faults-in-calls, and the GPU idle meanwhile by NVML
 * (gpu-idle-host-busy, a verdict).
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/advice_rules.h"

/* ---- the host's own work, faults --------------------------------------------- */

void gp_rule_cpu_feeding(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "cpu-feeding",
		.about = GP_ABOUT_OUTSIDE,
		.estimate = "upper_bound",
		.action =
			"Move data loading and preprocessing off the GPU-feeding threads (worker "
			"processes, DataLoader(num_workers=N, pin_memory=True)) and prefetch ahead of the "
			"GPU."
	};
	size_t n;
	void **ts = gp_advice_map_values(a, &p->threads, &n);
	__u64 C = 0, wall = 0, B = 0, calls;
	unsigned threads = 0;
	struct gp_ev_rows *by_api;
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
	B = gp_sync_time(a, false, &calls, &by_api);
	gp_ev_rows_free(by_api);
	B += gp_sync_time(a, true, &calls, &by_api);
	gp_ev_rows_free(by_api);
	if (!threads || (double)C < GP_ADVICE_FEED_CPU_SHARE * (double)wall ||
	    B * GP_ADVICE_FEED_SYNC_DIV > C)
		return;
	f.impact_ns = C;
	snprintf(
		f.title, sizeof(f.title),
		"the GPU-feeding threads ran %s on the CPU outside GPU calls (%.0f %% of their time) while the GPU waited",
		MS(t1, C), 100.0 * (double)C / (double)wall);
	snprintf(
		f.method, sizeof(f.method),
		"on-CPU time of the %u threads that made GPU calls, outside those calls: %s, with only %s blocked in "
		"synchronisations (the GPU was done first); upper bound: what the steps save if that work ran in "
		"parallel with the GPU (%s of thread time)",
		threads, MS(t1, C), MS(t2, B), MS(t3, wall));
	gp_ev_u64(&f.evidence, "threads", threads);
	gp_ev_u64(&f.evidence, "cpu_outside_calls_ns", C);
	gp_ev_u64(&f.evidence, "thread_wall_ns", wall);
	gp_ev_u64(&f.evidence, "sync_blocked_ns", B);
	gp_advice_emit(a, &f);
}

void gp_rule_faults(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "faults-in-calls",
		.estimate = "model",
		.action =
			"Touch (or pin) host buffers once, before the loop, and reuse them: fresh pages "
			"fault inside the copies that first use them."
	};
	__u64 minor = p->in_calls.minor_faults, major = p->in_calls.major_faults, top_faults = 0;
	unsigned top = 0;
	struct gp_ev_rows *by_api;
	char t1[32];

	if (minor + major < GP_ADVICE_FAULTS_MIN)
		return;
	by_api = gp_ev_rows_new();
	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];
		struct gp_fields *o;

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
		o = gp_ev_row(by_api);
		gp_ev_str(o, "api", gp_apis[i].symbol);
		gp_ev_u64(o, "minor_faults", st->inside.minor_faults);
		gp_ev_u64(o, "major_faults", st->inside.major_faults);
	}
	snprintf(f.title, sizeof(f.title),
		 "%llu page faults inside GPU calls (%llu major), %llu of them in %s",
		 (unsigned long long)(minor + major), (unsigned long long)major,
		 (unsigned long long)top_faults, gp_apis[top].symbol);
	snprintf(
		f.method, sizeof(f.method),
		"per API: the minor faults in its calls × 1 µs%s, at most the host time of its calls; summed: %s",
		major ? " + the off-CPU time inside its calls where they took major faults (those wait for the disk)"
		      : "",
		MS(t1, f.impact_ns));
	gp_ev_u64(&f.evidence, "minor_faults", minor);
	gp_ev_u64(&f.evidence, "major_faults", major);
	gp_ev_rows_put(&f.evidence, "by_api", by_api);
	gp_advice_emit(a, &f);
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
 * The host-side work of the process's threads that made GPU calls: part[0] in pageable copies,
 * part[1] in allocation and free calls, part[2] on the CPU outside GPU calls (*cpu_known: some
 * thread's on-CPU time is known). Returns the span of those threads' traced windows.
 */
static __u64 host_side_parts(struct gp_advice *a, __u64 part[3], bool *cpu_known)
{
	const struct gp_process *p = a->p;
	__u64 span = 0;
	size_t n;
	void **ts;

	for (int d = 0; d < GP_DIR_MAX; d++)
		for (int k = 0; k < 2; k++)
			part[0] += p->xfer[d][GP_HM_PAGEABLE][k].total_ns;
	for (unsigned i = 0; i < GP_API_MAX; i++)
		if (p->api[i] &&
		    (gp_apis[i].shape == GP_SHAPE_ALLOC || gp_apis[i].shape == GP_SHAPE_FREE))
			part[1] += p->api[i]->time.sum;
	ts = gp_advice_map_values(a, &p->threads, &n);
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
			*cpu_known = true;
			part[2] += min_u64(sub_sat(t->cpu.oncpu_ns,
						   sub_sat(t->host_ns, t->in_calls.offcpu_ns)),
					   sub_sat(window, t->host_ns));
		}
		span += window;
	}
	free(ts);
	return span;
}

/*
 * The GPU idle while the host was busy or blocked on host-side work: NVML's
 * utilization (the device's, time-weighted, as busy time over the process's
 * traced window) beside the host's time in pageable copies, allocation calls
 * and on the CPU outside GPU calls (over the spans of the threads that made
 * GPU calls).
 */
void gp_rule_gpu_idle(struct gp_advice *a)
{
	static const char *const part_names[] = { "pageable copies", "allocation calls",
						  "on the CPU outside GPU calls" };
	const struct gp_process *p = a->p;
	const struct gp_gpu_device *dev = sole_device(a->m, p->pid);
	struct gp_finding f = {
		.id = "gpu-idle-host-busy",
		.estimate = "upper_bound",
		.verdict = true,
		.about = GP_ABOUT_COPIES | GP_ABOUT_ALLOCS | GP_ABOUT_OUTSIDE,
		.action =
			"Overlap the host's work with the GPU's: pinned buffers and cudaMemcpyAsync for "
			"the copies, allocations hoisted out of the loop, input preparation on other "
			"threads or processes ahead of the GPU (DataLoader workers, prefetching)."
	};
	__u64 part[3] = { 0 }, span = 0, host, busy, idle;
	const struct gp_gpu_stat *util;
	double util_avg, gpu_share, host_share;
	bool cpu_known = false;
	size_t top = 0;
	char t1[32], t2[32], t3[32], t4[32];

	if (!dev || !a->wall_ns || !(util = &dev->m[GP_GM_UTIL_GPU])->n || !dev->window_ns)
		return;
	span = host_side_parts(a, part, &cpu_known);
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
	snprintf(
		f.title, sizeof(f.title),
		"GPU %u busy %.0f %% of the time while the host spent %.0f %% of its time in %s (%.0f %% on host-side work in all)",
		dev->index, 100.0 * gpu_share,
		span ? 100.0 * (double)part[top] / (double)span : 0.0, part_names[top],
		100.0 * host_share);
	snprintf(
		f.method, sizeof(f.method),
		"NVML's GPU utilization %.2f %% (time-weighted over %llu samples, %s) = %s busy in the process's %s; "
		"host-side work of the threads that made GPU calls: %s in pageable copies + %s in allocation calls + "
		"%s on the CPU outside GPU calls%s = %s of their %s; upper bound: the smaller of that work and the "
		"GPU's idle time, what overlapping the two could save at most",
		util_avg, (unsigned long long)util->n, MS(t1, dev->window_ns), MS(t2, busy),
		MS(t3, a->wall_ns), MS(t4, part[0]), gp_advice_ms((char[32]){ 0 }, 32, part[1]),
		gp_advice_ms((char[32]){ 0 }, 32, part[2]),
		cpu_known ? "" : " (not known: no scheduling records)",
		gp_advice_ms((char[32]){ 0 }, 32, host), gp_advice_ms((char[32]){ 0 }, 32, span));
	gp_ev_u64(&f.evidence, "gpu", dev->index);
	gp_ev_real2(&f.evidence, "gpu_util_avg", util_avg);
	gp_ev_u64(&f.evidence, "gpu_samples", util->n);
	gp_ev_u64(&f.evidence, "gpu_window_ns", dev->window_ns);
	gp_ev_u64(&f.evidence, "gpu_busy_ns", busy);
	gp_ev_u64(&f.evidence, "process_wall_ns", a->wall_ns);
	gp_ev_real2(&f.evidence, "gpu_busy_share", gpu_share);
	gp_ev_u64(&f.evidence, "pageable_copy_ns", part[0]);
	gp_ev_u64(&f.evidence, "alloc_free_ns", part[1]);
	if (cpu_known)
		gp_ev_u64(&f.evidence, "cpu_outside_calls_ns", part[2]);
	else
		gp_ev_null(&f.evidence, "cpu_outside_calls_ns");
	gp_ev_u64(&f.evidence, "host_side_ns", host);
	gp_ev_u64(&f.evidence, "threads_span_ns", span);
	gp_ev_real2(&f.evidence, "host_share", host_share);
	gp_advice_emit(a, &f);
}
