/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * procs.h — the processes of a session: admitted by userspace (--pid, the
 * /proc scan of --name and --all, the launched command) or by the kernel
 * (exec of a wanted name, fork of a traced process, --all: mapping an armed
 * library; bpf/procs.bpf.c), held by the kernel until the file they exec
 * or map has been looked at (and probed), and followed until they exit.
 *
 * Each traced process has a pidfd watched by the event loop; its exit
 * removes it from the users of its files (files.h), whose probes go when
 * their last user does.
 */
#ifndef GP_PROCS_H
#define GP_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "probes/files.h"
#include "processes/holds.h"
#include "stacks/stack_sources.h"
#include "collect/cpu_accounts.h"
#include "collect/event_loop.h"
#include "gpuprobed/events.h"
#include "model/model.h"
#include "symbolize/symbolizer.h"

struct gp_proc {
	pid_t pid;
	int pidfd;
	bool live;
	bool launched; /* the command gpuprobed started: reaped for its exit status */
	__u64 cpu_ns;  /* utime + stime at the last gp_procs_cpu_delta_ns (0: not read yet) */
};

struct gp_procs {
	struct gp_files *files;
	struct gp_symbolizer *sym;
	struct gp_model *model;
	struct gp_cpu_accounts *cpu;
	struct gp_loop *loop; /* set before the first admission */
	struct gp_stack_sources
		*sources;	/* unwind tables and Python; NULL: stacks by frame pointers */
	struct gp_holds *holds; /* the registry of holds; NULL: none (only the SIGCONT) */
	int bits_fd, admit_fd;	/* tgid_bits, admit_ns */
	bool all;		/* --all: a process is traced because it uses CUDA */
	struct gp_places
		*places; /* where each traced process runs (containers.h); NULL: not read */
	/* --container: with all, only the processes of these containers (id, id prefix or name) */
	const char *const *containers;
	int ncontainers;
	bool closing;	     /* tracing stopped: holds are only released */
	const char *because; /* why kernel-admitted processes are traced: "name", "cuda" */
	struct gp_proc *v;
	size_t n, cap;
	/*
	 * Always-on (the daemon): rows of exited processes are reused, so that
	 * v and the scans of it stay as large as the processes alive at once
	 * (a pidfd's tag is its row: a row is freed only once it is unwatched).
	 */
	bool reuse_rows;
	size_t *free_rows, nfree;
	size_t live;
	size_t nholds;	     /* holds resolved (processes continued) */
	size_t nskipped;     /* processes wanted but not traceable (in the report) */
	__u64 hold_ns_max;   /* longest hold, from the kernel's record to SIGCONT */
	int launched_status; /* the launched command's shell-style status, once reaped */
	int launched_signal;
	bool launched_done;
};

void gp_procs_init(struct gp_procs *ps, struct gp_files *files, struct gp_symbolizer *sym,
		   struct gp_model *model, struct gp_cpu_accounts *cpu, int bits_fd, int admit_fd);
void gp_procs_release(struct gp_procs *ps);

enum gp_admit_how {
	GP_ADMIT_RUNNING,  /* running before: scan its maps; traced from now on */
	GP_ADMIT_LAUNCHED, /* gpuprobed's own child, held before exec */
};

/*
 * Admits pid from userspace. For a running process its maps are scanned and
 * every CUDA library (or static runtime) in them probed; with --all a
 * process without any is left alone (returns 0, not admitted). Returns 1
 * when admitted (or already traced), 0 when not wanted, -errno after a
 * message; with report_skip, failures are also listed in the report as
 * skipped and not returned as errors.
 */
int gp_procs_admit(struct gp_procs *ps, pid_t pid, enum gp_admit_how how, const char *because,
		   bool report_skip);

/* A process record from the kernel (collector callback). */
void gp_procs_event(struct gp_procs *ps, const struct gp_proc_event *e);

/* The pidfd tagged tag became readable: that process exited. */
void gp_procs_exited(struct gp_procs *ps, __u64 tag);

/*
 * /proc/PID/stat read into buf: returns what follows the command name (from
 * the state field on; the name may hold anything), or NULL when unreadable.
 */
const char *gp_proc_stat(pid_t pid, char *buf, size_t len);

/*
 * CPU time (utime + stime of /proc/PID/stat) the live traced processes used
 * since the previous call; a process's first reading only starts its count.
 */
__u64 gp_procs_cpu_delta_ns(struct gp_procs *ps);

/* Scans /proc for --name NAME... (names) or, with names NULL, for --all. Admitted count. */
int gp_procs_scan(struct gp_procs *ps, const char *const *names, int nnames);

#endif
