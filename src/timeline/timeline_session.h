/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * timeline_session.h — a timeline (trace_json.h) owned by whoever feeds the
 * model — a live session, or `gpuprobed report` loading a capture: opened
 * as the model's observer, detached and closed, and what it left out set
 * as the model's loss counters (drops.timeline_left_out,
 * timeline_sched_left_out) by the owner, not by the sink.
 */
#ifndef GP_TIMELINE_SESSION_H
#define GP_TIMELINE_SESSION_H

#include <linux/types.h>

#include "timeline/trace_json.h"

/*
 * Opened in dir and made m's observer (opts: the caps, its model set here); NULL after a warning
 * when it cannot be (no timeline then).
 */
struct gp_timeline *gp_timeline_session_open(const char *dir, struct gp_timeline_opts opts,
					     struct gp_model *m);
/*
 * Detached, closed, its counts set in m's loss counters (and its files in
 * m's session) and what it left out said; counts may be NULL. NULL tl (--no-timeline, or it could not be
 * opened): an earlier run's trace.json is removed. 0, or -errno.
 */
int gp_timeline_session_close(struct gp_timeline *tl, const char *dir, __u64 max_events,
			      struct gp_model *m, struct gp_timeline_counts *counts);
/* Detached and aborted (no trace.json); NULL tl is a no-op. */
void gp_timeline_session_abort(struct gp_timeline *tl, struct gp_model *m);

#endif
