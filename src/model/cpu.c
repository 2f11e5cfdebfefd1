/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cpu.c — CPU, scheduling and page-fault statistics of a process: each
 * thread's account over its traced window (GP_EV_THREAD_CPU records), what
 * happened to the calling thread inside each traced call (the attribution
 * fields of GP_EV_API_CALL), and the one-line verdict derived from them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static void attr_add(struct gp_cpu_attr *a, __u64 offcpu, __u64 vol, __u64 invol, __u64 minf,
		     __u64 majf)
{
	a->offcpu_ns += offcpu;
	a->vol_switches += vol;
	a->invol_switches += invol;
	a->minor_faults += minf;
	a->major_faults += majf;
}

void gp_cpu_call(struct gp_process *p, struct gp_thread *t, struct gp_api_stats *st,
		 const struct gp_api_call *c)
{
	__u64 off = c->offcpu_ns, vol = c->vol_switches, inv = c->invol_switches;
	__u64 minf = c->minor_faults, majf = c->major_faults;

	attr_add(&st->inside, off, vol, inv, minf, majf);
	attr_add(&p->in_calls, off, vol, inv, minf, majf);
	if (gp_apis[c->api].attr & GP_A_SYNC_CALL)
		attr_add(&p->in_sync_calls, off, vol, inv, minf, majf);
	if (t)
		attr_add(&t->in_calls, off, vol, inv, minf, majf);
}

int gp_cpu_thread_record(struct gp_model *m, const struct gp_thread_cpu *r)
{
	struct gp_process *p = gp_model_process_get(m, r->hdr.tgid);
	struct gp_thread *t = p ? gp_process_thread_get(p, r->hdr.tid) : NULL;
	struct gp_thread_cpu_acct *a;
	char comm[sizeof(r->comm) + 1];

	if (!t)
		return -ENOMEM;
	a = &t->cpu;
	/* a tid reused within the session: both threads' accounts add up */
	if (!a->known || r->hdr.ts_ns < a->start_ns)
		a->start_ns = r->hdr.ts_ns;
	if (r->end_ns > a->end_ns)
		a->end_ns = r->end_ns;
	a->known = true;
	a->oncpu_ns += r->oncpu_ns;
	a->runnable_ns += r->runnable_ns;
	attr_add(&a->all, r->offcpu_ns, r->vol_switches, r->invol_switches, r->minor_faults,
		 r->major_faults);
	a->flags |= r->flags;
	memcpy(comm, r->comm, sizeof(r->comm));
	comm[sizeof(r->comm)] = '\0';
	if (comm[0])
		gp_model_thread_name(m, r->hdr.tgid, r->hdr.tid,
				     comm); /* its name at exit is the last word */
	return 0;
}

const char *gp_verdict_kind(enum gp_verdict v)
{
	switch (v) {
	case GP_VERDICT_CPU_BOUND:
		return "cpu_bound";
	case GP_VERDICT_WAITING_GPU:
		return "waiting_on_gpu";
	case GP_VERDICT_WAITING_OTHER:
		return "waiting_on_io_or_locks";
	default:
		return "unknown";
	}
}

static void add_thread(struct gp_cpu_summary *s, const struct gp_thread *t, bool focus)
{
	const struct gp_thread_cpu_acct *a = &t->cpu;
	__u64 wall = a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0;

	if (!a->known)
		return;
	if (!focus) {
		s->threads++;
		s->threads_faults_unknown += (a->flags & GP_TCF_FAULTS_UNKNOWN) != 0;
		s->thread_wall_ns += wall;
		s->cpu_ns += a->oncpu_ns;
		s->runnable_ns += a->runnable_ns;
		attr_add(&s->all, a->all.offcpu_ns, a->all.vol_switches, a->all.invol_switches,
			 a->all.minor_faults, a->all.major_faults);
		return;
	}
	s->focus_threads++;
	s->focus_wall_ns += wall;
	s->focus_cpu_ns += a->oncpu_ns;
	s->focus_runnable_ns += a->runnable_ns;
	s->focus_offcpu_ns += a->all.offcpu_ns;
	s->focus_offcpu_in_calls_ns += t->in_calls.offcpu_ns;
}

void gp_cpu_summarize(const struct gp_process *p, __u64 from, __u64 to, struct gp_cpu_summary *s)
{
	size_t n = p->threads.count;
	struct gp_thread **ts = n ? malloc(n * sizeof(*ts)) : NULL;
	bool callers = false;

	memset(s, 0, sizeof(*s));
	s->in_calls = p->in_calls;
	s->in_sync_calls = p->in_sync_calls;
	s->wall_ns = to > from && from ? to - from : 0;
	n = ts ? gp_u64map_values(&p->threads, (void **)ts, n) : 0;
	for (size_t i = 0; ts && i < n; i++) {
		add_thread(s, ts[i], false);
		callers |= ts[i]->cpu.known && ts[i]->calls;
	}
	for (size_t i = 0; ts && i < n; i++)
		if (!callers || ts[i]->calls)
			add_thread(s, ts[i], true);
	free(ts);
	s->known = s->threads > 0;
	for (unsigned i = 1; i < GP_API_MAX; i++)
		if (p->api[i] && p->api[i]->inside.offcpu_ns > s->top_api_offcpu_ns) {
			s->top_api = (enum gp_api_id)i;
			s->top_api_offcpu_ns = p->api[i]->inside.offcpu_ns;
		}
	if (!s->known || !s->focus_wall_ns)
		s->verdict = GP_VERDICT_UNKNOWN;
	else if ((s->focus_cpu_ns + s->focus_runnable_ns) * 100 >=
		 s->focus_wall_ns * GP_VERDICT_CPU_BOUND_PCT)
		s->verdict = GP_VERDICT_CPU_BOUND;
	else if (s->focus_offcpu_in_calls_ns * 100 >= s->focus_offcpu_ns * GP_VERDICT_GPU_WAIT_PCT)
		s->verdict = GP_VERDICT_WAITING_GPU;
	else
		s->verdict = GP_VERDICT_WAITING_OTHER;
}
