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

/* `gpuprobed replay ...` (argv[0] is "replay"): the exit status. */
int gp_replay_main(int argc, char **argv);

/* Builds the plan of the capture at path (kt may be NULL). 0, or -errno with errmsg. */
int gp_replay_plan_file(const char *path, const struct gp_kernel_times *kt, struct gp_rplan *plan, char *errmsg,
			size_t errlen);

/*
 * The measured effect of what-if changes (GP_WHATIF_* of replay_run.h) on
 * process pid of the capture at path: the process replayed as captured
 * (*baseline_ns) and with the changes (*changed_ns), both wall times of the
 * replay on the CUDA runtime this process can load. 0, or -errno with
 * errmsg (-ENOENT: no runtime, or pid not in the capture).
 */
int gp_replay_what_if(const char *path, __u32 pid, unsigned what, __u64 *baseline_ns, __u64 *changed_ns,
		      char *errmsg, size_t errlen);

#endif /* GP_REPLAY_H */
