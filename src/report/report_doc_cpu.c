/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_cpu.c — the "cpu" section of a process: its threads' on-CPU
 * and off-CPU time, context switches and page faults over the traced window,
 * how much of each happened inside traced GPU calls, and the verdict with
 * the numbers it rests on (the same text lands in report.md).
 */
#include <stdio.h>

#include "report/report_builders.h"

json_t *gp_doc_cpu_attr(struct gp_doc *d, const struct gp_cpu_attr *a)
{
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "offcpu_ns", gp_j_u64(a->offcpu_ns));
	gp_doc_put(d, o, "voluntary_switches", gp_j_u64(a->vol_switches));
	gp_doc_put(d, o, "involuntary_switches", gp_j_u64(a->invol_switches));
	gp_doc_put(d, o, "minor_faults", gp_j_u64(a->minor_faults));
	gp_doc_put(d, o, "major_faults", gp_j_u64(a->major_faults));
	return o;
}

static double pct(__u64 part, __u64 whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "1.84 s", "12.3 ms", "450 us" */
static void duration(char *buf, size_t len, __u64 ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.0f us", (double)ns / 1e3);
}

static void verdict_text(char *buf, size_t len, const struct gp_cpu_summary *s)
{
	char wall[32], on[32], off[32], in[32], top[32];
	const char *who =
		s->focus_threads == s->threads ? "its threads" : "its GPU-calling threads";
	__u64 off_other = s->focus_offcpu_ns - (s->focus_offcpu_in_calls_ns < s->focus_offcpu_ns
							? s->focus_offcpu_in_calls_ns
							: s->focus_offcpu_ns);

	duration(wall, sizeof(wall), s->focus_wall_ns);
	duration(on, sizeof(on), s->focus_cpu_ns);
	duration(off, sizeof(off), s->focus_offcpu_ns);
	duration(in, sizeof(in), s->focus_offcpu_in_calls_ns);
	duration(top, sizeof(top), s->top_api_offcpu_ns);
	switch (s->verdict) {
	case GP_VERDICT_CPU_BOUND:
		duration(in, sizeof(in), s->focus_runnable_ns);
		snprintf(buf, len, "CPU-bound: %s were on-CPU %s of %s (%.0f %%)%s%s%s", who, on,
			 wall, pct(s->focus_cpu_ns, s->focus_wall_ns),
			 s->focus_runnable_ns * 10 >= s->focus_wall_ns
				 ? " and runnable, waiting for a CPU, "
				 : "",
			 s->focus_runnable_ns * 10 >= s->focus_wall_ns ? in : "",
			 s->focus_runnable_ns * 10 >= s->focus_wall_ns
				 ? " more: the CPUs are oversubscribed"
				 : "");
		break;
	case GP_VERDICT_WAITING_GPU:
		snprintf(
			buf, len,
			"waiting on the GPU: %s were off-CPU %s of %s (%.0f %%), %.0f %% of it (%s) "
			"blocked inside GPU calls, most in %s (%s)",
			who, off, wall, pct(s->focus_offcpu_ns, s->focus_wall_ns),
			pct(s->focus_offcpu_in_calls_ns, s->focus_offcpu_ns), in,
			s->top_api ? gp_apis[s->top_api].symbol : "?", top);
		break;
	case GP_VERDICT_WAITING_OTHER:
		duration(in, sizeof(in), off_other);
		snprintf(
			buf, len,
			"waiting on I/O or locks: %s were off-CPU %s of %s (%.0f %%), %.0f %% of it (%s) "
			"outside GPU calls",
			who, off, wall, pct(s->focus_offcpu_ns, s->focus_wall_ns),
			pct(off_other, s->focus_offcpu_ns), in);
		break;
	default:
		snprintf(buf, len, "unknown: no thread's CPU account was recorded");
	}
}

json_t *gp_doc_cpu(struct gp_doc *d, const struct gp_process *p, __u64 from, __u64 to)
{
	struct gp_cpu_summary s;
	json_t *o, *v;
	char text[512];

	gp_cpu_summarize(p, from, to, &s);
	if (!s.known)
		return json_null();
	o = gp_doc_obj_new(d);
	gp_doc_put(d, o, "wall_ns", gp_j_u64(s.wall_ns));
	gp_doc_put(d, o, "threads", gp_j_u64(s.threads));
	gp_doc_put(d, o, "thread_wall_ns", gp_j_u64(s.thread_wall_ns));
	gp_doc_put(d, o, "cpu_ns", gp_j_u64(s.cpu_ns));
	gp_doc_put(d, o, "offcpu_ns", gp_j_u64(s.all.offcpu_ns));
	gp_doc_put(d, o, "runnable_ns", gp_j_u64(s.runnable_ns));
	gp_doc_put(d, o, "cpu_wall_ratio",
		   gp_j_real2(s.wall_ns ? (double)s.cpu_ns / (double)s.wall_ns : 0));
	gp_doc_put(d, o, "cpu_utilization_pct", gp_j_real2(pct(s.cpu_ns, s.thread_wall_ns)));
	gp_doc_put(d, o, "voluntary_switches", gp_j_u64(s.all.vol_switches));
	gp_doc_put(d, o, "involuntary_switches", gp_j_u64(s.all.invol_switches));
	gp_doc_put(d, o, "minor_faults", gp_j_u64(s.all.minor_faults));
	gp_doc_put(d, o, "major_faults", gp_j_u64(s.all.major_faults));
	gp_doc_put(d, o, "faults_unknown_threads", gp_j_u64(s.threads_faults_unknown));
	gp_doc_put(d, o, "offcpu_in_gpu_calls_ns", gp_j_u64(s.in_calls.offcpu_ns));
	gp_doc_put(d, o, "offcpu_in_gpu_sync_ns", gp_j_u64(s.in_sync_calls.offcpu_ns));
	gp_doc_put(d, o, "in_gpu_calls", gp_doc_cpu_attr(d, &s.in_calls));
	gp_doc_put(d, o, "in_gpu_sync_calls", gp_doc_cpu_attr(d, &s.in_sync_calls));

	v = gp_doc_obj_new(d);
	verdict_text(text, sizeof(text), &s);
	gp_doc_put(d, v, "kind", gp_j_str(gp_verdict_kind(s.verdict)));
	gp_doc_put(d, v, "text", gp_j_str(text));
	gp_doc_put(d, v, "threads", gp_j_u64(s.focus_threads));
	gp_doc_put(d, v, "wall_ns", gp_j_u64(s.focus_wall_ns));
	gp_doc_put(d, v, "cpu_ns", gp_j_u64(s.focus_cpu_ns));
	gp_doc_put(d, v, "runnable_ns", gp_j_u64(s.focus_runnable_ns));
	gp_doc_put(d, v, "offcpu_ns", gp_j_u64(s.focus_offcpu_ns));
	gp_doc_put(d, v, "offcpu_in_gpu_calls_ns", gp_j_u64(s.focus_offcpu_in_calls_ns));
	gp_doc_put(d, v, "top_api", s.top_api ? gp_j_str(gp_apis[s.top_api].symbol) : json_null());
	gp_doc_put(d, v, "top_api_offcpu_ns", gp_j_u64(s.top_api_offcpu_ns));
	gp_doc_put(d, o, "verdict", v);
	return o;
}
