/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * event_loop.h — one epoll loop for a tracing session: the ring buffer is
 * drained every poll interval and whenever the kernel wakes us (a held
 * process is waiting), signals arrive through a signalfd, --duration is a
 * timerfd, and each traced process's pidfd says when it exits. What to do
 * with each is the session's business (gp_loop_ops).
 */
#ifndef GP_EVENT_LOOP_H
#define GP_EVENT_LOOP_H

#include <stdbool.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <linux/types.h>

enum gp_stop_reason {
	GP_STOP_SIGNAL = 1,   /* SIGINT / SIGTERM / SIGHUP / SIGQUIT */
	GP_STOP_DURATION,     /* --duration elapsed */
	GP_STOP_TARGETS_GONE, /* every target exited */
};

struct gp_loop_ops {
	void *ctx;
	void (*drain)(void *ctx);	     /* read what the ring buffer holds */
	void (*ready)(void *ctx, __u64 tag); /* a watched descriptor is readable */
	/* a stop signal arrived: true to stop, false to go on (it was relayed) */
	bool (*signal)(void *ctx, const struct signalfd_siginfo *si);
	bool (*done)(void *ctx); /* nothing left to trace */
};

struct gp_loop;

/* Blocks the stop signals so that they are read from a signalfd. Call first. */
int gp_loop_block_signals(void);

/* ring_fd: the ring buffer's epoll descriptor (ring_buffer__epoll_fd). NULL + errno on failure. */
struct gp_loop *gp_loop_new(double duration_s, unsigned poll_ms, int ring_fd,
			    const struct gp_loop_ops *ops);
void gp_loop_free(struct gp_loop *l);

/* Watch fd until it is unwatched; ready(tag) when it becomes readable. 0 or -errno. */
int gp_loop_watch(struct gp_loop *l, int fd, __u64 tag);
void gp_loop_unwatch(struct gp_loop *l, int fd);

/*
 * Runs until a stop reason: a signal ops->signal says stops, the duration,
 * or ops->done() (checked after each round). Returns 0 with *why set, or -errno.
 */
int gp_loop_run(struct gp_loop *l, enum gp_stop_reason *why, int *signo);

#endif
