/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * holds.h — the processes gpuprobed holds (stopped by the kernel until a file
 * is probed or a Python code object named), kept in the kernel's registry
 * (the "holds" map; struct gp_hold in events.h), and the resumer: a small
 * process forked before anyone can be held that outlives gpuprobed and
 * continues what it left held (kill -9, the OOM killer, a crash), and that
 * continues any hold older than --hold-max-ms even while gpuprobed lives
 * (stuck in a slow parse, stopped, blocked on a disk).
 *
 * Every SIGCONT gpuprobed sends to a held process goes through
 * gp_holds_continue: a SIGCONT sent at T ends every stop of the process
 * sent before T, so it forgets exactly those entries, whichever path
 * (exec/map hold, unwind-table publish, Python record, session end) sends it.
 */
#ifndef GP_HOLDS_H
#define GP_HOLDS_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "gpuprobed/events.h"

struct gp_hold_stats {
	__u64 holds;	/* stops ended (by gpuprobed or, at the limit, by the resumer) */
	__u64 total_ns; /* their held time, from the kernel's stop to the SIGCONT */
	__u64 max_ns;
	__u64 timed_out;    /* of them, ended by the resumer at --hold-max-ms */
	__u64 by_reason[4]; /* indexed by enum gp_hold_reason */
	__u64 unfiled;	    /* of them, beyond GP_HOLD_FILES_MAX files: in no file's row */
};

/* A hold the resumer ended at the limit, for the report. */
struct gp_hold_timeout {
	__u32 pid, reason; /* enum gp_hold_reason */
	__u64 held_ns;
};

#define GP_HOLD_FILES_MAX 1024 /* files (and reasons) whose holds are kept apart */

/* The holds of one file (and reason): what tracing cost the processes that used it. */
struct gp_hold_file {
	__u64 dev, ino; /* the kernel's names (0, 0: Python code objects) */
	__u32 reason;	/* enum gp_hold_reason */
	char *path;	/* as gpuprobed named it when it looked at it; NULL: it could not */
	__u64 holds, total_ns, max_ns;
	bool changed; /* since the last gp_holds_take_files */
};

struct gp_holds {
	int map_fd;	  /* the registry: BPF "holds" */
	int drops_fd;	  /* BPF "drops": hold_timeout is counted there, by the resumer */
	pid_t self;	  /* gpuprobed: the owner of the entries it may touch */
	pid_t resumer;	  /* 0: not started */
	char pin[96];	  /* the registry's pin in bpffs ("": not pinned), see gp_holds_pin */
	__u64 limit_ns;	  /* --hold-max-ms */
	int ncpus;	  /* possible CPUs: the per-CPU drops value's width */
	__u64 *drop_vals; /* room for one drops value, allocated before the fork */
	/* the stats: the loop, the unwind builder and the session's end all continue holds */
	pthread_mutex_t lock;
	struct gp_hold_stats st;
	struct gp_hold_timeout *timeouts; /* seen since the last gp_holds_take_timeouts */
	size_t ntimeouts, captimeouts;
	struct gp_hold_file *files;
	size_t nfiles, capfiles;
};

/* 0 or -errno. Nothing runs yet. */
int gp_holds_init(struct gp_holds *h, int map_fd, int drops_fd, __u64 limit_ns);

/*
 * Pins the registry as GP_HOLDS_PIN_DIR/holds-PID-START (gpuprobed's pid and
 * start time, in clock ticks), mounting bpffs on /sys/fs/bpf where none is and
 * it may: should gpuprobed and its resumer be killed together (systemd's final
 * SIGKILL of the cgroup), the registry outlives them, and gp_holds_release_dead
 * continues what they left. Where it cannot, says so once and goes on.
 */
void gp_holds_pin(struct gp_holds *h);

#define GP_HOLDS_PIN_DIR "/sys/fs/bpf/gpuprobed"

/*
 * Every registry pinned by a gpuprobed no longer alive: each process in it
 * that is still the one that was held is continued (a line on stderr each),
 * then the pin is removed. The number continued, or -errno after a message.
 */
int gp_holds_release_dead(void);

/*
 * Forks the resumer (before the BPF programs are attached: nobody is held
 * yet). It lives until gpuprobed has exited, then continues every process
 * still in the registry that is still the one that was held, and exits.
 * 0 or -errno after a message.
 */
int gp_holds_start_resumer(struct gp_holds *h);

/*
 * Continues pid (SIGCONT) and forgets the holds it ends. h may be NULL
 * (only the signal). Thread-safe.
 */
void gp_holds_continue(struct gp_holds *h, pid_t pid);

/* Tracing is over: every hold left in the registry is continued (a recycled pid is not). */
void gp_holds_release_all(struct gp_holds *h);

void gp_holds_stats(struct gp_holds *h, struct gp_hold_stats *out);

/*
 * The holds ended at the limit since the previous call, into *out (malloc'ed;
 * free it); their number. Taken by the model's thread: they are seen on any.
 */
size_t gp_holds_take_timeouts(struct gp_holds *h, struct gp_hold_timeout **out);

/* The file dev/ino (the kernel's names) held for reason is path: its holds are reported under it. */
void gp_holds_name_file(struct gp_holds *h, __u64 dev, __u64 ino, __u32 reason, const char *path);

/*
 * Calls fn for each file whose holds changed since the previous call (under
 * the registry's lock: fn must not continue a hold).
 */
void gp_holds_take_files(struct gp_holds *h, void (*fn)(void *ctx, const struct gp_hold_file *f),
			 void *ctx);

/*
 * After the BPF objects are gone: what is left in the registry is continued,
 * the resumer is no longer needed and ends; frees what init allocated.
 */
void gp_holds_free(struct gp_holds *h);

/*
 * The start time (field 22, clock ticks since boot) in the text of
 * /proc/PID/stat; the command name (field 2) may hold spaces and
 * parentheses. 0 or -EINVAL.
 */
int gp_holds_stat_start(const char *stat, __u64 *ticks);

/*
 * Is the process whose /proc/PID/stat start time is ticks the one whose
 * task->start_boottime was boot_ns (clk_tck: sysconf(_SC_CLK_TCK))?
 */
bool gp_holds_same_start(__u64 boot_ns, __u64 ticks, long clk_tck);

#endif
