/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* session.h — run one tracing session described by the options; returns the exit status. */
#ifndef GP_SESSION_H
#define GP_SESSION_H

#include <stdbool.h>
#include <sys/signalfd.h>
#include <linux/types.h>

#include "options/options.h"
#include "model/model.h"

int gp_session_run(const struct gp_options *o);

/*
 * What an always-on session (the daemon, src/daemon/) adds to a session:
 * every callback runs on the session's one thread, the only one that
 * touches the model. Any may be NULL.
 */
struct gp_session_hooks {
	void *ctx;
	/* tracing has started (the /proc scan is done): ready */
	void (*started)(void *ctx, struct gp_model *m);
	/*
	 * After each drain (every poll interval). counters_fresh: the kernel's
	 * probe hits and drop counters were just copied into the model (once a
	 * second). Returns false to stop the session.
	 */
	bool (*tick)(void *ctx, struct gp_model *m, __u64 now_mono_ns, bool counters_fresh);
	/* a stop signal arrived: true to stop, false to go on (the hook handled it, e.g. SIGHUP) */
	bool (*signal)(void *ctx, const struct signalfd_siginfo *si);
	/* the session is over and its last records are in the model, before the final reports */
	void (*stopping)(void *ctx, struct gp_model *m);
	/*
	 * The overhead budget (share of the traced CPU time; 0: none), read at
	 * the start and at the end of every period of the duty cycle
	 * (collect/duty.h), so a reload changes it. NULL: none.
	 */
	const double *overhead_budget;
};

/* A session with hooks (NULL: none, as gp_session_run). */
int gp_session_run_hooked(const struct gp_options *o, const struct gp_session_hooks *hooks);

#endif
