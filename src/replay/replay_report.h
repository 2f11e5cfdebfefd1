/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* replay_report.h — replay.json and the printed summary of a replay (replay_report.c). */
#ifndef GP_REPLAY_REPORT_H
#define GP_REPLAY_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "replay/replay_plan.h"
#include "replay/replay_run.h"

/* One process: its plan, and what replaying it measured. */
struct gp_replay_outcome {
	const struct gp_rprocess *p;
	bool ran;			 /* false: --dry-run, the plan only */
	struct gp_replay_result base;	 /* as captured; with what, the median round's */
	unsigned what;			 /* what-if changes (0: no what-if) */
	struct gp_replay_result changed; /* with them (base: the baseline of the same round) */
	struct gp_whatif_stats stats;	 /* with what: every round, the median, the range */
};

/* DIR/replay.json, written atomically. 0, or -errno with errmsg. */
int gp_replay_report_write(const char *dir, const char *capture, double speed, unsigned what,
			   const struct gp_replay_outcome *o, size_t n, char *errmsg,
			   size_t errlen);
void gp_replay_print(FILE *f, const struct gp_replay_outcome *o, size_t n);

#endif /* GP_REPLAY_REPORT_H */
