/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_work.c — the sections of a process in the report document
 * about GPU work and who issued it: kernels, graph launches, streams,
 * events and threads.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report_builders.h"

static int cmp_u64(__u64 a, __u64 b)
{
	return (a > b) - (a < b);
}

/* Most launched first; then named before unknown, by name; then by site. */
static int cmp_kernel(const void *a, const void *b)
{
	const struct gp_kernel *x = *(const struct gp_kernel *const *)a;
	const struct gp_kernel *y = *(const struct gp_kernel *const *)b;
	int c;

	if (x->launches != y->launches)
		return x->launches > y->launches ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	if (!x->name != !y->name)
		return x->name ? -1 : 1;
	if (x->name && (c = strcmp(x->name, y->name)))
		return c;
	if (x->name && (c = strcmp(x->mangled, y->mangled)))
		return c;
	return (c = cmp_u64(x->func, y->func)) ? c : cmp_u64(x->ret_addr, y->ret_addr);
}

static json_t *dim3(struct gp_doc *d, const __u32 v[3])
{
	json_t *a = gp_doc_arr_new(d);

	for (int i = 0; i < 3; i++)
		gp_doc_push(d, a, gp_j_u64(v[i]));
	return a;
}

/* Most used first; then grid, block, smem. */
static int cmp_config(const void *a, const void *b)
{
	const struct gp_kconfig *x = a, *y = b;
	int c;

	if (x->launches != y->launches)
		return x->launches > y->launches ? -1 : 1;
	if ((c = memcmp(x->grid, y->grid, sizeof(x->grid))) ||
	    (c = memcmp(x->block, y->block, sizeof(x->block))))
		return c;
	return cmp_u64(x->smem, y->smem);
}

static json_t *configs(struct gp_doc *d, const struct gp_kernel *k)
{
	json_t *arr = gp_doc_arr_new(d);
	struct gp_kconfig cfg[GP_KERNEL_CONFIGS_MAX];

	memcpy(cfg, k->configs, k->nconfigs * sizeof(cfg[0]));
	qsort(cfg, k->nconfigs, sizeof(cfg[0]), cmp_config);
	for (unsigned i = 0; i < k->nconfigs; i++) {
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "grid", dim3(d, cfg[i].grid));
		gp_doc_put(d, o, "block", dim3(d, cfg[i].block));
		gp_doc_put(d, o, "smem_bytes", gp_j_u64(cfg[i].smem));
		gp_doc_put(d, o, "launches", gp_j_u64(cfg[i].launches));
		gp_doc_push(d, arr, o);
	}
	return arr;
}

json_t *gp_doc_kernels(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);
	const struct gp_kernel **ks = p->nkernels ? malloc(p->nkernels * sizeof(*ks)) : NULL;

	if (!p->nkernels || !ks) {
		d->failed |= p->nkernels && !ks;
		return arr;
	}
	memcpy(ks, p->kernels, p->nkernels * sizeof(*ks));
	qsort(ks, p->nkernels, sizeof(*ks), cmp_kernel);
	for (size_t i = 0; i < p->nkernels; i++) {
		const struct gp_kernel *k = ks[i];
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "name", k->name ? gp_j_str(k->name) : json_null());
		gp_doc_put(d, o, "mangled", k->name ? gp_j_str(k->mangled) : json_null());
		gp_doc_put(d, o, "resolved", json_boolean(k->name != NULL));
		gp_doc_put(d, o, "unresolved_reason",
			   k->name ? json_null() : gp_j_str(gp_kernel_unresolved_reason(p, k)));
		gp_doc_put(d, o, "func", gp_j_hex(k->func));
		gp_doc_put(d, o, "ret_addr", gp_j_hex(k->ret_addr));
		gp_doc_put(d, o, "sites", gp_j_u64(k->sites));
		gp_doc_put(d, o, "calls", gp_j_u64(k->calls));
		gp_doc_put(d, o, "launches", gp_j_u64(k->launches));
		gp_doc_put(d, o, "driver_launches", gp_j_u64(k->driver_launches));
		gp_doc_put(d, o, "errors", gp_j_u64(k->errors));
		gp_doc_put(d, o, "host_ns", gp_j_u64(k->host_ns));
		gp_doc_put(d, o, "configs", configs(d, k));
		gp_doc_put(d, o, "config_other_launches", gp_j_u64(k->config_other_launches));
		gp_doc_put(d, o, "config_unread_launches", gp_j_u64(k->config_unread_launches));
		gp_doc_push(d, arr, o);
	}
	free(ks);
	return arr;
}

static int cmp_graph(const void *a, const void *b)
{
	return cmp_u64((*(const struct gp_graph *const *)a)->exec,
		       (*(const struct gp_graph *const *)b)->exec);
}

json_t *gp_doc_graphs(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);
	size_t n;
	struct gp_graph **gs = (struct gp_graph **)gp_doc_map_values(d, &p->graphs, &n);

	if (n)
		qsort(gs, n, sizeof(*gs), cmp_graph);
	for (size_t i = 0; i < n; i++) {
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "exec", gp_j_hex(gs[i]->exec));
		gp_doc_put(d, o, "calls", gp_j_u64(gs[i]->calls));
		gp_doc_put(d, o, "launches", gp_j_u64(gs[i]->launches));
		gp_doc_put(d, o, "errors", gp_j_u64(gs[i]->errors));
		gp_doc_put(d, o, "host_ns", gp_j_u64(gs[i]->host_ns));
		gp_doc_push(d, arr, o);
	}
	free(gs);
	return arr;
}

/* Legacy default first, then per-thread defaults by tid, then handles: the key order. */
static int cmp_stream(const void *a, const void *b)
{
	const struct gp_stream *x = *(const struct gp_stream *const *)a;
	const struct gp_stream *y = *(const struct gp_stream *const *)b;
	bool xh = x->key != GP_STREAM_KEY_LEGACY && !(x->key & GP_STREAM_KEY_PER_THREAD);
	bool yh = y->key != GP_STREAM_KEY_LEGACY && !(y->key & GP_STREAM_KEY_PER_THREAD);

	if (xh != yh)
		return xh ? 1 : -1;
	return cmp_u64(x->key, y->key);
}

json_t *gp_doc_streams(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);
	size_t n;
	struct gp_stream **ss = (struct gp_stream **)gp_doc_map_values(d, &p->streams, &n);

	if (n)
		qsort(ss, n, sizeof(*ss), cmp_stream);
	for (size_t i = 0; i < n; i++) {
		const struct gp_stream *s = ss[i];
		json_t *o = gp_doc_obj_new(d);
		char label[64];
		const char *kind;
		bool per_thread =
			s->key != GP_STREAM_KEY_LEGACY && (s->key & GP_STREAM_KEY_PER_THREAD);
		__u32 tid = (__u32)s->key;

		if (s->key == GP_STREAM_KEY_LEGACY) {
			kind = "legacy_default";
			snprintf(label, sizeof(label), "legacy default");
		} else if (per_thread) {
			kind = "per_thread_default";
			snprintf(label, sizeof(label), "per-thread default (tid %u)", tid);
		} else {
			kind = "handle";
			snprintf(label, sizeof(label), "0x%llx", (unsigned long long)s->key);
		}
		gp_doc_put(d, o, "stream", gp_j_str(label));
		gp_doc_put(d, o, "kind", gp_j_str(kind));
		gp_doc_put(d, o, "handle",
			   gp_j_hex(per_thread || s->key == GP_STREAM_KEY_LEGACY ? 0 : s->key));
		gp_doc_put(d, o, "tid", per_thread ? gp_j_u64(tid) : json_null());
		gp_doc_put(d, o, "created", gp_j_u64(s->created));
		gp_doc_put(d, o, "destroyed", gp_j_u64(s->destroyed));
		gp_doc_put(d, o, "kernels", gp_j_u64(s->kernels));
		gp_doc_put(d, o, "graph_launches", gp_j_u64(s->graph_launches));
		gp_doc_put(d, o, "copies", gp_j_u64(s->copies));
		gp_doc_put(d, o, "copy_bytes", gp_j_u64(s->copy_bytes));
		gp_doc_put(d, o, "memsets", gp_j_u64(s->memsets));
		gp_doc_put(d, o, "memset_bytes", gp_j_u64(s->memset_bytes));
		gp_doc_put(d, o, "collectives", gp_j_u64(s->collectives));
		gp_doc_put(d, o, "collective_bytes", gp_j_u64(s->collective_bytes));
		gp_doc_put(d, o, "event_records", gp_j_u64(s->event_records));
		gp_doc_put(d, o, "event_waits", gp_j_u64(s->event_waits));
		gp_doc_put(d, o, "sync_calls", gp_j_u64(s->sync_calls));
		gp_doc_put(d, o, "sync_ns", gp_j_u64(s->sync_ns));
		gp_doc_push(d, arr, o);
	}
	free(ss);
	return arr;
}

json_t *gp_doc_events(struct gp_doc *d, const struct gp_process *p)
{
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "created", gp_j_u64(p->events.created));
	gp_doc_put(d, o, "destroyed", gp_j_u64(p->events.destroyed));
	gp_doc_put(d, o, "records", gp_j_u64(p->events.records));
	gp_doc_put(d, o, "sync_calls", gp_j_u64(p->events.sync_calls));
	gp_doc_put(d, o, "sync_ns", gp_j_u64(p->events.sync_ns));
	return o;
}

static int cmp_thread(const void *a, const void *b)
{
	return cmp_u64((*(const struct gp_thread *const *)a)->tid,
		       (*(const struct gp_thread *const *)b)->tid);
}

json_t *gp_doc_threads(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);
	size_t n;
	struct gp_thread **ts = (struct gp_thread **)gp_doc_map_values(d, &p->threads, &n);

	if (n)
		qsort(ts, n, sizeof(*ts), cmp_thread);
	for (size_t i = 0; i < n; i++) {
		const struct gp_thread *t = ts[i];
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "tid", gp_j_u64(t->tid));
		gp_doc_put(d, o, "name", gp_j_str(t->name));
		gp_doc_put(d, o, "calls", gp_j_u64(t->calls));
		gp_doc_put(d, o, "errors", gp_j_u64(t->errors));
		gp_doc_put(d, o, "host_ns", gp_j_u64(t->host_ns));
		gp_doc_put(d, o, "first_mono_ns", t->calls ? gp_j_u64(t->first_ns) : json_null());
		gp_doc_put(d, o, "last_mono_ns", t->calls ? gp_j_u64(t->last_ns) : json_null());
		gp_doc_put(d, o, "device", gp_j_s64(t->device));
		gp_doc_put(d, o, "in_gpu_calls", gp_doc_cpu_attr(d, &t->in_calls));
		if (t->cpu.known) {
			const struct gp_thread_cpu_acct *a = &t->cpu;

			gp_doc_put(d, o, "window_start_mono_ns", gp_j_u64(a->start_ns));
			gp_doc_put(d, o, "window_end_mono_ns", gp_j_u64(a->end_ns));
			gp_doc_put(d, o, "wall_ns",
				   gp_j_u64(a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0));
			gp_doc_put(d, o, "cpu_ns", gp_j_u64(a->oncpu_ns));
			gp_doc_put(d, o, "offcpu_ns", gp_j_u64(a->all.offcpu_ns));
			gp_doc_put(d, o, "runnable_ns", gp_j_u64(a->runnable_ns));
			gp_doc_put(d, o, "voluntary_switches", gp_j_u64(a->all.vol_switches));
			gp_doc_put(d, o, "involuntary_switches", gp_j_u64(a->all.invol_switches));
			gp_doc_put(d, o, "minor_faults",
				   (a->flags & GP_TCF_FAULTS_UNKNOWN)
					   ? json_null()
					   : gp_j_u64(a->all.minor_faults));
			gp_doc_put(d, o, "major_faults",
				   (a->flags & GP_TCF_FAULTS_UNKNOWN)
					   ? json_null()
					   : gp_j_u64(a->all.major_faults));
			gp_doc_put(d, o, "started_in_window",
				   json_boolean(a->flags & GP_TCF_STARTED));
			gp_doc_put(d, o, "exited", json_boolean(a->flags & GP_TCF_EXITED));
			gp_doc_put(d, o, "ran", json_boolean(!(a->flags & GP_TCF_NEVER_RAN)));
		} else {
			gp_doc_put(d, o, "cpu_ns",
				   json_null()); /* no CPU account (e.g. a capture without one) */
		}
		gp_doc_push(d, arr, o);
	}
	free(ts);
	return arr;
}
