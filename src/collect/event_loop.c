/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* event_loop.c — the session's epoll loop (see event_loop.h). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "collect/event_loop.h"
#include "log.h"

enum { TAG_SIGNAL = -1, TAG_TIMER = -2 };

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

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static int watch(int epfd, int fd, int64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
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

int gp_loop_run(struct gp_loop_target *targets, int ntargets, double duration_s,
		unsigned poll_ms, struct gp_collector *collector, struct gp_model *model,
		enum gp_stop_reason *why, int *signo)
{
	int epfd, sigfd = -1, timerfd = -1, live = 0, err = 0;
	sigset_t set;

	*why = 0;
	*signo = 0;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	stop_signals(&set);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0 || (err = watch(epfd, sigfd, TAG_SIGNAL)))
		goto out_errno;
	if (duration_s > 0) {
		timerfd = arm_duration(duration_s);
		if (timerfd < 0) {
			err = timerfd;
			goto out;
		}
		if ((err = watch(epfd, timerfd, TAG_TIMER)))
			goto out;
	}
	for (int i = 0; i < ntargets; i++) {
		if (targets[i].exited)
			continue;
		if ((err = watch(epfd, targets[i].pidfd, i)))
			goto out;
		live++;
	}
	if (!live)
		*why = GP_STOP_TARGETS_GONE;

	while (!*why) {
		struct epoll_event evs[16];
		int n = epoll_wait(epfd, evs, 16, (int)poll_ms);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto out_errno;
		}
		/* Drain first: an exiting target's last records are already in the ring. */
		gp_collector_drain(collector);
		for (int i = 0; i < n; i++) {
			int64_t tag = (int64_t)evs[i].data.u64;

			if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;

				if (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
					*signo = (int)si.ssi_signo;
					*why = GP_STOP_SIGNAL;
				}
			} else if (tag == TAG_TIMER) {
				*why = GP_STOP_DURATION;
			} else if (tag >= 0 && tag < ntargets && !targets[tag].exited) {
				targets[tag].exited = true;
				gp_model_process_exited(model, (__u32)targets[tag].pid, now_ns());
				epoll_ctl(epfd, EPOLL_CTL_DEL, targets[tag].pidfd, NULL);
				gp_info("pid %d exited", (int)targets[tag].pid);
				if (--live == 0 && !*why)
					*why = GP_STOP_TARGETS_GONE;
			}
		}
	}
	goto out;
out_errno:
	err = -errno;
out:
	if (timerfd >= 0)
		close(timerfd);
	if (sigfd >= 0)
		close(sigfd);
	close(epfd);
	return err;
}
