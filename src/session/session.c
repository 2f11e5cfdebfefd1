/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session.c — one tracing session from start to report, in order: check
 * privileges and targets, prepare the output directory, load the BPF
 * objects (probes/bpf_objects.h), admit the targets (targets.h), run the
 * event loop (which admits, holds and follows processes as the kernel
 * reports them, and reads the kernel's aggregates and counters:
 * session/budget.h, session/counters.h), stop counting, detach, drain, and
 * write the reports. The work is in the layers; this file orchestrates.
 *
 * Every failure before tracing starts is one message and exit status 1;
 * once tracing has started, whatever happens, the user gets a report of
 * what was seen.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu_api.skel.h"

#include "collect/agg.h"
#include "collect/cpu_accounts.h"
#include "log.h"
#include "model/model.h"
#include "timeline/timeline_session.h"
#include "report/report_files.h"
#include "session/privileges.h"
#include "session/session_internal.h"
#include "stacks/python.h"
#include "symbolize/symbolizer.h"

static const char *stop_text(enum gp_stop_reason why, int signo)
{
	static char buf[64];

	switch (why) {
	case GP_STOP_SIGNAL:
		snprintf(buf, sizeof(buf), "stopped by %s", strsignal(signo));
		return buf;
	case GP_STOP_DURATION:
		return "duration elapsed";
	case GP_STOP_TARGETS_GONE:
		return "every target exited";
	}
	return "stopped";
}

/*
 * Tracing stops: counting first, in one store for every probe (the report
 * holds every call whole or not at all); then admitting and holding, the
 * scheduler's records (the window ends), then the probes go so nothing new
 * arrives, then what is left is taken.
 * Returns the end of the traced window.
 */
static __u64 stop_tracing(struct session *s)
{
	__u64 end_ns, t0;
	size_t placed = s->probes.nattached;
	pid_t remover;

	gp_bpf_stop_counting(&s->bpf);
	gp_bpf_stop_admitting(&s->bpf);
	s->procs.closing = true;
	gp_stack_sources_stop(s->sources); /* the processes held for their tables continued */
	/* the traced window ends where counting stopped, not after the probes' removal (seconds for
	 * perf-event links) */
	gp_bpf_stop_scheduler(&s->bpf);
	end_ns = gp_clock_ns(CLOCK_MONOTONIC);
	remover = gp_uprobes_detach_all_in_background(&s->probes);
	t0 = gp_clock_ns(CLOCK_MONOTONIC) - end_ns;
	gp_model_set_probe_removal(s->model, placed, t0);
	if (remover > 0) {
		gp_model_set_probe_remover(s->model, remover);
		gp_info("the %zu probes in place are removed after the session by process %d (" GP_REMOVER_COMM
			"): this kernel removes perf-event links one at a time",
			placed, (int)remover);
	} else {
		gp_log(t0 >= 1000000000ull ? LOG_WARNING : LOG_INFO,
		       "removed the %zu probe%s in place in %.3f s%s", placed,
		       placed == 1 ? "" : "s", (double)t0 / 1e9,
		       s->bpf.multi
			       ? ""
			       : " (perf-event links: this kernel removes them one at a time)");
	}
	gp_budget_detached(&s->budget);
	gp_nvml_sampler_stop(s->nvml, s->model);
	s->nvml = NULL;
	gp_collector_drain(&s->collector);
	gp_holds_release_all(&s->holds);     /* whatever is left: a record lost, a path not taken */
	gp_stack_sources_settle(s->sources); /* what was found of interpreters, into the model */
	gp_budget_finish(&s->budget);
	gp_cpu_accounts_close(s->cpu, bpf_map__fd(s->bpf.api->maps.thread_acct), end_ns);
	gp_counters_collect(&s->counters, &s->probes, s->model);
	gp_session_unwind_summary(s);
	gp_session_holds_summary(s);
	gp_model_set_session_end(s->model, end_ns);
	return end_ns;
}

/* The model's last operations, the closing line, the reports. Returns the exit status. */
static int finish(struct session *s, int loop_err, enum gp_stop_reason why, int signo,
		  __u64 elapsed_ns)
{
	const struct gp_options *o = s->opt;
	char nested[64] = "", counted[64] = "";
	__u64 t_sym = gp_clock_ns(CLOCK_MONOTONIC);
	size_t nstacks, naddrs = gp_model_symbolize_stacks(s->model, &nstacks);
	int status = GP_EXIT_FAILURE;
	bool sql_ok = true;

	gp_info("symbolized %zu call stacks (%zu distinct addresses) in %.1f ms", nstacks, naddrs,
		(double)(gp_clock_ns(CLOCK_MONOTONIC) - t_sym) / 1e6);
	if (s->hooks && s->hooks->stopping)
		s->hooks->stopping(s->hooks->ctx, s->model);
	if (s->targets.launched)
		gp_model_set_launch(s->model, o->command_text, s->procs.launched_done,
				    s->procs.launched_status, s->procs.launched_signal);
	gp_timeline_session_close(s->timeline, o->out_dir, o->timeline_max_events, s->model, NULL);
	s->timeline = NULL;
	if (!gp_capture_live_close(&s->capture, s->model) &&
	    o->sqlite_path) /* after the model's last operation */
		sql_ok = gp_session_export_sqlite(s) == 0;
	if (s->collector.nested_calls)
		snprintf(nested, sizeof(nested), " (and %llu inside them)",
			 (unsigned long long)s->collector.nested_calls);
	if (s->budget.agg)
		snprintf(counted, sizeof(counted), " + %llu counted in the kernel",
			 (unsigned long long)gp_agg_stats(s->budget.agg)->calls);
	gp_notice(
		"%s after %.1f s: %zu process%s, %llu calls recorded%s%s, %s%s",
		loop_err ? "event loop failed" : stop_text(why, signo), (double)elapsed_ns / 1e9,
		s->procs.n, s->procs.n == 1 ? "" : "es", (unsigned long long)s->collector.calls,
		nested, counted,
		s->counters.drops ? "some lost or incomplete (see \"Loss counters\" in the report)"
				  : "none lost",
		s->counters.estimates
			? "; the kernel did not report some switch-ins: their off-CPU time is estimated"
			: "");
	if (gp_write_reports(s->model, o->out_dir) == 0 && !loop_err && sql_ok)
		status = GP_EXIT_OK;
	if (s->targets.launched) {
		int cmd = gp_targets_launched_status(&s->targets, status);

		if (status == GP_EXIT_OK)
			status = cmd; /* the command's own status, unless the report failed */
	}
	return status;
}

static void cleanup(struct session *s)
{
	gp_nvml_sampler_stop(s->nvml, s->model); /* before the model goes */
	gp_stack_sources_free(
		s->sources); /* its builder writes the BPF maps: stopped before they go */
	gp_uprobes_release(&s->probes);
	if (s->collector_ready)
		gp_collector_release(&s->collector);
	gp_loop_free(s->loop);
	gp_stalls_release(&s->stalls);
	gp_bpf_release(&s->bpf);
	gp_procs_release(&s->procs);
	gp_holds_free(&s->holds);
	gp_files_release(&s->files);
	gp_cpu_accounts_free(s->cpu);
	gp_budget_release(&s->budget);
	gp_capture_live_abort(&s->capture); /* still open: the session failed before its end */
	/* closed (NULL) when the reports were written */
	gp_timeline_session_abort(s->timeline, s->model);
	gp_model_free(s->model);
	gp_symbolizer_free(s->sym);
	gp_python_free(s->python);
	gp_launch_abort(&s->targets.launch);
}

int gp_session_run(const struct gp_options *o)
{
	return gp_session_run_hooked(o, NULL);
}

int gp_session_run_hooked(const struct gp_options *o, const struct gp_session_hooks *hooks)
{
	struct session s = {
		.opt = o,
		.hooks = hooks,
		.targets = { .opt = o, .launch = { .pid = -1, .gate_fd = -1, .report_fd = -1 } }
	};
	enum gp_stop_reason why;
	char missing[128];
	int signo, err, status = GP_EXIT_FAILURE;
	__u64 t0;

	s.targets.procs = &s.procs;
	if (o->mode == GP_MODE_LAUNCH) {
		int rc = gp_launch_resolve(o->command[0], s.targets.launch.path,
					   sizeof(s.targets.launch.path));

		if (rc)
			return rc; /* 127 / 126 like a shell, before anything is loaded */
	}
	if (gp_check_privileges(missing, sizeof(missing))) {
		gp_err("tracing needs root (missing %s): run it with sudo", missing);
		return GP_EXIT_FAILURE;
	}
	if (gp_loop_block_signals()) {
		gp_err("block signals: %s", strerror(errno));
		return GP_EXIT_FAILURE;
	}
	for (int i = 0; i < o->npids; i++)
		if (gp_target_check_pid(o->pids[i]))
			return GP_EXIT_FAILURE;
	if (gp_prepare_out_dir(o->out_dir))
		return GP_EXIT_FAILURE;
	/* after every check of what was asked: the probe loads programs */
	if (gp_kernel_features_probe(&s.bpf.kernel, o->no_uprobe_multi))
		return GP_EXIT_USAGE; /* said: the feature, and the oldest Linux that has it */
	s.bpf.kernel_probed = true;
	if (gp_kernel_perf_events_allowed(&s.bpf.kernel, gp_has_sys_admin()))
		return GP_EXIT_FAILURE;
	if (gp_session_open_model(&s) || gp_session_prepare(&s))
		goto out;
	if (gp_bpf_follow(&s.bpf) || gp_targets_admit(&s.targets)) {
		status = gp_targets_abort(&s.targets, status);
		goto out;
	}
	if (hooks && hooks->started)
		hooks->started(hooks->ctx, s.model);
	t0 = gp_clock_ns(CLOCK_MONOTONIC);
	err = gp_loop_run(s.loop, &why, &signo);
	if (err)
		gp_err("event loop: %s (writing the report of what was seen)", strerror(-err));
	status = finish(&s, err, why, signo, stop_tracing(&s) - t0);
out:
	cleanup(&s);
	return status;
}
