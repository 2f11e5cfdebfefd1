/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_plan_internal.h — what the plan builder keeps while it reads
 * operations (replay_plan.c) and hands to the ordering pass (replay_order.c)
 * and the inference of kernel durations and redundant synchronisations
 * (replay_infer.c).
 */
#ifndef GP_REPLAY_PLAN_INTERNAL_H
#define GP_REPLAY_PLAN_INTERNAL_H

#include "model/view.h"
#include "replay/replay_plan.h"

/* A call as read, before ordering: handles and addresses not yet objects. */
enum gp_rraw_kind {
	GP_RRAW_ALLOC,
	GP_RRAW_FREE,
	GP_RRAW_COPY,
	GP_RRAW_MEMSET,
	GP_RRAW_KERNEL,
	GP_RRAW_EVENT_RECORD,
	GP_RRAW_STREAM_WAIT,
	GP_RRAW_STREAM_SYNC,
	GP_RRAW_EVENT_SYNC,
	GP_RRAW_DEVICE_SYNC,
	GP_RRAW_SET_DEVICE,
	GP_RRAW_STREAM_CREATE,
	GP_RRAW_EVENT_CREATE,
};

struct gp_rraw {
	enum gp_rraw_kind kind;
	size_t seq; /* position in the capture: ties in entry time keep it */
	__u16 api;
	__u32 tid;
	__u64 ts_ns, dur_ns;
	bool has_stream; /* the call names a stream (else: its default stream, for copies and memsets) */
	__u64 stream_key; /* gp_call_stream_key() */
	__u64 handle;	  /* event (record, wait, sync), created stream or event */
	__u64 addr[2];	  /* allocation: [0]; copy: dst, src; memset, free: [0] */
	__u64 bytes;
	enum gp_rmem_kind mem;
	unsigned flags;
	bool async;
	__u8 dir, hostmem;
	int kernel; /* model kernel index */
	int device;
};

struct gp_rtname {
	__u32 tid;
	char *name;
};

struct gp_rbproc {
	struct gp_rprocess *p;
	struct gp_rraw *raw;
	size_t nraw, raw_cap;
	struct gp_rtname *tnames;
	size_t ntnames;
	__u64 *kcalls; /* the model's kernel rows' call counts, to see which one a launch advanced */
	size_t kcalls_n;
};

struct gp_rbuild {
	struct gp_model *model; /* the capture's (capture_open.h) */
	struct gp_rbproc **procs;
	size_t nprocs;
};

struct gp_rbproc *gp_rbuild_proc(struct gp_rbuild *b, __u32 pid);
/* replay_order.c: raw calls -> ordered operations, threads, objects, dependencies, think times, kernels. */
int gp_rplan_order(struct gp_rbuild *b, struct gp_rbproc *bp, const struct gp_kernel_times *kt);
/* replay_infer.c: kernel durations from synchronisations, redundant synchronisations. */
void gp_rplan_infer(struct gp_rprocess *p);
void gp_rprocess_free(struct gp_rprocess *p);

#endif /* GP_REPLAY_PLAN_INTERNAL_H */
