/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_gpus.c — report.json's "nvml" (what became of NVML) and
 * "gpus" (per device: each metric's min, time-weighted mean and max over
 * the samples; the processes NVML listed there, joined to what the probes
 * saw of them: the device memory NVML says they hold beside the bytes
 * their traced calls allocated, their GPU utilization beside the host's
 * verdict). docs/report-format.md ("gpus") defines every field.
 */
#include <math.h>
#include <stdio.h>

#include "model/view.h"
#include "report/report_builders.h"

static const char *state_name(int state)
{
	switch (state) {
	case GP_NVML_OK:
		return "ok";
	case GP_NVML_ABSENT:
		return "absent";
	case GP_NVML_FAILED:
		return "failed";
	default:
		return "off";
	}
}

static json_t *errors(struct gp_doc *d, __u32 index)
{
	const struct gp_gpus *g = &d->m->gpus;
	json_t *a = gp_doc_arr_new(d);

	for (size_t i = 0; i < g->nerrors; i++) {
		const struct gp_gpu_error_row *e = &g->errors[i];
		json_t *o;

		if (e->index != index)
			continue;
		o = gp_doc_obj_new(d);
		gp_doc_put(d, o, "call", gp_j_str(e->call));
		gp_doc_put(d, o, "code", gp_j_s64(e->code));
		gp_doc_put(d, o, "text", e->text ? gp_j_str(e->text) : json_null());
		gp_doc_put(d, o, "count", gp_j_u64(e->count));
		gp_doc_put(d, o, "first_mono_ns", gp_j_u64(e->first_ns));
		gp_doc_push(d, a, o);
	}
	return a;
}

json_t *gp_doc_nvml(struct gp_doc *d)
{
	const struct gp_gpus *g = &d->m->gpus;
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "state", gp_j_str(state_name(g->state)));
	gp_doc_put(d, o, "note", g->note ? gp_j_str(g->note) : json_null());
	gp_doc_put(d, o, "driver_version", g->driver ? gp_j_str(g->driver) : json_null());
	gp_doc_put(d, o, "interval_ms",
		   g->state ? gp_j_u64(g->interval_ns / 1000000) : json_null());
	gp_doc_put(d, o, "sampler_cpu_ns", gp_j_u64(g->sampler_cpu_ns));
	gp_doc_put(d, o, "errors", errors(d, GP_GPU_NO_DEVICE));
	return o;
}

static json_t *metric(struct gp_doc *d, const struct gp_gpu_stat *st)
{
	json_t *o;

	if (!st->n)
		return json_null();
	o = gp_doc_obj_new(d);
	gp_doc_put(d, o, "min", gp_j_u64(st->min));
	gp_doc_put(d, o, "avg", gp_j_real2(gp_gpu_stat_mean(st)));
	gp_doc_put(d, o, "max", gp_j_u64(st->max));
	gp_doc_put(d, o, "last", gp_j_u64(st->last));
	gp_doc_put(d, o, "samples", gp_j_u64(st->n));
	return o;
}

/* The host's side of a process NVML listed: its verdict and where its time went. */
static json_t *host(struct gp_doc *d, const struct gp_process *p)
{
	__u64 from = p->attach_ns > d->m->session.start_mono_ns ? p->attach_ns
								: d->m->session.start_mono_ns;
	__u64 to = p->exited ? p->exit_ns : d->m->session.end_mono_ns;
	struct gp_cpu_summary s;
	json_t *o = gp_doc_obj_new(d);
	double wall;

	gp_cpu_summarize(p, from, to, &s);
	wall = (double)s.focus_wall_ns;
	gp_doc_put(d, o, "verdict", gp_j_str(gp_verdict_kind(s.verdict)));
	gp_doc_put(d, o, "on_cpu_share",
		   s.known && wall > 0 ? gp_j_real2((double)s.focus_cpu_ns / wall) : json_null());
	gp_doc_put(d, o, "in_gpu_calls_share",
		   s.known && wall > 0 ? gp_j_real2((double)s.focus_offcpu_in_calls_ns / wall)
				       : json_null());
	gp_doc_put(d, o, "top_api",
		   s.top_api_offcpu_ns ? gp_j_str(gp_apis[s.top_api].symbol) : json_null());
	return o;
}

static bool listed_once(const struct gp_model *m, __u32 pid)
{
	int n = 0;

	for (size_t i = 0; i < m->gpus.n; i++)
		for (size_t j = 0; j < m->gpus.devs[i].nprocs; j++)
			n += m->gpus.devs[i].procs[j].pid == pid;
	return n == 1;
}

static json_t *process(struct gp_doc *d, const struct gp_gpu_device *dev,
		       const struct gp_gpu_proc_row *r)
{
	const struct gp_process *p = gp_u64map_get(&d->m->by_pid, r->pid);
	const struct gp_mem_counts *mc = NULL;
	json_t *o = gp_doc_obj_new(d);

	if (p) {
		const struct gp_mem_counts *unk = gp_memory_device(&p->mem, -1);

		mc = gp_memory_device(&p->mem, (int)dev->index);
		/* the probes saw no device for its allocations (no cudaSetDevice): all of them, when
		 * NVML lists it on this device only */
		if ((!mc || !mc->alloc_calls) && unk &&
		    unk->alloc_calls == p->mem.total.alloc_calls && listed_once(d->m, r->pid))
			mc = &p->mem.total;
	}
	gp_doc_put(d, o, "pid", gp_j_u64(r->pid));
	gp_doc_put(d, o, "traced", json_boolean(p != NULL));
	gp_doc_put(d, o, "comm", p && p->comm ? gp_j_str(p->comm) : json_null());
	gp_doc_put(d, o, "samples", gp_j_u64(r->samples));
	gp_doc_put(d, o, "first_mono_ns", gp_j_u64(r->first_ns));
	gp_doc_put(d, o, "last_mono_ns", gp_j_u64(r->last_ns));
	gp_doc_put(d, o, "memory_used_bytes_max", gp_j_u64(r->mem_max));
	gp_doc_put(d, o, "memory_used_bytes_last", gp_j_u64(r->mem_last));
	gp_doc_put(d, o, "traced_allocated_peak_bytes",
		   p ? gp_j_u64(mc ? mc->peak_bytes : 0) : json_null());
	gp_doc_put(d, o, "traced_allocated_live_bytes",
		   p ? gp_j_u64(mc ? mc->live_bytes : 0) : json_null());
	/* what the process holds that no traced call allocated: the allocator's cache and the context */
	gp_doc_put(d, o, "not_allocated_by_traced_calls_bytes",
		   p ? gp_j_s64((__s64)r->mem_max - (__s64)(mc ? mc->peak_bytes : 0))
		     : json_null());
	gp_doc_put(d, o, "util_samples", gp_j_u64(r->util_samples));
	gp_doc_put(d, o, "sm_util_avg",
		   r->util_samples ? gp_j_real2((double)r->sm_sum / (double)r->util_samples)
				   : json_null());
	gp_doc_put(d, o, "sm_util_max", r->util_samples ? gp_j_u64(r->sm_max) : json_null());
	gp_doc_put(d, o, "memory_util_avg",
		   r->util_samples ? gp_j_real2((double)r->mem_util_sum / (double)r->util_samples)
				   : json_null());
	gp_doc_put(d, o, "memory_util_max",
		   r->util_samples ? gp_j_u64(r->mem_util_max) : json_null());
	gp_doc_put(d, o, "host", p ? host(d, p) : json_null());
	return o;
}

static json_t *device(struct gp_doc *d, const struct gp_gpu_device *dev)
{
	json_t *o = gp_doc_obj_new(d), *m = gp_doc_obj_new(d), *procs = gp_doc_arr_new(d);

	gp_doc_put(d, o, "index", gp_j_u64(dev->index));
	gp_doc_put(d, o, "name", dev->name ? gp_j_str(dev->name) : json_null());
	gp_doc_put(d, o, "uuid", dev->uuid ? gp_j_str(dev->uuid) : json_null());
	gp_doc_put(d, o, "memory_total_bytes", gp_j_u64(dev->memory_total));
	gp_doc_put(d, o, "samples", gp_j_u64(dev->samples));
	gp_doc_put(d, o, "first_mono_ns", dev->samples ? gp_j_u64(dev->first_ns) : json_null());
	gp_doc_put(d, o, "last_mono_ns", dev->samples ? gp_j_u64(dev->last_ns) : json_null());
	gp_doc_put(d, o, "window_start_mono_ns",
		   dev->samples ? gp_j_u64(dev->window_start_ns) : json_null());
	gp_doc_put(d, o, "window_ns", gp_j_u64(dev->window_ns));
	gp_doc_put(d, o, "lost", json_boolean(dev->lost));
	gp_doc_put(d, o, "lost_mono_ns", dev->lost ? gp_j_u64(dev->lost_ns) : json_null());
	for (int g = 0; g < GP_GM_N; g++)
		gp_doc_put(d, m, gp_gpu_metric_key(g), metric(d, &dev->m[g]));
	gp_doc_put(d, o, "metrics", m);
	gp_doc_put(d, o, "throttle_reasons_seen", gp_j_hex(dev->throttle_seen));
	for (size_t i = 0; i < dev->nprocs; i++)
		gp_doc_push(d, procs, process(d, dev, &dev->procs[i]));
	gp_doc_put(d, o, "processes", procs);
	gp_doc_put(d, o, "errors", errors(d, dev->index));
	return o;
}

json_t *gp_doc_gpus(struct gp_doc *d)
{
	const struct gp_gpus *g = &d->m->gpus;
	json_t *a = gp_doc_arr_new(d);

	for (size_t i = 0; i < g->n; i++)
		gp_doc_push(d, a, device(d, &g->devs[i]));
	return a;
}
