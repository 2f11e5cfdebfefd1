/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model.c — the model's lifetime and its tables of things that are not
 * per-call: processes (pid -> newest entry), threads, libraries, probes and
 * named loss counters; processes adopted by a merge. The session's own
 * tables: session_info.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/model_internal.h"
#include "model/model_ops.h"

static const char *const bpf_drop_names[GP_BPF_DROP_MAX] = {
	[GP_DROP_RINGBUF_FULL] = "ringbuf_full",
	[GP_DROP_DEPTH_OVERFLOW] = "depth_overflow",
	[GP_DROP_MISSED_RETURN] = "missed_return",
	[GP_DROP_RETURN_NO_ENTRY] = "return_without_entry",
	[GP_DROP_TASK_STORAGE] = "task_storage",
	[GP_DROP_ARG_READ] = "arg_read",
	[GP_DROP_THREAD_TABLE_FULL] = "thread_table_full",
	[GP_DROP_SWITCH_MISSED] = "switch_missed",
	[GP_DROP_SWITCH_IN_UNSEEN] = "switch_in_unseen",
	[GP_DROP_THREAD_EXIT_LOST] = "thread_exit_lost",
	[GP_DROP_HOLD_LOST] = "hold_lost",
	[GP_DROP_PROC_LOST] = "proc_event_lost",
	[GP_DROP_STACK_UNREAD] = "stack_unread",
	[GP_DROP_SCHED_SLICE_LOST] = "sched_slice_lost",
	[GP_DROP_AGG_TABLE_FULL] = "agg_table_full",
	[GP_DROP_DUTY_CUT] = "duty_cut",
	[GP_DROP_HOLD_TIMEOUT] = "hold_timeout",
	[GP_DROP_PROBE_UNKNOWN] = "probe_unknown",
};

/* Counters the model keeps itself; present (at 0) in every report, like the BPF ones. */
static const char *const model_drop_names[] = { "malformed_records", "alloc_out_unread",
						"ext_truncated",     "stacks_over_limit",
						"timeline_left_out", "timeline_sched_left_out" };

const char *gp_bpf_drop_name(enum gp_bpf_drop d)
{
	return (unsigned)d < GP_BPF_DROP_MAX ? bpf_drop_names[d] : NULL;
}

char *gp_dup_str(const char *s)
{
	return strdup(s ? s : "");
}

int gp_replace_str(char **dst, const char *src)
{
	char *s = gp_dup_str(src);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

struct gp_model *gp_model_new(const struct gp_resolver *resolver)
{
	struct gp_model *m = calloc(1, sizeof(*m));

	if (!m || !(m->writer = calloc(1, sizeof(*m->writer))))
		goto err;
	m->writer->max_stacks = 1000000;
	if (resolver) {
		m->resolver = *resolver;
		m->has_resolver = resolver->kernel_name != NULL;
	}
	m->writer->name_buf = malloc(GP_NAME_BUF);
	m->writer->mangled_buf = malloc(GP_NAME_BUF);
	if (!m->writer->name_buf || !m->writer->mangled_buf)
		goto err;
	for (unsigned i = 0; i < GP_BPF_DROP_MAX; i++)
		gp_model_drop_set(m, bpf_drop_names[i], 0);
	for (size_t i = 0; i < sizeof(model_drop_names) / sizeof(model_drop_names[0]); i++)
		gp_model_drop_set(m, model_drop_names[i], 0);
	if (m->ndrops != GP_BPF_DROP_MAX + sizeof(model_drop_names) / sizeof(model_drop_names[0]))
		goto err;
	return m;
err:
	gp_model_free(m);
	errno = ENOMEM;
	return NULL;
}

static void thread_free(void *v)
{
	struct gp_thread *t = v;

	free(t->name);
	free(t);
}

static void process_free(struct gp_process *p)
{
	for (unsigned i = 0; i < GP_API_MAX; i++) {
		if (!p->api[i])
			continue;
		gp_stats_release(&p->api[i]->time);
		free(p->api[i]->codes);
		free(p->api[i]);
	}
	for (size_t i = 0; i < p->nlibs; i++) {
		free(p->libs[i].path);
		free(p->libs[i].build_id);
	}
	free(p->libs);
	free(p->traced_because);
	free(p->python.note);
	free(p->place.runtime);
	free(p->place.id);
	free(p->place.name);
	free(p->place.pod_uid);
	free(p->place.pod_name);
	free(p->place.pod_namespace);
	free(p->place.cgroup);
	gp_driver_release(p);
	gp_nccl_release(p);
	gp_queued_release(&p->writer->queued);
	gp_memory_release(&p->mem);
	gp_kernels_release(p);
	gp_stacks_release(&p->stacks);
	free(p->writer->waiting);
	free(p->writer);
	gp_u64map_clear(&p->streams, free);
	gp_u64map_clear(&p->threads, thread_free);
	free(p->comm);
	free(p->host);
	free(p->cmdline);
	free(p);
}

void gp_model_free(struct gp_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nprocs; i++)
		process_free(m->procs[i]);
	free(m->procs);
	gp_nccl_stalls_release(m);
	gp_u64map_clear(&m->by_pid, NULL);
	for (unsigned i = 0; i < GP_MAX_PROBES; i++) {
		if (!m->probes[i])
			continue;
		free(m->probes[i]->target);
		free(m->probes[i]->symbol);
		free(m->probes[i]);
	}
	for (size_t i = 0; i < m->ndrops; i++)
		free(m->drops[i].name);
	free(m->drops);
	gp_session_release(m);
	gp_gpus_release(&m->gpus);
	if (m->writer) {
		free(m->writer->name_buf);
		free(m->writer->mangled_buf);
		free(m->writer);
	}
	free(m);
}

static struct gp_process *process_new(struct gp_model *m, __u32 pid)
{
	struct gp_process *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->writer = calloc(1, sizeof(*p->writer));
	if (!p->writer) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->comm = gp_dup_str(NULL);
	p->cmdline = gp_dup_str(NULL);
	if (!p->comm || !p->cmdline)
		goto err;
	if (GP_ARRAY_GROW(m->procs, m->procs_cap, m->nprocs + 1, 8))
		goto err;
	if (gp_u64map_put(&m->by_pid, pid, p))
		goto err;
	m->procs[m->nprocs++] = p;
	return p;
err:
	process_free(p);
	return NULL;
}

static void process_forget_at(struct gp_model *m, size_t i)
{
	struct gp_process *p = m->procs[i];

	memmove(&m->procs[i], &m->procs[i + 1], (m->nprocs - i - 1) * sizeof(*m->procs));
	m->nprocs--;
	if (gp_u64map_get(&m->by_pid, p->pid) == p) /* not a newer process that reused the pid */
		gp_u64map_del(&m->by_pid, p->pid);
	m->writer->nstacks -= p->stacks.n < m->writer->nstacks ? p->stacks.n : m->writer->nstacks;
	process_free(p);
}

/* When p last did something the model saw: its latest call's return, or its admission. */
static __u64 last_active_ns(const struct gp_process *p)
{
	size_t n = p->threads.count;
	void **ts = n ? calloc(n, sizeof(*ts)) : NULL;
	__u64 last = p->attach_ns;

	n = ts ? gp_u64map_values(&p->threads, ts, n) : 0;
	for (size_t i = 0; i < n; i++)
		if (((const struct gp_thread *)ts[i])->last_ns > last)
			last = ((const struct gp_thread *)ts[i])->last_ns;
	free(ts);
	return last;
}

/* The exited process that exited first; else the live one idle longest; m->nprocs: none. */
static size_t eviction_candidate(const struct gp_model *m)
{
	size_t pick = m->nprocs;
	__u64 pick_ns = 0;

	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i]->exited &&
		    (pick == m->nprocs || m->procs[i]->exit_ns < m->procs[pick]->exit_ns))
			pick = i;
	if (pick < m->nprocs)
		return pick;
	for (size_t i = 0; i < m->nprocs; i++) {
		__u64 t = last_active_ns(m->procs[i]);

		if (pick == m->nprocs || t < pick_ns) {
			pick = i;
			pick_ns = t;
		}
	}
	return pick;
}

size_t gp_model_forget_exited(struct gp_model *m, __u64 exited_before_ns, size_t keep_at_most,
			      size_t *evicted)
{
	size_t removed = 0, over = 0;

	for (size_t i = 0; i < m->nprocs;) {
		if (m->procs[i]->exited && m->procs[i]->exit_ns < exited_before_ns) {
			process_forget_at(m, i);
			removed++;
		} else {
			i++;
		}
	}
	while (m->nprocs > keep_at_most) {
		size_t pick = eviction_candidate(m);

		if (pick == m->nprocs)
			break;
		process_forget_at(m, pick);
		over++;
	}
	if (evicted)
		*evicted = over;
	return removed + over;
}

__u64 gp_model_process_attach_ns(const struct gp_model *m, __u32 pid)
{
	const struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	return p ? p->attach_ns : 0;
}

struct gp_process *gp_model_process_get(struct gp_model *m, __u32 pid)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	return p ? p : process_new(m, pid);
}

int gp_model_process_add(struct gp_model *m, __u32 pid, const char *comm, const char *cmdline,
			 __u64 attach_mono_ns, bool traced_from_start)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	gp_model_tap_process_add(
		m, &(struct gp_op_process_add){ .pid = pid,
						.comm = comm,
						.cmdline = cmdline,
						.attach_mono_ns = attach_mono_ns,
						.traced_from_start = traced_from_start });
	if (!p || p->exited) /* an exited pid that comes back is a new process */
		p = process_new(m, pid);
	if (!p)
		return -ENOMEM;
	if (gp_replace_str(&p->comm, comm) || gp_replace_str(&p->cmdline, cmdline))
		return -ENOMEM;
	p->attach_ns = attach_mono_ns;
	p->traced_from_start = traced_from_start;
	return 0;
}

int gp_model_process_origin(struct gp_model *m, __u32 pid, const char *because, __u32 parent_pid)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	gp_model_tap_process_origin(m, &(struct gp_op_process_origin){ .pid = pid,
								       .because = because,
								       .parent_pid = parent_pid });
	if (!p)
		return -ENOENT;
	p->parent_pid = parent_pid;
	return gp_replace_str(&p->traced_because, because);
}

int gp_model_process_python(struct gp_model *m, __u32 pid, __u32 hexversion, bool walked,
			    const char *note)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	gp_model_tap_process_python(
		m, &(struct gp_op_process_python){
			   .pid = pid, .hexversion = hexversion, .walked = walked, .note = note });
	if (!p)
		return -ENOENT;
	p->python.found = true;
	p->python.walked = walked;
	p->python.hexversion = hexversion;
	return gp_replace_str(&p->python.note, note);
}

/* NULL for "" (not known), else a copy in *dst; false without memory. */
static bool set_known(char **dst, const char *s)
{
	if (!s || !*s) {
		free(*dst);
		*dst = NULL;
		return true;
	}
	return gp_replace_str(dst, s) == 0;
}

int gp_model_process_place(struct gp_model *m, const struct gp_op_process_place *v)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, v->pid);

	gp_model_tap_process_place(m, v);
	if (!p)
		return -ENOENT;
	p->place.ns_pid = v->ns_pid;
	if (!set_known(&p->place.runtime, v->runtime) ||
	    !set_known(&p->place.id, v->container_id) ||
	    !set_known(&p->place.name, v->container_name) ||
	    !set_known(&p->place.pod_uid, v->pod_uid) ||
	    !set_known(&p->place.pod_name, v->pod_name) ||
	    !set_known(&p->place.pod_namespace, v->pod_namespace) ||
	    !set_known(&p->place.cgroup, v->cgroup))
		return -ENOMEM;
	return 0;
}

int gp_model_process_exec(struct gp_model *m, __u32 pid, const char *comm, const char *cmdline)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	gp_model_tap_process_exec(
		m, &(struct gp_op_process_exec){ .pid = pid, .comm = comm, .cmdline = cmdline });
	if (!p || p->exited)
		return -ENOENT;
	p->execs++;
	if (gp_replace_str(&p->comm, comm) || gp_replace_str(&p->cmdline, cmdline))
		return -ENOMEM;
	return 0;
}

int gp_model_process_exited(struct gp_model *m, __u32 pid, __u64 exit_mono_ns)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	gp_model_tap_process_exited(
		m, &(struct gp_op_process_exited){ .pid = pid, .exit_mono_ns = exit_mono_ns });
	if (!p)
		return -ENOENT;
	p->exited = true;
	p->exit_ns = exit_mono_ns;
	return 0;
}

int gp_model_library_add(struct gp_model *m, __u32 pid, const char *path, enum gp_family family,
			 bool is_static, const char *build_id)
{
	struct gp_process *p = gp_model_process_get(m, pid);

	gp_model_tap_library(m, &(struct gp_op_library){ .pid = pid,
							 .path = path,
							 .family = family,
							 .is_static = is_static,
							 .build_id = build_id ? build_id : "" });
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < p->nlibs; i++)
		if (!strcmp(p->libs[i].path, path ? path : "") && p->libs[i].family == family)
			return 0;

	struct gp_library *libs = realloc(p->libs, (p->nlibs + 1) * sizeof(*libs));

	if (!libs)
		return -ENOMEM;
	p->libs = libs;
	libs[p->nlibs] = (struct gp_library){ .path = gp_dup_str(path),
					      .family = family,
					      .is_static = is_static,
					      .build_id = gp_dup_str(build_id) };
	if (!libs[p->nlibs].path || !libs[p->nlibs].build_id) {
		free(libs[p->nlibs].path);
		free(libs[p->nlibs].build_id);
		return -ENOMEM;
	}
	p->nlibs++;
	return 0;
}

struct gp_thread *gp_process_thread_get(struct gp_process *p, __u32 tid)
{
	struct gp_thread *t = gp_u64map_get(&p->threads, tid);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->device = -1;
	if (gp_u64map_put(&p->threads, tid, t)) {
		free(t);
		return NULL;
	}
	return t;
}

int gp_model_thread_name(struct gp_model *m, __u32 pid, __u32 tid, const char *name)
{
	struct gp_process *p = gp_model_process_get(m, pid);
	struct gp_thread *t = p ? gp_process_thread_get(p, tid) : NULL;

	gp_model_tap_thread_name(
		m, &(struct gp_op_thread_name){ .pid = pid, .tid = tid, .name = name });
	if (!t)
		return -ENOMEM;
	return gp_replace_str(&t->name, name);
}

int gp_model_probe_add(struct gp_model *m, unsigned idx, const char *target, __u32 pid,
		       const char *symbol, __u64 file_offset, enum gp_api_id api)
{
	gp_model_tap_probe_add(m, &(struct gp_op_probe_add){ .idx = idx,
							     .target = target,
							     .pid = pid,
							     .symbol = symbol,
							     .file_offset = file_offset,
							     .api = api });
	if (idx >= GP_MAX_PROBES)
		return -EINVAL;

	struct gp_probe *pr = m->probes[idx];

	if (!pr) {
		pr = calloc(1, sizeof(*pr));
		if (!pr)
			return -ENOMEM;
		m->probes[idx] = pr;
	}
	if (gp_replace_str(&pr->target, target) || gp_replace_str(&pr->symbol, symbol))
		return -ENOMEM;
	pr->pid = pid;
	pr->offset = file_offset;
	pr->api = api;
	return 0;
}

int gp_model_probe_hits(struct gp_model *m, unsigned idx, __u64 entry_hits, __u64 return_hits)
{
	gp_model_tap_probe_hits(m, &(struct gp_op_probe_hits){ .idx = idx,
							       .entry_hits = entry_hits,
							       .return_hits = return_hits });
	if (idx >= GP_MAX_PROBES || !m->probes[idx])
		return -ENOENT;
	m->probes[idx]->entry_hits = entry_hits;
	m->probes[idx]->return_hits = return_hits;
	return 0;
}

static struct gp_drop *drop_find(const struct gp_model *m, const char *name)
{
	for (size_t i = 0; i < m->ndrops; i++)
		if (!strcmp(m->drops[i].name, name))
			return &m->drops[i];
	return NULL;
}

static struct gp_drop *drop_get(struct gp_model *m, const char *name)
{
	struct gp_drop *d = drop_find(m, name);

	if (d || !name)
		return d;

	struct gp_drop *drops = realloc(m->drops, (m->ndrops + 1) * sizeof(*drops));

	if (!drops)
		return NULL;
	m->drops = drops;
	d = &drops[m->ndrops];
	d->name = strdup(name);
	d->count = 0;
	if (!d->name)
		return NULL;
	m->ndrops++;
	return d;
}

void gp_model_drop_set(struct gp_model *m, const char *name, __u64 count)
{
	struct gp_drop *d = drop_get(m, name);

	gp_model_tap_drop_set(m, &(struct gp_op_drop_set){ .name = name, .count = count });
	if (d)
		d->count = count;
}

void gp_model_drop_add(struct gp_model *m, const char *name, __u64 n)
{
	struct gp_drop *d = drop_get(m, name);

	if (d)
		d->count += n;
}

__u64 gp_model_drop_get(const struct gp_model *m, const char *name)
{
	const struct gp_drop *d = drop_find(m, name);

	return d ? d->count : 0;
}

void gp_process_window(const struct gp_model *m, const struct gp_process *p, __u64 *from, __u64 *to)
{
	__u64 start = p->own_start_ns ? p->own_start_ns : m->session.start_mono_ns;
	__u64 end = p->own_end_ns ? p->own_end_ns : m->session.end_mono_ns;

	*from = p->attach_ns > start ? p->attach_ns : start;
	*to = p->exited ? p->exit_ns : end;
}

int gp_model_adopt(struct gp_model *m, struct gp_model *src, const char *host,
		   __s64 clock_offset_ns)
{
	if (GP_ARRAY_GROW(m->procs, m->procs_cap, m->nprocs + src->nprocs, 8))
		return -ENOMEM;
	for (size_t i = 0; i < src->nprocs; i++)
		if (!src->procs[i]->host && !(src->procs[i]->host = strdup(host)))
			return -ENOMEM;
	/* the merged model is only read: its by_pid stays empty, as pids of different hosts may be equal */
	for (size_t i = 0; i < src->nprocs; i++) {
		struct gp_process *p = src->procs[i];

		p->clock_offset_ns = clock_offset_ns;
		p->own_start_ns = src->session.start_mono_ns;
		p->own_end_ns =
			src->session.end_mono_ns ? src->session.end_mono_ns : src->last_event_ns;
		m->procs[m->nprocs++] = p;
	}
	m->writer->nstacks += src->writer->nstacks;
	src->nprocs = 0;
	gp_u64map_clear(&src->by_pid, NULL);
	for (size_t i = 0; i < src->nskipped; i++)
		if (gp_model_skipped_add(m, src->skipped[i].pid, src->skipped[i].comm,
					 src->skipped[i].reason))
			return -ENOMEM;
	for (size_t i = 0; i < src->ndrops; i++)
		gp_model_drop_add(m, src->drops[i].name, src->drops[i].count);
	if (src->stacks_on && !m->stacks_on)
		gp_model_set_stacks(m, true, src->writer->max_stacks);
	return 0;
}
