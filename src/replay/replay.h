/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay.h — `gpuprobed replay`: re-issue a captured session's GPU work
 * through the CUDA runtime, per host thread and per stream, and measure
 * what-if changes (docs/replay.md).
 */
#ifndef GP_REPLAY_H
#define GP_REPLAY_H

#include <stddef.h>
#include <linux/types.h>

#include "replay/replay_plan.h"
#include "replay/replay_run.h"

/* Builds the plan of the capture at path (kt may be NULL). 0, or -errno with errmsg. */
int gp_replay_plan_file(const char *path, const struct gp_kernel_times *kt, struct gp_rplan *plan,
			char *errmsg, size_t errlen);

/*
 * The measured effect of what-if changes (GP_WHATIF_* of replay_run.h) on
 * process pid of the capture at path, in st->rounds rounds (odd; set by the
 * caller) of replays on the CUDA runtime this process can load: st gets each
 * round's baseline and changed wall times, the median saving and its range.
 * 0, or -errno with errmsg (-ENOENT: no runtime, or pid not in the capture).
 */
int gp_replay_what_if(const char *path, __u32 pid, unsigned what, struct gp_whatif_stats *st,
		      char *errmsg, size_t errlen);

#endif /* GP_REPLAY_H */
