/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_json.h — profile_output/trace.json, a timeline in the Chrome Trace
 * Event format (Perfetto UI, Chrome DevTools), written by a model observer
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

#define GP_TIMELINE_FILE	       "trace.json"
#define GP_TIMELINE_DROP	       "timeline_left_out"
#define GP_TIMELINE_SCHED_DROP	       "timeline_sched_left_out"
#define GP_TIMELINE_DEFAULT_MAX_EVENTS 5000000ULL
/*
 * A file ends once it holds this many MiB of events (its tracks' names and metadata follow) and the
 * timeline goes on in trace.1.json, trace.2.json ...: well under the longest string V8 holds
 * (~512 MiB), past which neither Chrome nor speedscope can open a file.
 */
#define GP_TIMELINE_DEFAULT_FILE_MB    256ULL
#define GP_TIMELINE_MAX_FILE_MB	       500ULL /* --timeline-file-mb at most: under V8's limit */
#define GP_TIMELINE_ONE_FILE	       (~0ULL) /* file_bytes_max: never split (gpuprobed merge's inputs) */

struct gp_timeline;

struct gp_timeline_opts {
	/*
	 * API calls written as slices at most; later calls are counted, not written. 0: the default.
	 * On-CPU slices (--timeline-sched records) have a cap of the same size of their own.
	 */
	__u64 max_events;
	__u64 file_bytes_max; /* a file's size before the next; 0: the default; GP_TIMELINE_ONE_FILE */
	const struct gp_model
		*model; /* read for the tracks' names at each file's end; NULL: one file */
};

struct gp_timeline_counts {
	__u64 calls;	       /* outermost calls the model showed it */
	__u64 kept;	       /* of which written as slices */
	__u64 left_out;	       /* calls - kept */
	__u64 events;	       /* trace events written, metadata included */
	__u64 slices;	       /* on-CPU slices the model showed it (--timeline-sched records) */
	__u64 slices_left_out; /* of which not written (the cap) */
	__u32 files;	       /* trace.json and its continuations written; 0: none (it failed) */
};

/* Creates dir/trace.json.tmp (then trace.1.json.tmp ... as each fills). NULL + errno (the cause logged by the caller). */
struct gp_timeline *gp_timeline_open(const char *dir, const struct gp_timeline_opts *opts);
/* What the model's observer must be to feed tl (the owner sets it: timeline_session.h). */
struct gp_model_observer gp_timeline_observer(struct gp_timeline *tl);
/*
 * Writes the closing and metadata events (names of processes, threads and
 * stream tracks from m's tables; the model is only read), renames
 * trace.json.tmp to trace.json (and each continuation), removes an earlier run's continuations past
 * them, and frees tl; counts (may be NULL) says what
 * it kept and left out. The owner has detached it from the model first.
 * 0, or -errno (the temporary file is removed; messages are logged). NULL
 * tl is a no-op returning 0.
 */
int gp_timeline_close(struct gp_timeline *tl, const struct gp_model *m,
		      struct gp_timeline_counts *counts);
/* Removes the temporary file and frees (a session that writes no report); detached first. */
void gp_timeline_abort(struct gp_timeline *tl);
/* --no-timeline: removes dir/trace.json and its continuations of an earlier run (they would pass for this one's). */
void gp_timeline_remove_stale(const char *dir);

#endif /* GP_TRACE_JSON_H */
