/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* session_internal.h — one session's state, shared by the files of src/session/ (nobody else). */
#ifndef GP_SESSION_INTERNAL_H
#define GP_SESSION_INTERNAL_H

#include <stdbool.h>
#include <time.h>
#include <linux/types.h>

#include "probes/bpf_objects.h"
#include "probes/files.h"
#include "processes/procs.h"
#include "stacks/stack_sources.h"
#include "probes/uprobes.h"
#include "capture/capture_live.h"
#include "session/budget.h"
#include "collect/collector.h"
#include "session/counters.h"
#include "collect/event_loop.h"
#include "gpu/nvml_sampler.h"
#include "session/session.h"
#include "session/stalls.h"
#include "processes/targets.h"

/* Keys (process, thread, API, enclosing API) the kernel aggregates at most; beyond, calls go as records. */
#define GP_AGG_MAX_KEYS 65536

struct session {
	const struct gp_options *opt;
	const struct gp_session_hooks *hooks; /* NULL: none */
	struct gp_bpf bpf;
	struct gp_cpu_accounts *cpu;
	struct gp_symbolizer *sym;
	struct gp_python
		*python; /* Python frames: located and named; NULL: --no-python, --no-stacks */
	struct gp_stack_sources
		*sources; /* unwind tables and interpreters for the walk; NULL: no stacks */
	struct gp_model *model;
	struct gp_capture_live capture; /* the capture file, if recorded */
	struct gp_timeline *timeline;	/* trace.json, fed by the model; NULL: --no-timeline */
	struct gp_nvml_sampler *nvml;	/* NVML's samples; NULL: none (off, absent, failed) */
	struct gp_uprobes probes;
	struct gp_files files;
	struct gp_procs procs;
	struct gp_holds holds; /* the registry of held processes, and its resumer */
	struct gp_targets targets;
	struct gp_counters counters;
	struct gp_budget budget; /* the aggregates' reads and the overhead budget */
	struct gp_stalls stalls; /* NCCL stall detection (--stall-timeout) */
	struct gp_collector collector;
	bool collector_ready;
	struct gp_loop *loop;
	int signals_seen;     /* with a launched command: the first is relayed, the second stops */
	__u64 counters_at_ns; /* when the counters were last read for the hooks */
	bool hook_stop;	      /* a hook's tick asked to stop */
};

static inline __u64 gp_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* session_setup.c: the model and what observes it, then everything the loop needs. 0, or -errno after a message. */
int gp_session_open_model(struct session *s);
int gp_session_prepare(struct session *s);

/* The unwind tables' state into the model (report: session.unwind), when there are tables. */
void gp_session_unwind_summary(struct session *s);
/* The holds so far (report: session.holds), and those ended at the limit since the last call. */
void gp_session_holds_summary(struct session *s);
/* session_sql.c: --sqlite, the closed capture exported. 0, or -errno after a message. */
int gp_session_export_sqlite(struct session *s);

/* session_loop.c: the event loop's callbacks. */
struct gp_loop_ops gp_session_loop_ops(struct session *s);
/* A process record from the kernel (the collector's callback). */
/* The collector's continuation of a process held for its Python code: through the registry. */
void gp_session_continue_held(void *ctx, pid_t pid);
void gp_session_on_proc(void *ctx, const struct gp_proc_event *e);

#endif
