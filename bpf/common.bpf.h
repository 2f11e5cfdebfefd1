/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * common.bpf.h — what the BPF objects share: the per-thread stack of traced
 * calls in task storage (written by the API-call probes, annotated by the
 * scheduler probes), the loss counters, and small helpers. Every object that
 * includes it declares these maps; userspace makes them one map across
 * objects (bpf_map__reuse_fd) before loading.
 */
#ifndef GP_COMMON_BPF_H
#define GP_COMMON_BPF_H

#include "gpuprobed/events.h"

/* One traced call in progress on a thread. */
struct gp_frame {
	__u64 ts;          /* entry time */
	__u64 sp;          /* stack pointer at entry: matches the return */
	__u64 cookie;
	__u32 flags;       /* GP_EVF_* known at entry */
	__u32 vol_switches;   /* context switches of the thread during the call (sched.bpf.c) */
	__u32 invol_switches;
	__u32 pad;
	__u64 offcpu_ns;      /* time the thread spent off-CPU during the call (sched.bpf.c) */
	__u64 min_flt0;       /* the task's fault counters at entry */
	__u64 maj_flt0;
	__u64 child_min_flt;  /* faults inside nested traced calls: not this call's */
	__u64 child_maj_flt;
	__u64 args[GP_MAX_ARGS];
};

struct gp_task_state {
	__u32 depth;      /* live frames */
	__u32 overflowed; /* entries not recorded for lack of a frame; their returns are expected */
	struct gp_frame frames[GP_MAX_DEPTH];
};

_Static_assert((GP_MAX_DEPTH & (GP_MAX_DEPTH - 1)) == 0, "GP_MAX_DEPTH must be a power of two");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gp_task_state);
} task_state SEC(".maps");

/* Every record for userspace, in one global order. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by userspace */
} events SEC(".maps");

/* Per-CPU, indexed by enum gp_bpf_drop; userspace sums over CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GP_BPF_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_n(void *map, __u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		*v += n; /* per-CPU: no atomics needed */
}

static __always_inline void count(void *map, __u32 idx)
{
	count_n(map, idx, 1);
}

/*
 * The frame index, masked where the verifier can see it: without the
 * barrier clang drops the mask once it has proven depth < GP_MAX_DEPTH on
 * another register, and the verifier rejects the access.
 */
static __always_inline struct gp_frame *frame_at(struct gp_task_state *st, __u32 i)
{
	asm volatile("" : "+r"(i));
	return &st->frames[i & (GP_MAX_DEPTH - 1)];
}

/* The innermost traced call task is in, or NULL. */
static __always_inline struct gp_frame *current_call(struct task_struct *task)
{
	struct gp_task_state *st = bpf_task_storage_get(&task_state, task, 0, 0);

	if (!st || !st->depth || st->depth > GP_MAX_DEPTH)
		return NULL;
	return frame_at(st, st->depth - 1);
}

#endif
