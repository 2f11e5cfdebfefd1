/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * targets.h — what a session traces: explicit pids checked before anything
 * is loaded, then admitted; processes found by name or as CUDA users by the
 * /proc scan (and those to come, which the kernel admits); or the launched
 * command, and its exit status.
 */
#ifndef GP_TARGETS_H
#define GP_TARGETS_H

#include <stdbool.h>
#include <sys/types.h>

#include "processes/procs.h"
#include "options/options.h"
#include "processes/launch.h"

struct gp_targets {
	const struct gp_options *opt;
	struct gp_procs *procs;
	struct gp_launch launch;
	bool launched; /* the command was started (its status is the session's) */
};

/* An explicit --pid must exist, be readable, and be a user process that lives. 0, or -errno after a message. */
int gp_target_check_pid(pid_t pid);

/* Admits the targets the options name (and starts the command). 0, or -errno after a message. */
int gp_targets_admit(struct gp_targets *t);

/* With -- CMD: the command's own status, waiting for it if tracing stopped first; else status. */
int gp_targets_launched_status(struct gp_targets *t, int status);

/* Tracing never started: a command still held exits without running; its status, else status. */
int gp_targets_abort(struct gp_targets *t, int status);

#endif
