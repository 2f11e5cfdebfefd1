/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_plan.h — a session's GPU work rebuilt from its model operations
 * (model_ops.h), per process, per host thread and per stream, ready to be
 * issued again (replay_run.c). docs/replay.md says what is kept and why.
 *
 * Order across host threads is kept with counters: every stream, event and
 * allocation is an "object" whose counter advances when an operation on it
 * is issued; an operation waits until the objects it depends on reached the
 * counts they had before it in the original run (entry-time order).
 */
#ifndef GP_REPLAY_PLAN_H
#define GP_REPLAY_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "gpuprobed/api.h"

enum gp_rop_kind {
	GP_ROP_ALLOC,	     /* mem[0]: the allocation made */
	GP_ROP_FREE,	     /* mem[0]: the allocation freed */
	GP_ROP_COPY,	     /* mem[0] dst, mem[1] src (-1: a scratch or host buffer) */
	GP_ROP_MEMSET,	     /* mem[0] */
	GP_ROP_KERNEL,	     /* kernel */
	GP_ROP_EVENT_RECORD, /* event, on stream */
	GP_ROP_STREAM_WAIT,  /* stream waits for event */
	GP_ROP_STREAM_SYNC,  /* host waits for stream */
	GP_ROP_EVENT_SYNC,   /* host waits for event */
	GP_ROP_DEVICE_SYNC,  /* host waits for every stream */
	GP_ROP_SET_DEVICE,   /* device */
	GP_ROP_KIND_MAX,
};

/* What an allocation object is. */
enum gp_rmem_kind { GP_RMEM_DEVICE, GP_RMEM_MANAGED, GP_RMEM_PINNED, GP_RMEM_REGISTERED };

enum gp_robj_kind { GP_ROBJ_STREAM, GP_ROBJ_EVENT, GP_ROBJ_MEM };

/* A stream, event or allocation of the original run. */
struct gp_robj {
	enum gp_robj_kind kind;
	__u64 handle; /* original handle or address */
	__u64 bytes;  /* allocations */
	enum gp_rmem_kind mem;
	unsigned
		flags; /* streams, events: creation flags (cudaStreamNonBlocking, cudaEventDisableTiming) */
	int device; /* allocations: the allocating thread's device */
	/* streams */
	enum { GP_RSTREAM_LEGACY, GP_RSTREAM_PER_THREAD, GP_RSTREAM_HANDLE } skind;
	int ordinal; /* streams: "s<N>" / "ptds<N>"; events "e<N>"; allocations "m<N>": first-reference order */
	bool async_alloc; /* allocated with cudaMallocAsync */
};

/* Wait until object obj's counter reaches need. */
struct gp_rdep {
	__u32 obj;
	__u32 need;
};

#define GP_ROP_DEPS 4

struct gp_rop {
	enum gp_rop_kind kind;
	__u16 api;	/* the original call (enum gp_api_id) */
	__u32 thread;	/* index into the process's threads */
	__u64 ts_ns;	/* original entry, CLOCK_MONOTONIC */
	__u64 dur_ns;	/* original host time in the call */
	__u64 think_ns; /* original gap since the thread's previous planned call returned (first: since the process's first call) */
	int stream;	/* object index, -1: none */
	int event;	/* object index, -1: none */
	int mem[2];	/* object indexes, -1: none */
	__u64 off[2];	/* offsets into mem[] */
	bool async;	/* returns before the work is done */
	bool legacy_sync;  /* a synchronous copy or memset on its default stream */
	__u8 dir, hostmem; /* copies: enum gp_dir, enum gp_hostmem (model/view.h) */
	__u64 bytes;	   /* copies, memsets, allocations */
	int kernel;	   /* index into the process's kernels */
	int device;	   /* set device */
	bool redundant; /* a synchronisation that waits for nothing queued since the previous one */
	bool redundant_if_async; /* the same where synchronous copies were made asynchronous */
	struct gp_rdep deps[GP_ROP_DEPS];
	unsigned ndeps;
	__u32 adv[GP_ROP_DEPS]; /* objects whose counter advances once it is issued */
	unsigned nadv;
};

/* Where a stand-in kernel's duration came from. */
enum gp_kdur_source { GP_KDUR_NONE, GP_KDUR_TABLE, GP_KDUR_INFERRED };

struct gp_rkernel {
	char *name;    /* demangled; NULL when the capture does not name it */
	char *mangled; /* "" when not mangled */
	__u64 launches;
	__u64 dur_ns; /* stand-in duration */
	enum gp_kdur_source source;
	__u64 observations; /* synchronisations that covered this kernel alone */
};

struct gp_rthread {
	__u32 tid;
	char *name;
	size_t *ops; /* indexes into the process's ops, in order */
	size_t nops;
};

struct gp_rprocess {
	__u32 pid;
	char *comm;
	struct gp_rop *ops; /* every planned call, in original entry order */
	size_t nops, ops_cap;
	struct gp_rthread *threads; /* in order of their first planned call */
	size_t nthreads;
	struct gp_robj *objs;
	size_t nobjs, objs_cap;
	struct gp_rkernel *kernels;
	size_t nkernels;
	__u64 start_ns, end_ns; /* first planned entry, last planned return */
	/* calls seen but not replayed, by API: failed calls are host time, these are work left out */
	__u64 not_replayed[GP_API_MAX];
	__u64 not_replayed_total;
	__u64 nested_skipped;	    /* calls inside another traced call (its implementation) */
	__u64 failed_skipped;	    /* calls that returned an error: host time only */
	__u64 scratch_device_bytes; /* largest device range no allocation of the capture covers */
	__u64 redundant_syncs;
};

struct gp_rplan {
	struct gp_rprocess **procs;
	size_t nprocs;
};

/* A source of model operations: a capture file, or a list built by a test. */
struct gp_op_source {
	void *ctx;
	/* 1 with the next operation, 0 at the end, -errno on failure (as gp_capture_next) */
	int (*next)(void *ctx, unsigned *op, const void **data, size_t *len);
};

/* A duration table: kernel name (plain, mangled or last component) -> ns. */
struct gp_kernel_times {
	struct {
		char *name;
		__u64 ns;
	} * rows;
	size_t n;
};

/*
 * Reads every operation of src and builds the plan; kt (may be NULL) gives
 * kernel durations that take precedence over inferred ones. Operations that
 * do not decode are skipped, as a report skips them. 0, or -errno with
 * errmsg filled.
 */
int gp_rplan_build(const struct gp_op_source *src, const struct gp_kernel_times *kt,
		   struct gp_rplan *plan, char *errmsg, size_t errlen);
void gp_rplan_release(struct gp_rplan *plan);
struct gp_rprocess *gp_rplan_process(const struct gp_rplan *plan, __u32 pid); /* NULL: not in it */

/* "name=us" lines or comma-separated entries (SIMGPU_KERNEL_TIMES' syntax). 0, or -EINVAL naming the bad entry. */
int gp_kernel_times_parse(const char *text, struct gp_kernel_times *kt, char *errmsg,
			  size_t errlen);
void gp_kernel_times_release(struct gp_kernel_times *kt);

const char *gp_rop_kind_name(enum gp_rop_kind k); /* "copy", "kernel", ... */
/* One line naming what an operation does, for comparing orders: "copy HtoD pageable sync 1048576". */
void gp_rop_describe(const struct gp_rprocess *p, const struct gp_rop *op, char *buf, size_t len);
/* "legacy", "ptds0", "s1", "e2", "m3" */
void gp_robj_label(const struct gp_robj *o, char *buf, size_t len);

#endif /* GP_REPLAY_PLAN_H */
