/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpus.c — the GPU's side of the story, as NVML told it (src/gpu/ samples
 * it): whether NVML was there, each device, per metric the samples' min,
 * time-weighted mean and max (each sample weighs its window, so a mean is
 * the share of the session's time), the processes NVML listed on each
 * device with the memory it says they hold and their utilization, and the
 * calls that failed, counted once per (device, call, code). Every write is
 * an operation of the capture (model_ops.h), so a report from a capture
 * holds the same.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/model_internal.h"

static const char *const metric_keys[GP_GM_N] = {
#define GP_GM_KEY(NAME, key, unit) [GP_GM_##NAME] = key,
	GP_GPU_METRIC_TABLE(GP_GM_KEY)
#undef GP_GM_KEY
};
static const char *const metric_units[GP_GM_N] = {
#define GP_GM_UNIT(NAME, key, unit) [GP_GM_##NAME] = unit,
	GP_GPU_METRIC_TABLE(GP_GM_UNIT)
#undef GP_GM_UNIT
};

const char *gp_gpu_metric_key(enum gp_gpu_metric g)
{
	return g < GP_GM_N ? metric_keys[g] : "";
}

const char *gp_gpu_metric_unit(enum gp_gpu_metric g)
{
	return g < GP_GM_N ? metric_units[g] : "";
}

void gp_gpus_release(struct gp_gpus *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->devs[i].name);
		free(g->devs[i].uuid);
		free(g->devs[i].procs);
	}
	free(g->devs);
	for (size_t i = 0; i < g->nerrors; i++) {
		free(g->errors[i].call);
		free(g->errors[i].text);
	}
	free(g->errors);
	free(g->note);
	free(g->driver);
	memset(g, 0, sizeof(*g));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void gp_model_gpu_nvml(struct gp_model *m, int state, const char *note, const char *driver,
		       __u64 interval_ns, __u64 sampler_cpu_ns)
{
	struct gp_gpus *g = &m->gpus;
	char *n = dup_or_null(note), *dv = dup_or_null(driver); /* note may be g->note */

	gp_model_tap_gpu_nvml(m, &(struct gp_op_gpu_nvml){ .state = state,
							   .note = note,
							   .driver = driver,
							   .interval_ns = interval_ns,
							   .sampler_cpu_ns = sampler_cpu_ns });
	free(g->note);
	free(g->driver);
	g->state = state;
	g->note = n;
	g->driver = dv;
	g->interval_ns = interval_ns;
	g->sampler_cpu_ns = sampler_cpu_ns;
}

const struct gp_gpu_device *gp_gpu_device_of(const struct gp_model *m, __u32 index)
{
	for (size_t i = 0; i < m->gpus.n; i++)
		if (m->gpus.devs[i].index == index)
			return &m->gpus.devs[i];
	return NULL;
}

static struct gp_gpu_device *device(struct gp_model *m, __u32 index)
{
	struct gp_gpus *g = &m->gpus;

	for (size_t i = 0; i < g->n; i++)
		if (g->devs[i].index == index)
			return &g->devs[i];
	if (GP_ARRAY_GROW(g->devs, g->cap, g->n + 1, 4))
		return NULL;
	g->devs[g->n] = (struct gp_gpu_device){ .index = index };
	return &g->devs[g->n++];
}

int gp_model_gpu_device(struct gp_model *m, __u32 index, const char *name, const char *uuid,
			__u64 memory_total)
{
	struct gp_gpu_device *d = device(m, index);

	if (!d)
		return -ENOMEM;
	gp_model_tap_gpu_device(m, &(struct gp_op_gpu_device){ .index = index,
							       .name = name,
							       .uuid = uuid,
							       .memory_total = memory_total });
	free(d->name);
	free(d->uuid);
	d->name = dup_or_null(name);
	d->uuid = dup_or_null(uuid);
	d->memory_total = memory_total;
	return 0;
}

double gp_gpu_stat_mean(const struct gp_gpu_stat *st)
{
	if (st->wt > 0)
		return st->wsum / st->wt;
	return st->n ? st->sum / (double)st->n : 0;
}

int gp_model_gpu_sample(struct gp_model *m, const struct gp_gpu_sample *s)
{
	struct gp_gpu_device *d = device(m, s->index);

	if (!d)
		return -ENOMEM;
	gp_model_tap_gpu_sample(m, &(struct gp_op_gpu_sample){ .sample = { s, sizeof(*s) } });
	if (!d->samples) {
		d->first_ns = s->mono_ns;
		d->window_start_ns = s->mono_ns - s->window_ns;
	}
	d->window_ns += s->window_ns;
	d->samples++;
	d->last_ns = s->mono_ns;
	for (int g = 0; g < GP_GM_N; g++) {
		struct gp_gpu_stat *st = &d->m[g];
		__u64 v = s->v[g];

		if (!(s->valid & (1u << g)))
			continue;
		if (!st->n || v < st->min)
			st->min = v;
		if (!st->n || v > st->max)
			st->max = v;
		st->n++;
		st->last = v;
		st->last_ns = s->mono_ns;
		st->sum += (double)v;
		st->wsum += (double)v * (double)s->window_ns;
		st->wt += (double)s->window_ns;
	}
	if (s->valid & (1u << GP_GM_THROTTLE))
		d->throttle_seen |= s->v[GP_GM_THROTTLE];
	for (size_t i = 0; i < m->writer->nobservers; i++)
		if (m->writer->observers[i].gpu)
			m->writer->observers[i].gpu(m->writer->observers[i].ctx, s);
	return 0;
}

int gp_model_gpu_process(struct gp_model *m, __u32 index, __u32 pid, __u64 mono_ns,
			 __u64 used_memory, __s32 sm_util, __s32 mem_util)
{
	struct gp_gpu_device *d = device(m, index);
	struct gp_gpu_proc_row *r = NULL;

	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < d->nprocs && !r; i++)
		if (d->procs[i].pid == pid)
			r = &d->procs[i];
	if (!r) {
		if (GP_ARRAY_GROW(d->procs, d->capprocs, d->nprocs + 1, 8))
			return -ENOMEM;
		r = &d->procs[d->nprocs++];
		*r = (struct gp_gpu_proc_row){ .pid = pid, .first_ns = mono_ns };
	}
	gp_model_tap_gpu_process(m, &(struct gp_op_gpu_process){ .index = index,
								 .pid = pid,
								 .mono_ns = mono_ns,
								 .used_memory = used_memory,
								 .sm_util = sm_util,
								 .mem_util = mem_util });
	r->samples++;
	r->last_ns = mono_ns;
	r->mem_last = used_memory;
	if (used_memory > r->mem_max)
		r->mem_max = used_memory;
	if (sm_util != GP_NVML_UNKNOWN_UTIL && mem_util != GP_NVML_UNKNOWN_UTIL) {
		r->util_samples++;
		r->sm_last = (__u64)sm_util;
		r->mem_util_last = (__u64)mem_util;
		r->util_last_ns = mono_ns;
		r->sm_sum += (__u64)sm_util;
		r->mem_util_sum += (__u64)mem_util;
		if ((__u64)sm_util > r->sm_max)
			r->sm_max = (__u64)sm_util;
		if ((__u64)mem_util > r->mem_util_max)
			r->mem_util_max = (__u64)mem_util;
	}
	return 0;
}

int gp_model_gpu_error(struct gp_model *m, __u32 index, const char *call, __s32 code,
		       const char *text, __u64 mono_ns)
{
	struct gp_gpus *g = &m->gpus;
	struct gp_gpu_error_row *r = NULL;

	for (size_t i = 0; i < g->nerrors && !r; i++)
		if (g->errors[i].index == index && g->errors[i].code == code &&
		    !strcmp(g->errors[i].call, call ? call : ""))
			r = &g->errors[i];
	if (!r) {
		if (GP_ARRAY_GROW(g->errors, g->caperrors, g->nerrors + 1, 8))
			return -ENOMEM;
		r = &g->errors[g->nerrors];
		*r = (struct gp_gpu_error_row){ .index = index, .code = code, .first_ns = mono_ns };
		r->call = strdup(call ? call : "");
		r->text = dup_or_null(text);
		if (!r->call)
			return -ENOMEM;
		g->nerrors++;
	}
	gp_model_tap_gpu_error(m, &(struct gp_op_gpu_error){ .index = index,
							     .call = call,
							     .code = code,
							     .text = text,
							     .mono_ns = mono_ns });
	r->count++;
	if (code == GP_NVML_ERROR_GPU_IS_LOST && index != GP_GPU_NO_DEVICE) {
		struct gp_gpu_device *d = device(m, index);

		if (d && !d->lost) {
			d->lost = true;
			d->lost_ns = mono_ns;
		}
	}
	return 0;
}
