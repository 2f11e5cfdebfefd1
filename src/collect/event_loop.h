/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * event_loop.h — one epoll loop for a tracing session: the ring buffer is
 * drained every poll interval, signals arrive
 * through a signalfd, --duration is a timerfd, and each target's pidfd says
 * when it exits.
 */
#ifndef GP_EVENT_LOOP_H
#define GP_EVENT_LOOP_H

#include <stdbool.h>
#include <sys/types.h>

#include "collect/collector.h"

struct gp_loop_target {
	pid_t pid;
	int pidfd;
	bool exited;
};

enum gp_stop_reason {
	GP_STOP_SIGNAL = 1,   /* SIGINT / SIGTERM / SIGHUP / SIGQUIT */
	GP_STOP_DURATION,     /* --duration elapsed */
	GP_STOP_TARGETS_GONE, /* every target exited */
};

/* Blocks the stop signals so that they are read from a signalfd. Call first. */
int gp_loop_block_signals(void);

/*
 * Runs until a stop reason. Each target that exits is marked in the model
 * (gp_model_process_exited) at the moment its pidfd says so. Returns 0 with
 * *why set, or -errno.
 */
int gp_loop_run(struct gp_loop_target *targets, int ntargets, double duration_s,
		unsigned poll_ms, struct gp_collector *collector, struct gp_model *model,
		enum gp_stop_reason *why, int *signo);

#endif
