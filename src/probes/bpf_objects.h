/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bpf_objects.h — a session's three BPF objects: the API programs
 * (gpu_api.bpf.c, the owner of the shared maps), the scheduler and the
 * process followers (sched.bpf.c, procs.bpf.c, which use the owner's maps).
 * Loaded together, configured with what the kernel admits by itself, then
 * following, then stopped in order: counting first (one store), following,
 * then freed.
 */
#ifndef GP_BPF_OBJECTS_H
#define GP_BPF_OBJECTS_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "probes/kernel_features.h"

struct gpu_api_bpf;
struct sched_bpf;
struct procs_bpf;

struct gp_bpf {
	struct gpu_api_bpf *api;
	struct sched_bpf *sched;	  /* CPU accounts and fork admission */
	struct procs_bpf *procs;	  /* exec/mmap admission and holds */
	struct gp_kernel_features kernel; /* probed before the load (gp_kernel_features_probe) */
	bool kernel_probed;
	bool multi; /* the API programs attach through uprobe_multi links */
	struct bpf_program
		*api_exit; /* the API return program this kernel runs (gp_api_exit or _no_loop) */
	struct bpf_link
		*inflight; /* the task iterator of calls in progress (made at its first read) */
};

struct gp_inflight;

struct gp_bpf_opts {
	unsigned ringbuf_mb;  /* the ring buffer's size (a power of two) */
	bool no_uprobe_multi; /* one perf-event link per probe even where uprobe_multi works */
	bool sched_slices;    /* a record per on-CPU slice (--timeline-sched) */
	__u32 agg_keys;	      /* entries of the in-kernel call aggregates (0: not aggregating) */
	__u32 unwind_rows; /* the unwind tables' pool, rows (0: no tables, frame pointers only) */
};

/*
 * Opens and loads the three objects, the followers on the owner's maps
 * (libbpf's messages through our log levels; the descriptor limit raised
 * for the probes' links). 0, or -errno after a message.
 */
int gp_bpf_load(struct gp_bpf *b, const struct gp_bpf_opts *o);

/*
 * What the kernel admits on its own (flags: GP_SCOPE_*, events.h): exec'd
 * names, forks, CUDA users. 0, or -errno after a message.
 */
int gp_bpf_set_scope(struct gp_bpf *b, __u32 flags, const char *const *names, int nnames);

/* From here on the kernel reports and admits processes. 0, or -errno after a message. */
int gp_bpf_follow(struct gp_bpf *b);

/* No call is counted from now on, on any probe (see gpu_api.bpf.c "closing"). */
void gp_bpf_stop_counting(struct gp_bpf *b);
/* No process is admitted or held from now on. */
void gp_bpf_stop_admitting(struct gp_bpf *b);
/* The scheduler's records stop. */
void gp_bpf_stop_scheduler(struct gp_bpf *b);

/* The overhead budget's gate (gpu_api.bpf.c "gate_closed"): hot probes count only while open. */
void gp_bpf_gate(struct gp_bpf *b, bool open);

/*
 * The traced calls in progress on every traced thread now (gp_inflight_iter,
 * sched.bpf.c), into *v (grown as needed, *cap its room); their number, or
 * -errno (the iterator could not be made or read).
 */
long gp_bpf_inflight(struct gp_bpf *b, struct gp_inflight **v, size_t *cap);

void gp_bpf_release(
	struct gp_bpf *b); /* detaches and frees what was loaded; a zeroed gp_bpf is fine */

#endif
