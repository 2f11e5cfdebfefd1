/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_json.h — profile_output/trace.json, a timeline in the Chrome Trace
 * Event format (Perfetto UI, chrome://tracing), written by a model observer
 * while records are ingested, live or from a capture: the same calls give
 * the same file. Streamed into trace.json.tmp beside the target, finished
 * and renamed at the end; never held in memory. docs/report-format.md
 * ("Timeline") says what every event means.
 *
 * Use: gp_timeline_open() before the first record, gp_timeline_attach() to
 * the model, ingest, then gp_timeline_close() before the reports are written
 * (it sets drops.timeline_left_out in the model).
 */
#ifndef GP_TRACE_JSON_H
#define GP_TRACE_JSON_H

#include <linux/types.h>

#include "model/model.h"

#define GP_TIMELINE_FILE               "trace.json"
#define GP_TIMELINE_DROP               "timeline_left_out"
#define GP_TIMELINE_SCHED_DROP         "timeline_sched_left_out"
#define GP_TIMELINE_DEFAULT_MAX_EVENTS 5000000ULL

struct gp_timeline;

struct gp_timeline_opts {
	/*
	 * API calls written as slices at most; later calls are counted, not written. 0: the default.
	 * On-CPU slices (--timeline-sched records) have a cap of the same size of their own.
	 */
	__u64 max_events;
};

struct gp_timeline_counts {
	__u64 calls;    /* outermost calls the model showed it */
	__u64 kept;     /* of which written as slices */
	__u64 left_out; /* calls - kept */
	__u64 events;   /* trace events written, metadata included */
	__u64 slices;          /* on-CPU slices the model showed it (--timeline-sched records) */
	__u64 slices_left_out; /* of which not written (the cap) */
};

/* Creates dir/trace.json.tmp. NULL + errno (the cause logged by the caller). */
struct gp_timeline *gp_timeline_open(const char *dir, const struct gp_timeline_opts *opts);
/* Makes tl the model's observer (replacing any other). */
void gp_timeline_attach(struct gp_timeline *tl, struct gp_model *m);
/*
 * Detaches tl from m, writes the closing and metadata events (names of
 * processes, threads and stream tracks from m's tables), renames
 * trace.json.tmp to trace.json, sets the model's drop counter and frees tl.
 * counts may be NULL. 0, or -errno (the temporary file is removed; messages
 * are logged). NULL tl is a no-op returning 0.
 */
int gp_timeline_close(struct gp_timeline *tl, struct gp_model *m, struct gp_timeline_counts *counts);
/* Detaches, removes the temporary file and frees (a session that writes no report). */
void gp_timeline_abort(struct gp_timeline *tl, struct gp_model *m);
/* --no-timeline: removes dir/trace.json of an earlier run (it would pass for this one's). */
void gp_timeline_remove_stale(const char *dir);

/*
 * A live session's timeline: opened in dir and attached to m (NULL after a
 * warning when it cannot be: the session goes on without one).
 */
struct gp_timeline *gp_timeline_session_open(const char *dir, __u64 max_events, struct gp_model *m);
/*
 * Closed with what it left out said; NULL tl (--no-timeline, or it could not
 * be opened): an earlier run's trace.json is removed.
 */
void gp_timeline_session_close(struct gp_timeline *tl, const char *dir, __u64 max_events, struct gp_model *m);

#endif /* GP_TRACE_JSON_H */
