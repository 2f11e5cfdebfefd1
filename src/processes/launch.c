/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * launch.c — starting the command of `gpuprobed -- CMD ARGS...` (see
 * launch.h): found like a shell finds it, run as the user who invoked sudo,
 * held on a pipe between fork and exec so that it can be admitted into the
 * trace before its first instruction.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "options/options.h"
#include "processes/launch.h"
#include "log.h"

static bool executable_file(const char *path, int *err)
{
	struct stat st;

	if (stat(path, &st)) {
		*err = errno;
		return false;
	}
	if (S_ISDIR(st.st_mode)) {
		*err = EISDIR;
		return false;
	}
	if (access(path, X_OK)) {
		*err = errno;
		return false;
	}
	return true;
}

int gp_launch_resolve(const char *cmd, char *path, size_t len)
{
	const char *dirs = getenv("PATH");
	int err = ENOENT, first_err = 0;

	if (strchr(cmd, '/')) {
		snprintf(path, len, "%s", cmd);
		if (executable_file(path, &err))
			return 0;
	} else {
		if (!dirs || !*dirs)
			dirs = "/usr/local/bin:/usr/bin:/bin";
		for (const char *d = dirs; *d;) {
			size_t n = strcspn(d, ":");

			snprintf(path, len, "%.*s%s%s", (int)n, n ? d : ".", "/", cmd);
			if (executable_file(path, &err))
				return 0;
			if (err != ENOENT && err != ENOTDIR && !first_err)
				first_err = err; /* found but not runnable: say so, like a shell */
			d += n + (d[n] == ':');
		}
		if (first_err)
			err = first_err;
	}
	if (err == ENOENT || err == ENOTDIR) {
		gp_err("%s: command not found", cmd);
		return GP_EXIT_NOT_FOUND;
	}
	gp_err("%s: cannot run it: %s", cmd, strerror(err));
	return GP_EXIT_CANNOT_RUN;
}

/* Who the command runs as: the invoking user under sudo, else ourselves. */
static int target_user(struct gp_launch *l)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	char *end;
	struct passwd *pw;
	int ngroups = 64;

	l->drop = false;
	if (getuid() != 0 || !su || !sg || !*su || !*sg)
		return 0;
	l->uid = (uid_t)strtoul(su, &end, 10);
	if (*end)
		return 0;
	l->gid = (gid_t)strtoul(sg, &end, 10);
	if (*end || l->uid == 0)
		return 0;
	pw = getpwuid(l->uid);
	l->ngroups = 0;
	if (pw) {
		l->groups = calloc((size_t)ngroups, sizeof(*l->groups));
		if (!l->groups)
			return -ENOMEM;
		if (getgrouplist(pw->pw_name, l->gid, l->groups, &ngroups) < 0) {
			gid_t *more = realloc(l->groups, (size_t)ngroups * sizeof(*more));

			if (!more)
				return -ENOMEM;
			l->groups = more;
			getgrouplist(pw->pw_name, l->gid, l->groups, &ngroups);
		}
		l->ngroups = ngroups;
	}
	l->drop = true;
	return 0;
}

/* The child: wait for the go, become the user, exec. Never returns. */
static void child(struct gp_launch *l, char **argv, int gate, int report)
{
	sigset_t none;
	char go;
	int err;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none,
		    NULL); /* gpuprobed blocks its stop signals; the command must not */
	if (read(gate, &go, 1) != 1)
		_exit(GP_EXIT_CANNOT_RUN); /* gpuprobed gave up before tracing began */
	if (l->drop &&
	    (setgroups((size_t)l->ngroups, l->groups) || setgid(l->gid) || setuid(l->uid))) {
		err = errno;
		if (write(report, &err, sizeof(err)) < 0)
			_exit(GP_EXIT_CANNOT_RUN);
		_exit(GP_EXIT_CANNOT_RUN);
	}
	execv(l->path, argv);
	err = errno;
	if (write(report, &err, sizeof(err)) < 0)
		_exit(GP_EXIT_CANNOT_RUN);
	_exit(err == ENOENT ? GP_EXIT_NOT_FOUND : GP_EXIT_CANNOT_RUN);
}

int gp_launch_start(struct gp_launch *l, char **argv)
{
	int gate[2], report[2], err;

	l->pid = -1;
	l->gate_fd = l->report_fd = -1;
	err = target_user(l);
	if (err)
		return err;
	if (pipe2(gate, O_CLOEXEC))
		return -errno;
	if (pipe2(report, O_CLOEXEC)) {
		err = -errno;
		close(gate[0]);
		close(gate[1]);
		return err;
	}
	fflush(NULL);
	l->pid = fork();
	if (l->pid < 0) {
		err = -errno;
		close(gate[0]);
		close(gate[1]);
		close(report[0]);
		close(report[1]);
		return err;
	}
	if (l->pid == 0) {
		close(gate[1]);
		close(report[0]);
		child(l, argv, gate[0], report[1]);
	}
	close(gate[0]);
	close(report[1]);
	l->gate_fd = gate[1];
	l->report_fd = report[0];
	return 0;
}

int gp_launch_release(struct gp_launch *l)
{
	char go = 1;
	int err = 0;
	ssize_t n;

	if (write(l->gate_fd, &go, 1) != 1)
		err = -errno;
	close(l->gate_fd);
	l->gate_fd = -1;
	if (err)
		return err;
	/* the report pipe closes on exec (success) or carries errno */
	do
		n = read(l->report_fd, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(l->report_fd);
	l->report_fd = -1;
	if (n == sizeof(err)) {
		gp_err("%s: cannot run it: %s", l->path, strerror(err));
		return -err;
	}
	return 0;
}

void gp_launch_abort(struct gp_launch *l)
{
	if (l->gate_fd >= 0)
		close(l->gate_fd); /* the child sees EOF and exits without running anything */
	if (l->report_fd >= 0)
		close(l->report_fd);
	l->gate_fd = l->report_fd = -1;
	free(l->groups);
	l->groups = NULL;
}
