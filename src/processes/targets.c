/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* targets.c — checking and admitting a session's targets (targets.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "processes/targets.h"

#define GP_PF_KTHREAD 0x00200000u /* include/linux/sched.h: task flags, field 9 of /proc/PID/stat */

/* 'K' for a kernel thread, 'Z' for a zombie, else 0 (from /proc/PID/stat). */
static char proc_kind(pid_t pid)
{
	char buf[1024], state = 0;
	unsigned int flags = 0;
	const char *p = gp_proc_stat(pid, buf, sizeof(buf));

	if (!p || sscanf(p, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
		return 0;
	if (flags & GP_PF_KTHREAD)
		return 'K';
	return state == 'Z' ? 'Z' : 0;
}

int gp_target_check_pid(pid_t pid)
{
	char maps[64];
	int fd = pidfd_open(pid, 0), err;

	if (fd < 0) {
		err = -errno;
		if (err == -ESRCH)
			gp_err("pid %d: no such process", (int)pid);
		else
			gp_err("pid %d: %s", (int)pid, strerror(-err));
		return err;
	}
	close(fd);
	/* A process we may not read cannot be traced (and must not be probed). */
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (access(maps, R_OK)) {
		err = -errno;
		gp_err("pid %d: cannot read %s: %s", (int)pid, maps, strerror(-err));
		return err;
	}
	switch (proc_kind(pid)) {
	case 'K':
		gp_err("pid %d: a kernel thread, it cannot use CUDA", (int)pid);
		return -EINVAL;
	case 'Z':
		gp_err("pid %d: has exited (a zombie not yet reaped): nothing left to trace",
		       (int)pid);
		return -ESRCH;
	}
	return 0;
}

static int launch_command(struct gp_targets *t)
{
	int err = gp_launch_start(&t->launch, t->opt->command);

	if (err) {
		gp_err("start %s: %s", t->launch.path, strerror(-err));
		return err;
	}
	t->launched = true;
	err = gp_procs_admit(t->procs, t->launch.pid, GP_ADMIT_LAUNCHED, "launched", false);
	if (err <= 0)
		return err ? err : -ESRCH;    /* the held child sees the gate close and exits */
	return gp_launch_release(&t->launch); /* failed: it exits 126/127, reaped with the others */
	return 0;
}

/* --name and --all: the running processes the /proc scan finds (names NULL: CUDA users). */
static int scan(struct gp_targets *t, const char *const *names, int nnames)
{
	const struct gp_options *o = t->opt;
	int n = gp_procs_scan(t->procs, names, nnames);

	if (n < 0) {
		gp_err("read /proc: %s", strerror(-n));
		return n;
	}
	if (!names && o->ncontainers)
		gp_notice(
			"tracing %d running process%s of %s%s that use%s CUDA, and those to come; Ctrl-C to stop",
			n, n == 1 ? "" : "es", o->containers[0],
			o->ncontainers > 1 ? " (and the other containers)" : "", n == 1 ? "s" : "");
	else if (names && !n)
		gp_notice("no process named %s%s %s: waiting for one to start (Ctrl-C to stop)",
			  o->names[0], o->nnames > 1 ? " (or the other names)" : "",
			  t->procs->nskipped ? "that can be traced yet" : "yet");
	else if (names)
		gp_notice(
			"tracing %d running process%s named as asked, and those to come; Ctrl-C to stop",
			n, n > 1 ? "es" : "");
	else
		gp_notice(
			"tracing %d running process%s that use CUDA, and those to come; Ctrl-C to stop",
			n, n == 1 ? "" : "es");
	return 0;
}

int gp_targets_admit(struct gp_targets *t)
{
	const struct gp_options *o = t->opt;
	int err;

	switch (o->mode) {
	case GP_MODE_PID:
		for (int i = 0; i < o->npids; i++)
			if ((err = gp_procs_admit(t->procs, o->pids[i], GP_ADMIT_RUNNING, "pid",
						  false)) < 0)
				return err;
		gp_notice("tracing %d process%s; Ctrl-C to stop", o->npids,
			  o->npids > 1 ? "es" : "");
		return 0;
	case GP_MODE_NAME:
		return scan(t, o->names, o->nnames);
	case GP_MODE_ALL:
	case GP_MODE_CONTAINER:
		return scan(t, NULL, 0);
	case GP_MODE_LAUNCH:
		if ((err = launch_command(t)))
			return err;
		gp_notice("tracing %s (pid %d) and what it starts", o->command[0],
			  (int)t->launch.pid);
		return 0;
	}
	return -EINVAL;
}

static int wait_status(pid_t pid, int otherwise)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return otherwise;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int gp_targets_launched_status(struct gp_targets *t, int status)
{
	if (!t->launched)
		return status;
	if (t->procs->launched_done)
		return t->procs->launched_status;
	if (t->procs->live)
		gp_notice("waiting for %s (pid %d) to exit", t->opt->command[0],
			  (int)t->launch.pid);
	return wait_status(t->launch.pid, status);
}

int gp_targets_abort(struct gp_targets *t, int status)
{
	if (!t->launched)
		return status;
	/* not traced: a child still held sees its gate close and exits without running */
	gp_launch_abort(&t->launch);
	if (t->procs->launched_done)
		return t->procs->launched_status;
	return wait_status(t->launch.pid, status); /* 126 after a failed exec */
}
