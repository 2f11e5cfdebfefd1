/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * launch.h — the command of `gpuprobed -- CMD ARGS...`: resolved like a
 * shell resolves it (127: not found, 126: not runnable), forked and held
 * before exec until the session has admitted its pid, then exec'd as the
 * user who ran sudo (SUDO_UID/SUDO_GID and that user's groups).
 */
#ifndef GP_LAUNCH_H
#define GP_LAUNCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct gp_launch {
	char path[PATH_MAX]; /* the resolved executable */
	pid_t pid;
	int gate_fd;   /* writing a byte lets the child exec */
	int report_fd; /* errno of a failed exec, or EOF on success */
	bool drop;     /* become uid/gid/groups before exec */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
};

/*
 * Finds cmd like a shell (PATH search unless it has a '/'), into path.
 * 0, or the shell's exit status (127 / 126) after one message.
 */
int gp_launch_resolve(const char *cmd, char *path, size_t len);

/* Forks the child, held before exec (l->path must be set). 0 or -errno. */
int gp_launch_start(struct gp_launch *l, char **argv);

/* Lets it exec; 0 once it has, or -errno (message given) when the exec failed. */
int gp_launch_release(struct gp_launch *l);

/* Frees what start allocated; a child still held exits without running anything. */
void gp_launch_abort(struct gp_launch *l);

#endif
