/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session_loop.c — what a session does when the event loop calls: drain the
 * ring and settle files, look for NCCL stalls, read aggregates and counters, let the hooks tick;
 * a process exited; a signal (relayed to a launched command once); whether
 * the session is done.
 */
#include <signal.h>
#include <string.h>

#include "collect/agg.h"
#include "log.h"
#include "session/session_internal.h"

static void on_drain(void *ctx)
{
	struct session *s = ctx;

	gp_collector_drain(&s->collector);
	gp_nvml_sampler_drain(s->nvml, s->model);
	/* after the drain: the model holds every call that returned before the look */
	gp_stalls_step(&s->stalls, s->model, gp_clock_ns(CLOCK_MONOTONIC));
	gp_files_settle(&s->files);	     /* after the mappings the ring held */
	gp_stack_sources_settle(s->sources); /* after the records of processes that exited */
	gp_budget_step(&s->budget);
	if (s->hooks && s->hooks->tick) {
		__u64 now = gp_clock_ns(CLOCK_MONOTONIC);
		bool fresh = now - s->counters_at_ns >= 1000000000ull;

		if (fresh) {
			gp_counters_collect(&s->counters, &s->probes, s->model);
			gp_session_unwind_summary(s);
			gp_session_holds_summary(s);
			s->counters_at_ns = now;
		}
		if (!s->hooks->tick(s->hooks->ctx, s->model, now, fresh))
			s->hook_stop = true;
	}
}

static void on_ready(void *ctx, __u64 tag)
{
	struct session *s = ctx;
	__u32 pid = 0;

	if (s->budget.agg && tag < s->procs.n && s->procs.v[tag].live) {
		/* its last calls first; then its keys can go (a reused pid starts from zero) */
		pid = (__u32)s->procs.v[tag].pid;
		gp_budget_process_exited(&s->budget, pid);
	}
	/* a file it leaves without users is settled at the next drain (gp_files_settle) */
	gp_procs_exited(&s->procs, tag);
	if (pid)
		gp_agg_forget_process(s->budget.agg, pid);
}

static bool on_signal(void *ctx, const struct signalfd_siginfo *si)
{
	struct session *s = ctx;
	bool from_tty = si->ssi_code == SI_KERNEL;

	if (s->hooks && s->hooks->signal)
		return s->hooks->signal(s->hooks->ctx, si);
	if (!s->targets.launched || s->procs.launched_done || ++s->signals_seen > 1)
		return true;
	/*
	 * The command decides: a signal from the terminal reached it too; one
	 * sent to gpuprobed alone is passed on. A second signal stops tracing.
	 */
	if (!from_tty)
		kill(s->targets.launch.pid, (int)si->ssi_signo);
	gp_notice("%s %s; tracing until the command exits (again to stop now)",
		  strsignal((int)si->ssi_signo),
		  from_tty ? "reached the command" : "passed on to the command");
	return false;
}

static bool on_done(void *ctx)
{
	struct session *s = ctx;

	if (s->hook_stop)
		return true;
	/* --name and --all wait for processes to come; the others end with their processes */
	return (s->opt->mode == GP_MODE_PID || s->opt->mode == GP_MODE_LAUNCH) && !s->procs.live;
}

void gp_session_on_proc(void *ctx, const struct gp_proc_event *e)
{
	struct session *s = ctx;

	gp_procs_event(&s->procs, e);
}

void gp_session_continue_held(void *ctx, pid_t pid)
{
	struct session *s = ctx;

	gp_holds_continue(&s->holds, pid);
}

struct gp_loop_ops gp_session_loop_ops(struct session *s)
{
	return (struct gp_loop_ops){
		.ctx = s, .drain = on_drain, .ready = on_ready, .signal = on_signal, .done = on_done
	};
}
