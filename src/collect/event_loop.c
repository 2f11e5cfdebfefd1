/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* event_loop.c — the session's epoll loop (see event_loop.h). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "collect/event_loop.h"

/* Tags of the loop's own descriptors; watched ones carry the caller's tags (< these). */
#define TAG_SIGNAL (~0ull)
#define TAG_TIMER  (~0ull - 1)
#define TAG_RING   (~0ull - 2)

struct gp_loop {
	int epfd, sigfd, timerfd;
	unsigned poll_ms;
	struct gp_loop_ops ops;
};

static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
}

int gp_loop_block_signals(void)
{
	sigset_t set;

	stop_signals(&set);
	return sigprocmask(SIG_BLOCK, &set, NULL) ? -errno : 0;
}

int gp_loop_watch(struct gp_loop *l, int fd, __u64 tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

void gp_loop_unwatch(struct gp_loop *l, int fd)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static int arm_duration(double duration_s)
{
	struct itimerspec its = { 0 };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	its.it_value.tv_sec = (time_t)duration_s;
	its.it_value.tv_nsec = (long)((duration_s - (double)its.it_value.tv_sec) * 1e9);
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(fd, 0, &its, NULL)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

void gp_loop_free(struct gp_loop *l)
{
	if (!l)
		return;
	if (l->timerfd >= 0)
		close(l->timerfd);
	if (l->sigfd >= 0)
		close(l->sigfd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l);
}

struct gp_loop *gp_loop_new(double duration_s, unsigned poll_ms, int ring_fd,
			    const struct gp_loop_ops *ops)
{
	struct gp_loop *l = calloc(1, sizeof(*l));
	struct epoll_event ev;
	sigset_t set;
	int err;

	if (!l)
		return NULL;
	l->sigfd = l->timerfd = -1;
	l->poll_ms = poll_ms;
	l->ops = *ops;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		goto fail;
	stop_signals(&set);
	l->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l->sigfd < 0 || gp_loop_watch(l, l->sigfd, TAG_SIGNAL))
		goto fail;
	/*
	 * Edge-triggered: only the kernel's explicit wakeups (a held process)
	 * end the wait early; records submitted without wakeup wait for the
	 * poll interval, so that a busy ring does not turn the loop into a spin.
	 */
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = TAG_RING;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, ring_fd, &ev))
		goto fail;
	if (duration_s > 0) {
		l->timerfd = arm_duration(duration_s);
		if (l->timerfd < 0) {
			errno = -l->timerfd;
			goto fail;
		}
		if (gp_loop_watch(l, l->timerfd, TAG_TIMER))
			goto fail;
	}
	return l;
fail:
	err = errno;
	gp_loop_free(l);
	errno = err;
	return NULL;
}

int gp_loop_run(struct gp_loop *l, enum gp_stop_reason *why, int *signo)
{
	*why = 0;
	*signo = 0;
	while (!*why) {
		struct epoll_event evs[32];
		int n;

		if (l->ops.done(l->ops.ctx)) {
			*why = GP_STOP_TARGETS_GONE;
			break;
		}
		n = epoll_wait(l->epfd, evs, 32, (int)l->poll_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* Drain first: an exiting process's last records are already in the ring. */
		l->ops.drain(l->ops.ctx);
		for (int i = 0; i < n && !*why; i++) {
			__u64 tag = evs[i].data.u64;

			if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;

				while (read(l->sigfd, &si, sizeof(si)) == sizeof(si) && !*why)
					if (l->ops.signal(l->ops.ctx, &si)) {
						*signo = (int)si.ssi_signo;
						*why = GP_STOP_SIGNAL;
					}
			} else if (tag == TAG_TIMER) {
				*why = GP_STOP_DURATION;
			} else if (tag != TAG_RING) {
				l->ops.ready(l->ops.ctx, tag);
			}
		}
	}
	return 0;
}
