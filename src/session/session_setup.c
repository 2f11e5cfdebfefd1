/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session_setup.c — a session's parts made and wired before tracing starts:
 * the symbolizer, the capture and the timeline around the model; the BPF
 * objects, the probes and their cost, the aggregates and the overhead
 * budget, the files and processes tables, the ring buffer and the loop.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "gpu_api.skel.h"

#include "collect/agg.h"
#include "collect/cpu_accounts.h"
#include "log.h"
#include "model/model.h"
#include "timeline/timeline_session.h"
#include "session/session_internal.h"
#include "stacks/python.h"
#include "symbolize/symbolizer.h"

/*
 * --aggregate gives up per-call records for hot calls; stacks and the
 * timeline are per-call records, so either turns it off (said once).
 */
static bool session_aggregates(const struct gp_options *o)
{
	return o->aggregate && !o->stacks && !o->timeline;
}

/* The unwind tables' pool in rows; 0: stacks by frame pointers only (or none). */
static __u32 unwind_rows(const struct gp_options *o)
{
	return o->stacks ? (__u32)((__u64)o->unwind_mb * 1024 * 1024 / sizeof(struct gp_uw_row))
			 : 0;
}

static __u32 scope_flags(const struct gp_options *o)
{
	/* new code in a traced process: its tables are published again */
	__u32 code = unwind_rows(o) ? GP_SCOPE_CODE_MAPS : 0;

	switch (o->mode) {
	case GP_MODE_NAME:
		return GP_SCOPE_NAMES | GP_SCOPE_FOLLOW_FORKS | code;
	case GP_MODE_LAUNCH:
		return GP_SCOPE_FOLLOW_FORKS | code;
	case GP_MODE_ALL:
		return GP_SCOPE_ALL | GP_SCOPE_FOLLOW_FORKS | code;
	case GP_MODE_CONTAINER: /* every CUDA process is held once, and traced when its cgroup says so */
		return GP_SCOPE_ALL | GP_SCOPE_ASK | GP_SCOPE_FOLLOW_FORKS | code;
	default:
		return code;
	}
}

static void set_session_info(struct session *s)
{
	static struct utsname uts;
	static char host[256];
	struct gp_session_info info = {
		.tool_version = GP_VERSION,
		.command_line = s->opt->command_line,
		.mode = s->opt->daemon ? "daemon" : gp_mode_name(s->opt->mode),
	};

	uname(&uts);
	gethostname(host, sizeof(host) - 1);
	info.hostname = host;
	info.kernel_release = uts.release;
	info.start_mono_ns = gp_clock_ns(CLOCK_MONOTONIC);
	info.start_realtime_ns = gp_clock_ns(CLOCK_REALTIME);
	gp_model_set_session(s->model, &info);
}

/* The model and what observes it: the resolver, the capture, the timeline. 0, or -errno after a message. */
int gp_session_open_model(struct session *s)
{
	const struct gp_options *o = s->opt;
	struct gp_resolver resolver;
	int err;

	s->sym = gp_symbolizer_new();
	if (s->sym && o->stacks && o->python) {
		s->python = gp_python_new();
		if (!s->python) {
			gp_err("out of memory");
			return -ENOMEM;
		}
		gp_symbolizer_set_python(s->sym, s->python);
	}
	resolver = (struct gp_resolver){ .ctx = s->sym,
					 .kernel_name = gp_symbolizer_kernel_name,
					 .demangle = gp_demangle,
					 .demangle_short = gp_demangle_short,
					 .stack_seen = gp_symbolizer_stack_seen,
					 .symbolize = gp_symbolizer_symbolize,
					 .py_frame = s->python ? gp_symbolizer_py_frame : NULL };
	if (o->record) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/capture.gpz", o->out_dir);
		if ((err = gp_capture_live_open(&s->capture, o->record_path ? o->record_path : path,
						&resolver)))
			return err;
	}
	s->model = s->sym ? gp_model_new(&resolver) : NULL;
	if (s->model) {
		gp_capture_live_tap(&s->capture, s->model);
		gp_capture_live_maps(&s->capture, s->sym);
		gp_model_set_stacks(s->model, o->stacks, o->max_stacks);
		if (o->timeline)
			s->timeline = gp_timeline_session_open(
				o->out_dir,
				(struct gp_timeline_opts){
					.max_events = o->timeline_max_events,
					.file_bytes_max = (__u64)o->timeline_file_mb << 20 },
				s->model);
	}
	s->cpu = s->model ? gp_cpu_accounts_new(s->model) : NULL;
	if (!s->cpu) {
		gp_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* What the kernel's stack walk reads of each process: unwind tables, interpreters. 0, or -errno after a message. */
static int open_stack_sources(struct session *s)
{
	const struct gpu_api_bpf *api = s->bpf.api;
	const struct gp_unwind_maps um = { .rows_fd = bpf_map__fd(api->maps.uw_rows),
					   .nrows = unwind_rows(s->opt),
					   .files_fd = bpf_map__fd(api->maps.uw_files),
					   .procs_fd = bpf_map__fd(api->maps.uw_procs),
					   .maps_fd = bpf_map__fd(api->maps.uw_maps) };

	if (!s->opt->stacks || (!um.nrows && !s->python))
		return 0;
	s->sources = gp_stack_sources_new(um.nrows ? &um : NULL, s->python,
					  bpf_map__fd(api->maps.py_procs), s->model);
	if (!s->sources) {
		int err = -errno;

		gp_err("unwind tables: %s", strerror(-err));
		return err;
	}
	s->procs.sources = s->sources;
	return 0;
}

void gp_session_unwind_summary(struct session *s)
{
	struct gp_unwind_summary u;

	if (gp_stack_sources_summary(s->sources, &u)) {
		u.python_holds = s->collector.py_holds;
		gp_model_set_unwind(s->model, &u);
	}
}

static void hold_file_to_model(void *ctx, const struct gp_hold_file *f)
{
	struct session *s = ctx;

	gp_model_hold_file(s->model, f->dev, f->ino, f->reason, f->path, f->holds, f->total_ns,
			   f->max_ns);
}

void gp_session_holds_summary(struct session *s)
{
	struct gp_hold_timeout *t;
	struct gp_hold_stats st;
	size_t n;

	if (!s->holds.drop_vals)
		return; /* never started */
	n = gp_holds_take_timeouts(&s->holds, &t);
	for (size_t i = 0; i < n; i++)
		gp_model_hold_timeout(s->model, t[i].pid, t[i].reason, t[i].held_ns);
	free(t);
	gp_holds_take_files(&s->holds, hold_file_to_model, s);
	gp_holds_stats(&s->holds, &st);
	gp_model_set_holds(s->model,
			   &(struct gp_holds_summary){ .holds = st.holds,
						       .total_ns = st.total_ns,
						       .max_ns = st.max_ns,
						       .timed_out = st.timed_out,
						       .exec = st.by_reason[GP_HOLD_EXEC],
						       .map = st.by_reason[GP_HOLD_MAP],
						       .python = st.by_reason[GP_HOLD_PYTHON],
						       .files_left_out = st.unfiled });
}

/* What the kernel offered and what stood in for what it lacked (report: session.kernel). */
static int kernel_to_model(struct session *s)
{
	const struct gp_kernel_features *kf = &s->bpf.kernel;
	char used[256];
	int err;

	gp_kernel_features_used(kf, used, sizeof(used));
	err = gp_model_set_kernel(s->model, used,
				  kf->perf_event_paranoid == GP_KF_PARANOID_UNKNOWN
					  ? GP_PARANOID_UNKNOWN
					  : kf->perf_event_paranoid);
	for (int f = 0; !err && f < GP_KF_N; f++)
		if (kf->replaced[f])
			err = gp_model_kernel_replaced(
				s->model, gp_kfeature_name(f), gp_kfeature_since(f),
				gp_kfeature_replacement(f), gp_kfeature_cost(f), kf->by_request[f]);
	if (err)
		gp_err("out of memory");
	return err;
}

/* BPF, probes, aggregates and the budget, files, processes, the ring, the loop. 0, or -errno after a message. */
/* A process the builder held for its tables continued through the holds' registry. */
static void continue_hold(void *holds, pid_t pid)
{
	gp_holds_continue(holds, pid);
}

int gp_session_prepare(struct session *s)
{
	const struct gp_options *o = s->opt;
	const struct gp_bpf_opts bo = { .ringbuf_mb = o->ringbuf_mb,
					.no_uprobe_multi = o->no_uprobe_multi,
					.sched_slices = o->timeline_sched,
					.agg_keys = session_aggregates(o) ? GP_AGG_MAX_KEYS : 0,
					.unwind_rows = unwind_rows(o) };
	struct gp_loop_ops ops = gp_session_loop_ops(s);
	struct gpu_api_bpf *api;
	double hit;
	int err;

	/* what an earlier gpuprobed killed together with its resumer left held */
	gp_holds_release_dead();
	if ((err = gp_bpf_load(&s->bpf, &bo)) || (err = kernel_to_model(s)) ||
	    (err = gp_bpf_set_scope(&s->bpf, scope_flags(o), o->names, o->nnames)))
		return err;
	api = s->bpf.api;
	/* before anything is attached: nobody is held without it */
	err = gp_holds_init(&s->holds, bpf_map__fd(api->maps.holds), bpf_map__fd(api->maps.drops),
			    (__u64)o->hold_max_ms * 1000000ull);
	if (err) {
		gp_err("the registry of holds: %s", strerror(-err));
		return err;
	}
	gp_holds_pin(&s->holds); /* before the fork: the resumer removes the pin at its end */
	if ((err = gp_holds_start_resumer(&s->holds)))
		return err;
	gp_uprobes_init(&s->probes, api->progs.gp_api_enter, s->bpf.api_exit, s->bpf.multi,
			s->bpf.kernel.replaced[GP_KF_ATTACH_COOKIE]
				? bpf_map__fd(api->maps.probe_sites)
				: -1);
	s->probes.stacks = o->stacks;
	s->probes.aggregate = session_aggregates(o);
	s->counters = (struct gp_counters){ .hits_fd = bpf_map__fd(api->maps.probe_hits),
					    .drops_fd = bpf_map__fd(api->maps.drops) };
	s->budget = (struct gp_budget){ .bpf = &s->bpf,
					.probes = &s->probes,
					.counters = &s->counters,
					.procs = &s->procs,
					.model = s->model,
					.overhead_budget =
						s->hooks ? s->hooks->overhead_budget : NULL };
	hit = gp_budget_measure_probe_cost(&s->budget, o->daemon);
	if (s->probes.aggregate &&
	    !(s->budget.agg = gp_agg_new(bpf_map__fd(api->maps.api_agg), s->model))) {
		gp_err("out of memory");
		return -ENOMEM;
	}
	/* always on: the probes' cost is watched, and the hot ones can be gated (an overhead budget) */
	if (o->daemon && gp_budget_start_duty(&s->budget, hit > 0 ? hit : 0)) {
		gp_err("out of memory");
		return -ENOMEM;
	}
	if (o->aggregate && !s->probes.aggregate)
		gp_notice(
			"--aggregate is off: %s need%s a record per call (with --no-stacks --no-timeline it is on)",
			o->stacks && o->timeline ? "stacks and the timeline"
			: o->stacks		 ? "stacks"
						 : "the timeline",
			o->stacks && o->timeline ? "" : "s");
	gp_files_init(&s->files, bpf_map__fd(api->maps.lib_files), &s->probes, s->sym, s->model);
	gp_procs_init(&s->procs, &s->files, s->sym, s->model, s->cpu,
		      bpf_map__fd(api->maps.tgid_bits), bpf_map__fd(api->maps.admit_ns));
	s->procs.holds = &s->holds;
	if ((err = open_stack_sources(s)))
		return err;
	gp_stack_sources_continue_by(s->sources, continue_hold, &s->holds);
	s->procs.all = o->mode == GP_MODE_ALL || o->mode == GP_MODE_CONTAINER;
	s->procs.containers = o->containers;
	s->procs.ncontainers = o->ncontainers;
	s->procs.reuse_rows = o->daemon; /* always on: rows of exited processes are reused */
	s->procs.because = o->mode == GP_MODE_NAME	  ? "name"
			   : o->mode == GP_MODE_CONTAINER ? "container"
							  : "cuda";
	set_session_info(s);
	err = gp_collector_init(&s->collector, bpf_map__fd(api->maps.events), s->model, s->cpu);
	if (err) {
		gp_err("ring buffer: %s", strerror(-err));
		return err;
	}
	s->collector.on_proc = gp_session_on_proc;
	s->collector.continue_held = gp_session_continue_held;
	s->collector.proc_ctx = s;
	s->collector_ready = true;
	gp_stalls_init(&s->stalls, &s->bpf, s->sym, o->stall_timeout_s);
	s->loop = gp_loop_new(o->duration_s, o->poll_ms, ring_buffer__epoll_fd(s->collector.rb),
			      &ops);
	if (!s->loop) {
		err = -errno;
		gp_err("event loop: %s", strerror(-err));
		return err;
	}
	s->procs.loop = s->loop;
	if (o->nvml_interval_ms) /* never fatal: NVML's absence or failure is a line of the report */
		s->nvml = gp_nvml_sampler_start(s->model, o->nvml_lib, o->nvml_interval_ms);
	return 0;
}
