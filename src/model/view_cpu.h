/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view_cpu.h — CPU, scheduling and faults as readers see them (view.h
 * includes it): what happened to a thread inside calls and over its window,
 * a process's totals and its verdict.
 */
#ifndef GP_MODEL_VIEW_CPU_H
#define GP_MODEL_VIEW_CPU_H

#include "model/model.h"

struct gp_process;

/* ---- CPU, scheduling, faults -------------------------------------------- */
/* What happened to a thread while it was somewhere (inside calls, or its whole window). */
struct gp_cpu_attr {
	__u64 offcpu_ns;
	__u64 vol_switches;
	__u64 invol_switches;
	__u64 minor_faults;
	__u64 major_faults;
};

/* A thread's CPU account over its traced window (GP_EV_THREAD_CPU). */
struct gp_thread_cpu_acct {
	bool known;
	__u64 start_ns, end_ns;
	__u64 oncpu_ns;
	__u64 runnable_ns;	/* of all.offcpu_ns: runnable, waiting for a CPU */
	struct gp_cpu_attr all; /* the whole window */
	__u32 flags;		/* GP_TCF_* */
};

enum gp_verdict {
	GP_VERDICT_UNKNOWN, /* no CPU account */
	GP_VERDICT_CPU_BOUND,
	GP_VERDICT_WAITING_GPU,
	GP_VERDICT_WAITING_OTHER, /* I/O, locks, sleeps: off-CPU outside GPU calls */
};

/* Thresholds of the verdict (docs/report-format.md, "cpu"). */
#define GP_VERDICT_CPU_BOUND_PCT \
	70			   /* share of the wall time on-CPU or waiting for one: CPU-bound */
#define GP_VERDICT_GPU_WAIT_PCT 50 /* share of off-CPU time inside GPU calls that makes GPU-bound */

struct gp_cpu_summary {
	bool known;	  /* at least one thread account */
	__u64 wall_ns;	  /* the process's traced window */
	unsigned threads; /* with an account */
	unsigned threads_faults_unknown;
	__u64 thread_wall_ns;		  /* sum of the threads' windows */
	__u64 cpu_ns;			  /* sum of their on-CPU time */
	__u64 runnable_ns;		  /* of all.offcpu_ns: runnable, waiting for a CPU */
	struct gp_cpu_attr all;		  /* sums over the threads' windows */
	struct gp_cpu_attr in_calls;	  /* inside any traced call */
	struct gp_cpu_attr in_sync_calls; /* inside synchronisation calls (GP_A_SYNC_CALL) */
	/* the verdict looks at the threads that made traced calls (all threads if none did) */
	unsigned focus_threads;
	__u64 focus_wall_ns, focus_cpu_ns, focus_runnable_ns, focus_offcpu_ns,
		focus_offcpu_in_calls_ns;
	enum gp_verdict verdict;
	enum gp_api_id top_api; /* the API with the most off-CPU time inside it */
	__u64 top_api_offcpu_ns;
};

/* Totals over the process's thread accounts, and the verdict; [from, to) is its traced window. */
void gp_cpu_summarize(const struct gp_process *p, __u64 from, __u64 to, struct gp_cpu_summary *s);
const char *gp_verdict_kind(enum gp_verdict v);

#endif /* GP_MODEL_VIEW_CPU_H */
