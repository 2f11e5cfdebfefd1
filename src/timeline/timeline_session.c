/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* timeline_session.c — the owner's side of a timeline (timeline_session.h). */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "model/model.h"
#include "timeline/timeline_session.h"

struct gp_timeline *gp_timeline_session_open(const char *dir, struct gp_timeline_opts opts,
					     struct gp_model *m)
{
	struct gp_timeline *tl;
	struct gp_model_observer obs;

	opts.model = m;
	tl = gp_timeline_open(dir, &opts);
	if (!tl) {
		gp_warn("timeline %s/%s: %s (not written)", dir, GP_TIMELINE_FILE, strerror(errno));
		return NULL;
	}
	obs = gp_timeline_observer(tl);
	gp_model_add_observer(m, &obs); /* one of few: never full */
	return tl;
}

int gp_timeline_session_close(struct gp_timeline *tl, const char *dir, __u64 max_events,
			      struct gp_model *m, struct gp_timeline_counts *counts)
{
	struct gp_timeline_counts tc;
	int err;

	if (!tl) {
		gp_timeline_remove_stale(dir); /* an earlier run's would pass for this one's */
		gp_model_set_timeline_files(m, 0);
		return 0;
	}
	gp_model_remove_observer(m, tl);
	err = gp_timeline_close(tl, m, &tc); /* the counts are set even when writing failed */
	gp_model_set_timeline_files(m, tc.files);
	if (tc.files > 1)
		gp_notice("timeline: %u files, trace.json to trace.%u.json (a file ends past "
			  "--timeline-file-mb; each opens by itself)",
			  tc.files, tc.files - 1);
	gp_model_drop_set(m, GP_TIMELINE_DROP, tc.left_out);
	gp_model_drop_set(m, GP_TIMELINE_SCHED_DROP, tc.slices_left_out);
	if (tc.left_out)
		gp_notice("timeline: %llu of %llu calls left out (--timeline-max-events %llu)",
			  (unsigned long long)tc.left_out, (unsigned long long)tc.calls,
			  (unsigned long long)max_events);
	if (tc.slices_left_out)
		gp_notice(
			"timeline: %llu of %llu on-CPU slices left out (--timeline-max-events %llu)",
			(unsigned long long)tc.slices_left_out, (unsigned long long)tc.slices,
			(unsigned long long)max_events);
	if (counts)
		*counts = tc;
	return err;
}

void gp_timeline_session_abort(struct gp_timeline *tl, struct gp_model *m)
{
	if (!tl)
		return;
	gp_model_remove_observer(m, tl);
	gp_timeline_abort(tl);
}
